"""`mq consume` end to end: push and pull, --count, --no-follow, --from, Ctrl-C, --no-ack."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import time

import pytest

from tests.support.cluster import Cluster, json_lines
from tests.support.processes import MQ

pytestmark = pytest.mark.cluster(brokers=2)


def produce(cluster: Cluster, topic: str, n: int, *extra: str, start: int = 0) -> None:
    body = "".join(f"m{start + i}\n" for i in range(n))
    cluster.mq("produce", "-t", topic, "-q", *extra, input=body, check=True)


def consume(cluster: Cluster, topic: str, group: str, *extra: str) -> list[dict[str, object]]:
    done = cluster.mq("consume", "-t", topic, "-g", group, "--json", *extra, check=True)
    return json_lines(done.stdout)


def bodies(msgs: list[dict[str, object]]) -> list[str]:
    return sorted(str(m["body"]) for m in msgs)


@pytest.mark.parametrize("mode", ["--push", "--pull"])
def test_everything_once_with_contents(cluster: Cluster, mode: str) -> None:
    topic = f"CAll{mode[2:]}"
    for tag in ("TagA", "TagB"):
        produce(cluster, topic, 6, "--tag", tag, "--key", f"key-{tag}", "--prop", f"t={tag}")
    msgs = consume(cluster, topic, "g1", mode, "--from", "first", "--no-follow")
    assert len(msgs) == 12 and bodies(msgs) == sorted([f"m{i}" for i in range(6)] * 2)
    assert {m["brokerName"] for m in msgs} == {"broker-a", "broker-b"}
    for m in msgs:
        assert m["keys"] == f"key-{m['tags']}" and m["properties"]["t"] == m["tags"]  # type: ignore[index]
        assert m["topic"] == topic and isinstance(m["queueOffset"], int) and m["uniqKey"]
    # The group committed everything: nothing more, whatever --from says.
    assert consume(cluster, topic, "g1", mode, "--from", "first", "--no-follow") == []
    # Tag filtering, and a second group gets its own copy.
    only_b = consume(cluster, topic, "g2", mode, "--from", "first", "--no-follow", "--tag", "TagB")
    assert len(only_b) == 6 and {m["tags"] for m in only_b} == {"TagB"}


def test_quiet_prints_only_the_count_and_a_pipe_gets_whole_bodies(cluster: Cluster) -> None:
    """-q (as produce -q): no message lines, the final count on stderr, offsets committed.
    Without it, a pipe gets every body whole, never an 80-character preview."""
    long_body = "x" * 150 + "-end"
    cluster.mq("produce", "-t", "CQuiet", "--body", long_body, "-q", check=True)
    produce(cluster, "CQuiet", 3)
    done = cluster.mq(
        "consume", "-t", "CQuiet", "-g", "quiet", "--from", "first", "--no-follow", "-q",
        check=True,
    )  # fmt: skip
    assert done.stdout == ""
    assert "4 message(s) from CQuiet; offsets committed" in done.stderr
    assert consume(cluster, "CQuiet", "quiet", "--no-follow") == []  # committed: nothing left
    piped = cluster.mq(
        "consume", "-t", "CQuiet", "-g", "whole", "--from", "first", "--no-follow",
        columns=80, check=True,
    )  # fmt: skip
    assert long_body in piped.stdout and "…" not in piped.stdout


@pytest.mark.parametrize("mode", ["--push", "--pull"])
def test_count_leaves_the_rest_for_the_group(cluster: Cluster, mode: str) -> None:
    topic = f"CCount{mode[2:]}"
    produce(cluster, topic, 20)
    first = consume(cluster, topic, "gc", mode, "--from", "first", "--count", "7")
    assert len(first) == 7
    rest = consume(cluster, topic, "gc", mode, "--no-follow")
    assert len(rest) == 13
    assert bodies(first + rest) == sorted(f"m{i}" for i in range(20))


def test_explicit_positions_and_no_ack(cluster: Cluster) -> None:
    topic = "CPos"
    produce(cluster, topic, 8, "--order-key", "one-queue")
    # An explicit offset reads from there whatever the group committed.
    done = cluster.mq(
        "consume", "-t", topic, "-g", "gp", "--from", "5", "--no-follow", "-f", r"%o:%b\n",
        check=True,
    )  # fmt: skip
    assert done.stdout.splitlines() == ["5:m5", "6:m6", "7:m7"]
    msgs = consume(cluster, topic, "gp", "--from", "-2", "--no-follow")
    assert [m["body"] for m in msgs] == ["m6", "m7"]
    # --no-ack never commits: the same messages come again.
    again = consume(cluster, topic, "gn", "--pull", "--from", "first", "--no-follow", "--no-ack")
    assert len(again) == 8
    assert len(consume(cluster, topic, "gn", "--pull", "--from", "first", "--no-follow")) == 8
    # A time: everything stored since then.
    assert len(consume(cluster, topic, "gt", "--from", "@-1h", "--no-follow")) == 8


def test_from_last_means_only_new_messages(cluster: Cluster) -> None:
    """An explicit --from last skips the history even for a new group on a young queue
    (kcat -o end); without --from, RocketMQ's rule applies: the broker answers offset 0
    for a young queue, so a new group reads it from the start."""
    topic = "CLast"
    produce(cluster, topic, 5)
    assert consume(cluster, topic, "g-last-new", "--from", "last", "--no-follow") == []
    assert consume(cluster, topic, "g-last-new", "--pull", "--from", "last", "--no-follow") == []
    rocketmq = consume(cluster, topic, "g-last-default", "--pull", "--no-follow")
    assert bodies(rocketmq) == [f"m{i}" for i in range(5)]
    pushed = cluster.mq("consume", "-t", topic, "-g", "g-last-push", "--push", "--from", "last")
    assert pushed.returncode == 1 and "--from last needs the pull consumer" in pushed.stderr


def test_ctrl_c_commits_and_the_next_consumer_resumes(cluster: Cluster) -> None:
    topic = "CSigint"
    produce(cluster, topic, 5)
    for n, mode in enumerate(("--push", "--pull")):
        group = f"gs{mode[2:]}"
        total = 5 + 2 * n  # the earlier round produced two more
        proc = cluster.spawn("consume", "-t", topic, "-g", group, mode, "--from", "first", "--json")
        try:
            seen = _read_lines(proc, total)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, err
        assert "offsets committed" in err and "Traceback" not in err
        assert len(seen) == total and out == ""
        produce(cluster, topic, 2, start=100 * (n + 1))
        later = consume(cluster, topic, group, mode, "--no-follow")
        assert bodies(later) == [f"m{100 * (n + 1)}", f"m{100 * (n + 1) + 1}"]


def _read_lines(proc: subprocess.Popen[str], n: int, timeout: float = 20) -> list[str]:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    lines: list[str] = []
    while len(lines) < n:
        assert time.monotonic() < deadline, f"only {lines!r}"
        line = proc.stdout.readline()
        assert line, f"consumer exited early: {proc.stderr.read() if proc.stderr else ''}"
        lines.append(line)
    return lines


def test_broadcast_offsets_are_local_and_resume(cluster: Cluster) -> None:
    produce(cluster, "CBcast", 3)
    first = consume(cluster, "CBcast", "gb", "--broadcast", "--from", "first", "--no-follow")
    assert bodies(first) == ["m0", "m1", "m2"]
    produce(cluster, "CBcast", 1, start=3)
    later = consume(cluster, "CBcast", "gb", "--broadcast", "--pull", "--no-follow")
    assert bodies(later) == ["m3"]
    assert (cluster.base / "config" / "offsets").is_dir()


def test_nack_answers_reconsume_later(cluster: Cluster) -> None:
    produce(cluster, "CNack", 1)
    (msg,) = consume(cluster, "CNack", "gk", "--from", "first", "--nack", "--count", "1")
    assert msg["consumeResult"] == "RECONSUME_LATER" and msg["body"] == "m0"
    done = cluster.mq("consume", "-t", "CNack", "-g", "gk", "--from", "first", "--count", "1",
                      "--from", "first", "--nack", "--pull")  # fmt: skip
    assert done.returncode == 1 and "push consumer" in done.stderr


def test_wrong_input(cluster: Cluster) -> None:
    cases = [
        (["-t", "NoSuchTopic", "-g", "g"], "no route for topic NoSuchTopic"),
        (["-t", "CAllpush", "-g", "g", "--from", "@yesterday"], "bad time '@yesterday'"),
        (["-t", "CAllpush", "-g", "g", "--push", "--no-ack"], "needs the pull consumer"),
        (["-t", "CAllpush", "-g", "g", "-f", "%z"], "unknown template field %z"),
        (["-t", "CAllpush", "-g", "g", "--sql", "a >>> 1"], "a >>> 1"),
        (["-t", "CAllpush", "-g", "g", "-n", "127.0.0.1:1"], "unreachable"),
    ]
    for args, needle in cases:
        done = cluster.mq("consume", *args, timeout=30)
        assert done.returncode == 1, (args, done.stderr)
        assert needle in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) <= 3


def groups_of(cluster: Cluster) -> set[str]:
    rows = cluster.json("group", "list")
    assert isinstance(rows, list)
    return {str(r["group"]) for r in rows}


def test_a_quick_look_without_a_group_leaves_nothing_behind(cluster: Cluster) -> None:
    """No -g: every message from the first, no group created, nothing committed, so a
    second look sees the same; --queue picks queues, --count stops early."""
    produce(cluster, "CLook", 10)
    before = groups_of(cluster)
    done = cluster.mq("consume", "-t", "CLook", "--no-follow", "--json", check=True)
    msgs = json_lines(done.stdout)
    assert bodies(msgs) == sorted(f"m{i}" for i in range(10))
    assert bodies(json_lines(cluster.ok("consume", "-t", "CLook", "--no-follow", "--json"))) == (
        bodies(msgs)
    )
    assert groups_of(cluster) == before  # no group made by either look
    [(broker, qid)] = {(str(m["brokerName"]), m["queueId"]) for m in msgs[:1]}
    one = json_lines(cluster.ok("consume", "-t", "CLook", "--no-follow", "--json",
                                "--queue", f"{broker}:{qid}"))  # fmt: skip
    assert one and {(m["brokerName"], m["queueId"]) for m in one} == {(broker, qid)}
    every_broker = json_lines(cluster.ok("consume", "-t", "CLook", "--no-follow", "--json",
                                         "--queue", str(qid)))  # fmt: skip
    assert {m["queueId"] for m in every_broker} == {qid} and len(every_broker) >= len(one)
    assert len(json_lines(cluster.ok("consume", "-t", "CLook", "--json", "-c", "3"))) == 3


def test_a_quick_look_stops_at_until(cluster: Cluster) -> None:
    produce(cluster, "CUntil", 4, "--key", "early")
    cut = int(time.time() * 1000) + 1
    deadline = time.monotonic() + 5
    while int(time.time() * 1000) <= cut and time.monotonic() < deadline:
        time.sleep(0.01)  # the next messages are stored after the cut
    produce(cluster, "CUntil", 3, "--key", "late", start=4)
    done = cluster.mq("consume", "-t", "CUntil", "--until", f"@{cut}", "--json", timeout=60)
    assert done.returncode == 0, done.stderr
    assert bodies(json_lines(done.stdout)) == ["m0", "m1", "m2", "m3"]  # ended by itself


def test_quick_look_refuses_group_only_options(cluster: Cluster) -> None:
    produce(cluster, "CRefuse", 1)
    cases = [
        (["-t", "CRefuse", "--pull"], "--pull needs a consumer group"),
        (["-t", "CRefuse", "--nack"], "needs a consumer group"),
        (["-t", "CRefuse", "-g", "g", "--queue", "1"], "--queue and --until read without a group"),
        (["-t", "CRefuse", "--queue", "a:b"], "give a queue id"),
        (["-t", "CRefuse", "--queue", "77", "--no-follow"], "matches --queue 77"),
    ]
    for args, needle in cases:
        done = cluster.mq("consume", *args, timeout=30)
        assert done.returncode == 1 and needle in done.stderr, (args, done.stderr)


def test_a_closed_pipe_commits_only_what_was_printed(cluster: Cluster) -> None:
    """`mq consume ... | head -2`: exit 0, one line saying how many messages were written
    before the pipe closed, and exactly those are committed: the group's next run gets
    every other message, none skipped and none twice. (What the pipe held but its reader
    never read is lost to the reader, as with any tool writing into a pipe.)"""
    # 200 bodies of 2 KiB: more than a pipe holds, so the reader's exit must cut the run
    count, pad = 200, "x" * 2048
    cluster.mq("produce", "-t", "CPipe", "-q", input="".join(f"m{i}-{pad}\n" for i in range(count)),
               check=True)  # fmt: skip
    command = [*MQ, "consume", "-t", "CPipe", "-g", "piped", "--pull", "--from", "first",
               "--no-follow", "-o", "json"]  # fmt: skip
    proc = subprocess.Popen(
        ["bash", "-c", f'{shlex.join(command)} | head -2; echo "rc=${{PIPESTATUS[0]}}" >&2'],
        env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out, err = proc.communicate(timeout=60)
    first = json_lines(out)
    assert len(first) == 2 and "rc=0" in err, (out, err)
    assert "Traceback" not in err and "Broken pipe" not in err, err
    found = re.search(r"(\d+) message\(s\) from CPipe written before the output closed", err)
    assert found is not None, err
    written = int(found.group(1))
    assert 2 <= written < count, err
    rest = consume(cluster, "CPipe", "piped", "--pull", "--no-follow")
    assert len(rest) == count - written, (written, len(rest))
    assert {str(m["body"]) for m in first}.isdisjoint(str(m["body"]) for m in rest)

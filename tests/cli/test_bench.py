"""`mq bench produce|consume|e2e` against real name server and broker processes: the
figures they print describe messages that really are in the topic, or really arrived."""

from __future__ import annotations

import asyncio
import time

import pexpect
import pytest

from mqcli.commands.bench import Tally, percentile, summarize
from mqcli.commands.bench.consume import Receiver
from mqcli.commands.bench.e2e import StampedReceiver
from mqcore.message import MessageExt
from tests.support.cluster import Cluster, json_lines, running
from tests.support.polling import until_sync


def stored(cluster: Cluster, topic: str) -> list[dict[str, object]]:
    done = cluster.mq(
        "consume", "-t", topic, "-g", f"read-{topic}", "--pull", "--from", "first",
        "--no-follow", "--json", check=True,
    )  # fmt: skip
    return json_lines(done.stdout)


def test_percentiles_are_nearest_rank() -> None:
    samples = [float(n) for n in range(1, 1001)]
    assert percentile(samples, 50) == 500 and percentile(samples, 99.9) == 999
    assert percentile(samples, 100) == 1000 and percentile([], 50) == 0
    tally = Tally(count=2000, bytes=2000 * 1024 * 1024, latencies_us=samples)
    summary = summarize(tally, 2.0, {"sent": 2000}, "request")
    assert summary["sent"] == 2000 and summary["bytes"] == 2000 * 1024 * 1024
    assert summary["msgsPerSec"] == 1000 and summary["mibPerSec"] == 1000
    assert summary["latencyUs"] == {"p50": 500, "p90": 900, "p99": 990, "p99.9": 999, "max": 1000}


def stored_msgs(queue_id: int, offsets: range, body: bytes = b"abc") -> list[MessageExt]:
    return [MessageExt(topic="T", body=body, queue_id=queue_id, queue_offset=o,
                       store_timestamp=int(time.time() * 1000) - 5) for o in offsets]  # fmt: skip


def test_receiver_counts_each_queue_offset_once_and_stops_at_the_target() -> None:
    receiver = Receiver(target=25, deadline=None, idle=60)
    receiver.take(stored_msgs(0, range(10)))
    receiver.take(stored_msgs(0, range(5, 15)))  # 5..9 again
    receiver.take(stored_msgs(1, range(10)))  # another queue: new
    assert (receiver.tally.count, receiver.duplicates, receiver.tally.bytes) == (25, 5, 75)
    assert receiver.finished()
    receiver.take(stored_msgs(1, range(10, 20)))  # beyond the target: not counted
    assert receiver.tally.count == 25 and receiver.finished() and receiver.missing == 0
    assert min(receiver.tally.latencies_us) >= 5000  # stored 5 ms ago at least


def test_stamped_receiver_finds_duplicates_and_ignores_other_runs() -> None:
    receiver = StampedReceiver(idle=60)
    body = receiver.body(32)
    other = StampedReceiver(idle=60).body(32)
    msgs = [MessageExt(topic="T", body=body(n)) for n in (0, 1, 2, 5000, 1, 2)]
    receiver.take([*msgs, MessageExt(topic="T", body=other(3)), MessageExt(topic="T", body=b"x")])
    assert receiver.tally.count == 4 and receiver.duplicates == 2
    assert receiver.tally.bytes == 4 * 32 and len(receiver.tally.latencies_us) == 4
    receiver.expect(6)
    assert receiver.missing == 2


@pytest.mark.parametrize(
    ("args", "expected"),
    [(["--mode", "sync"], 300), (["--mode", "async", "--batch", "16"], 300),
     (["--mode", "oneway", "--keys"], 300)],
)  # fmt: skip
def test_sends_the_count_and_reports_it(cluster: Cluster, args: list[str], expected: int) -> None:
    topic = "Bench" + "".join(a.strip("-").title() for a in args if not a.isdigit())
    done = cluster.mq(
        "bench", "produce", "-t", topic, "--count", str(expected), "--size", "100",
        "--clients", "3", "--tags", "B", "--json", *args, check=True,
    )  # fmt: skip
    (summary,) = json_lines(done.stdout)
    assert summary["sent"] == expected and summary["failed"] == 0
    assert isinstance(summary["msgsPerSec"], float) and summary["msgsPerSec"] > 0
    latency = summary["latencyUs"]
    assert isinstance(latency, dict)
    if "oneway" in args:
        assert summary["requests"] == 0
    else:
        requests = expected // 16 + (expected % 16 > 0) if "16" in args else expected
        assert summary["requests"] == requests
        assert 0 < latency["p50"] <= latency["p99"] <= latency["max"]
    # The warm-up send plus the measured ones, every body of the asked size and tag.
    cluster_msgs: list[dict[str, object]] = []

    def all_there() -> bool:
        cluster_msgs[:] = stored(cluster, topic)
        return len(cluster_msgs) >= expected + 1

    until_sync(all_there, what=f"{expected + 1} messages in {topic}")
    assert len(cluster_msgs) == expected + 1
    assert {m["tags"] for m in cluster_msgs} == {"B"}
    assert all(len(str(m["body"])) == 100 for m in cluster_msgs)


def test_table_output_and_wrong_flags(cluster: Cluster) -> None:
    done = cluster.mq("bench", "produce", "-t", "BenchTable", "--count", "50", check=True)
    assert "msgs/s" in done.stdout and "p99.9 µs" in done.stdout
    bad = cluster.mq("bench", "produce", "--count", "5", "--duration", "1")
    assert bad.returncode == 1 and "not both" in bad.stderr
    bad = cluster.mq("bench", "produce", "--mode", "oneway", "--batch", "4")
    assert bad.returncode == 1 and "--batch does not go with --mode oneway" in bad.stderr


def test_duration_mode_stops_by_itself(cluster: Cluster) -> None:
    done = cluster.mq("bench", "produce", "-t", "BenchDur", "--duration", "1", "--json", check=True)
    (summary,) = json_lines(done.stdout)
    assert summary["sent"] > 0 and 0.9 < summary["seconds"] < 10  # type: ignore[operator]


@pytest.mark.parametrize("command", ["produce", "consume", "e2e"])
def test_name_server_down_is_one_line_and_exit_1(cluster: Cluster, command: str) -> None:
    done = cluster.mq("bench", command, "--count", "5", "-n", "127.0.0.1:1")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error:") and len(done.stderr.strip().splitlines()) <= 2


def bench_json(cluster: Cluster, *args: str) -> dict[str, object]:
    """`mq bench ARGS --json`, which must succeed and print one object (no progress bar
    on stderr: it is not a terminal)."""
    done = cluster.mq("bench", *args, "--json", check=True)
    assert done.stderr == ""
    (summary,) = json_lines(done.stdout)
    return summary


def check_latency(summary: dict[str, object], source: str) -> None:
    latency = summary["latencyUs"]
    assert isinstance(latency, dict) and list(latency) == ["p50", "p90", "p99", "p99.9", "max"]
    assert 0 < latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["max"]
    assert summary["latencyFrom"] == source
    assert summary["msgsPerSec"] > 0 and summary["mibPerSec"] >= 0  # type: ignore[operator]


def wait_stored(cluster: Cluster, topic: str, count: int) -> list[dict[str, object]]:
    """The topic's messages once ``count`` of them are consumable."""
    msgs: list[dict[str, object]] = []

    def there() -> bool:
        msgs[:] = stored(cluster, topic)
        return len(msgs) >= count

    until_sync(there, what=f"{count} messages in {topic}")
    assert len(msgs) == count
    return msgs


def wait_route(cluster: Cluster, topic: str) -> None:
    cluster.mq("topic", "create", "-t", topic, "-q", "4", check=True)
    until_sync(lambda: cluster.mq("topic", "route", "-t", topic).returncode == 0, what="route")


def test_consume_drains_exactly_what_the_topic_holds(cluster: Cluster) -> None:
    cluster.mq("bench", "produce", "-t", "BenchDrain", "--count", "300", "--size", "100",
               "--clients", "3", "--json", check=True)  # fmt: skip
    wait_stored(cluster, "BenchDrain", 301)  # with the warm-up send
    # Twice from the first offset: one client, then three splitting the queues.
    for clients in ("1", "3"):
        summary = bench_json(
            cluster, "consume", "-t", "BenchDrain", "--clients", clients, "--pull-batch", "7"
        )
        assert summary["received"] == 301 and summary["bytes"] == 301 * 100
        assert summary["missing"] == 0 and summary["duplicates"] == 0
        check_latency(summary, "storeTimestamp")


def test_consume_backlog_sends_then_drains_exactly_those(cluster: Cluster) -> None:
    first = bench_json(cluster, "consume", "-t", "BenchBacklog", "--backlog", "500",
                       "--size", "64", "--clients", "2")  # fmt: skip
    assert first["received"] == 500 and first["bytes"] == 500 * 64
    assert first["missing"] == 0 and first["duplicates"] == 0
    check_latency(first, "storeTimestamp")
    # A second backlog on the same topic reads its own messages only.
    second = bench_json(cluster, "consume", "-t", "BenchBacklog", "--backlog", "20", "-s", "64")
    assert second["received"] == 20 and second["bytes"] == 20 * 64
    msgs = wait_stored(cluster, "BenchBacklog", 500 + 20 + 2)  # and two warm-up sends
    assert all(len(str(m["body"])) == 64 for m in msgs)


def test_consume_count_stops_there_and_missing_ones_exit_1(cluster: Cluster) -> None:
    cluster.mq("bench", "produce", "-t", "BenchCount", "--count", "40", "--size", "10",
               check=True)  # fmt: skip
    wait_stored(cluster, "BenchCount", 41)
    summary = bench_json(cluster, "consume", "-t", "BenchCount", "--count", "25")
    assert summary["received"] == 25 and summary["bytes"] == 250 and summary["missing"] == 0
    done = cluster.mq("bench", "consume", "-t", "BenchCount", "--count", "100",
                      "--idle-timeout", "0.5", "--json")  # fmt: skip
    assert done.returncode == 1 and "59 missing" in done.stderr
    (summary,) = json_lines(done.stdout)
    assert summary["received"] == 41 and summary["missing"] == 59


def test_consume_count_follows_new_messages(cluster: Cluster) -> None:
    wait_route(cluster, "BenchFollow")
    proc = cluster.spawn("bench", "consume", "-t", "BenchFollow", "--from", "last",
                         "--count", "20", "--json")  # fmt: skip
    try:
        # Keep sending until the consumer has its 20 (it may start after the first ones).
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            asyncio.run(cluster.produce("BenchFollow", 5))
            time.sleep(0.1)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    (summary,) = json_lines(out)
    assert summary["received"] == 20 and summary["missing"] == 0


def test_consume_duration_ends_and_an_empty_drain_is_an_error(cluster: Cluster) -> None:
    wait_route(cluster, "BenchQuiet")
    summary = bench_json(cluster, "consume", "-t", "BenchQuiet", "--from", "last", "-d", "1")
    assert summary["received"] == 0 and summary["missing"] == 0
    assert 0.9 < summary["seconds"] < 10  # type: ignore[operator]
    done = cluster.mq("bench", "consume", "-t", "BenchQuiet")
    assert done.returncode == 1 and "holds no messages to drain" in done.stderr
    assert "--backlog" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--count", "5", "--duration", "1"], "not both"),
     (["--from", "last"], "--from last leaves nothing to drain"),
     (["--size", "10"], "--size goes with --backlog"),
     (["--backlog", "5", "--from", "first"], "--from does not go with --backlog")],
)  # fmt: skip
def test_consume_wrong_flags(cluster: Cluster, args: list[str], message: str) -> None:
    done = cluster.mq("bench", "consume", *args)
    assert done.returncode == 1 and message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args",
    [["--clients", "3", "--consumers", "2"], ["--mode", "async", "--batch", "8"],
     ["--mode", "oneway", "--tags", "E", "--keys"]],
)  # fmt: skip
def test_e2e_receives_every_message_sent(cluster: Cluster, args: list[str]) -> None:
    topic = "BenchE2E" + "".join(a.strip("-").title() for a in args if not a.isdigit())
    summary = bench_json(cluster, "e2e", "-t", topic, "--count", "300", "--size", "64", *args)
    assert summary["sent"] == 300 and summary["failed"] == 0
    assert summary["received"] == 300 and summary["missing"] == 0
    assert summary["duplicates"] == 0 and summary["bytes"] == 300 * 64
    check_latency(summary, "send")


def test_e2e_duration_and_table(cluster: Cluster) -> None:
    summary = bench_json(cluster, "e2e", "-t", "BenchE2EDur", "--duration", "1", "--clients", "2")
    assert summary["sent"] > 0 and summary["received"] == summary["sent"]  # type: ignore[operator]
    assert summary["missing"] == 0 and summary["failed"] == 0
    done = cluster.mq("bench", "e2e", "-t", "BenchE2EDur", "--count", "30", check=True)
    assert "receive - send" in done.stdout and "p99.9 µs" in done.stdout
    assert "│   30 │      0 │       30 │       0 │" in done.stdout  # sent failed received missing


def test_rate_paces_the_sends(cluster: Cluster) -> None:
    # 40 messages at 50/s: the last one is due 0.78 s after the first.
    summary = bench_json(cluster, "e2e", "-t", "BenchRate", "--count", "40", "--rate", "50")
    assert summary["received"] == 40 and summary["seconds"] >= 0.78  # type: ignore[operator]
    summary = bench_json(cluster, "produce", "-t", "BenchRate", "--count", "40", "--rate", "50")
    assert summary["sent"] == 40 and summary["seconds"] >= 0.78  # type: ignore[operator]


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--size", "10"], "at least 24 bytes"), (["--count", "5", "--duration", "1"], "not both"),
     (["--mode", "oneway", "--batch", "4"], "--batch does not go with --mode oneway")],
)  # fmt: skip
def test_e2e_wrong_flags(cluster: Cluster, args: list[str], message: str) -> None:
    done = cluster.mq("bench", "e2e", *args)
    assert done.returncode == 1 and message in done.stderr and "Traceback" not in done.stderr


def test_two_brokers_every_queue_is_read(tmp_path_factory: pytest.TempPathFactory) -> None:
    """New topics are created on both brokers before the first send: left to
    auto-creation, the second broker's queues appeared after the consumers were placed
    and half of the messages went unread."""
    with running(tmp_path_factory.mktemp("bench2"), brokers=2) as two:
        summary = bench_json(two, "consume", "-t", "Bench2Backlog", "--backlog", "400",
                             "--clients", "3", "--size", "32")  # fmt: skip
        assert summary["received"] == 400 and summary["missing"] == 0
        summary = bench_json(two, "e2e", "-t", "Bench2E2E", "--count", "400", "--consumers", "3")
        assert summary["received"] == summary["sent"] == 400 and summary["missing"] == 0
        route = two.json("topic", "route", "-t", "Bench2E2E")
        assert isinstance(route, dict) and len(route["brokers"]) == 2


def test_progress_shows_on_a_terminal(cluster: Cluster) -> None:
    child = cluster.pty("bench", "e2e", "-t", "BenchPty", "--duration", "1.5", "--rate", "100")
    child.expect(r"[\d,]+ sent, [\d,]+ received [\d,]+/s")
    child.expect("msgs/s")  # then the table
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

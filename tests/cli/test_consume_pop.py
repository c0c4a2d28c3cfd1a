"""`mq consume --pop` (RocketMQ 5's simple consumer) and what `mq group lag` shows of a
POP group: acks, --nack redeliveries, FIFO order, messages beyond --count given back,
the interactive mode through a pseudo-terminal, and one-line errors for bad input."""

from __future__ import annotations

import io
import signal
import threading
from typing import Any

import orjson
import pexpect
import pytest
from rich.console import Console

from mqcli import tables
from mqcli.commands import group
from mqcore.client import QueueProgress
from mqcore.protocol.bodies import MessageQueue
from tests.support.cluster import Cluster, json_lines
from tests.support.polling import until_sync
from tests.support.processes import MQ


def _pop(cluster: Cluster, topic: str, group: str, *args: str, timeout: float = 30) -> list[Any]:
    done = cluster.mq(
        "consume", "-t", topic, "-g", group, "--pop", "--from", "first", "--json", *args,
        timeout=timeout, check=True,
    )  # fmt: skip
    return json_lines(done.stdout)


def _lag(cluster: Cluster, group: str) -> dict[str, Any]:
    doc = cluster.json("group", "lag", group)
    assert isinstance(doc, dict)
    return doc


def test_pop_acks_what_it_prints(cluster: Cluster) -> None:
    cluster.mq("produce", "-t", "PopAck", "-q", input="a\nb\nc\n", check=True)
    got = _pop(cluster, "PopAck", "gpa", "--no-follow")
    assert sorted(m["body"] for m in got) == ["a", "b", "c"]
    assert all(m["invisibleTime"] == 30_000 and m["popTime"] > 0 for m in got)
    assert "consumeResult" not in got[0]
    assert _pop(cluster, "PopAck", "gpa", "--no-follow") == []  # acknowledged: gone
    lag = _lag(cluster, "gpa")
    assert (lag["totalLag"], lag["totalInFlight"], lag["totalInvisible"]) == (0, 0, 0)
    table = cluster.ok("group", "lag", "gpa")
    assert "IN-FLIGHT" in table and "INVISIBLE" in table


def test_a_table_row_leaves_the_receipt_out(cluster: Cluster) -> None:
    cluster.mq("produce", "-t", "PopTable", "-q", "-p", "color=blue", input="row\n", check=True)
    done = cluster.mq("consume", "-t", "PopTable", "-g", "gpt", "--pop", "--from", "first",
                      "--no-follow", check=True)  # fmt: skip
    assert "row" in done.stdout and "color=blue" in done.stdout
    assert "POP_CK" not in done.stdout and "1ST_POP_TIME" not in done.stdout


def test_nack_brings_the_message_back_after_its_invisible_time(cluster: Cluster) -> None:
    cluster.mq("produce", "-t", "PopNack", "-q", input="again\n", check=True)
    first, back = _pop(
        cluster, "PopNack", "gpn", "--nack", "--invisible", "1s", "--count", "2", timeout=60
    )
    assert first["body"] == back["body"] == "again"
    assert first["consumeResult"] == back["consumeResult"] == "NACK"
    assert first["invisibleTime"] == 1000
    assert first["reconsumeTimes"] == 0 and back["reconsumeTimes"] >= 1


def test_count_receives_no_more_and_nacked_ones_stay_in_flight(cluster: Cluster) -> None:
    cluster.ok("topic", "create", "-t", "PopCount", "-q", "1")
    cluster.mq("produce", "-t", "PopCount", "-q", input="1\n2\n3\n4\n", check=True)
    done = cluster.mq(
        "consume", "-t", "PopCount", "-g", "gpc", "--pop", "--from", "first", "--batch", "4",
        "--count", "1", "-q", timeout=30, check=True,
    )  # fmt: skip
    assert done.stderr == "1 message(s) from PopCount; 1 acked\n"
    lag = _lag(cluster, "gpc")
    assert (lag["totalLag"], lag["totalInFlight"]) == (3, 0)  # one received, no more
    rest = _pop(cluster, "PopCount", "gpc", "--nack", "--invisible", "1h", "--count", "3")
    assert [m["body"] for m in rest] == ["2", "3", "4"]
    lag = _lag(cluster, "gpc")
    assert (lag["totalLag"], lag["totalInFlight"], lag["totalInvisible"]) == (0, 3, 3)
    listed = cluster.json("group", "list", "-l")
    assert isinstance(listed, list)
    assert {g["group"]: g["inFlight"] for g in listed}["gpc"] == 3
    assert "IN-FLIGHT" in cluster.ok("group", "list", "-l")


def test_fifo_pop_keeps_the_queue_order(cluster: Cluster) -> None:
    cluster.ok("topic", "create", "-t", "PopFifo", "-q", "1")
    cluster.mq("produce", "-t", "PopFifo", "-q", input="f1\nf2\nf3\n", check=True)
    got = _pop(cluster, "PopFifo", "gpf", "--fifo", "--batch", "1", "--count", "3")
    assert [m["body"] for m in got] == ["f1", "f2", "f3"]
    assert [m["queueOffset"] for m in got] == [0, 1, 2]


def test_interactive_ack_skip_new_invisible_time_and_quit(cluster: Cluster) -> None:
    cluster.ok("topic", "create", "-t", "PopAsk", "-q", "1")
    cluster.mq("produce", "-t", "PopAsk", "-q", input="one\ntwo\nthree\nfour\n", check=True)
    env = {**cluster.env, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm"}
    args = ["consume", "-t", "PopAsk", "-g", "gpi", "--pop", "-i", "--from", "first",
            "--batch", "2", "--invisible", "1h"]  # fmt: skip
    child = pexpect.spawn(
        MQ[0], [*MQ[1:], *args], env=env, encoding="utf-8", timeout=20, dimensions=(40, 160)
    )
    try:
        for body, answer, said in [
            ("one", "", "acked"),  # Enter acks
            ("two", "s", "skipped"),
            ("three", "i 0", "visible again now"),
            ("four", "a", "acked"),
        ]:
            child.expect(body)
            child.expect(r"ack\? ")
            if body == "two":
                child.sendline("i soon")
                child.expect("bad invisible time 'soon'")
            child.sendline(answer)
            child.expect(said)
        child.expect("three")  # back at once (through the retry topic)
        child.expect(r"ack\? ")
        child.sendline("q")  # it is given back too
        child.expect("2 acked, 1 skipped, 1 given a new invisible time, 1 given back")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0

    def only_two_in_flight() -> bool:  # "three" leaves once the revive service has it
        lag = _lag(cluster, "gpi")
        return (lag["totalInFlight"], lag["totalInvisible"]) == (1, 1)

    until_sync(only_two_in_flight, timeout=15)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--pop"], "--pop needs a consumer group"),
        (["-g", "g", "--invisible", "5s"], "--invisible goes with --pop"),
        (["-g", "g", "--pop", "--invisible", "soon"], "bad invisible time 'soon'"),
        (["-g", "g", "--pop", "--invisible", "0s"], "must be more than 0"),
        (["-g", "g", "--pop", "--sql", "a > 1"], "--sql does not go with --pop"),
        (["-g", "g", "--pop", "--pull"], "--pull does not go with --pop"),
        (["-g", "g", "--pop", "--from", "42"], "--from does not go with --pop"),
        (["-g", "g", "--pop", "-i", "--nack"], "-i answers for each message itself"),
        (["-g", "g", "--pop", "-i"], "needs a terminal"),
        (["-g", "g", "--pop", "-t", "PopNoSuchTopic"], "no route for topic PopNoSuchTopic"),
    ],
)
def test_bad_input_is_one_line(cluster: Cluster, args: list[str], said: str) -> None:
    done = cluster.mq("consume", "-t", "PopAck", *args, timeout=30)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert said in done.stderr.splitlines()[0], done.stderr


def test_batch_beyond_32_is_a_usage_error(cluster: Cluster) -> None:
    done = cluster.mq("consume", "-t", "PopAck", "-g", "g", "--pop", "--batch", "33")
    assert done.returncode == 2 and "--batch" in done.stderr


def test_following_stops_cleanly_on_sigint(cluster: Cluster) -> None:
    cluster.mq("produce", "-t", "PopStop", "-q", input="s1\ns2\n", check=True)
    proc = cluster.spawn("consume", "-t", "PopStop", "-g", "gps", "--pop", "--from", "first",
                         "--json")  # fmt: skip
    deadline = threading.Timer(20, proc.kill)  # a reader that never gets its lines
    deadline.start()
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        deadline.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert sorted(orjson.loads(x)["body"] for x in lines) == ["s1", "s2"] and out == ""
    assert "2 message(s) from PopStop; 2 acked" in err


@pytest.mark.parametrize("width", [40, 200])
def test_the_lag_table_keeps_in_flight_on_a_narrow_terminal(
    width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    mq = MessageQueue("Orders", "broker-a", 0)
    rows = [QueueProgress(mq, 100, 90, 1_796_000_000_000, in_flight=7, invisible=5)]
    doc = group._lag_json("workers", rows, 1_796_000_003_000)
    assert (doc["totalInFlight"], doc["totalInvisible"]) == (7, 5)
    out = io.StringIO()
    terminal = Console(file=out, width=width, color_system=None, force_terminal=True)
    monkeypatch.setattr(tables, "console", terminal)
    tables.print_table(group.lag_table("workers", rows, doc, 1_796_000_003_000), "table")
    text = " ".join(out.getvalue().split())
    assert "7 in flight" in text and "IN-" in text  # the header may break at its hyphen
    if width < 60:  # INVISIBLE gives way (after the offsets and the age), IN-FLIGHT stays
        assert "AGE, INVISIBLE hidden" in text
    else:
        assert "INVISIBLE" in text and "hidden" not in text

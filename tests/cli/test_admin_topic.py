"""`mq topic create|update|delete|list|route|status` against a real name server and broker.

Each test makes its own topics: under xdist the tests of a module may run in different
workers, each with its own cluster."""

from __future__ import annotations

import asyncio
import re
import select
import subprocess
import sys
import time
from typing import Any

import orjson
import pexpect
import pytest

from mqcore.client import Admin, TopicRouteNotFoundError
from tests.support.cluster import Cluster
from tests.support.polling import until_sync
from tests.support.processes import stop_process


def _ns_route(s: Cluster, topic: str) -> Any:
    async def go() -> Any:
        async with Admin(s.namesrv, instance_name="route-check") as admin:
            return await admin.topic_route(topic)

    return asyncio.run(go())


def test_create_shows_in_list_route_status_and_the_name_server(cluster: Cluster) -> None:
    out = cluster.ok("topic", "create", "-t", "Orders", "-q", "4")
    assert "created topic Orders on broker-a: 4 read / 4 write queues, perm RW-" in out

    route = _ns_route(cluster, "Orders")
    assert [
        (q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas
    ] == [("broker-a", 4, 4, 6)]

    listed = cluster.json("topic", "list")
    assert {"topic": "Orders", "kind": "normal"} in listed
    assert all(t["kind"] == "normal" for t in listed)  # system topics hidden by default
    everything = cluster.json("topic", "list", "--all", "--long")
    kinds = {t["topic"]: t for t in everything}
    assert kinds["TBW102"]["kind"] == "system" and kinds["broker-a"]["kind"] == "system"
    assert kinds["Orders"]["readQueueNums"] == 4 and kinds["Orders"]["perm"] == "RW-"
    assert "Orders" in cluster.ok("topic", "list")

    doc = cluster.json("topic", "route", "-t", "Orders")
    assert doc["brokers"] == [
        {
            "broker": "broker-a",
            "cluster": "DefaultCluster",
            "master": cluster.broker,
            "slaves": [],
            "readQueueNums": 4,
            "writeQueueNums": 4,
            "perm": 6,
            "permText": "RW-",
        }
    ]
    table = cluster.ok("topic", "route", "-t", "Orders")
    assert "READ-QUEUES" in table and cluster.broker in table and "RW-" in table

    asyncio.run(cluster.produce("Orders", 6))
    status = cluster.json("topic", "status", "-t", "Orders")
    assert status["total"] == 6
    assert [q["queueId"] for q in status["queues"]] == [0, 1, 2, 3]
    assert sum(q["maxOffset"] - q["minOffset"] for q in status["queues"]) == 6
    done = cluster.mq("topic", "status", "-t", "Orders", check=True)
    assert "6 messages held" in done.stderr and "MAX-OFFSET" in done.stdout


def test_topic_commands_take_the_topic_as_group_commands_take_the_group(
    cluster: Cluster,
) -> None:
    """TOPIC positional everywhere, -t still accepted; both at once must agree."""
    cluster.ok("topic", "create", "Positional", "-q", "2")
    asyncio.run(cluster.produce("Positional", 3))
    by_arg: Any = cluster.json("topic", "status", "Positional")
    by_opt: Any = cluster.json("topic", "status", "-t", "Positional")
    assert by_arg["topic"] == by_opt["topic"] == "Positional"
    assert by_arg["total"] == by_opt["total"] == 3
    assert cluster.json("topic", "route", "Positional") == cluster.json(
        "topic", "route", "-t", "Positional"
    )
    assert cluster.json("topic", "status", "Positional", "-t", "Positional")["total"] == 3
    clash = cluster.mq("topic", "status", "Positional", "-t", "Other")
    assert clash.returncode == 2 and "two topics given" in clash.stderr
    cluster.ok("topic", "update", "Positional", "--perm", "R")
    assert cluster.json("topic", "route", "Positional")["brokers"][0]["permText"] == "R--"
    cluster.ok("topic", "delete", "Positional", "--yes")
    assert cluster.mq("topic", "route", "Positional").returncode == 1


def test_create_takes_many_topics_in_one_command(cluster: Cluster) -> None:
    """One UPDATE_AND_CREATE_TOPIC_LIST per broker; -t adds one more, repeats count once."""
    out = cluster.ok(
        "topic", "create", "ManyA", "ManyB", "ManyC", "ManyA", "-t", "ManyD", "-q", "3"
    )
    assert "created 4 topics on broker-a: 3 read / 3 write queues, perm RW-" in out
    for topic in ("ManyA", "ManyB", "ManyC", "ManyD"):
        q = _ns_route(cluster, topic).queue_datas[0]
        assert (q.broker_name, q.read_queue_nums, q.write_queue_nums) == ("broker-a", 3, 3)
    bad = cluster.mq("topic", "create", "Fine", "not fine")
    assert bad.returncode != 0 and "not fine" in bad.stderr


def test_update_changes_only_what_is_given_then_delete(cluster: Cluster) -> None:
    cluster.ok("topic", "create", "-t", "Changing", "-q", "2")
    out = cluster.ok("topic", "update", "-t", "Changing", "-w", "6", "-r", "6")
    assert "6 read / 6 write queues, perm RW-" in out
    out = cluster.ok("topic", "update", "-t", "Changing", "--perm", "R")
    assert "6 read / 6 write queues, perm R--" in out
    q = _ns_route(cluster, "Changing").queue_datas[0]
    assert (q.read_queue_nums, q.write_queue_nums, q.perm) == (6, 6, 4)

    refused = cluster.mq("topic", "delete", "-t", "Changing", input="n\n")
    assert refused.returncode == 1 and "not deleted" in refused.stderr
    assert _ns_route(cluster, "Changing").queue_datas

    out = cluster.ok("topic", "delete", "-t", "Changing", "--yes")
    assert "deleted topic Changing" in out

    def gone() -> bool:
        try:
            _ns_route(cluster, "Changing")
        except TopicRouteNotFoundError:
            return True
        return False

    until_sync(gone, timeout=10, what="the route to disappear")
    assert "Changing" not in {t["topic"] for t in cluster.json("topic", "list", "--all")}


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (("topic", "status", "-t", "NoSuchTopic"), "no route for topic NoSuchTopic"),
        (("topic", "route", "-t", "NoSuchTopic"), "no route for topic NoSuchTopic"),
        (("topic", "update", "-t", "NoSuchTopic", "-q", "2"), "topic NoSuchTopic does not exist"),
        (("topic", "delete", "-t", "NoSuchTopic", "--yes"), "topic NoSuchTopic does not exist"),
        (("topic", "list", "-n", "127.0.0.1:1"), "unreachable"),
        (("topic", "update", "-t", "Orders"), "nothing to change"),
    ],
)
def test_wrong_input_is_one_clear_line(
    cluster: Cluster, args: tuple[str, ...], expect: str
) -> None:
    done = cluster.mq(*args)
    assert done.returncode == 1
    assert expect in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0].startswith("error:")


@pytest.mark.parametrize(
    "args",
    [
        ("topic", "create", "-t", "X", "--perm", "Q"),
        ("topic", "create", "-t", "X", "-q", "0"),
        ("topic", "list", "--bogus"),
        ("topic", "status"),
    ],
)
def test_bad_flags_exit_2_without_traceback(cluster: Cluster, args: tuple[str, ...]) -> None:
    done = cluster.mq(*args)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


def test_status_watch_refreshes_until_ctrl_c(cluster: Cluster) -> None:
    cluster.ok("topic", "create", "-t", "Watched", "-q", "1")
    child = cluster.pty("topic", "status", "-t", "Watched", "--watch", "1")
    try:
        child.expect("Status of Watched · 0 messages held")
        asyncio.run(cluster.produce("Watched", 2))
        child.expect("Status of Watched · 2 messages held")
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 130 or child.signalstatus is not None


def test_piped_watch_prints_plain_samples_one_line_per_queue(cluster: Cluster) -> None:
    """--watch into a pipe: a time line, then the plain header and rows, every sample;
    no screen clearing, no box, the store time whole on its row at 80 columns."""
    cluster.ok("topic", "create", "WatchedPipe", "-q", "2")
    asyncio.run(cluster.produce("WatchedPipe", 2))
    env = {**cluster.env, "COLUMNS": "80"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqcli.main", "topic", "status", "WatchedPipe", "--watch", "0.3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        while sum(x.startswith("BROKER") for x in lines) < 2 and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                line = proc.stdout.readline()
                if not line:
                    break
                lines.append(line.rstrip("\n"))
    finally:
        stop_process(proc, timeout=10)
    text = "\n".join(lines)
    assert sum(x.startswith("BROKER") for x in lines) >= 2, text
    assert "\x1b" not in text and "│" not in text and "…" not in text
    first = lines.index(next(x for x in lines if x.startswith("BROKER")))
    assert re.match(r"\d{2}:\d{2}:\d{2} · every 0.3s", lines[first - 1]), text
    rows = lines[first + 1 : first + 3]
    assert [r.split()[:2] for r in rows] == [["broker-a", "0"], ["broker-a", "1"]], text
    assert all(re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$", r) for r in rows)


def test_topic_names_complete_from_the_name_server(cluster: Cluster) -> None:
    cluster.ok("topic", "create", "-t", "Completed", "-q", "1")
    env = {
        **cluster.env,
        "_MQ_COMPLETE": "complete_bash",
        "COMP_WORDS": "mq topic status -t Compl",
        "COMP_CWORD": "4",
    }
    code = "import sys; sys.argv[0] = 'mq'; from mqcli.main import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=20
    )
    assert done.stdout.split() == ["Completed"]
    positional = {**env, "COMP_WORDS": "mq topic status Compl", "COMP_CWORD": "3"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=positional, capture_output=True, text=True, timeout=20
    )
    assert done.stdout.split() == ["Completed"]  # TOPIC completes as -t does
    env["MQ_NAMESRV_ADDR"] = "127.0.0.1:1"  # name server down: nothing, silently
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=20
    )
    assert done.returncode == 0 and done.stdout.strip() == ""
    assert "Traceback" not in done.stderr


def test_read_commands_take_format_table_wide_json(cluster: Cluster) -> None:
    cluster.ok("topic", "create", "-t", "FormatsTopicWithALongName")
    route = ("topic", "route", "-t", "FormatsTopicWithALongName")
    narrow = cluster.mq(*route, "-o", "table", columns=80, check=True).stdout
    wide = cluster.mq(*route, "-o", "wide", columns=80, check=True).stdout
    assert cluster.broker in narrow and all(len(x) <= 80 for x in narrow.splitlines())
    piped = cluster.mq(*route, columns=80, check=True).stdout
    assert "FormatsTopicWithALongName" not in piped  # the title is on stderr in a pipe
    assert cluster.broker in piped and "…" not in piped and "│" not in piped
    assert cluster.broker in wide and "…" not in wide and "WRITE-QUEUES" in wide
    assert cluster.json(*route) == orjson.loads(cluster.ok(*route, "-o", "json"))
    listed = cluster.mq("topic", "list", "-o", "wide", columns=80, check=True).stdout
    assert "FormatsTopicWithALongName" in listed and "BROKERS" in listed  # wide implies -l
    assert "…" not in listed
    status = ("topic", "status", "-t", "FormatsTopicWithALongName")
    wide_status = cluster.mq(*status, "--format", "wide", columns=40, check=True).stdout
    assert "LAST-UPDATED" in wide_status and "…" not in wide_status
    assert orjson.loads(cluster.ok(*status, "-o", "json"))["topic"] == route[-1]

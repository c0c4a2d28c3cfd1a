"""`mq broker consume-stats|query-cq|producers|stats|clean-expired-cq|clean-unused-topic|
delete-expired-commitlog|wipe-write-perm|add-write-perm`, `mq group clone-offsets` and
`mq kv` against a real name server and broker."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from mqcore.client import Admin, Producer, make_message
from tests.support.cluster import Cluster, running


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(tmp_path_factory.mktemp("broker-admin")) as s:
        s.ok("topic", "create", "-t", "Units", "-q", "2")
        asyncio.run(s.produce("Units", 6))
        yield s


def test_consume_stats_shows_each_group_and_filters_by_lag(servers: Cluster) -> None:
    consumed = asyncio.run(servers.consume("Units", "cs-group", 2))
    docs: Any = servers.json("broker", "consume-stats")
    assert [d["brokerAddr"] for d in docs] == [servers.broker]
    mine = [q for q in docs[0]["queues"] if q["group"] == "cs-group"]
    assert sorted(q["queueId"] for q in mine) == [0, 1]
    assert sum(q["brokerOffset"] for q in mine) == 6
    assert sum(q["lag"] for q in mine) == 6 - consumed
    assert all(q["lag"] == q["brokerOffset"] - q["consumerOffset"] for q in mine)
    behind = servers.json("broker", "consume-stats", "-b", "broker-a", "--min-lag", "1")
    assert all(q["lag"] >= 1 for q in behind[0]["queues"])  # type: ignore[index]
    text = servers.ok("broker", "consume-stats", servers.broker)
    assert "CONSUMER-OFFSET" in text and "cs-group" in text and "LAG" in text
    done = servers.mq("broker", "consume-stats", "-b", "nope")
    assert done.returncode == 1 and "no master for broker 'nope'" in done.stderr


def test_query_cq_lists_units_and_a_remark_past_the_end(servers: Cluster) -> None:
    docs: Any = servers.json("broker", "query-cq", "-t", "Units", "-q", "0", "-C", "2")
    assert len(docs) == 1 and docs[0]["brokerName"] == "broker-a"
    units = docs[0]["queueData"]
    assert [u["index"] for u in units] == [0, 1]
    assert units[0]["physicOffset"] < units[1]["physicOffset"]
    assert all(u["physicSize"] > 0 for u in units)
    assert docs[0]["maxQueueIndex"] >= 2
    text = servers.ok("broker", "query-cq", "-t", "Units", "-q", "0", "-i", "1", "-C", "1")
    assert "PHYSIC-OFFSET" in text and str(units[1]["physicOffset"]) in text
    text = servers.ok("broker", "query-cq", "-t", "Units", "-q", "0", "-i", "999")
    assert "Index 999 of 0@Units is not exist!" in text


def test_producers_lists_a_connected_producer(servers: Cluster) -> None:
    async def with_producer() -> Any:
        async with Producer("cli-prod-group", namesrv=servers.namesrv) as producer:
            await producer.send(make_message("Units", "x"))  # learns the broker, heartbeats
            async with Admin(servers.namesrv) as admin:
                loop = asyncio.get_running_loop()
                deadline = loop.time() + 20
                while "cli-prod-group" not in (await admin.producer_table(servers.broker)).data:
                    assert loop.time() < deadline, "the producer never showed up"
                    await asyncio.sleep(0.1)
            return await asyncio.to_thread(servers.json, "broker", "producers")

    rows = asyncio.run(with_producer())
    mine = [r for r in rows if r["group"] == "cli-prod-group"]
    assert mine and mine[0]["broker"] == "broker-a" and mine[0]["remoteIP"].startswith("/")
    text = servers.ok("broker", "producers")
    assert "CLIENT-ID" in text and "LAST-HEARTBEAT" in text


def test_housekeeping_commands_ask_first_and_report(servers: Cluster) -> None:
    declined = servers.mq("broker", "clean-expired-cq", input="n\n")
    assert declined.returncode == 1 and "nothing done" in declined.stderr
    for command in ("clean-expired-cq", "clean-unused-topic", "delete-expired-commitlog"):
        out = servers.ok("broker", command, "-y")
        assert "on 1 broker(s): broker-a" in out, out
    # nothing the topic table knows was removed
    doc: Any = servers.json("broker", "query-cq", "-t", "Units", "-q", "1", "-C", "1")
    assert doc[0]["queueData"]


def test_stats_shows_puts_and_a_groups_gets(servers: Cluster) -> None:
    got = asyncio.run(servers.consume("Units", "stats-group", 6))
    rows: Any = servers.json("broker", "stats", "-t", "Units")
    assert [r["brokerName"] for r in rows] == ["broker-a"]
    day = rows[0]["nums"]["statsDay"]
    assert day["sum"] >= 6 and rows[0]["size"]["statsDay"]["sum"] > day["sum"]
    rows = servers.json("broker", "stats", "-t", "Units", "-g", "stats-group")
    assert rows[0]["key"] == "Units@stats-group"
    # the broker counts what it handed out (prefetched too), never more than was put
    assert got <= rows[0]["nums"]["statsDay"]["sum"] <= day["sum"]
    rows = servers.json("broker", "stats", "-t", "Units", "-g", "never-pulled")
    assert rows[0]["nums"] is None and rows[0]["size"] is None
    text = servers.ok("broker", "stats", "-t", "Units")
    assert "MSG/S" in text and "day" in text and "hour" in text and "minute" in text


def test_clone_offsets_copies_a_groups_offsets(servers: Cluster) -> None:
    asyncio.run(servers.consume("Units", "clone-src", 4))

    def offsets(group: str) -> dict[int, int]:
        doc: Any = servers.json("group", "lag", group, "-t", "Units")
        return {q["queueId"]: q["consumerOffset"] for q in doc["queues"]}

    out = servers.ok("group", "clone-offsets", "clone-src", "clone-dst", "-t", "Units")
    assert "cloned offsets of clone-src to clone-dst (topic Units) on 1 broker(s)" in out
    copied = offsets("clone-dst")
    assert copied == offsets("clone-src") and sum(copied.values()) >= 4
    done = servers.mq("group", "clone-offsets", "clone-src", "bad name!")
    assert done.returncode == 1 and "bad group name" in done.stderr


def test_kv_set_get_list_delete(servers: Cluster) -> None:
    assert "set ORDER_TOPIC_CONFIG Units = broker-a:2" in servers.ok(
        "kv", "set", "ORDER_TOPIC_CONFIG", "Units", "broker-a:2"
    )
    assert servers.ok("kv", "get", "ORDER_TOPIC_CONFIG", "Units").strip() == "broker-a:2"
    assert servers.json("kv", "list", "ORDER_TOPIC_CONFIG") == {"Units": "broker-a:2"}
    assert "broker-a:2" in servers.ok("kv", "list", "ORDER_TOPIC_CONFIG")
    servers.ok("kv", "delete", "ORDER_TOPIC_CONFIG", "Units", "-y")
    done = servers.mq("kv", "get", "ORDER_TOPIC_CONFIG", "Units")
    assert done.returncode == 1 and "no value for ORDER_TOPIC_CONFIG Units" in done.stderr


def test_wipe_and_add_write_perm(servers: Cluster) -> None:
    def writable() -> bool:
        doc: Any = servers.json("topic", "route", "-t", "Units")
        return all(b["perm"] & 2 for b in doc["brokers"])  # PermName.WRITE

    try:
        out = servers.ok("broker", "wipe-write-perm", "broker-a", "-y")
        assert f"wiped write perm of broker broker-a on name server {servers.namesrv}" in out
        assert not writable()
    finally:
        out = servers.ok("broker", "add-write-perm", "broker-a")
    assert f"added write perm of broker broker-a on name server {servers.namesrv}" in out
    assert writable()
    done = servers.mq("broker", "wipe-write-perm", "no-such-broker", "-y")
    assert done.returncode == 1 and "no name server knows a broker named" in done.stderr

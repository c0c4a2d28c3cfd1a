"""`mq broker consume-stats|query-cq|producers|stats|clean-expired-cq|clean-unused-topic|
delete-expired-commitlog|wipe-write-perm|add-write-perm`, `mq group clone-offsets` and
`mq kv` against a real name server and broker."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mqcore.client import Admin, Producer, make_message
from tests.support.cluster import Cluster


@pytest.fixture(scope="module", autouse=True)
def _seeded(cluster: Cluster) -> None:
    cluster.ok("topic", "create", "-t", "Units", "-q", "2")
    asyncio.run(cluster.produce("Units", 6))


def test_consume_stats_shows_each_group_and_filters_by_lag(cluster: Cluster) -> None:
    consumed = asyncio.run(cluster.consume("Units", "cs-group", 2))
    docs: Any = cluster.json("broker", "consume-stats")
    assert [d["brokerAddr"] for d in docs] == [cluster.broker]
    mine = [q for q in docs[0]["queues"] if q["group"] == "cs-group"]
    assert sorted(q["queueId"] for q in mine) == [0, 1]
    assert sum(q["brokerOffset"] for q in mine) == 6
    assert sum(q["lag"] for q in mine) == 6 - consumed
    assert all(q["lag"] == q["brokerOffset"] - q["consumerOffset"] for q in mine)
    behind = cluster.json("broker", "consume-stats", "-b", "broker-a", "--min-lag", "1")
    assert all(q["lag"] >= 1 for q in behind[0]["queues"])  # type: ignore[index]
    text = cluster.ok("broker", "consume-stats", cluster.broker)
    assert "CONSUMER-OFFSET" in text and "cs-group" in text and "LAG" in text
    done = cluster.mq("broker", "consume-stats", "-b", "nope")
    assert done.returncode == 1 and "no master for broker 'nope'" in done.stderr


def test_query_cq_lists_units_and_a_remark_past_the_end(cluster: Cluster) -> None:
    docs: Any = cluster.json("broker", "query-cq", "-t", "Units", "-q", "0", "-C", "2")
    assert len(docs) == 1 and docs[0]["brokerName"] == "broker-a"
    units = docs[0]["queueData"]
    assert [u["index"] for u in units] == [0, 1]
    assert units[0]["physicOffset"] < units[1]["physicOffset"]
    assert all(u["physicSize"] > 0 for u in units)
    assert docs[0]["maxQueueIndex"] >= 2
    text = cluster.ok("broker", "query-cq", "-t", "Units", "-q", "0", "-i", "1", "-C", "1")
    assert "PHYSIC-OFFSET" in text and str(units[1]["physicOffset"]) in text
    text = cluster.ok("broker", "query-cq", "-t", "Units", "-q", "0", "-i", "999")
    assert "Index 999 of 0@Units is not exist!" in text


def test_producers_lists_a_connected_producer(cluster: Cluster) -> None:
    async def with_producer() -> Any:
        async with Producer("cli-prod-group", namesrv=cluster.namesrv) as producer:
            await producer.send(make_message("Units", "x"))  # learns the broker, heartbeats
            async with Admin(cluster.namesrv) as admin:
                loop = asyncio.get_running_loop()
                deadline = loop.time() + 20
                while "cli-prod-group" not in (await admin.producer_table(cluster.broker)).data:
                    assert loop.time() < deadline, "the producer never showed up"
                    await asyncio.sleep(0.1)
            return await asyncio.to_thread(cluster.json, "broker", "producers")

    rows = asyncio.run(with_producer())
    mine = [r for r in rows if r["group"] == "cli-prod-group"]
    assert mine and mine[0]["broker"] == "broker-a" and mine[0]["remoteIP"].startswith("/")
    text = cluster.ok("broker", "producers")
    assert "CLIENT-ID" in text and "LAST-HEARTBEAT" in text


def test_housekeeping_commands_ask_first_and_report(cluster: Cluster) -> None:
    declined = cluster.mq("broker", "clean-expired-cq", input="n\n")
    assert declined.returncode == 1 and "nothing done" in declined.stderr
    for command in ("clean-expired-cq", "clean-unused-topic", "delete-expired-commitlog"):
        out = cluster.ok("broker", command, "-y")
        assert "on 1 broker(s): broker-a" in out, out
    # nothing the topic table knows was removed
    doc: Any = cluster.json("broker", "query-cq", "-t", "Units", "-q", "1", "-C", "1")
    assert doc[0]["queueData"]


def test_stats_shows_puts_and_a_groups_gets(cluster: Cluster) -> None:
    got = asyncio.run(cluster.consume("Units", "stats-group", 6))
    rows: Any = cluster.json("broker", "stats", "-t", "Units")
    assert [r["brokerName"] for r in rows] == ["broker-a"]
    day = rows[0]["nums"]["statsDay"]
    assert day["sum"] >= 6 and rows[0]["size"]["statsDay"]["sum"] > day["sum"]
    rows = cluster.json("broker", "stats", "-t", "Units", "-g", "stats-group")
    assert rows[0]["key"] == "Units@stats-group"
    # the broker counts what it handed out (prefetched too), never more than was put
    assert got <= rows[0]["nums"]["statsDay"]["sum"] <= day["sum"]
    rows = cluster.json("broker", "stats", "-t", "Units", "-g", "never-pulled")
    assert rows[0]["nums"] is None and rows[0]["size"] is None
    text = cluster.ok("broker", "stats", "-t", "Units")
    assert "MSG/S" in text and "day" in text and "hour" in text and "minute" in text


def test_clone_offsets_copies_a_groups_offsets(cluster: Cluster) -> None:
    asyncio.run(cluster.consume("Units", "clone-src", 4))

    def offsets(group: str) -> dict[int, int]:
        doc: Any = cluster.json("group", "lag", group, "-t", "Units")
        return {q["queueId"]: q["consumerOffset"] for q in doc["queues"]}

    out = cluster.ok("group", "clone-offsets", "clone-src", "clone-dst", "-t", "Units")
    assert "cloned offsets of clone-src to clone-dst (topic Units) on 1 broker(s)" in out
    copied = offsets("clone-dst")
    assert copied == offsets("clone-src") and sum(copied.values()) >= 4
    done = cluster.mq("group", "clone-offsets", "clone-src", "bad name!")
    assert done.returncode == 1 and "bad group name" in done.stderr


def test_kv_set_get_list_delete(cluster: Cluster) -> None:
    assert "set ORDER_TOPIC_CONFIG Units = broker-a:2" in cluster.ok(
        "kv", "set", "ORDER_TOPIC_CONFIG", "Units", "broker-a:2"
    )
    assert cluster.ok("kv", "get", "ORDER_TOPIC_CONFIG", "Units").strip() == "broker-a:2"
    assert cluster.json("kv", "list", "ORDER_TOPIC_CONFIG") == {"Units": "broker-a:2"}
    assert "broker-a:2" in cluster.ok("kv", "list", "ORDER_TOPIC_CONFIG")
    cluster.ok("kv", "delete", "ORDER_TOPIC_CONFIG", "Units", "-y")
    done = cluster.mq("kv", "get", "ORDER_TOPIC_CONFIG", "Units")
    assert done.returncode == 1 and "no value for ORDER_TOPIC_CONFIG Units" in done.stderr


def test_wipe_and_add_write_perm(cluster: Cluster) -> None:
    def writable() -> bool:
        doc: Any = cluster.json("topic", "route", "-t", "Units")
        return all(b["perm"] & 2 for b in doc["brokers"])  # PermName.WRITE

    try:
        out = cluster.ok("broker", "wipe-write-perm", "broker-a", "-y")
        assert f"wiped write perm of broker broker-a on name server {cluster.namesrv}" in out
        assert not writable()
    finally:
        out = cluster.ok("broker", "add-write-perm", "broker-a")
    assert f"added write perm of broker broker-a on name server {cluster.namesrv}" in out
    assert writable()
    done = cluster.mq("broker", "wipe-write-perm", "no-such-broker", "-y")
    assert done.returncode == 1 and "no name server knows a broker named" in done.stderr

"""Admin end to end against an in-process name server and two brokers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from mqcore.client import Admin, Producer, make_message
from mqcore.client.admin import END_OF_TIME
from mqcore.client.errors import TopicRouteNotFoundError
from mqcore.errors import MQBrokerError
from mqcore.protocol import ResponseCode
from tests.support import until
from tests.support.inproc import LiveCluster

pytestmark = [pytest.mark.timeout(60), pytest.mark.cluster(brokers=("broker-a", "broker-b"))]


@pytest.fixture
async def admin(cluster: LiveCluster) -> AsyncIterator[Admin]:
    async with Admin(cluster.addr) as a:
        yield a


async def send(cluster: LiveCluster, topic: str, n: int, key: str = "k") -> list[str]:
    ids = []
    async with Producer("apg", namesrv=cluster.addr) as p:
        for i in range(n):
            result = await p.send(make_message(topic, f"m{i}", keys=[key, f"k{i}"], tags="T"))
            ids.append(result.offset_msg_id)
    return ids


async def test_topics_cluster_and_broker_stats(cluster: LiveCluster, admin: Admin) -> None:
    assert await admin.create_topic("Stats", queues=3) == ["broker-a", "broker-b"]
    await cluster.wait_route("Stats", brokers=2)
    route = await admin.topic_route("Stats")
    assert sorted((q.broker_name, q.write_queue_nums) for q in route.queue_datas) == [
        ("broker-a", 3),
        ("broker-b", 3),
    ]
    await send(cluster, "Stats", 12)
    status = await admin.topic_status("Stats")
    assert len(status) == 6 and sum(s.count for s in status) == 12
    assert [s.mq.broker_name for s in status] == ["broker-a"] * 3 + ["broker-b"] * 3
    assert all(s.last_update_timestamp > 0 for s in status if s.max_offset)
    assert "Stats" in await admin.topic_list()

    info = await admin.cluster_info()
    assert info.cluster_addr_table["DefaultCluster"] == {"broker-a", "broker-b"}
    masters = await admin.master_addrs()
    runtime = await admin.broker_runtime_info(masters["broker-a"])
    assert runtime["brokerVersionDesc"] and int(runtime["msgPutTotalTodayNow"]) >= 1

    await admin.delete_topic("Stats")
    with pytest.raises(TopicRouteNotFoundError):
        await admin.topic_route("Stats")


async def test_groups_progress_and_resets(cluster: LiveCluster, admin: Admin) -> None:
    await admin.create_topic("Prog", queues=2)
    await cluster.wait_route("Prog", brokers=2)
    await send(cluster, "Prog", 20)
    await admin.create_subscription_group("g1")
    assert "g1" in await admin.subscription_groups()

    api = admin.instance.api
    queues = await admin.instance.subscribe_queues("Prog", refresh=True)
    status = {s.mq: s for s in await admin.topic_status("Prog")}
    for mq in queues:  # consumed everything but one message per queue
        await api.update_consumer_offset("g1", mq, max(0, status[mq].max_offset - 1), oneway=False)
    progress = await admin.consume_progress("g1", "Prog", with_age=True)
    assert [p.mq for p in progress] == sorted(queues)
    lagging = [p for p in progress if status[p.mq].max_offset]
    assert all(p.lag == 1 for p in lagging)
    assert sum(p.lag for p in progress) == len(lagging)
    now = int(time.time() * 1000)
    assert all(0 <= p.age_ms(now) < 60_000 and p.first_unconsumed_ts for p in lagging)
    assert "g1" in await admin.groups_of_topic("Prog")

    plan = await admin.plan_reset("g1", "Prog", to_begin=True)
    assert all(
        r.new_offset == 0 and r.old_offset == max(0, status[r.mq].max_offset - 1) for r in plan
    )
    await admin.apply_reset("g1", plan)
    assert sum(p.lag for p in await admin.consume_progress("g1", "Prog")) == 20
    offsets = await admin.reset_offset_by_time("g1", "Prog", -1)  # offline: to the end
    assert offsets == {s.mq: s.max_offset for s in status.values()}
    assert sum(p.lag for p in await admin.consume_progress("g1", "Prog")) == 0
    to_five = await admin.plan_reset("g1", "Prog", to_offset=5)
    assert all(r.new_offset == min(5, status[r.mq].max_offset) for r in to_five)

    with pytest.raises(MQBrokerError) as err:
        await admin.consumer_connections("g1")
    assert err.value.code == ResponseCode.CONSUMER_NOT_ONLINE
    await admin.delete_subscription_group("g1")
    assert "g1" not in await admin.subscription_groups()


async def test_query_messages_by_key_unique_key_and_id(cluster: LiveCluster, admin: Admin) -> None:
    await admin.create_topic("Query", queues=2)
    await cluster.wait_route("Query", brokers=2)
    ids = await send(cluster, "Query", 30, key="shared")
    found = await admin.query_by_key("Query", "shared", max_num=25)
    assert len(found) == 25  # capped across both brokers
    assert len({m.store_host for m in await admin.query_by_key("Query", "shared")}) == 2
    one = await admin.query_by_key("Query", "k7")
    assert [m.body for m in one] == [b"m7"]  # "k7" does not match k17 or k27
    assert await admin.query_by_key("Query", "absent") == []

    viewed = await admin.view_message(ids[3])
    assert viewed.body == b"m3" and viewed.msg_id == ids[3]
    by_uniq = await admin.query_by_unique_key("Query", viewed.unique_key or "")
    assert [m.body for m in by_uniq] == [b"m3"]
    assert (await admin.find_message(viewed.unique_key or "", "Query")).body == b"m3"


async def _clock_past(ms: int) -> int:
    """Wait for the wall clock to pass ``ms`` (store times are ms); returns the new now."""
    while (now := int(time.time() * 1000)) <= ms:
        await asyncio.sleep(0.001)
    return now


async def test_query_by_time_keeps_every_message_of_a_shared_millisecond(
    cluster: LiveCluster, admin: Admin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several messages of one queue stored in the window's first and last millisecond
    are all found (asking the brokers for the window's own edges used to stop at the
    first message of the last millisecond)."""
    await admin.create_topic("SameMs", queues=2)
    await cluster.wait_route("SameMs", brokers=2)
    stamp = [1_800_000_000_000]
    monkeypatch.setattr("mqcore.store.message_store._now_ms", lambda: stamp[0])
    async with Producer("apg", namesrv=cluster.addr) as p:
        for tag, at in (("before", 999), ("in", 1000), ("edge", 1005), ("after", 1006)):
            stamp[0] = 1_800_000_000_000 + at
            for i in range(8):  # two per queue
                await p.send(make_message("SameMs", f"{tag}{i}"))

    async def all_dispatched() -> bool:
        return sum(q.max_offset for q in await admin.topic_status("SameMs")) == 32

    await until(all_dispatched, 10, "the 32 messages in the consume queues")
    found = await admin.query_by_time("SameMs", 1_800_000_001_000, 1_800_000_001_005)
    assert sorted(m.body for m in found) == sorted(
        f"{tag}{i}".encode() for tag in ("in", "edge") for i in range(8)
    )


async def test_query_by_time_takes_only_the_window(cluster: LiveCluster, admin: Admin) -> None:
    await admin.create_topic("Timed", queues=2)
    await cluster.wait_route("Timed", brokers=2)
    async with Producer("apg", namesrv=cluster.addr) as p:

        async def batch(tag: str) -> None:
            for i in range(8):  # round robin: both queues of both brokers
                await p.send(make_message("Timed", f"{tag}{i}"))

        await batch("before")
        begin = await _clock_past(int(time.time() * 1000))
        await batch("in")
        end = int(time.time() * 1000)
        await _clock_past(end)
        await batch("after")

    async def all_dispatched() -> bool:  # a query by time reads the consume queues
        return sum(q.max_offset for q in await admin.topic_status("Timed")) == 24

    await until(all_dispatched, 10, "the 24 messages in the consume queues")
    found = await admin.query_by_time("Timed", begin, end)
    assert sorted(m.body for m in found) == sorted(f"in{i}".encode() for i in range(8))
    assert len({m.store_host for m in found}) == 2  # both brokers
    assert [m.store_timestamp for m in found] == sorted(m.store_timestamp for m in found)
    assert all(begin <= m.store_timestamp <= end for m in found)

    capped = await admin.query_by_time("Timed", begin, end, max_num=3)
    assert capped == found[:3]  # the cap is on the total, oldest first
    assert await admin.query_by_time("Timed", end + 10**6, end + 2 * 10**6) == []
    everything = await admin.query_by_time("Timed", 0, END_OF_TIME, max_num=100)
    assert len(everything) == 24

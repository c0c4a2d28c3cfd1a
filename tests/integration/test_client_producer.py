"""Producer end to end against an in-process name server and two brokers (real sockets).

Sent messages are verified by pulling them back through the api layer.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from mqcore.client import (
    Admin,
    InvalidMessageError,
    MessageExt,
    NameServerUnreachableError,
    Producer,
    SyncProducer,
    make_message,
    select_by_hash,
)
from mqcore.message.const import SysFlag
from tests.support.clients import pull_all, pull_topic
from tests.support.inproc import LiveCluster
from tests.support.polling import until

pytestmark = [pytest.mark.timeout(60), pytest.mark.cluster(brokers=("broker-a", "broker-b"))]


async def create(cluster: LiveCluster, topic: str, queues: int = 4) -> None:
    async with Admin(cluster.addr) as admin:
        await admin.create_topic(topic, queues=queues)
    await cluster.wait_route(topic, brokers=len(cluster.brokers))


async def test_sync_async_oneway_and_batch_sends_land(cluster: LiveCluster) -> None:
    await create(cluster, "Land")
    async with Producer("pg", namesrv=cluster.addr) as p:
        r1 = await p.send(
            make_message("Land", "sync", tags="TagA", keys=["k1", "k2"], properties={"p": "1"})
        )
        r2 = await p.send_async(make_message("Land", "async", tags="TagB"))
        await p.send_oneway(make_message("Land", "oneway", tags="TagC"))
        batch = await p.send_batch(
            [make_message("Land", f"b{i}", tags="TagD", keys=f"bk{i}") for i in range(20)]
        )
        assert r1.ok and r2.ok and len(batch) == 1
        assert len(batch[0].msg_id.split(",")) == 20
        got: dict[str, MessageExt] = {}

        async def oneway_landed() -> bool:
            got.clear()
            got.update({m.body.decode(): m for m in await pull_topic(p.instance.api, "Land")})
            return "oneway" in got

        await until(oneway_landed, 10, lambda: f"the one-way send: {sorted(got)}", interval=0.05)
    assert set(got) == {"sync", "async", "oneway", *(f"b{i}" for i in range(20))}
    sync = got["sync"]
    assert (sync.tags, sync.keys, sync.user_properties.get("p")) == ("TagA", ["k1", "k2"], "1")
    assert sync.unique_key == r1.msg_id and sync.msg_id == r1.offset_msg_id
    assert got["async"].tags == "TagB" and got["oneway"].tags == "TagC"
    assert got["b7"].keys == ["bk7"] and got["b7"].tags == "TagD"
    assert "MIN_OFFSET" in sync.properties and "MAX_OFFSET" in sync.properties


async def test_selector_keeps_per_key_order(cluster: LiveCluster) -> None:
    await create(cluster, "Ordered")
    async with Producer("pg", namesrv=cluster.addr) as p:
        for i in range(40):
            key = f"order-{i % 4}"
            await p.send(make_message("Ordered", f"{key}:{i}"), selector=select_by_hash, arg=key)
        api = p.instance.api
        seen: dict[str, list[int]] = {}
        queues_of: dict[str, set[object]] = {}
        for mq in await p.instance.subscribe_queues("Ordered"):
            for m in await pull_all(api, mq):
                key, n = m.body.decode().split(":")
                seen.setdefault(key, []).append(int(n))
                queues_of.setdefault(key, set()).add(mq)
    assert all(len(q) == 1 for q in queues_of.values())
    assert all(ns == sorted(ns) and len(ns) == 10 for ns in seen.values())


async def test_send_retries_on_the_other_broker_when_one_is_down(cluster: LiveCluster) -> None:
    await create(cluster, "Failover")
    async with Producer("pg", namesrv=cluster.addr) as p:
        before = await p.send(make_message("Failover", "warm-up"))
        assert before.ok
        await cluster.brokers.pop("broker-a").shutdown()
        results = [await p.send(make_message("Failover", f"m{i}")) for i in range(10)]
    assert {r.message_queue.broker_name for r in results} == {"broker-b"}


async def test_compressed_body_round_trip(cluster: LiveCluster) -> None:
    await create(cluster, "Big")
    body = (b"0123456789abcdef" * 64) * 8  # 8 KiB, compressible
    async with Producer("pg", namesrv=cluster.addr) as p:
        result = await p.send(make_message("Big", body))
        stored = await pull_all(p.instance.api, result.message_queue)
    assert stored[0].body == body
    assert stored[0].sys_flag & SysFlag.COMPRESSED_FLAG
    assert stored[0].stored_body_length < len(body)


async def test_new_topic_is_auto_created_through_tbw102(cluster: LiveCluster) -> None:
    async with Producer("pg", namesrv=cluster.addr) as p:
        result = await p.send(make_message("AutoMade", "x"))
    assert result.ok
    await cluster.wait_route("AutoMade")


async def test_bad_topic_and_dead_name_server_fail_clearly(cluster: LiveCluster) -> None:
    async with Producer("pg", namesrv=cluster.addr) as p:
        with pytest.raises(InvalidMessageError, match="illegal characters"):
            await p.send(make_message("no spaces please", "x"))
    started = time.monotonic()
    async with Producer("pg", namesrv="127.0.0.1:1") as p:
        with pytest.raises(NameServerUnreachableError, match="is `mq namesrv` running"):
            await p.send(make_message("T", "x"))
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("background", [True, False], ids=["loop-thread", "caller-loop"])
def test_sync_producer_from_plain_code(tmp_path: Path, background: bool) -> None:
    async def boot() -> LiveCluster:
        return await LiveCluster(tmp_path).start("broker-a")

    loop = asyncio.new_event_loop()
    cluster = loop.run_until_complete(boot())
    server = __import__("threading").Thread(target=loop.run_forever, daemon=True)
    server.start()
    try:
        with SyncProducer("spg", namesrv=cluster.addr, background=background) as producer:
            sends = [make_message("SyncTopic", f"m{i}", tags="S") for i in range(5)]
            results = [producer.send(m) for m in sends]
            assert all(r.ok and r.message_queue.topic == "SyncTopic" for r in results)
            assert len({r.msg_id for r in results}) == 5
    finally:
        asyncio.run_coroutine_threadsafe(cluster.stop(), loop).result(20)
        loop.call_soon_threadsafe(loop.stop)
        server.join(5)
        loop.close()

"""Producer against fake brokers in memory: what lands, retries, selectors, batches."""

from __future__ import annotations

import asyncio
import zlib

import pytest
from client_fakes import NAMESRV, InMemoryCluster

from mqcore.client.api import SendStatus
from mqcore.client.errors import BrokerUnreachableError, ClientStateError, InvalidMessageError
from mqcore.client.producer import (
    Producer,
    make_message,
    select_by_hash,
    select_fixed,
    split_batches,
)
from mqcore.errors import MQBrokerError, MQTimeoutError
from mqcore.message import decode_properties, decode_records
from mqcore.message.const import SysFlag
from mqcore.protocol import RequestCode
from mqcore.protocol.headers import decode_send_message_header

pytestmark = pytest.mark.cluster(
    brokers={
        "broker-a": ("127.0.0.1:10911", {"T": 4, "TBW102": 8}),
        "broker-b": ("127.0.0.1:10921", {"T": 4}),
    }
)


def producer(cluster: InMemoryCluster, **kw: object) -> Producer:
    return Producer("pg", namesrv=NAMESRV, client_config=cluster.config(), **kw)  # type: ignore[arg-type]


async def test_send_lands_with_tags_keys_properties_and_uniq_key(cluster: InMemoryCluster) -> None:
    async with producer(cluster) as p:
        msg = make_message(
            "T", "hello", tags="TagA", keys=["k1", "k2"], properties={"color": "red"}
        )
        result = await p.send(msg)
    assert result.status is SendStatus.SEND_OK and result.ok
    assert result.msg_id == msg.unique_key and len(result.msg_id) == 32
    broker = cluster.brokers[result.message_queue.broker_name]
    stored = broker.queues[("T", result.message_queue.queue_id)]
    assert stored[result.queue_offset].body == b"hello"
    props = decode_properties(stored[0].properties.encode())
    assert props["TAGS"] == "TagA" and props["KEYS"] == "k1 k2" and props["color"] == "red"
    assert props["UNIQ_KEY"] == result.msg_id and props["WAIT"] == "true"
    request = broker.requests[0]
    assert request.code == RequestCode.SEND_MESSAGE_V2 and request.ext_fields["c"] == "TBW102"
    assert request.language.name == "PYTHON"
    assert result.offset_msg_id.endswith(f"{stored[0].commit_log_offset:016X}")


async def test_round_robin_spreads_over_all_queues(cluster: InMemoryCluster) -> None:
    async with producer(cluster) as p:
        results = [await p.send(make_message("T", f"m{i}")) for i in range(16)]
    assert len({r.message_queue for r in results}) == 8


async def test_large_body_is_zlib_compressed_and_decodes_back(cluster: InMemoryCluster) -> None:
    body = bytes(range(256)) * 40  # 10240 bytes
    async with producer(cluster) as p:
        result = await p.send(make_message("T", body))
        small = await p.send(make_message("T", b"x" * 4095))
    b = cluster.brokers[result.message_queue.broker_name]
    stored = b.queues[("T", result.message_queue.queue_id)][result.queue_offset]
    assert stored.sys_flag == SysFlag.COMPRESSED_FLAG | SysFlag.COMPRESSION_ZLIB
    assert stored.body == zlib.compress(body, 5) and len(stored.body) < len(body)
    assert decode_records(stored.record)[0].body == body
    s = cluster.brokers[small.message_queue.broker_name]
    assert s.queues[("T", small.message_queue.queue_id)][small.queue_offset].sys_flag == 0


async def test_selectors_keep_order_per_key_or_globally(cluster: InMemoryCluster) -> None:
    async with producer(cluster) as p:
        by_key: dict[str, set[object]] = {}
        for i in range(30):
            key = f"order-{i % 5}"
            r = await p.send(make_message("T", f"{key}:{i}"), selector=select_by_hash, arg=key)
            by_key.setdefault(key, set()).add(r.message_queue)
        assert all(len(qs) == 1 for qs in by_key.values())
        assert len({next(iter(qs)) for qs in by_key.values()}) > 1
        fixed = [
            await p.send(make_message("T", f"g{i}"), selector=select_fixed(0)) for i in range(5)
        ]
    assert len({r.message_queue for r in fixed}) == 1
    assert [r.queue_offset for r in fixed] == sorted(r.queue_offset for r in fixed)


async def test_retry_moves_to_another_broker(cluster: InMemoryCluster) -> None:
    cluster.brokers["broker-a"].fail_code = 1  # SYSTEM_ERROR is retriable
    async with producer(cluster) as p:
        results = [await p.send(make_message("T", f"m{i}")) for i in range(6)]
    assert {r.message_queue.broker_name for r in results} == {"broker-b"}
    assert len(cluster.brokers["broker-a"].requests) == 1  # then avoided (fault strategy)


async def test_broker_down_retries_elsewhere_and_non_retriable_code_raises(
    cluster: InMemoryCluster,
) -> None:
    cluster.stop_broker("broker-a")
    async with producer(cluster) as p:
        results = [await p.send(make_message("T", f"m{i}")) for i in range(4)]
        assert {r.message_queue.broker_name for r in results} == {"broker-b"}
        cluster.stop_broker("broker-b")
        await asyncio.sleep(0.01)  # let the closed connection be noticed
        with pytest.raises(BrokerUnreachableError, match="is down"):
            await p.send(make_message("T", "x"), selector=select_fixed(5))
    cluster.brokers["broker-b"].fail_code = 13  # MESSAGE_ILLEGAL: not retried
    cluster.network.serve("127.0.0.1:10921", cluster.brokers["broker-b"].dispatcher())
    async with producer(cluster, send_latency_fault_enable=False) as p:
        with pytest.raises(MQBrokerError) as err:
            for _ in range(4):
                await p.send(make_message("T", "x"))
        assert err.value.code == 13


async def test_timeout_is_overall_and_clear(cluster: InMemoryCluster) -> None:
    for b in cluster.brokers.values():
        b.delay = 1.0
    async with producer(cluster, send_timeout=0.3) as p:
        with pytest.raises(MQTimeoutError, match=r"within|timed out"):
            await p.send(make_message("T", "slow"))


async def test_batches_split_under_the_limit(cluster: InMemoryCluster) -> None:
    msgs = [make_message("T", bytes([i]) * 1000, tags="B", keys=f"k{i}") for i in range(50)]
    assert [len(b) for b in split_batches(msgs, 10_000)] == [9] * 5 + [5]
    async with producer(cluster, max_message_size=10_000) as p:
        results = await p.send_batch(msgs)
    assert len(results) == 6
    assert results[0].msg_id.split(",") == [m.unique_key for m in msgs[:9]]
    stored = [m for b in cluster.brokers.values() for m in b.messages("T")]
    assert sorted(m.body for m in stored) == sorted(m.body for m in msgs)
    requests = [r for b in cluster.brokers.values() for r in b.requests]
    assert all(r.code == RequestCode.SEND_BATCH_MESSAGE for r in requests)
    assert all(decode_send_message_header(r).batch for r in requests)
    async with producer(cluster) as p:
        with pytest.raises(InvalidMessageError, match="one topic"):
            await p.send_batch([make_message("T", "a"), make_message("U", "b")])


async def test_async_callback_and_oneway(cluster: InMemoryCluster) -> None:
    got: list[object] = []
    async with producer(cluster) as p:
        task = p.send_async(make_message("T", "a"), callback=lambda r, e: got.append(r or e))
        result = await task
        await p.send_oneway(make_message("T", "one-way"))
        for _ in range(50):
            if any(m.body == b"one-way" for b in cluster.brokers.values() for m in b.messages("T")):
                break
            await asyncio.sleep(0.01)
        else:
            pytest.fail("oneway message never arrived")
    assert got == [result]


async def test_bad_input_fails_before_the_network(cluster: InMemoryCluster) -> None:
    p = producer(cluster)
    with pytest.raises(ClientStateError, match="not started"):
        await p.send(make_message("T", "x"))
    async with p:
        for topic, pattern in [("bad topic", "illegal"), ("", "blank"), ("x" * 128, "longer")]:
            with pytest.raises(InvalidMessageError, match=pattern):
                await p.send(make_message(topic, "x"))
        with pytest.raises(InvalidMessageError, match="empty body"):
            await p.send(make_message("T", b""))
        with pytest.raises(InvalidMessageError, match="system topic"):
            await p.send(make_message("SCHEDULE_TOPIC_XXXX", "x"))
    assert not any(b.requests for b in cluster.brokers.values())


async def test_unknown_topic_goes_through_tbw102_brokers(cluster: InMemoryCluster) -> None:
    async with producer(cluster) as p:
        result = await p.send(make_message("Fresh", "x"))
    assert result.message_queue.broker_name == "broker-a"  # only broker-a has TBW102
    assert result.message_queue.queue_id < 4

"""Consume services without sockets: batching, concurrency limit, acks and send-back,
local retry, retry-topic restore, orderly sequencing, suspension and the DLQ."""

from __future__ import annotations

import asyncio
import threading

import pytest

from mqcore.client.consume_service import (
    ConsumeConcurrentlyService,
    ConsumeContext,
    ConsumeOrderlyService,
    ConsumeOrderlyStatus,
    ConsumeStatus,
)
from mqcore.client.offset_store import ReadOffsetType, RemoteBrokerOffsetStore
from mqcore.client.process_queue import LockEvent, ProcessQueue, QueueEvent
from mqcore.client.rebalance import MessageModel
from mqcore.errors import MQClientError
from mqcore.message import MessageExt
from mqcore.protocol.bodies import MessageQueue
from tests.support import until

MQ = MessageQueue("T", "broker-a", 0)


class NullOffsetAPI:
    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int | None:
        return None

    async def update_consumer_offset(
        self, group: str, mq: MessageQueue, offset: int, *, oneway: bool = True
    ) -> None:
        pass


class SendBack:
    def __init__(self) -> None:
        self.sent: list[tuple[int, int]] = []
        self.fail = False

    async def __call__(self, msg: MessageExt, delay_level: int, mq: MessageQueue) -> None:
        if self.fail:
            raise MQClientError("broker down")
        self.sent.append((msg.queue_offset, delay_level))


def make_msgs(*offsets: int, topic: str = "T") -> list[MessageExt]:
    return [MessageExt(topic=topic, body=b"b%d" % o, queue_offset=o) for o in offsets]


def setup(pq_started: bool = True) -> tuple[ProcessQueue, RemoteBrokerOffsetStore, SendBack]:
    pq = ProcessQueue()
    if pq_started:
        pq.fire(QueueEvent.START)
    return pq, RemoteBrokerOffsetStore("g", NullOffsetAPI()), SendBack()


async def committed(store: RemoteBrokerOffsetStore) -> int | None:
    return await store.read(MQ, ReadOffsetType.MEMORY)


async def test_concurrent_batches_and_offsets() -> None:
    pq, store, back = setup()
    seen: list[list[int]] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        seen.append([m.queue_offset for m in msgs])
        assert ctx.message_queue == MQ
        return ConsumeStatus.CONSUME_SUCCESS

    service = ConsumeConcurrentlyService("g", listener, store, back, batch_max_size=2)
    msgs = make_msgs(0, 1, 2, 3, 4)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await until(lambda: service.idle)
    assert sorted(seen) == [[0, 1], [2, 3], [4]]
    assert await committed(store) == 5 and pq.msg_count == 0 and back.sent == []
    assert service.consumed_ok == 5
    await service.shutdown()


async def test_concurrency_limit_and_out_of_order_commit() -> None:
    pq, store, back = setup()
    running = 0
    peak = 0
    release: dict[int, asyncio.Event] = {o: asyncio.Event() for o in range(4)}

    async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release[msgs[0].queue_offset].wait()
        running -= 1

    service = ConsumeConcurrentlyService("g", listener, store, back, concurrency=2)
    msgs = make_msgs(0, 1, 2, 3)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await until(lambda: running == 2)
    release[1].set()
    await until(lambda: pq.msg_count == 3)
    assert await committed(store) == 0  # 0 still in flight: the commit stays below it
    release[0].set()
    await until(lambda: pq.msg_count == 2)
    assert await committed(store) == 2
    release[2].set()
    release[3].set()
    await until(lambda: service.idle)
    assert peak == 2 and await committed(store) == 4
    await service.shutdown()


async def test_failures_are_sent_back_and_offset_moves_on() -> None:
    pq, store, back = setup()
    calls = 0

    def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        nonlocal calls
        calls += 1
        if msgs[0].queue_offset == 1:
            raise RuntimeError("boom")
        if msgs[0].queue_offset == 2:
            ctx.delay_level_when_next_consume = 5
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    service = ConsumeConcurrentlyService("g", listener, store, back)
    msgs = make_msgs(0, 1, 2, 3)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await until(lambda: service.idle)
    assert sorted(back.sent) == [(1, 0), (2, 5)]
    assert await committed(store) == 4 and service.consumed_failed == 2
    await service.shutdown()


async def test_ack_index_partial_success() -> None:
    pq, store, back = setup()

    def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        ctx.ack_index = 0
        return ConsumeStatus.CONSUME_SUCCESS

    service = ConsumeConcurrentlyService("g", listener, store, back, batch_max_size=3)
    msgs = make_msgs(0, 1, 2)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await until(lambda: service.idle)
    assert back.sent == [(1, 0), (2, 0)]
    await service.shutdown()


async def test_send_back_failure_retries_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mqcore.client.consume_service.RETRY_LATER", 0.01)
    pq, store, back = setup()
    back.fail = True
    attempts: list[int] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        attempts.append(msgs[0].reconsume_times)
        if len(attempts) < 3:
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    service = ConsumeConcurrentlyService("g", listener, store, back)
    msgs = make_msgs(7)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await until(lambda: pq.msg_count == 0)
    assert attempts == [0, 1, 2]
    assert await committed(store) == 8
    await service.shutdown()


async def test_broadcasting_failures_are_dropped() -> None:
    pq, store, back = setup()
    service = ConsumeConcurrentlyService(
        "g",
        lambda m, c: ConsumeStatus.RECONSUME_LATER,
        store,
        back,
        message_model=MessageModel.BROADCASTING,
    )
    msgs = make_msgs(0)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await until(lambda: service.idle)
    assert back.sent == [] and await committed(store) == 1
    await service.shutdown()


async def test_retry_topic_restored_and_dropped_queue_not_committed() -> None:
    pq, store, back = setup()
    topics: list[str] = []
    gate = asyncio.Event()

    async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        topics.extend(m.topic for m in msgs)
        await gate.wait()
        return ConsumeStatus.CONSUME_SUCCESS

    service = ConsumeConcurrentlyService("g", listener, store, back)
    msgs = make_msgs(0, topic="%RETRY%g")
    msgs[0].properties["RETRY_TOPIC"] = "Orig"
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await until(lambda: topics != [])
    assert topics == ["Orig"] and "CONSUME_START_TIME" in msgs[0].properties
    pq.drop()
    gate.set()
    await until(lambda: service.idle)
    assert await committed(store) is None
    await service.shutdown()


async def test_threaded_listener_runs_off_loop() -> None:
    pq, store, back = setup()
    threads: list[str] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        threads.append(threading.current_thread().name)
        return ConsumeStatus.CONSUME_SUCCESS

    service = ConsumeConcurrentlyService("g", listener, store, back, threaded=True)
    msgs = make_msgs(0, 1)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await until(lambda: service.idle)
    assert len(threads) == 2 and all(t.startswith("mq-consume") for t in threads)
    await service.shutdown()


async def test_shutdown_cancels_stuck_listeners() -> None:
    pq, store, back = setup()

    async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> None:
        await asyncio.Event().wait()

    service = ConsumeConcurrentlyService("g", listener, store, back)
    msgs = make_msgs(0)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await until(lambda: not service.idle)
    await service.shutdown(timeout=0.05)
    assert service.idle
    service.submit(msgs, pq, MQ)  # ignored once shut down
    assert service.idle


def locked_pq() -> ProcessQueue:
    pq = ProcessQueue()
    pq.fire(QueueEvent.START)
    pq.fire(LockEvent.GRANTED)
    return pq


async def no_lock(mq: MessageQueue) -> bool:
    return False


async def test_orderly_one_at_a_time_in_order() -> None:
    pq = locked_pq()
    store = RemoteBrokerOffsetStore("g", NullOffsetAPI())
    seen: list[int] = []
    active = 0

    async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeOrderlyStatus:
        nonlocal active
        active += 1
        assert active == 1
        seen.extend(m.queue_offset for m in msgs)
        await asyncio.sleep(0)
        active -= 1
        return ConsumeOrderlyStatus.SUCCESS

    service = ConsumeOrderlyService("g", listener, store, SendBack(), lock=no_lock)
    first, second = make_msgs(0, 1, 2), make_msgs(3, 4)
    pq.put(first)
    service.submit(first, pq, MQ)
    pq.put(second)
    service.submit(second, pq, MQ)
    await until(lambda: service.idle and pq.msg_count == 0)
    assert seen == [0, 1, 2, 3, 4] and await committed(store) == 5
    await service.shutdown()


async def test_orderly_suspends_then_retries_same_message() -> None:
    pq = locked_pq()
    store = RemoteBrokerOffsetStore("g", NullOffsetAPI())
    seen: list[tuple[int, int]] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeOrderlyStatus:
        msg = msgs[0]
        seen.append((msg.queue_offset, msg.reconsume_times))
        if msg.queue_offset == 0 and msg.reconsume_times < 2:
            ctx.suspend_time = 0.01
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    service = ConsumeOrderlyService("g", listener, store, SendBack(), lock=no_lock)
    msgs = make_msgs(0, 1)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await until(lambda: pq.msg_count == 0 and service.idle)
    assert seen == [(0, 0), (0, 1), (0, 2), (1, 0)]
    await service.shutdown()


async def test_orderly_gives_up_to_dlq_after_max() -> None:
    pq = locked_pq()
    store = RemoteBrokerOffsetStore("g", NullOffsetAPI())
    back = SendBack()
    service = ConsumeOrderlyService(
        "g",
        lambda m, c: ConsumeStatus.RECONSUME_LATER,
        store,
        back,
        lock=no_lock,
        max_reconsume_times=2,
        suspend_time=0.001,
    )
    msgs = make_msgs(0)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await until(lambda: pq.msg_count == 0)
    assert back.sent == [(0, -1)] and await committed(store) == 1
    await service.shutdown()


async def test_orderly_waits_for_the_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mqcore.client.consume_service.LOCK_RETRY", 0.01)
    pq = ProcessQueue()
    pq.fire(QueueEvent.START)
    store = RemoteBrokerOffsetStore("g", NullOffsetAPI())
    asked = 0

    async def lock(mq: MessageQueue) -> bool:
        nonlocal asked
        asked += 1
        if asked >= 2:
            pq.fire(LockEvent.GRANTED)
        return asked >= 2

    consumed: list[int] = []
    service = ConsumeOrderlyService(
        "g", lambda m, c: consumed.append(m[0].queue_offset), store, SendBack(), lock=lock
    )
    msgs = make_msgs(0)
    pq.put(msgs)
    service.submit(msgs, pq, MQ)
    await until(lambda: consumed == [0])
    assert asked == 2
    await service.shutdown()

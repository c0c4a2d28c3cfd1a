"""TraceDispatcher (batching, bounded queue, failures counted) and the trace hooks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mqcore.client.api import SendResult, SendStatus
from mqcore.client.producer import trace_producer
from mqcore.client.trace import ConsumeTraceHook, SendTraceHook
from mqcore.client.trace_dispatcher import TraceDispatcher
from mqcore.message import Message, MessageExt
from mqcore.protocol.bodies import MessageQueue
from mqcore.protocol.bodies.trace import (
    ConsumeReturnType,
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceType,
    decode_trace_data,
    encode_trace_context,
)
from tests.support import until


class FakeSender:
    def __init__(self, fail: bool = False, gate: asyncio.Event | None = None) -> None:
        self.sent: list[Message] = []
        self.fail = fail
        self.gate = gate
        self.started = self.stopped = False

    async def start(self) -> None:
        self.started = True

    async def shutdown(self) -> None:
        self.stopped = True

    async def send(self, msg: Message) -> Any:
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise RuntimeError("No route info of this topic: RMQ_SYS_TRACE_TOPIC")
        self.sent.append(msg)


def sub_after(msg_id: str, keys: str | None = None) -> TraceContext:
    return TraceContext(
        TraceType.SUB_AFTER,
        timestamp=1,
        group="CG",
        request_id="R",
        beans=[TraceBean(msg_id=msg_id, keys=keys)],
    )


def dispatcher(sender: FakeSender, **kw: Any) -> TraceDispatcher:
    return TraceDispatcher(sender, **kw)


async def test_records_of_a_batch_window_go_as_one_keyed_trace_message() -> None:
    sender = FakeSender()
    d = dispatcher(sender, batch_wait=0.2, poll_interval=0.01)
    await d.start()
    for i in range(3):
        assert d.append(sub_after(f"M{i}", keys="k shared"))
    await until(lambda: d.sent == 3)
    [msg] = sender.sent
    assert msg.topic == "RMQ_SYS_TRACE_TOPIC"
    assert msg.keys == ["M0", "k", "shared", "M1", "M2"]
    ctxs, bad = decode_trace_data(msg.body.decode())
    assert bad == 0 and [c.beans[0].msg_id for c in ctxs] == ["M0", "M1", "M2"]
    await d.shutdown()
    assert sender.stopped and d.dropped == 0


async def test_a_full_queue_drops_and_counts_without_waiting() -> None:
    sender = FakeSender()
    d = dispatcher(sender, queue_size=2)  # not started: nothing drains the queue
    assert d.append(sub_after("A")) and d.append(sub_after("B"))
    assert not d.append(sub_after("C"))
    assert (d.appended, d.dropped, d.pending) == (2, 1, 2)


async def test_a_batch_near_the_size_limit_is_sent_at_once() -> None:
    sender = FakeSender()
    d = dispatcher(sender, batch_wait=60, poll_interval=0.01, max_msg_size=10_000 + 100)
    await d.start()
    for i in range(4):
        d.append(sub_after(f"{i:040d}"))  # ~60 chars each: the second crosses 100
    await until(lambda: d.sent == 4)
    assert len(sender.sent) == 2
    await d.shutdown()


async def test_failed_trace_sends_are_counted_as_dropped() -> None:
    sender = FakeSender(fail=True)
    d = dispatcher(sender, batch_wait=0.0, poll_interval=0.01)
    await d.start()
    d.append(sub_after("A"))
    d.append(sub_after("B"))
    await until(lambda: d.dropped == 2)
    assert d.sent == 0 and d.last_error and "No route info" in d.last_error
    await d.shutdown()


async def test_shutdown_writes_what_is_queued() -> None:
    sender = FakeSender()
    d = dispatcher(sender, batch_wait=60, poll_interval=60)
    await d.start()
    d.append(sub_after("A"))
    await d.shutdown()
    assert d.sent == 1 and len(sender.sent) == 1
    assert not d.append(sub_after("late")) and d.dropped == 1


def result(trace_on: bool = True) -> SendResult:
    return SendResult(
        SendStatus.SEND_OK, "UNIQ", "OFFSET", MessageQueue("T", "b", 0), 7,
        region_id="R1", trace_on=trace_on,
    )  # fmt: skip


def test_send_hook_fills_the_pub_record() -> None:
    d = dispatcher(FakeSender())
    hook = SendTraceHook(d, "PG")
    msg = Message("T", b"body", properties={"TAGS": "a", "KEYS": "k1 k2", "DELAY": "3"})
    ctx = hook.before(msg, "10.0.0.1:10911", 4)
    assert ctx is not None
    hook.after(ctx, result())
    assert d.appended == 1
    bean = ctx.beans[0]
    assert (ctx.region_id, ctx.group, ctx.success) == ("R1", "PG", True)
    assert (bean.msg_id, bean.offset_msg_id, bean.tags, bean.keys) == (
        "UNIQ",
        "OFFSET",
        "a",
        "k1 k2",
    )
    assert bean.store_host == "10.0.0.1:10911" and bean.msg_type is TraceMessageType.DELAY
    # the broker's traceOn=false and the trace topic itself are not traced
    other = hook.before(Message("T", b""), "h", 0)
    assert other is not None
    hook.after(other, result(trace_on=False))
    assert hook.before(Message("RMQ_SYS_TRACE_TOPIC", b""), "h", 0) is None
    assert d.appended == 1


def ext(msg_id: str, **props: str) -> MessageExt:
    return MessageExt(
        topic="T", body=b"x", properties={"UNIQ_KEY": msg_id, **props}, reconsume_times=2
    )


@pytest.mark.parametrize(
    ("outcome", "success"), [(ConsumeReturnType.SUCCESS, True), (ConsumeReturnType.FAILED, False)]
)
def test_consume_hook_pairs_before_and_after(outcome: ConsumeReturnType, success: bool) -> None:
    d = dispatcher(FakeSender())
    hook = ConsumeTraceHook(d, "CG")
    msgs = [ext("A", MSG_REGION="R1"), ext("B", TRACE_ON="false"), ext("C")]
    before = hook.before(msgs)
    assert before is not None
    assert [b.msg_id for b in before.beans] == ["A", "C"]
    assert before.beans[0].retry_times == 2
    hook.after(before, len(msgs), outcome)
    assert d.appended == 2
    assert hook.before([ext("B", TRACE_ON="false")]) is None
    after = d._queue[-1]
    assert after.trace_type is TraceType.SUB_AFTER
    assert (after.request_id, after.group, after.success) == (before.request_id, "CG", success)
    assert after.context_code == int(outcome) and after.cost_time >= 0


async def test_a_stuck_trace_send_never_holds_up_appends_and_is_dropped_at_shutdown() -> None:
    sender = FakeSender(gate=asyncio.Event())  # the broker never answers
    d = dispatcher(sender, queue_size=4, batch_wait=0.0, poll_interval=0.01)
    await d.start()
    d.append(sub_after("A"))
    await until(lambda: d.pending == 0)  # handed to the (stuck) send
    loop = asyncio.get_running_loop()
    began = loop.time()
    accepted = [d.append(sub_after(f"B{i}")) for i in range(10)]
    assert loop.time() - began < 0.05
    assert accepted.count(True) >= 4 and d.dropped == accepted.count(False)
    await d.shutdown(timeout=0.2)
    assert d.sent == 0 and d.dropped == 11


def test_end_transaction_record() -> None:
    d = dispatcher(FakeSender())
    hook = SendTraceHook(d, "TXG")
    msg = Message("T", b"x", properties={"TAGS": "a", "KEYS": "k"})
    hook.end_transaction(msg, "UNIQ", "10.0.0.1:10911", "COMMIT_MESSAGE", "UNIQ", from_check=True)
    hook.end_transaction(Message("RMQ_SYS_TRACE_TOPIC"), "X", "h", "UNKNOW", None, from_check=False)
    [ctx] = list(d._queue)
    data = encode_trace_context(ctx).data
    assert data.rstrip("\x02").split("\x01")[2:] == [
        "DefaultRegion", "TXG", "T", "UNIQ", "a", "k", "10.0.0.1:10911", "2", "UNIQ",
        "COMMIT_MESSAGE", "true",
    ]  # fmt: skip


def test_the_trace_producer_is_named_as_rocketmq_names_it() -> None:
    first = trace_producer("G", "PRODUCER", ["127.0.0.1:9876", "127.0.0.2:9876"], None)
    second = trace_producer("G", "CONSUMER", "127.0.0.1:9876", None)
    assert first.group.startswith("_INNER_TRACE_PRODUCER-G-PRODUCER-")
    assert second.group.startswith("_INNER_TRACE_PRODUCER-G-CONSUMER-")
    assert first.group != trace_producer("G", "PRODUCER", "127.0.0.1:9876", None).group
    assert first.instance_name == "PID_CLIENT_INNER_TRACE_PRODUCER_127.0.0.1:9876;127.0.0.2:9876"
    assert first.max_message_size == 128_000

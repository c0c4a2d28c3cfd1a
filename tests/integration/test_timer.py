"""Timer messages at any time (RocketMQ 5) end to end against an in-process broker.

"On time" is read off the delivered copies themselves: a copy's store time is never
before its TIMER_DELIVER_MS and less than a second after it. The broker runs a 200 ms
precision (a slot of tick t is delivered as t + precision begins, so a message may wait
up to one precision past its time, plus the pass that puts it): the rest of the second is
slack for a loaded machine.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.broker.timer.recall import RecallHandle
from mqcore.message import MessageExt
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.route import KVTable
from mqcore.protocol.headers.recall import RecallMessageRequestHeader
from mqcore.store.timer import build_delete_key
from tests.support import until
from tests.support.clients import RawBrokerClient, send_header
from tests.support.inproc import LIVE_STORE, broker_controller
from tests.support.metrics import parse, scrape_text, value

pytestmark = pytest.mark.timeout(60)

TOPIC = "TimerTopic"
PRECISION_MS = 200


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[BrokerController]:
    b = broker_controller(
        tmp_path / "store", store={**LIVE_STORE, "timer_precision_ms": PRECISION_MS}
    )
    await b.start()
    try:
        yield b
    finally:
        await b.shutdown()


@pytest.fixture
async def client(broker: BrokerController) -> AsyncIterator[RawBrokerClient]:
    async with RawBrokerClient(broker.broker_addr) as c:
        yield c


async def send_timer(client: RawBrokerClient, body: bytes, **props: str) -> RemotingCommand:
    return await client.send(TOPIC, body, queue_nums=1, properties=props)


async def drain(client: RawBrokerClient, want: int, deadline_s: float) -> list[MessageExt]:
    """Long-poll queue 0 until ``want`` messages arrived or the deadline passed."""
    out: list[MessageExt] = []
    offset = 0
    deadline = time.monotonic() + deadline_s
    while len(out) < want and time.monotonic() < deadline:
        r = await client.pull(TOPIC, 0, offset, suspend_ms=500, timeout=5)
        if r.code == ResponseCode.SUCCESS:
            out.extend(r.messages)
            offset = r.next_begin_offset
        elif r.next_begin_offset > offset:
            offset = r.next_begin_offset
        else:
            await asyncio.sleep(0.05)
    return out


async def runtime_info(client: RawBrokerClient) -> dict[str, str]:
    r = await client.invoke(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO))
    assert r.code == ResponseCode.SUCCESS
    return KVTable.decode(r.body).table


async def test_messages_at_random_times_are_delivered_on_time(client: RawBrokerClient) -> None:
    rng = random.Random()
    start = now_ms()
    due: dict[bytes, tuple[int, int]] = {}  # body -> earliest and latest deliver time
    for i in range(60):
        deliver = start + rng.randrange(300, 2500)
        body = f"m{i}".encode()
        due[body] = (deliver, deliver)
        r = await send_timer(client, body, TIMER_DELIVER_MS=str(deliver))
        assert r.code == ResponseCode.SUCCESS, r.remark
    past = start - 5000
    r = await send_timer(client, b"past", TIMER_DELIVER_MS=str(past))
    assert r.code == ResponseCode.SUCCESS
    for body, prop, text, delay in ((b"sec", "TIMER_DELAY_SEC", "2", 2000),
                                     (b"ms", "TIMER_DELAY_MS", "1500", 1500)):  # fmt: skip
        before = now_ms()  # the broker adds the delay to its clock on arrival
        r = await send_timer(client, body, **{prop: text})
        assert r.code == ResponseCode.SUCCESS
        due[body] = (before + delay, now_ms() + delay)

    msgs = await drain(client, len(due) + 1, 15)
    got = {m.body: m for m in msgs}
    assert set(got) == {*due, b"past"}
    assert len(msgs) == len(got), "no duplicates without a crash"
    assert got[b"past"].properties["TIMER_DELIVER_MS"] == str(past)
    assert "TIMER_OUT_MS" not in got[b"past"].properties  # never parked
    for body, (earliest, latest) in due.items():
        m = got[body]
        assert earliest <= m.store_timestamp < latest + 1000, (body, m.store_timestamp - latest)
        assert "REAL_TOPIC" not in m.properties and "REAL_QID" not in m.properties
        assert "TIMER_ENQUEUE_MS" in m.properties and "TIMER_DEQUEUE_MS" in m.properties
        assert m.queue_id == 0 and m.topic == TOPIC


async def test_send_answer_and_the_parked_copy(
    broker: BrokerController, client: RawBrokerClient
) -> None:
    deliver = now_ms() + 60_000
    r = await send_timer(client, b"later", TIMER_DELIVER_MS=str(deliver))
    assert r.code == ResponseCode.SUCCESS
    h = send_header(r)
    parked = broker.store.look_message(int(h.msg_id[-16:], 16))
    assert parked.topic == "rmq_sys_wheel_timer" and parked.queue_id == 0
    assert parked.properties["REAL_TOPIC"] == TOPIC
    assert parked.properties["REAL_QID"] == "0"
    tick = (
        deliver // PRECISION_MS * PRECISION_MS if deliver % PRECISION_MS else deliver - PRECISION_MS
    )
    assert parked.properties["TIMER_OUT_MS"] == str(tick)
    seen: dict[str, str] = {}

    async def parked_one() -> bool:
        seen.update(await runtime_info(client))
        return seen["timerCongestNum"] == "1"

    await until(parked_one, timeout=5, what="the message in the wheel")
    info = seen
    for key in ("timerReadBehind", "timerOffsetBehind", "timerEnqueueTps", "timerDequeueTps"):
        assert key in info


@pytest.mark.parametrize(
    ("props", "code"),
    [
        ({"TIMER_DELIVER_MS": "soon"}, ResponseCode.MESSAGE_ILLEGAL),
        ({"TIMER_DELAY_SEC": str(3 * 86400 + 60)}, ResponseCode.MESSAGE_ILLEGAL),
        ({"TIMER_DELAY_MS": "1.5"}, ResponseCode.MESSAGE_ILLEGAL),
    ],
)
async def test_refusals_are_rocketmq_5s(
    client: RawBrokerClient, props: dict[str, str], code: int
) -> None:
    r = await send_timer(client, b"x", **props)
    assert r.code == code
    assert "timer message illegal" in (r.remark or "")


async def test_a_delay_level_wins_over_timer_properties(client: RawBrokerClient) -> None:
    r = await send_timer(client, b"lvl", DELAY="1", TIMER_DELIVER_MS=str(now_ms() + 60_000))
    assert r.code == ResponseCode.SUCCESS
    (m,) = await drain(client, 1, 5)  # level 1: 1 s, not a minute
    assert "TIMER_DELIVER_MS" not in m.properties


async def test_delete_marker_cancels_a_timer_message(client: RawBrokerClient) -> None:
    deliver = str(now_ms() + 600)
    keep = await send_timer(client, b"keep", TIMER_DELIVER_MS=deliver)
    gone = await send_timer(client, b"gone", TIMER_DELIVER_MS=deliver)
    uniq = gone.ext_fields["uniqKey"]
    marker = await send_timer(
        client,
        b"0",
        TIMER_DELIVER_MS=deliver,
        TIMER_DEL_UNIQKEY=build_delete_key(TOPIC, uniq),
    )
    assert keep.code == gone.code == marker.code == ResponseCode.SUCCESS
    msgs = await drain(client, 2, 2.0)  # the second never comes
    assert [m.body for m in msgs] == [b"keep"]
    late = await send_timer(
        client, b"0", TIMER_DELIVER_MS=str(now_ms() - 1000), TIMER_DEL_UNIQKEY="x+y"
    )
    assert late.code == ResponseCode.MESSAGE_ILLEGAL


async def test_timer_wheel_disabled_refuses(tmp_path: Path) -> None:
    b = broker_controller(tmp_path / "s", store={**LIVE_STORE, "timer_wheel_enable": False})
    await b.start()
    try:
        async with RawBrokerClient(b.broker_addr) as c:
            r = await send_timer(c, b"x", TIMER_DELAY_SEC="5")
            assert r.code == ResponseCode.SYSTEM_ERROR
            assert "timerWheelEnable is false" in (r.remark or "")
            info = await runtime_info(c)
            assert info["timerCongestNum"] == "0"
        assert not (tmp_path / "s" / "timerwheel").exists()
    finally:
        await b.shutdown()


async def recall(client: RawBrokerClient, topic: str, handle: str) -> RemotingCommand:
    header = RecallMessageRequestHeader(topic=topic, recall_handle=handle, producer_group="pg")
    return await client.invoke(
        RemotingCommand.request(RequestCode.RECALL_MESSAGE, header.to_ext_fields())
    )


async def test_recall_takes_a_timer_message_back(tmp_path: Path) -> None:
    b = broker_controller(
        tmp_path / "s",
        store={**LIVE_STORE, "timer_precision_ms": PRECISION_MS},
        recall_message_enable=True,
    )
    await b.start()
    try:
        async with RawBrokerClient(b.broker_addr) as c:
            deliver = now_ms() + 800
            kept = await send_timer(c, b"kept", TIMER_DELIVER_MS=str(deliver))
            taken = await send_timer(c, b"taken", TIMER_DELIVER_MS=str(deliver))
            handle = taken.ext_fields["recallHandle"]
            parts = RecallHandle.decode(handle)
            assert (parts.topic, parts.broker_name) == (TOPIC, b.config.broker_name)
            assert parts.message_id == taken.ext_fields["uniqKey"]
            r = await recall(c, TOPIC, handle)
            assert r.code == ResponseCode.SUCCESS, r.remark
            assert r.ext_fields["msgId"] == parts.message_id
            assert (await recall(c, "Other", handle)).code == ResponseCode.TOPIC_NOT_EXIST
            assert (await recall(c, TOPIC, "bm90IGEgaGFuZGxl")).code == 604
            assert "recallHandle" in kept.ext_fields
            msgs = await drain(c, 2, 2.0)
            assert [m.body for m in msgs] == [b"kept"]
            assert (await recall(c, TOPIC, handle)).code == 604  # its time has passed
            plain = await c.send(TOPIC, b"now", queue_nums=1)
            assert "recallHandle" not in plain.ext_fields
    finally:
        await b.shutdown()


async def test_recall_is_off_by_default(client: RawBrokerClient) -> None:
    sent = await send_timer(client, b"x", TIMER_DELAY_SEC="30")
    r = await recall(client, TOPIC, sent.ext_fields["recallHandle"])
    assert r.code == ResponseCode.NO_PERMISSION
    assert r.remark == "recall failed, operation is forbidden"


async def test_timer_stop_dequeue_holds_deliveries_at_run_time(
    broker: BrokerController, client: RawBrokerClient
) -> None:
    """RocketMQ 5's timerStopDequeue is a run-time switch (UPDATE_BROKER_CONFIG applies
    it at once): while set, due messages wait; cleared, they go."""
    broker.store_config.timer_stop_dequeue = True  # what `mq broker config set` does
    r = await send_timer(client, b"held", TIMER_DELIVER_MS=str(now_ms() + 300))
    assert r.code == ResponseCode.SUCCESS
    assert await drain(client, 1, 1.0) == []
    broker.store_config.timer_stop_dequeue = False
    assert [m.body for m in await drain(client, 1, 3)] == [b"held"]


async def test_prometheus_has_rocketmq_5s_timer_metrics(tmp_path: Path) -> None:
    b = broker_controller(
        tmp_path / "s",
        store={**LIVE_STORE, "timer_precision_ms": PRECISION_MS},
        metrics_exporter_type="PROM",
        metrics_prom_exporter_port=0,
    )
    await b.start()
    try:
        async with RawBrokerClient(b.broker_addr) as c:
            for body in (b"a", b"b"):
                r = await send_timer(c, body, TIMER_DELAY_SEC="3600")
                assert r.code == ResponseCode.SUCCESS
            r = await send_timer(c, b"now", TIMER_DELIVER_MS=str(now_ms() + 100))
            assert r.code == ResponseCode.SUCCESS
            assert len(await drain(c, 1, 3)) == 1
        assert b.metrics is not None
        samples = parse(await asyncio.to_thread(scrape_text, b.metrics.url))
        assert value(samples, "rocketmq_timer_dequeue_lag") == 2  # the two an hour away
        assert value(samples, "rocketmq_timer_enqueue_lag") == 0
        assert value(samples, "rocketmq_timer_enqueue_total") == 3
        assert value(samples, "rocketmq_timer_dequeue_total") == 1
        latency = value(samples, "rocketmq_timer_dequeue_latency")
        assert latency is not None and 0 <= latency < 2000
    finally:
        await b.shutdown()

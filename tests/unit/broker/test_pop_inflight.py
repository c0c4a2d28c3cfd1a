"""The POP in-flight counter: on its own, then as the processors and the revive service
move it, and as GET_CONSUME_STATS reports it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.broker.metrics_lag import ConsumerLagCalculator
from mqcore.broker.pop.inflight import InflightCount, PopInflightCounter
from mqcore.broker.processor import admin_group
from mqcore.common.metadata import TopicConfig
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import ConsumeStats, MessageQueue, OffsetWrapper
from mqcore.protocol.bodies.pop import BatchAck, BatchAckMessageRequestBody
from mqcore.protocol.headers import GetConsumeStatsRequestHeader
from mqcore.protocol.headers.pop import (
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
)
from tests.support.clients import put
from tests.support.inproc import running_broker

from .pop_requests import GROUP, HOUR_MS, ack_fields, call, pop_fields, receipts

# -- the counter alone ---------------------------------------------------------------------


def test_counts_what_is_handed_out_until_acked_and_what_is_still_invisible() -> None:
    c = PopInflightCounter()
    assert c.count("T", "g", 0, 0) is None  # never popped: not a POP queue
    c.popped("T", "g", 0, 10, 1000, [10, 11, 12], visible_at=5000)
    c.popped("T", "g", 0, 13, 2000, [13], visible_at=9000)
    assert c.count("T", "g", 0, 4999) == InflightCount(4, 4)
    assert c.count("T", "g", 0, 5000) == InflightCount(4, 1)  # the first pop is overdue
    c.acked("T", "g", 0, 10, 1000, [11])
    c.acked("T", "g", 0, 10, 999, [10])  # another checkpoint: nothing of ours
    assert c.count("T", "g", 0, 0) == InflightCount(3, 3)
    c.revived("T", "g", 0, 10, 1000)  # what it left went back to the retry topic
    assert c.count("T", "g", 0, 0) == InflightCount(1, 1)
    c.acked("T", "g", 0, 13, 2000, [13])
    assert c.count("T", "g", 0, 0) == InflightCount(0, 0)  # known, nothing in flight
    assert c.count("T", "g", 1, 0) is None and c.count("T", "other", 0, 0) is None


def test_fifo_delay_in_place_clear_queue_and_clear_group() -> None:
    c = PopInflightCounter()
    c.popped("T", "g", 0, 0, 1000, [0, 1], visible_at=2000)
    c.delayed("T", "g", 0, 0, 1000, 1, visible_at=8000)
    c.delayed("T", "g", 0, 0, 1000, 7, visible_at=8000)  # not handed out: ignored
    assert c.count("T", "g", 0, 3000) == InflightCount(2, 1)
    c.clear_queue("T", "g", 0)
    assert c.count("T", "g", 0, 0) == InflightCount(0, 0)
    c.popped("T", "g", 1, 0, 1000, [0], visible_at=2000)
    c.popped("T", "h", 1, 0, 1000, [0], visible_at=2000)
    c.clear_group("g")
    assert c.count("T", "g", 1, 0) is None
    assert c.count("T", "h", 1, 0) == InflightCount(1, 1)


def test_the_wire_fields_are_written_only_when_known() -> None:
    plain = OffsetWrapper(10, 5, 1)
    assert "popInFlightMessageCount" not in plain.to_json()
    assert OffsetWrapper.from_json(plain.to_json()) == plain
    popped = OffsetWrapper(10, 5, 1, pop_in_flight=3, pop_invisible=2)
    assert popped.to_json()["popInFlightMessageCount"] == 3
    assert popped.to_json()["popInvisibleMessageCount"] == 2
    assert OffsetWrapper.from_json(popped.to_json()) == popped


# -- through the processors ----------------------------------------------------------------


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[BrokerController]:
    async with running_broker(tmp_path, revive_interval=HOUR_MS, revive_queue_num=2) as b:
        b.topics.update(TopicConfig("T", 2, 2))
        yield b


def _counted(broker: BrokerController, queue_id: int = 0, now: int = 0) -> InflightCount | None:
    return broker.pop.inflight.count("T", GROUP, queue_id, now)


async def _stats(broker: BrokerController) -> ConsumeStats:
    handler = admin_group.handlers(broker.context)[RequestCode.GET_CONSUME_STATS]
    request = RemotingCommand.request(
        RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(GROUP, "T").to_ext_fields()
    )
    answer: Any = handler(cast(Any, None), request)
    assert answer.code == ResponseCode.SUCCESS
    return ConsumeStats.decode(answer.body)


async def test_pop_ack_and_revive_move_the_count(broker: BrokerController) -> None:
    for body in (b"a", b"b", b"c"):
        put(broker, "T", 0, body=body)
    answer = await call(broker, RequestCode.POP_MESSAGE, pop_fields(queue_id=0))
    (a, _), (b, _), _ = receipts(answer)
    assert _counted(broker) == InflightCount(3, 3)
    assert (await call(broker, RequestCode.ACK_MESSAGE, ack_fields(a))).code == 0
    assert _counted(broker) == InflightCount(2, 2)
    assert _counted(broker, now=b.revive_time) == InflightCount(2, 0)  # overdue, not back
    assert broker.pop.revive.revive_once(now=b.revive_time) == 2
    assert _counted(broker) == InflightCount(0, 0)
    stats = await _stats(broker)
    q0 = stats.offset_table[MessageQueue("T", "broker-a", 0)]
    assert (q0.consumer_offset, q0.pop_in_flight, q0.pop_invisible) == (3, 0, 0)
    q1 = stats.offset_table[MessageQueue("T", "broker-a", 1)]
    assert q1.pop_in_flight is None  # nothing popped there: not reported


async def test_change_invisible_time_and_batch_ack(broker: BrokerController) -> None:
    for body in (b"x", b"y"):
        put(broker, "T", 1, body=body)
    answer = await call(broker, RequestCode.POP_MESSAGE, pop_fields(queue_id=1))
    (x, _), (y, _) = receipts(answer)
    assert x.queue_offset is not None
    change = ChangeInvisibleTimeRequestHeader(
        GROUP, "T", 1, x.encode(), x.queue_offset, HOUR_MS
    ).to_ext_fields()
    changed = await call(broker, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, change)
    assert changed.code == ResponseCode.SUCCESS
    head = ChangeInvisibleTimeResponseHeader.from_command(changed)
    # x now waits an hour under its new checkpoint; y is overdue at its first deadline
    assert _counted(broker, 1, now=y.revive_time) == InflightCount(2, 1)
    stats = await _stats(broker)
    q1 = stats.offset_table[MessageQueue("T", "broker-a", 1)]
    assert (q1.pop_in_flight, q1.pop_invisible) == (2, 2)
    body = BatchAckMessageRequestBody(
        "broker-a",
        [
            BatchAck(GROUP, "T", "0", y.ck_queue_offset, 1, y.revive_qid, y.pop_time,
                     y.invisible_time, frozenset({1}))
        ],
    ).encode()  # fmt: skip
    assert (await call(broker, RequestCode.BATCH_ACK_MESSAGE, {}, body)).code == 0
    assert _counted(broker, 1) == InflightCount(1, 1)
    assert broker.pop.revive.revive_once(now=head.pop_time + HOUR_MS) == 1
    assert _counted(broker, 1) == InflightCount(0, 0)


async def test_fifo_pop_counts_and_acks_in_order(broker: BrokerController) -> None:
    for body in (b"1", b"2"):
        put(broker, "T", 0, body=body)
    answer = await call(broker, RequestCode.POP_MESSAGE, pop_fields(queue_id=0, order=True))
    assert answer.code == ResponseCode.SUCCESS
    assert _counted(broker) == InflightCount(2, 2)
    (first, _), (second, _) = receipts(answer)
    assert first.is_order  # the revive queue id says so
    assert (await call(broker, RequestCode.ACK_MESSAGE, ack_fields(first))).code == 0
    assert _counted(broker) == InflightCount(1, 1)
    assert second.queue_offset is not None
    later = second.pop_time + HOUR_MS
    change = ChangeInvisibleTimeRequestHeader(
        GROUP, "T", 0, second.encode(), second.queue_offset, HOUR_MS
    ).to_ext_fields()
    assert (await call(broker, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, change)).code == 0
    assert _counted(broker, now=second.revive_time) == InflightCount(1, 1)  # moved in place
    assert _counted(broker, now=later + 1000) == InflightCount(1, 0)


async def test_the_lag_metrics_count_what_is_in_flight(broker: BrokerController) -> None:
    for body in (b"m1", b"m2", b"m3"):
        put(broker, "T", 0, body=body)
    put(broker, "T", 1, body=b"waiting")
    answer = await call(broker, RequestCode.POP_MESSAGE, pop_fields(queue_id=0, max_nums=2))
    assert len(receipts(answer)) == 2
    lag = ConsumerLagCalculator(broker.context).lag_of(GROUP, "T", 2)
    # queue 0: 1 not popped yet, 2 in flight; queue 1 never popped from: no offset, no lag
    assert (lag.lag, lag.inflight) == (1, 2)

"""PopBufferMergeService (``enablePopBufferMerge``): a pop acknowledged while its
checkpoint is buffered writes nothing to the revive topic; one that is not gets its
checkpoint written (with the acks it has) when it has waited long enough or the broker
stops; pop offsets move only past settled pops, in order. The buffer waits an hour
here: each test settles it itself."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.common.metadata import TopicConfig
from mqcore.message.record import decode_record
from mqcore.protocol import RequestCode, ResponseCode
from mqcore.store.results import GetStatus
from tests.support.clients import put
from tests.support.inproc import running_broker

from .pop_requests import GROUP, HOUR_MS, ack_fields, call, pop_fields, receipts


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[BrokerController]:
    async with running_broker(
        tmp_path,
        revive_interval=HOUR_MS,
        revive_queue_num=1,
        enable_pop_buffer_merge=True,
        pop_ck_stay_buffer_time=HOUR_MS,
        pop_ck_stay_buffer_time_out=0,
    ) as b:
        b.topics.update(TopicConfig("T", 1, 1))
        yield b


def revive_tags(broker: BrokerController) -> list[str | None]:
    store, topic = broker.store, broker.pop.revive_log.topic
    result = store.get_messages(topic, 0, 0, 64)
    if result.status is not GetStatus.FOUND:
        return []
    return [decode_record(b).tags for b in result.buffers]


async def test_an_ack_in_time_writes_nothing(broker: BrokerController) -> None:
    put(broker, "T", 0, body=b"a")
    answer = await call(
        broker, RequestCode.POP_MESSAGE, pop_fields(queue_id=0, invisible_time=HOUR_MS)
    )
    [(info, _)] = receipts(answer)
    assert broker.offsets.query(GROUP, "T", 0) == 0  # waits for the checkpoint to settle
    again = await call(broker, RequestCode.POP_MESSAGE, pop_fields(queue_id=0))
    assert again.code != ResponseCode.SUCCESS  # the buffer's offset counts for pops
    assert (
        await call(broker, RequestCode.ACK_MESSAGE, ack_fields(info))
    ).code == ResponseCode.SUCCESS
    broker.pop.buffer.scan()
    assert broker.offsets.query(GROUP, "T", 0) == 1
    assert revive_tags(broker) == []
    assert broker.pop.revive.revive_once(now=info.revive_time) == 0


async def test_an_unacknowledged_checkpoint_is_written_with_the_acks_it_has(
    broker: BrokerController,
) -> None:
    put(broker, "T", 0, body=b"x")
    put(broker, "T", 0, body=b"y")
    answer = await call(
        broker, RequestCode.POP_MESSAGE, pop_fields(queue_id=0, invisible_time=HOUR_MS)
    )
    (x, _), (y, _) = receipts(answer)
    assert (await call(broker, RequestCode.ACK_MESSAGE, ack_fields(x))).code == ResponseCode.SUCCESS
    broker.pop.stop()  # a stop writes what is buffered
    assert revive_tags(broker) == ["ck"]
    assert broker.offsets.query(GROUP, "T", 0) == 2
    assert broker.pop.revive.revive_once(now=y.revive_time) == 1
    result = broker.store.get_messages("%RETRY%g_T", 0, 0, 8)
    assert [decode_record(b).body for b in result.buffers] == [b"y"]


async def test_offsets_move_past_settled_pops_only(broker: BrokerController) -> None:
    put(broker, "T", 0, body=b"p", tags="TagA")
    first = await call(
        broker, RequestCode.POP_MESSAGE, pop_fields(queue_id=0, invisible_time=HOUR_MS)
    )
    [(info, _)] = receipts(first)
    put(broker, "T", 0, body=b"q", tags="TagB")
    filtered = pop_fields(queue_id=0, exp_type="TAG", exp="TagA", invisible_time=HOUR_MS)
    assert (await call(broker, RequestCode.POP_MESSAGE, filtered)).code != ResponseCode.SUCCESS
    broker.pop.buffer.scan()
    assert broker.offsets.query(GROUP, "T", 0) == 0  # the first pop is not settled
    assert (
        await call(broker, RequestCode.ACK_MESSAGE, ack_fields(info))
    ).code == ResponseCode.SUCCESS
    broker.pop.buffer.scan()
    assert broker.offsets.query(GROUP, "T", 0) == 2


async def test_a_written_checkpoint_does_not_move_the_offset_past_buffered_pops(
    broker: BrokerController,
) -> None:
    put(broker, "T", 0, body=b"a")
    buffered = pop_fields(queue_id=0, max_nums=1, invisible_time=HOUR_MS)
    assert (await call(broker, RequestCode.POP_MESSAGE, buffered)).code == ResponseCode.SUCCESS
    put(broker, "T", 0, body=b"b")
    at_once = pop_fields(queue_id=0, max_nums=1, invisible_time=1000)  # too soon to buffer
    assert (await call(broker, RequestCode.POP_MESSAGE, at_once)).code == ResponseCode.SUCCESS
    assert revive_tags(broker) == ["ck"]
    broker.pop.revive.revive_once()  # reads b's checkpoint
    broker.pop.buffer.scan()
    assert broker.offsets.query(GROUP, "T", 0) == 0  # a's pop is not settled yet
    broker.pop.stop()
    assert broker.offsets.query(GROUP, "T", 0) == 2

"""The POP processors called in-process with RemotingCommands (as the gRPC access point
will call them), on a real broker without a name server. The revive service's timer is
set to an hour: each test runs a revive pass itself, at a time it chooses."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.broker.pop.keys import REVIVE_GROUP
from mqcore.broker.pop.revive import PopReviveService
from mqcore.common.metadata import TopicConfig
from mqcore.message.record import decode_record
from mqcore.protocol import RequestCode, ResponseCode
from mqcore.protocol.bodies.pop import BatchAck, BatchAckMessageRequestBody
from mqcore.protocol.extra_info import (
    PROPERTY_FIRST_POP_TIME,
    ExtraInfo,
    parse_msg_offset_info,
)
from mqcore.protocol.headers.pop import (
    POLLING_FULL,
    POLLING_TIMEOUT,
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    NotificationRequestHeader,
    NotificationResponseHeader,
    PeekMessageRequestHeader,
    PollingInfoRequestHeader,
    PollingInfoResponseHeader,
    PopMessageResponseHeader,
)
from mqcore.store.results import GetStatus
from tests.support.clients import put
from tests.support.inproc import running_broker
from tests.support.polling import until

from .pop_requests import GROUP, HOUR_MS, ack_fields, call, pop_fields, receipts


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[BrokerController]:
    async with running_broker(tmp_path, revive_interval=HOUR_MS, revive_queue_num=2) as b:
        b.topics.update(TopicConfig("T", 2, 2))
        yield b


# -- checks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"max_nums": 33}, ResponseCode.INVALID_PARAMETER),
        ({"topic": "Nope"}, ResponseCode.TOPIC_NOT_EXIST),
        ({"queue_id": 2}, ResponseCode.INVALID_PARAMETER),
        ({"born_time": 1}, POLLING_TIMEOUT),
    ],
)
async def test_pop_checks(broker: BrokerController, changes: dict[str, Any], code: int) -> None:
    answer = await call(broker, RequestCode.POP_MESSAGE, pop_fields(**changes))
    assert answer.code == code, answer.remark


async def test_pop_without_its_required_fields(broker: BrokerController) -> None:
    answer = await call(broker, RequestCode.POP_MESSAGE, {"topic": "T"})
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert "consumerGroup" in (answer.remark or "")


async def test_pop_of_an_empty_topic_times_out_at_once_without_poll_time(
    broker: BrokerController,
) -> None:
    answer = await call(broker, RequestCode.POP_MESSAGE, pop_fields())
    assert answer.code == POLLING_TIMEOUT
    assert PopMessageResponseHeader.from_command(answer).rest_num == 0


async def test_ack_checks(broker: BrokerController) -> None:
    put(broker, "T", 0)
    bad = AckMessageRequestHeader(GROUP, "T", 0, "1 2 x", 0).to_ext_fields()
    assert (await call(broker, RequestCode.ACK_MESSAGE, bad)).code == ResponseCode.SYSTEM_ERROR
    info = ExtraInfo(0, 1, 1000, 0, "0", "broker-a", 0, 5)
    far = ack_fields(info)
    assert (await call(broker, RequestCode.ACK_MESSAGE, far)).code == ResponseCode.NO_MESSAGE
    other = AckMessageRequestHeader(GROUP, "T", 7, info.encode(), 0).to_ext_fields()
    assert (await call(broker, RequestCode.ACK_MESSAGE, other)).code == ResponseCode.MESSAGE_ILLEGAL
    empty = await call(broker, RequestCode.BATCH_ACK_MESSAGE, {})
    assert empty.code == ResponseCode.NO_MESSAGE


# -- popping -----------------------------------------------------------------------------


async def test_pop_moves_the_offset_and_says_where_each_message_came_from(
    broker: BrokerController,
) -> None:
    for i in range(3):
        put(broker, "T", i % 2, body=f"m{i}".encode())
    answer = await call(broker, RequestCode.POP_MESSAGE, pop_fields())
    assert answer.code == ResponseCode.SUCCESS
    head = PopMessageResponseHeader.from_command(answer)
    assert parse_msg_offset_info(head.msg_offset_info) == {"0@0": [0, 1], "0@1": [0]}
    assert sorted(body for _, body in receipts(answer)) == [b"m0", b"m1", b"m2"]
    assert broker.offsets.query(GROUP, "T", 0) == 2
    assert broker.offsets.query(GROUP, "T", 1) == 1
    again = await call(broker, RequestCode.POP_MESSAGE, pop_fields())
    assert again.code == POLLING_TIMEOUT


async def test_peek_takes_nothing(broker: BrokerController) -> None:
    put(broker, "T", 0, body=b"p")
    peek = PeekMessageRequestHeader("T", 0, 32, GROUP).to_ext_fields()
    for _ in range(2):
        answer = await call(broker, RequestCode.PEEK_MESSAGE, peek)
        assert answer.code == ResponseCode.SUCCESS
        assert decode_record(answer.body).body == b"p"
    popped = await call(broker, RequestCode.POP_MESSAGE, pop_fields(queue_id=0))
    assert [b for _, b in receipts(popped)] == [b"p"]


async def test_notification_says_whether_there_is_something(broker: BrokerController) -> None:
    fields = NotificationRequestHeader(GROUP, "T", -1, 0, int(time.time() * 1000)).to_ext_fields()
    answer = await call(broker, RequestCode.NOTIFICATION, fields)
    assert not NotificationResponseHeader.from_command(answer).has_msg
    put(broker, "T", 1)
    answer = await call(broker, RequestCode.NOTIFICATION, fields)
    assert NotificationResponseHeader.from_command(answer).has_msg


# -- reviving ----------------------------------------------------------------------------


async def test_unacked_messages_are_revived_into_the_retry_topic(broker: BrokerController) -> None:
    put(broker, "T", 0, body=b"a")
    put(broker, "T", 0, body=b"b")
    answer = await call(broker, RequestCode.POP_MESSAGE, pop_fields(queue_id=0))
    (ack_a, _), (info_b, _) = receipts(answer)
    assert (
        await call(broker, RequestCode.ACK_MESSAGE, ack_fields(ack_a))
    ).code == ResponseCode.SUCCESS
    revive = broker.pop.revive
    assert revive.revive_once(now=info_b.revive_time - 1) == 0  # not due yet
    assert revive.revive_once(now=info_b.revive_time) == 1
    retry = "%RETRY%g_T"
    result = broker.store.get_messages(retry, 0, 0, 32)
    assert result.status is GetStatus.FOUND
    [back] = [decode_record(b) for b in result.buffers]
    assert (back.body, back.reconsume_times) == (b"b", 1)
    assert back.properties[PROPERTY_FIRST_POP_TIME] == str(info_b.pop_time)
    assert revive.pending_count == 0
    assert (
        broker.offsets.query(REVIVE_GROUP, broker.pop.revive_log.topic, info_b.revive_qid)
        is not None
    )


async def test_retry_topic_v2(tmp_path: Path) -> None:
    async with running_broker(tmp_path, revive_interval=HOUR_MS, enable_retry_topic_v2=True) as b:
        b.topics.update(TopicConfig("T", 1, 1))
        put(b, "T", 0)
        answer = await call(b, RequestCode.POP_MESSAGE, pop_fields(queue_id=0))
        [(info, _)] = receipts(answer)
        b.pop.revive.revive_once(now=info.revive_time)
        assert b.store.get_max_offset_in_queue("%RETRY%g+T", 0) == 1


async def test_change_invisible_time_writes_a_new_checkpoint_and_acks_the_old(
    broker: BrokerController,
) -> None:
    put(broker, "T", 0, body=b"c")
    answer = await call(broker, RequestCode.POP_MESSAGE, pop_fields(queue_id=0))
    [(info, _)] = receipts(answer)
    assert info.queue_offset is not None
    change = ChangeInvisibleTimeRequestHeader(
        GROUP, "T", 0, info.encode(), info.queue_offset, HOUR_MS
    ).to_ext_fields()
    changed = await call(broker, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, change)
    assert changed.code == ResponseCode.SUCCESS
    head = ChangeInvisibleTimeResponseHeader.from_command(changed)
    assert head.invisible_time == HOUR_MS and head.revive_qid == info.revive_qid
    revive = broker.pop.revive
    assert revive.revive_once(now=info.revive_time + 1) == 0  # the old one was acked
    assert revive.revive_once(now=head.pop_time + HOUR_MS) == 1
    beyond = ChangeInvisibleTimeRequestHeader(GROUP, "T", 0, info.encode(), 1, 10).to_ext_fields()
    assert (
        await call(broker, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, beyond)
    ).code == ResponseCode.NO_MESSAGE


async def test_batch_ack_cancels_the_checkpoint(broker: BrokerController) -> None:
    for i in range(3):
        put(broker, "T", 1, body=f"b{i}".encode())
    answer = await call(broker, RequestCode.POP_MESSAGE, pop_fields(queue_id=1))
    got = receipts(answer)
    first = got[0][0]
    body = BatchAckMessageRequestBody(
        "broker-a",
        [
            BatchAck(
                GROUP,
                "T",
                "0",
                first.ck_queue_offset,
                1,
                first.revive_qid,
                first.pop_time,
                first.invisible_time,
                frozenset({0, 2}),
            )
        ],
    ).encode()
    assert (
        await call(broker, RequestCode.BATCH_ACK_MESSAGE, {}, body)
    ).code == ResponseCode.SUCCESS
    assert broker.pop.revive.revive_once(now=first.revive_time) == 1  # only b1
    result = broker.store.get_messages("%RETRY%g_T", 0, 0, 32)
    assert [decode_record(b).body for b in result.buffers] == [b"b1"]


async def test_a_held_pop_outlasts_arrivals_its_filter_refuses(broker: BrokerController) -> None:
    fields = pop_fields(queue_id=0, poll_time=5000, exp_type="TAG", exp="TagB")
    held = asyncio.ensure_future(call(broker, RequestCode.POP_MESSAGE, fields))
    await until(lambda: broker.long_polling.topic_held_count("T") == 1, 5.0, "the pop held")
    put(broker, "T", 0, body=b"not for it")  # TagA: wakes the pop, which finds nothing
    broker.reput.run()
    await until(lambda: broker.offsets.query(GROUP, "T", 0) == 1, 5.0, "the filtered one passed")
    assert not held.done()
    assert broker.long_polling.topic_held_count("T") == 1
    put(broker, "T", 0, body=b"for it", tags="TagB")
    broker.reput.run()
    answer = await asyncio.wait_for(held, 5.0)
    assert [b for _, b in receipts(answer)] == [b"for it"]


async def test_notification_commits_no_offset(broker: BrokerController) -> None:
    fields = NotificationRequestHeader("fresh", "T", -1, 0, int(time.time() * 1000))
    await call(broker, RequestCode.NOTIFICATION, fields.to_ext_fields())
    assert broker.offsets.query("fresh", "T", 0) is None


async def test_reading_the_revive_topic_again_raises_pop_offsets_past_every_checkpoint(
    broker: BrokerController, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a restart after kill -9 relies on, with an offset file older than every pop
    and reads of two records at a time (the start reads to the end regardless)."""
    for i in range(5):
        put(broker, "T", 0, body=f"r{i}".encode())
        answer = await call(broker, RequestCode.POP_MESSAGE, pop_fields(queue_id=0, max_nums=1))
        assert answer.code == ResponseCode.SUCCESS
    broker.offsets.table.pop(f"T@{GROUP}")  # as a stale consumerOffset.json would have it
    broker.offsets.table.pop(f"{broker.pop.revive_log.topic}@{REVIVE_GROUP}", None)
    monkeypatch.setattr("mqcore.broker.pop.revive._READ_LIMIT", 2)
    monkeypatch.setattr("mqcore.broker.pop.revive._READ_BATCH", 1)
    p = broker.pop
    fresh = PopReviveService(
        broker.config,
        broker.store,
        broker.appender,
        p.revive_log,
        broker.offsets,
        broker.topics,
        broker.groups,
        lambda: ("127.0.0.1", 1),
    )
    fresh.recover(to_the_end=True)
    assert broker.offsets.query(GROUP, "T", 0) == 5
    assert fresh.pending_count == 5
    again = await call(broker, RequestCode.POP_MESSAGE, pop_fields(queue_id=0))
    assert again.code == POLLING_TIMEOUT


async def test_polling_full_and_polling_info(tmp_path: Path) -> None:
    async with running_broker(tmp_path, revive_interval=HOUR_MS, pop_polling_size=1) as b:
        b.topics.update(TopicConfig("T", 1, 1))
        held = asyncio.ensure_future(call(b, RequestCode.POP_MESSAGE, pop_fields(poll_time=5000)))
        await until(lambda: b.long_polling.topic_held_count("T") == 1, 5.0, "the first held")
        second = await call(b, RequestCode.POP_MESSAGE, pop_fields(poll_time=5000))
        assert second.code == POLLING_FULL
        info = PollingInfoRequestHeader(GROUP, "T", -1).to_ext_fields()
        answer = await call(b, RequestCode.POLLING_INFO, info)
        assert PollingInfoResponseHeader.from_command(answer).polling_num == 1
        other = PollingInfoRequestHeader("other", "T", -1).to_ext_fields()
        answer = await call(b, RequestCode.POLLING_INFO, other)
        assert PollingInfoResponseHeader.from_command(answer).polling_num == 0
        put(b, "T", 0)
        b.reput.run()
        assert (await asyncio.wait_for(held, 5.0)).code == ResponseCode.SUCCESS

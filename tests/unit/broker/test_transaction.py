"""The broker's transaction service on a real store, without clients: half message
rewrite, END_TRANSACTION's state table and refusals, and check rounds driven by hand
(the timer's interval is a minute; born timestamps are set in the past instead)."""

from __future__ import annotations

import struct
import time
from typing import Any

import pytest

from mqcore.broker.client_manager import ClientChannelInfo
from mqcore.broker.controller import BrokerController
from mqcore.broker.transaction import (
    END_ACTIONS,
    SYS_TRANS_GROUP,
    TransactionalMessageCheckService,
    TransactionalMessageService,
    is_half_message,
    prepare_half_message,
)
from mqcore.message import MessageExt
from mqcore.message.const import (
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
    SysFlag,
)
from mqcore.message.record import decode_record
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader

GROUP = "pg-tx"


class FakeChannel:
    """What the check service needs of a producer connection."""

    def __init__(self) -> None:
        self.closed = False
        self.sent: list[RemotingCommand] = []
        self.remote_address = "127.0.0.1:50000"
        self.attrs: dict[str, Any] = {}

    def send(self, request: RemotingCommand) -> None:
        self.sent.append(request)


def service(broker: BrokerController) -> TransactionalMessageService:
    return broker.transaction_service


def checker(broker: BrokerController) -> TransactionalMessageCheckService:
    check = broker.transaction_check
    broker.reput.run()  # a check round starts on a later loop pass than the puts before it
    return check


def producer_channel(broker: BrokerController) -> FakeChannel:
    channel = FakeChannel()
    broker.producers.register(GROUP, ClientChannelInfo(channel, "client-1"))  # type: ignore[arg-type]
    return channel


def half(
    broker: BrokerController,
    body: bytes = b"tx",
    *,
    age_ms: int = 10_000,
    group: str = GROUP,
    **props: str,
) -> MessageExt:
    """Store a half message as the send path does; returns the stored record."""
    msg = MessageExt(
        topic="RealTopic",
        body=body,
        properties={"TRAN_MSG": "true", "PGROUP": group, "UNIQ_KEY": f"U{body.hex()}", **props},
        queue_id=2,
        sys_flag=SysFlag.TRANSACTION_PREPARED_TYPE,
        born_timestamp=int(time.time() * 1000) - age_ms,
        born_host=("127.0.0.1", 50000),
        store_host=("127.0.0.1", broker.server.port),
    )
    assert is_half_message(msg)
    result = broker.store.put_message(prepare_half_message(broker.topics, msg))
    assert result.ok
    broker.reput.run()  # the dispatch pass that follows the put on the event loop
    stored = broker.store.look_message(result.wrote_offset)
    # A check round skips records stored at or after the millisecond it started (as
    # RocketMQ does): let the clock pass the store time so the next round sees this one.
    while int(time.time() * 1000) <= stored.store_timestamp:
        time.sleep(0.0002)
    return stored


def end(
    broker: BrokerController, msg: MessageExt, value: int, **change: Any
) -> tuple[int, str | None] | None:
    fields: dict[str, Any] = {
        "producer_group": msg.properties.get("PGROUP", GROUP),
        "tran_state_table_offset": msg.queue_offset,
        "commit_log_offset": msg.commit_log_offset,
        "commit_or_rollback": value,
        "msg_id": msg.properties.get("UNIQ_KEY", ""),
        **change,
    }
    outcome = service(broker).end_transaction(EndTransactionRequestHeader(**fields))
    return None if outcome is None else (outcome.code, outcome.remark)


def count(broker: BrokerController, topic: str, queue_id: int = 0) -> int:
    broker.reput.run()  # what the loop would have dispatched by now
    return broker.store.get_max_offset_in_queue(topic, queue_id)


def records(broker: BrokerController, topic: str, queue_id: int = 0) -> list[MessageExt]:
    out = []
    for i in range(count(broker, topic, queue_id)):
        phy = broker.store.get_commit_log_offset_in_queue(topic, queue_id, i)
        msg = broker.store.look_message(phy)
        msg.queue_offset = i
        out.append(msg)
    return out


# -- the half message -------------------------------------------------------------------


async def test_half_message_is_parked_with_its_real_topic_and_no_transaction_bits(
    broker: BrokerController,
) -> None:
    stored = half(broker, DELAY="3")
    assert stored.topic == RMQ_SYS_TRANS_HALF_TOPIC and stored.queue_id == 0
    assert stored.properties["REAL_TOPIC"] == "RealTopic"
    assert stored.properties["REAL_QID"] == "2"
    assert "DELAY" not in stored.properties
    assert stored.transaction_type == SysFlag.TRANSACTION_NOT_TYPE
    assert count(broker, RMQ_SYS_TRANS_HALF_TOPIC) == 1  # dispatched like a normal message
    assert count(broker, "RealTopic", 2) == 0


# -- END_TRANSACTION --------------------------------------------------------------------


def test_the_state_table() -> None:
    assert END_ACTIONS[0] is None
    commit, rollback = END_ACTIONS[8], END_ACTIONS[12]
    assert commit is not None and commit.deliver and commit.tran_type == 0x8
    assert rollback is not None and not rollback.deliver


def raw_properties(broker: BrokerController, msg: MessageExt) -> bytes:
    """The PROPERTIES bytes of the record, straight from the IPv4 v1 layout."""
    view = broker.store.get_message(msg.commit_log_offset)
    (body_len,) = struct.unpack_from(">i", view, 84)
    p = 88 + body_len
    p += 1 + view[p]
    (length,) = struct.unpack_from(">h", view, p)
    return bytes(view[p + 2 : p + 2 + length])


async def test_half_commit_and_op_properties_are_written_as_4_9_8_writes_them(
    broker: BrokerController,
) -> None:
    """The order a real 4.9.8 broker stored for this key set (its ``HashMap`` order):
    the half message and the committed one alike; ``WAIT`` after ``PGROUP``."""
    h = half(broker, b"o", CLUSTER="DefaultCluster", WAIT="true", TAGS="TagB")
    expected = (
        b"REAL_TOPIC\x01RealTopic\x02TRAN_MSG\x01true\x02UNIQ_KEY\x01U6f\x02"
        b"CLUSTER\x01DefaultCluster\x02PGROUP\x01pg-tx\x02WAIT\x01true\x02TAGS\x01TagB\x02"
        b"REAL_QID\x012"
    )
    assert raw_properties(broker, h) == expected
    assert end(broker, h, 8) == (ResponseCode.SUCCESS, None)
    [real] = records(broker, "RealTopic", 2)
    assert raw_properties(broker, real) == expected
    [op] = records(broker, RMQ_SYS_TRANS_OP_HALF_TOPIC)
    assert raw_properties(broker, op) == b"WAIT\x01true\x02TAGS\x01d"


async def test_commit_writes_the_real_message_and_an_op_message(broker: BrokerController) -> None:
    h = half(broker, b"c")
    assert end(broker, h, 8) == (ResponseCode.SUCCESS, None)
    [real] = records(broker, "RealTopic", 2)
    assert real.body == b"c" and real.transaction_type == SysFlag.TRANSACTION_COMMIT_TYPE
    assert real.prepared_transaction_offset == h.commit_log_offset
    assert real.born_timestamp == h.born_timestamp
    assert real.properties["TRAN_MSG"] == "true" and real.properties["REAL_TOPIC"] == "RealTopic"
    [op] = records(broker, RMQ_SYS_TRANS_OP_HALF_TOPIC)
    assert op.body == b"0" and op.tags == "d" and op.sys_flag == 0
    # 4.9.8 writes op messages without a topic config: never registered, not in topicList
    assert broker.topics.select(RMQ_SYS_TRANS_OP_HALF_TOPIC) is None
    assert broker.topics.select(RMQ_SYS_TRANS_HALF_TOPIC) is not None


async def test_rollback_writes_only_an_op_message_and_unknown_nothing(
    broker: BrokerController,
) -> None:
    a, b = half(broker, b"a"), half(broker, b"b")
    assert end(broker, a, 12) == (ResponseCode.SUCCESS, None)
    assert end(broker, b, 0) is None
    assert count(broker, "RealTopic", 2) == 0
    assert [op.body for op in records(broker, RMQ_SYS_TRANS_OP_HALF_TOPIC)] == [b"0"]


@pytest.mark.parametrize(
    ("change", "remark"),
    [
        ({"producer_group": "other"}, "The producer group wrong"),
        ({"tran_state_table_offset": 5}, "The transaction state table offset wrong"),
        ({"commit_log_offset": 10**9}, "Find prepared transaction message failed"),
        ({"commit_or_rollback": 4}, "none of 0"),
    ],
)
async def test_wrong_requests_are_refused_and_change_nothing(
    broker: BrokerController, change: dict[str, Any], remark: str
) -> None:
    h = half(broker)
    value = change.pop("commit_or_rollback", 8)
    outcome = end(broker, h, value, **change)
    assert outcome is not None and outcome[0] == ResponseCode.SYSTEM_ERROR
    assert remark in (outcome[1] or "")
    assert count(broker, "RealTopic", 2) == 0 and count(broker, RMQ_SYS_TRANS_OP_HALF_TOPIC) == 0


async def test_a_record_that_is_not_a_half_message_is_refused(broker: BrokerController) -> None:
    plain = broker.store.put_message(
        MessageExt(topic="RealTopic", body=b"p", properties={"PGROUP": GROUP}, queue_id=2)
    )
    msg = broker.store.look_message(plain.wrote_offset)
    outcome = end(broker, msg, 8)
    assert outcome == (
        ResponseCode.SYSTEM_ERROR,
        f"the message at commitLogOffset {plain.wrote_offset} is not a half message",
    )
    assert count(broker, "RealTopic", 2) == 1


async def test_the_first_decision_wins(broker: BrokerController) -> None:
    h = half(broker)
    assert end(broker, h, 12) == (ResponseCode.SUCCESS, None)
    assert end(broker, h, 8) == (ResponseCode.SUCCESS, None)
    assert end(broker, h, 8) == (ResponseCode.SUCCESS, None)
    assert count(broker, "RealTopic", 2) == 0
    assert count(broker, RMQ_SYS_TRANS_OP_HALF_TOPIC) == 1


# -- check rounds -----------------------------------------------------------------------


async def test_an_old_undecided_half_message_is_checked_back(broker: BrokerController) -> None:
    channel = producer_channel(broker)
    h = half(broker, b"q", KEYS="k1", WAIT="true")
    report = checker(broker).check()
    assert len(report.checked) == 1 and report.half_progress == (0, 1)
    [copy] = records(broker, RMQ_SYS_TRANS_HALF_TOPIC)[1:]
    assert copy.properties["TRANSACTION_CHECK_TIMES"] == "1"
    # 4.9.8's check copy (renewHalfMessageInner) has no TRAN_PREPARED_QUEUE_OFFSET; the
    # origin is mq's own marker, which neither the check request nor the commit carries
    assert "TRAN_PREPARED_QUEUE_OFFSET" not in copy.properties
    assert copy.properties["MQ_HALF_ORIGIN_OFFSET"] == "0"
    assert copy.born_timestamp == h.born_timestamp and copy.body == b"q"
    [request] = channel.sent
    assert request.code == RequestCode.CHECK_TRANSACTION_STATE and request.is_oneway
    header = CheckTransactionStateRequestHeader.from_command(request)
    assert header.tran_state_table_offset == 1
    assert header.commit_log_offset == copy.commit_log_offset
    assert header.msg_id == header.transaction_id == h.properties["UNIQ_KEY"]
    asked = decode_record(request.body, strict=False)
    assert (asked.topic, asked.queue_id, asked.body) == ("RealTopic", 2, b"q")
    assert "MQ_HALF_ORIGIN_OFFSET" not in asked.properties
    assert asked.keys == ["k1"] and asked.properties["PGROUP"] == GROUP
    assert broker.offsets.query(SYS_TRANS_GROUP, RMQ_SYS_TRANS_HALF_TOPIC, 0) == 1
    # The copy is not asked about again before transactionTimeOut has passed.
    assert checker(broker).check().checked == []
    assert len(channel.sent) == 1
    # Answering on the copy commits once; the original and the copy are both over.
    assert end(broker, copy, 8) == (ResponseCode.SUCCESS, None)
    [real] = records(broker, "RealTopic", 2)
    # delivered with the half message's properties (WAIT=true included), as 4.9.8 does
    assert real.properties == {
        "TRAN_MSG": "true",
        "PGROUP": GROUP,
        "UNIQ_KEY": h.properties["UNIQ_KEY"],
        "KEYS": "k1",
        "WAIT": "true",
        "REAL_TOPIC": "RealTopic",
        "REAL_QID": "2",
        "TRANSACTION_CHECK_TIMES": "1",
    }
    report = checker(broker).check()
    assert report.resolved == 1 and report.half_progress == (1, 2)
    assert report.op_progress == (0, 1)
    assert end(broker, h, 8) == (ResponseCode.SUCCESS, None)  # late answer on the original
    assert count(broker, "RealTopic", 2) == 1


async def test_young_half_messages_wait_and_decided_ones_are_skipped(
    broker: BrokerController,
) -> None:
    channel = producer_channel(broker)
    decided = half(broker, b"d")
    half(broker, b"young", age_ms=0)
    end(broker, decided, 8)
    report = checker(broker).check()
    assert report.checked == [] and report.resolved == 1
    assert report.half_progress == (0, 1) and report.op_progress == (0, 1)
    assert channel.sent == []


async def test_after_transaction_check_max_checks_it_is_discarded(
    broker: BrokerController,
) -> None:
    channel = producer_channel(broker)
    half(broker, b"m")
    broker.config.transaction_time_out = 0  # copies are due at once
    asked = 0
    for _ in range(10):
        report = checker(broker).check()
        asked += len(report.checked)
        if report.discarded:
            break
        time.sleep(0.002)  # the next round must start after the copy was stored
    assert asked == 3 == len(channel.sent)
    [moved] = records(broker, TRANS_CHECK_MAX_TIME_TOPIC)
    assert moved.body == b"m" and moved.properties["TRANSACTION_CHECK_TIMES"] == "3"
    assert checker(broker).check().checked == []


async def test_messages_older_than_the_file_reserved_time_are_discarded(
    broker: BrokerController,
) -> None:
    producer_channel(broker)
    half(broker, b"old", age_ms=73 * 3600 * 1000)
    report = checker(broker).check()
    assert report.discarded == [0] and report.checked == []
    assert count(broker, TRANS_CHECK_MAX_TIME_TOPIC) == 1


async def test_without_a_live_producer_the_check_still_counts(broker: BrokerController) -> None:
    half(broker)
    report = checker(broker).check()
    assert len(report.checked) == 1 and report.no_producer == 1


async def test_check_immunity_parks_the_message_until_it_is_over(
    broker: BrokerController,
) -> None:
    channel = producer_channel(broker)
    h = half(broker, b"imm", CHECK_IMMUNITY_TIME_IN_SECONDS="3600")
    report = checker(broker).check()
    assert report.parked == [1] and report.checked == [] and channel.sent == []
    parked = records(broker, RMQ_SYS_TRANS_HALF_TOPIC)[1]
    assert parked.properties["TRAN_PREPARED_QUEUE_OFFSET"] == "0"  # as 4.9.8 parks it
    assert "TRANSACTION_CHECK_TIMES" not in parked.properties
    # The producer commits the original: the parked copy is over too.
    time.sleep(0.002)
    assert end(broker, h, 8) == (ResponseCode.SUCCESS, None)
    report = checker(broker).check()
    assert report.parked == [] and report.resolved == 1 and channel.sent == []
    assert count(broker, "RealTopic", 2) == 1


async def test_an_unreadable_op_body_does_not_stop_the_round(broker: BrokerController) -> None:
    producer_channel(broker)
    half(broker, b"x", age_ms=0)
    broker.store.put_message(
        MessageExt(
            topic=RMQ_SYS_TRANS_OP_HALF_TOPIC, body=b"oops", properties={"TAGS": "d"}, queue_id=0
        )
    )
    report = checker(broker).check()
    assert report.op_progress == (0, 1) and report.checked == []

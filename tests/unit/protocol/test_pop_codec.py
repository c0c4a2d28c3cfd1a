"""RocketMQ 5's POP texts and bodies: the receipt (extraInfo), the per-queue offset infos,
the checkpoint and ack JSON of the revive topic, BATCH_ACK's body and its BitSet, and the
POP headers' wire names. Round trips are hypothesis properties; arbitrary text never
crashes a decoder (it raises the documented error)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqcore.errors import MQError
from mqcore.protocol.bodies.base import BodyError
from mqcore.protocol.bodies.pop import (
    AckMsg,
    BatchAck,
    BatchAckMessageRequestBody,
    BatchAckMsg,
    PopCheckPoint,
    bitset_decode,
    bitset_encode,
)
from mqcore.protocol.extra_info import (
    ExtraInfo,
    ExtraInfoError,
    build_msg_offset_info,
    build_start_offset_info,
    parse_msg_offset_info,
    parse_start_offset_info,
    pop_retry_topic,
    real_topic,
    retry_mark,
)
from mqcore.protocol.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)

longs = st.integers(min_value=0, max_value=2**63 - 1)
ints = st.integers(min_value=0, max_value=2**31 - 1)
names = st.text(
    st.characters(whitelist_categories=("L", "N"), whitelist_characters="-_%"),
    min_size=1,
    max_size=20,
)
marks = st.sampled_from(["0", "1", "2"])


@given(longs, longs, longs, ints, marks, names, ints, st.none() | longs)
def test_receipt_round_trip(
    ck: int, pt: int, it: int, rq: int, mark: str, broker: str, q: int, qo: int | None
) -> None:
    info = ExtraInfo(ck, pt, it, rq, mark, broker, q, qo)
    assert ExtraInfo.decode(info.encode()) == info


def test_receipt_is_5x_text() -> None:
    info = ExtraInfo(10, 1700000000000, 30000, 3, "1", "broker-a", 2, 12)
    assert info.encode() == "10 1700000000000 30000 3 1 broker-a 2 12"
    assert info.revive_time == 1700000030000
    assert info.real_topic("T", "g") == "%RETRY%g_T"
    old = ExtraInfo.decode("10 1700000000000 30000 999 0 broker-a 2")  # no queue offset
    assert old.queue_offset is None and old.is_order


@given(st.text(max_size=60))
def test_arbitrary_receipts_raise_the_documented_error(text: str) -> None:
    try:
        ExtraInfo.decode(text)
    except ExtraInfoError:
        pass


@given(
    st.lists(
        st.tuples(names, ints, longs), max_size=5, unique_by=lambda t: (retry_mark(t[0]), t[1])
    )
)
def test_start_offset_info_round_trip(items: list[tuple[str, int, int]]) -> None:
    parsed = parse_start_offset_info(build_start_offset_info(items))
    assert parsed == {f"{retry_mark(t)}@{q}": o for t, q, o in items}


def test_offset_infos_are_5x_text() -> None:
    items = [("T", 0, 5), ("%RETRY%g_T", 0, 1)]
    assert build_start_offset_info(items) == "0 0 5;1 0 1"
    msgs = [("T", 1, [5, 7]), ("%RETRY%g+T", 0, [2])]
    text = build_msg_offset_info(msgs)
    assert text == "0 1 5,7;2 0 2"
    assert parse_msg_offset_info(text) == {"0@1": [5, 7], "2@0": [2]}
    with pytest.raises(ExtraInfoError, match="twice"):
        parse_start_offset_info("0 1 5;0 1 6")


@given(st.text(max_size=40))
def test_arbitrary_offset_infos_raise_the_documented_error(text: str) -> None:
    for parse in (parse_start_offset_info, parse_msg_offset_info):
        try:
            parse(text)
        except ExtraInfoError:
            pass


def test_retry_topic_names() -> None:
    assert pop_retry_topic("T", "g") == "%RETRY%g_T"
    assert pop_retry_topic("T", "g", v2=True) == "%RETRY%g+T"
    assert [retry_mark(t) for t in ("T", "%RETRY%g_T", "%RETRY%g+T")] == ["0", "1", "2"]
    assert real_topic("T", "g", "2") == "%RETRY%g+T"
    with pytest.raises(ExtraInfoError):
        real_topic("T", "g", "3")


@given(st.frozensets(st.integers(min_value=0, max_value=300), max_size=40))
def test_bitset_round_trip(bits: frozenset[int]) -> None:
    assert bitset_decode(bitset_encode(bits)) == bits


def test_bitset_is_javas_to_byte_array() -> None:
    assert bitset_encode({0, 9}) == "AQI="  # BitSet{0, 9}.toByteArray() == [1, 2]
    assert bitset_encode(set()) == ""
    with pytest.raises(BodyError):
        bitset_decode("not base64!")


checkpoints = st.builds(
    PopCheckPoint,
    start_offset=longs,
    pop_time=longs,
    invisible_time=longs,
    num=st.integers(min_value=0, max_value=32),
    queue_id=ints,
    topic=names,
    cid=names,
    broker_name=st.none() | names,
    bit_map=ints,
    revive_offset=longs,
    queue_offset_diff=st.none() | st.lists(ints, max_size=32),
    re_put_times=st.none() | st.integers(0, 20).map(str),
)


@given(checkpoints)
def test_checkpoint_round_trip(ck: PopCheckPoint) -> None:
    assert PopCheckPoint.decode(ck.encode()) == ck


@given(st.builds(AckMsg, longs, longs, names, names, ints, longs, st.none() | names))
def test_ack_round_trip(ack: AckMsg) -> None:
    assert AckMsg.decode(ack.encode()) == ack


@given(st.builds(BatchAckMsg, st.lists(longs, max_size=8), longs, names, names, ints, longs))
def test_batch_ack_msg_round_trip(ack: BatchAckMsg) -> None:
    assert BatchAckMsg.decode(ack.encode()) == ack


batch_acks = st.builds(
    BatchAck,
    names,
    names,
    marks,
    longs,
    ints,
    ints,
    longs,
    longs,
    st.frozensets(st.integers(0, 64), max_size=10),
)


@given(st.none() | names, st.lists(batch_acks, max_size=4))
def test_batch_ack_body_round_trip(broker: str | None, acks: list[BatchAck]) -> None:
    body = BatchAckMessageRequestBody(broker, acks)
    assert BatchAckMessageRequestBody.decode(body.encode()) == body


def test_revive_records_are_5x_json() -> None:
    ck = PopCheckPoint(3, 100, 30000, 2, 1, "T", "g", "broker-a", queue_offset_diff=[0, 2])
    assert ck.encode() == (
        b'{"bm":0,"bn":"broker-a","c":"g","d":[0,2],"it":30000,"n":2,"pt":100,'
        b'"q":1,"ro":0,"so":3,"t":"T"}'
    )
    assert [ck.index_of_ack(o) for o in (3, 4, 5, 2)] == [0, -1, 1, -1]
    assert ck.ack_offset_by_index(1) == 5
    ack = AckMsg(5, 3, "g", "T", 1, 100, "broker-a")
    assert ack.encode() == b'{"ao":5,"bn":"broker-a","c":"g","pt":100,"q":1,"so":3,"t":"T"}'
    # 5.x also reads the long names; so do we.
    long_form = (
        b'{"ackOffset":5,"startOffset":3,"consumerGroup":"g","topic":"T","queueId":1,"popTime":100}'
    )
    assert AckMsg.decode(long_form) == AckMsg(5, 3, "g", "T", 1, 100)
    first_form = PopCheckPoint.decode(b'{"so":3,"pt":1,"it":2,"n":2,"q":0,"t":"T","c":"g"}')
    assert [first_form.index_of_ack(o) for o in (3, 4, 5)] == [0, 1, -1]


@given(st.binary(max_size=80))
def test_arbitrary_bodies_raise_the_documented_error(data: bytes) -> None:
    for cls in (PopCheckPoint, AckMsg, BatchAckMsg, BatchAckMessageRequestBody):
        try:
            cls.decode(data)
        except MQError:
            pass


def test_headers_use_5x_wire_names() -> None:
    pop = PopMessageRequestHeader("g", "T", -1, 32, 30000, 5000, 1, 1, "TAG", "*", True, "a")
    assert pop.to_ext_fields() == {
        "consumerGroup": "g",
        "topic": "T",
        "queueId": "-1",
        "maxMsgNums": "32",
        "invisibleTime": "30000",
        "pollTime": "5000",
        "bornTime": "1",
        "initMode": "1",
        "expType": "TAG",
        "exp": "*",
        "order": "true",
        "attemptId": "a",
    }
    response = PopMessageResponseHeader(1, 2, 3, 4, "0 0 1", "0 0 1,2")
    assert set(response.to_ext_fields()) == {
        "popTime",
        "invisibleTime",
        "reviveQid",
        "restNum",
        "startOffsetInfo",
        "msgOffsetInfo",
    }
    ack = AckMessageRequestHeader("g", "T", 0, "x", 5)
    assert set(ack.to_ext_fields()) == {"consumerGroup", "topic", "queueId", "extraInfo", "offset"}
    change = ChangeInvisibleTimeRequestHeader("g", "T", 0, "x", 5, 100)
    assert change.to_ext_fields()["invisibleTime"] == "100"

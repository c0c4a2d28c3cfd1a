"""Trace records in 4.9.8's TraceDataEncoder layout: the expected strings are built by
the Java encoder's rules (char 1 between fields, char 2 after each record, ``null`` for
an absent string, booleans as ``true``/``false``, MessageType by ordinal)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mqcore.protocol.bodies.trace import (
    ConsumeReturnType,
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceTransfer,
    TraceType,
    decode_trace_data,
    encode_trace_context,
    join_transfers,
)

C, F = "\x01", "\x02"
MSG_ID = "7F00000100002A9F0000000000000001"
OFFSET_ID = "7F00000100002A9F00000000000004D2"


def rec(*fields: str) -> str:
    return C.join(fields) + F


def pub_ctx(**bean: object) -> TraceContext:
    defaults: dict[str, object] = {
        "topic": "TopicTest", "msg_id": MSG_ID, "tags": "TagA", "keys": "order-1 order-2",
        "store_host": "127.0.0.1:10911", "body_length": 11, "offset_msg_id": OFFSET_ID,
    }  # fmt: skip
    defaults.update(bean)
    return TraceContext(
        TraceType.PUB, timestamp=1_700_000_000_123, region_id="DefaultRegion",
        group="PG", cost_time=3, success=True, beans=[TraceBean(**defaults)],  # type: ignore[arg-type]
    )  # fmt: skip


def test_pub_is_fourteen_fields_in_java_order() -> None:
    out = encode_trace_context(pub_ctx())
    assert out.data == rec(
        "Pub", "1700000000123", "DefaultRegion", "PG", "TopicTest", MSG_ID, "TagA",
        "order-1 order-2", "127.0.0.1:10911", "11", "3", "0", OFFSET_ID, "true",
    )  # fmt: skip
    assert out.keys == [MSG_ID, "order-1", "order-2"]


def test_absent_tags_and_keys_are_written_as_java_null() -> None:
    ctx = pub_ctx(tags=None, keys=None, msg_type=TraceMessageType.DELAY)
    ctx.success = False
    fields = encode_trace_context(ctx).data.rstrip(F).split(C)
    assert fields[6:8] == ["null", "null"]
    assert fields[11] == "3" and fields[13] == "false"
    assert encode_trace_context(ctx).keys == [MSG_ID]


def test_sub_before_writes_one_record_per_message() -> None:
    ctx = TraceContext(
        TraceType.SUB_BEFORE, timestamp=5, region_id="DefaultRegion", group="CG",
        request_id="REQ", beans=[TraceBean(msg_id="A", retry_times=2, keys="k"),
                                 TraceBean(msg_id="B", keys=None)],
    )  # fmt: skip
    out = encode_trace_context(ctx)
    assert out.data == rec("SubBefore", "5", "DefaultRegion", "CG", "REQ", "A", "2", "k") + rec(
        "SubBefore", "5", "DefaultRegion", "CG", "REQ", "B", "0", "null"
    )
    assert out.keys == ["A", "k", "B"]


def test_sub_after_carries_context_code_timestamp_and_group() -> None:
    ctx = TraceContext(
        TraceType.SUB_AFTER, timestamp=9, group="CG", request_id="REQ", cost_time=12,
        success=False, context_code=int(ConsumeReturnType.FAILED),
        beans=[TraceBean(msg_id="A", keys="k")],
    )  # fmt: skip
    assert encode_trace_context(ctx).data == rec(
        "SubAfter", "REQ", "A", "12", "false", "k", "4", "9", "CG"
    )


def test_end_transaction_layout() -> None:
    ctx = TraceContext(
        TraceType.END_TRANSACTION, timestamp=1, region_id="R", group="PG",
        beans=[TraceBean(topic="T", msg_id="A", tags=None, keys="k", store_host="h:1",
                         msg_type=TraceMessageType.TRANS_HALF, transaction_id="TX",
                         transaction_state="COMMIT_MESSAGE", from_transaction_check=True)],
    )  # fmt: skip
    data = encode_trace_context(ctx).data
    assert data == rec(
        "EndTransaction", "1", "R", "PG", "T", "A", "null", "k", "h:1", "1", "TX",
        "COMMIT_MESSAGE", "true",
    )  # fmt: skip
    [back], bad = decode_trace_data(data)
    assert bad == 0 and back.beans[0].transaction_state == "COMMIT_MESSAGE"
    assert back.beans[0].from_transaction_check and back.beans[0].tags is None


def test_decode_a_java_batch_of_pub_and_consume_records() -> None:
    body = (
        rec("Pub", "100", "DefaultRegion", "PG", "TopicTest", MSG_ID, "TagA", "k1",
            "10.0.0.1:10911", "5", "7", "0", OFFSET_ID, "true")
        + rec("SubBefore", "110", "DefaultRegion", "CG", "REQ", MSG_ID, "1", "k1")
        + rec("SubAfter", "REQ", MSG_ID, "20", "true", "k1", "0", "130", "CG")
    )  # fmt: skip
    ctxs, bad = decode_trace_data(body)
    assert bad == 0
    assert [c.trace_type for c in ctxs] == [
        TraceType.PUB, TraceType.SUB_BEFORE, TraceType.SUB_AFTER,
    ]  # fmt: skip
    pub, before, after = ctxs
    assert (pub.timestamp, pub.group, pub.cost_time, pub.success) == (100, "PG", 7, True)
    b = pub.beans[0]
    assert (b.topic, b.msg_id, b.tags, b.keys, b.store_host, b.body_length) == (
        "TopicTest", MSG_ID, "TagA", "k1", "10.0.0.1:10911", 5,
    )  # fmt: skip
    assert b.offset_msg_id == OFFSET_ID and b.msg_type is TraceMessageType.NORMAL
    assert (before.group, before.request_id, before.beans[0].retry_times) == ("CG", "REQ", 1)
    assert (after.timestamp, after.group, after.cost_time, after.success) == (130, "CG", 20, True)


def test_decode_older_layouts() -> None:
    # Pub without offsetMsgId (13 fields), with a clientHost (15); SubAfter of 6 and 7.
    body = (
        rec("Pub", "1", "R", "PG", "T", "A", "null", "null", "h:1", "0", "2", "0", "false")
        + rec("Pub", "1", "R", "PG", "T", "B", "t", "k", "h:1", "0", "2", "0", "O", "true",
              "10.1.1.1")
        + rec("SubAfter", "REQ", "A", "3", "true", "k")
        + rec("SubAfter", "REQ", "A", "3", "true", "k", "2")
    )  # fmt: skip
    (p13, p15, a6, a7), bad = decode_trace_data(body)
    assert bad == 0
    assert not p13.success and p13.beans[0].offset_msg_id == "" and p13.beans[0].tags is None
    assert p15.success and p15.beans[0].client_host == "10.1.1.1"
    assert a6.group == "" and a6.context_code == 0
    assert a7.context_code == ConsumeReturnType.EXCEPTION


def test_unreadable_records_are_counted_and_skipped() -> None:
    good = rec("SubAfter", "REQ", "A", "3", "true", "k", "0", "9", "CG")
    body = rec("Nope", "1") + rec("Pub", "x") + rec("SubAfter", "REQ", "A", "NaN") + good
    ctxs, bad = decode_trace_data(body)
    assert bad == 3
    assert [c.beans[0].msg_id for c in ctxs] == ["A"]
    assert decode_trace_data("") == ([], 0)


def test_join_transfers_concatenates_and_dedups_keys() -> None:
    body, keys = join_transfers(
        [TraceTransfer("a" + F, ["M1", "k"]), TraceTransfer("b" + F, ["M1", "k2", ""])]
    )
    assert body == "a" + F + "b" + F
    assert keys == ["M1", "k", "k2"]


_text = st.text(
    st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1
).filter(lambda s: s != "null")


@given(
    group=_text, msg_id=_text, topic=_text, tags=_text, keys=_text, cost=st.integers(0, 10**6),
    ok=st.booleans(), ts=st.integers(0, 2**62),
)  # fmt: skip
def test_round_trip(
    group: str, msg_id: str, topic: str, tags: str, keys: str, cost: int, ok: bool, ts: int
) -> None:
    ctxs = [
        TraceContext(
            TraceType.PUB, timestamp=ts, region_id="R", group=group, cost_time=cost,
            success=ok, beans=[TraceBean(msg_id=msg_id, topic=topic, tags=tags, keys=keys,
                                         store_host="h", offset_msg_id="O")],
        ),
        TraceContext(
            TraceType.SUB_AFTER, timestamp=ts, group=group, request_id="Q", cost_time=cost,
            success=ok, beans=[TraceBean(msg_id=msg_id, keys=keys)],
        ),
    ]  # fmt: skip
    data = "".join(encode_trace_context(c).data for c in ctxs)
    back, bad = decode_trace_data(data)
    assert bad == 0
    assert [(c.trace_type, c.timestamp, c.group, c.cost_time, c.success) for c in back] == [
        (c.trace_type, c.timestamp, c.group, c.cost_time, c.success) for c in ctxs
    ]
    assert back[0].beans[0] == ctxs[0].beans[0]
    assert back[1].beans[0].keys == keys


def test_traces_the_java_client_wrote_decode_and_encode_back_byte_for_byte() -> None:
    import json
    from pathlib import Path

    data = Path(__file__).parents[1] / "data" / "rocketmq-4.9.8-trace-bodies.json"
    capture = json.loads(data.read_text())
    msg_id = capture["msgId"]
    decoded = []
    for body, keys in zip(capture["bodies"], capture["keys"], strict=True):
        ctxs, bad = decode_trace_data(body)
        assert bad == 0
        decoded += ctxs
        transfers = [encode_trace_context(c) for c in ctxs]
        assert "".join(t.data for t in transfers) == body
        assert join_transfers(transfers)[1] == keys.split(" ")
    pub, before, after = decoded
    assert (pub.trace_type, pub.group, pub.success, pub.cost_time) == (
        TraceType.PUB, "java-trace-pg", True, 74,
    )  # fmt: skip
    assert (pub.beans[0].msg_id, pub.beans[0].tags, pub.beans[0].keys) == (msg_id, "TagJ", "jkey-1")
    assert before.region_id == "null"  # a 4.9.8 broker stores no MSG_REGION property
    assert (after.group, after.request_id, after.cost_time) == (
        "java-trace-cg",
        before.request_id,
        5,
    )


@given(st.text(st.sampled_from("\x01\x02PubSubBeforeAfterEndTransaction0123456789-tru fals")))
def test_arbitrary_text_never_raises(data: str) -> None:
    ctxs, bad = decode_trace_data(data)
    assert bad >= 0 and all(c.beans for c in ctxs)

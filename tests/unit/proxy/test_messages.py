"""A 5.x message as the 4.x send it becomes, and a stored message as a 5.x client gets it."""

from __future__ import annotations

import gzip
import hashlib

import pytest

from mqcore.message.const import SysFlag
from mqcore.message.model import MessageExt
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.messages import message_type_of, outgoing, to_proto
from mqcore.proxy.status import ProxyError

NOW = 1_700_000_000_000


def message(body: bytes = b"hi", **system: object) -> pb.Message:
    sp = pb.SystemProperties(message_id="01ABCDEF", **system)  # type: ignore[arg-type]
    return pb.Message(topic=pb.Resource(name="Orders"), body=body, system_properties=sp)


def refusal(msg: pb.Message) -> tuple[int, str]:
    with pytest.raises(ProxyError) as caught:
        outgoing(msg, "10.0.0.9:4321", NOW)
    return caught.value.code, caught.value.message


def test_a_normal_message_carries_its_fields_as_4x_properties() -> None:
    msg = message(tag="paid", keys=["k1", "k2"], born_host="10.0.0.1", trace_context="tc")
    msg.system_properties.born_timestamp.FromMilliseconds(NOW - 5)
    msg.user_properties["color"] = "red"
    out = outgoing(msg, "10.0.0.9:4321", NOW)
    assert out.topic == "Orders" and out.body == b"hi" and out.sys_flag == 0
    assert out.born_timestamp == NOW - 5 and out.message_group == ""
    assert out.properties == {
        "color": "red",
        "TAGS": "paid",
        "KEYS": "k1 k2",
        "UNIQ_KEY": "01ABCDEF",
        "RECONSUME_TIME": "0",
        "PGROUP": "Orders",
        "TRACE_CONTEXT": "tc",
        "__BORNHOST": "10.0.0.1",
        "BORN_TIMESTAMP": str(NOW - 5),
    }


def test_fifo_delay_and_transaction_messages() -> None:
    fifo = outgoing(message(message_group="g1"), "10.0.0.9:1", NOW)
    assert fifo.properties["__SHARDINGKEY"] == "g1" and fifo.message_group == "g1"
    assert fifo.properties["__BORNHOST"] == "10.0.0.9:1"  # the peer when the SDK says none
    delayed = message()
    delayed.system_properties.delivery_timestamp.FromMilliseconds(NOW + 10_000)
    assert outgoing(delayed, "", NOW).properties["TIMER_DELIVER_MS"] == str(NOW + 10_000)
    half = message(message_type=pb.MessageType.TRANSACTION)
    half.system_properties.orphaned_transaction_recovery_duration.FromSeconds(30)
    out = outgoing(half, "", NOW)
    assert out.sys_flag & SysFlag.TRANSACTION_PREPARED_TYPE
    assert out.properties["TRAN_MSG"] == "true"
    assert out.properties["CHECK_IMMUNITY_TIME_IN_SECONDS"] == "30"


def test_a_gzip_body_is_stored_inflated() -> None:
    msg = message(body=gzip.compress(b"x" * 1000), body_encoding=pb.Encoding.GZIP)
    out = outgoing(msg, "", NOW)
    assert out.body == b"x" * 1000 and out.sys_flag == 0
    assert refusal(message(body=b"not gzip", body_encoding=pb.Encoding.GZIP))[0] == (
        pb.Code.MESSAGE_CORRUPTED
    )


@pytest.mark.parametrize(
    ("msg", "code", "text"),
    [
        (message(body=b""), pb.Code.MESSAGE_BODY_EMPTY, "message body cannot be empty"),
        (message(body=b"x" * (4 * 1024 * 1024 + 1)), pb.Code.MESSAGE_BODY_TOO_LARGE, "max"),
        (pb.Message(topic=pb.Resource(name="T"), body=b"x"), pb.Code.ILLEGAL_MESSAGE_ID, "id"),
        (message(tag="a|b"), pb.Code.ILLEGAL_MESSAGE_TAG, "cannot contain '|'"),
        (message(tag=" "), pb.Code.ILLEGAL_MESSAGE_TAG, "whitespace"),
        (message(tag="a\x01"), pb.Code.ILLEGAL_MESSAGE_TAG, "control character"),
        (message(keys=["ok", "\t"]), pb.Code.ILLEGAL_MESSAGE_KEY, "whitespace"),
        (message(message_group="g" * 64), pb.Code.ILLEGAL_MESSAGE_GROUP, "max size 64"),
        (message(message_group="g\x02"), pb.Code.ILLEGAL_MESSAGE_GROUP, "control"),
    ],
)
def test_what_the_proxy_refuses(msg: pb.Message, code: int, text: str) -> None:
    got_code, got_text = refusal(msg)
    assert got_code == code and text in got_text


def test_user_properties_may_not_take_system_names_or_separators() -> None:
    for name in ("TAGS", "UNIQ_KEY", "TIMER_DELIVER_MS", "__BORNHOST"):
        msg = message()
        msg.user_properties[name] = "v"
        assert refusal(msg) == (
            pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
            f"property is used by system: {name}",
        )
    msg = message()
    msg.user_properties["k"] = "a\x01b"
    assert refusal(msg)[0] == pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY
    many = message()
    for n in range(129):
        many.user_properties[f"k{n}"] = "v"
    assert refusal(many)[0] == pb.Code.MESSAGE_PROPERTIES_TOO_LARGE
    big = message()
    big.user_properties["k"] = "v" * (16 * 1024)
    assert refusal(big)[0] == pb.Code.MESSAGE_PROPERTIES_TOO_LARGE


def test_limits_of_delivery_time_and_recovery_time() -> None:
    late = message()
    late.system_properties.delivery_timestamp.FromMilliseconds(NOW + 24 * 3600 * 1000 + 1)
    assert refusal(late)[0] == pb.Code.ILLEGAL_DELIVERY_TIME
    slow = message(message_type=pb.MessageType.TRANSACTION)
    slow.system_properties.orphaned_transaction_recovery_duration.FromSeconds(3601)
    assert refusal(slow)[0] == pb.Code.BAD_REQUEST


def test_message_type_by_properties() -> None:
    assert message_type_of({}) == pb.MessageType.NORMAL
    assert message_type_of({"__SHARDINGKEY": "g"}) == pb.MessageType.FIFO
    assert message_type_of({"TIMER_DELIVER_MS": "1", "__SHARDINGKEY": "g"}) == pb.MessageType.DELAY
    assert message_type_of({"DELAY": "3"}) == pb.MessageType.DELAY
    assert message_type_of({"TRAN_MSG": "true", "DELAY": "3"}) == pb.MessageType.TRANSACTION


def test_a_stored_message_as_a_5x_client_gets_it() -> None:
    stored = MessageExt(
        topic="Orders",
        body=b"payload",
        properties={
            "TAGS": "paid",
            "KEYS": "k1 k2",
            "UNIQ_KEY": "01ABCDEF",
            "TRAN_MSG": "true",
            "PGROUP": "Orders",
            "color": "red",
        },
        queue_id=2,
        queue_offset=17,
        born_timestamp=NOW,
        born_host=("10.0.0.1", 5000),
        store_timestamp=NOW + 1,
        store_host=("10.0.0.2", 10911),
        reconsume_times=1,
    )
    msg = to_proto(stored)
    sp = msg.system_properties
    assert msg.topic.name == "Orders" and msg.body == b"payload"
    assert sp.tag == "paid" and list(sp.keys) == ["k1", "k2"] and sp.message_id == "01ABCDEF"
    assert sp.message_type == pb.MessageType.TRANSACTION
    assert sp.body_digest.checksum == hashlib.md5(b"payload").hexdigest().upper()
    assert (sp.queue_id, sp.queue_offset, sp.delivery_attempt) == (2, 17, 2)
    assert sp.born_host == "10.0.0.1:5000" and sp.store_host == "10.0.0.2:10911"
    assert sp.born_timestamp.ToMilliseconds() == NOW
    assert sp.store_timestamp.ToMilliseconds() == NOW + 1
    assert dict(msg.user_properties) == {"color": "red"}

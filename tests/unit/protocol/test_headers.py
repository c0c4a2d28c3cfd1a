"""Typed headers: Java field names, text conversion, required fields."""

from __future__ import annotations

import pytest

from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.headers import (
    GetRouteInfoRequestHeader,
    HeaderError,
    PullMessageRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    decode_send_message_header,
)

JAVA_PULL_EXT = {
    "queueId": "0",
    "maxMsgNums": "32",
    "sysFlag": "3",
    "suspendTimeoutMillis": "15000",
    "commitOffset": "10",
    "bname": "broker-a",
    "topic": "TopicTest",
    "queueOffset": "10",
    "expressionType": "TAG",
    "subVersion": "1700000000000",
    "consumerGroup": "g1",
}


def test_java_pull_header_round_trip() -> None:
    h = PullMessageRequestHeader.from_ext_fields(JAVA_PULL_EXT)
    assert h.queue_offset == 10 and h.sys_flag == 3 and h.sub_version == 1_700_000_000_000
    assert h.subscription is None and h.expression_type == "TAG"
    assert h.to_ext_fields() == JAVA_PULL_EXT


def test_register_broker_header_from_spec() -> None:
    ext = {
        "brokerId": "0",
        "bodyCrc32": "123456",
        "clusterName": "DefaultCluster",
        "brokerAddr": "127.0.0.1:10911",
        "haServerAddr": "127.0.0.1:10912",
        "compressed": "false",
        "brokerName": "broker-a",
    }
    h = RegisterBrokerRequestHeader.from_ext_fields(ext)
    assert h.broker_id == 0 and h.body_crc32 == 123456 and h.compressed is False
    assert h.to_ext_fields() == ext


def test_booleans_are_java_text() -> None:
    assert QueryDataVersionResponseHeader(changed=True).to_ext_fields() == {"changed": "true"}
    h = GetRouteInfoRequestHeader.from_ext_fields({"topic": "t", "acceptStandardJsonOnly": "TRUE"})
    assert h.accept_standard_json_only is True
    assert GetRouteInfoRequestHeader("t").to_ext_fields() == {"topic": "t"}


def test_send_v2_and_v1_parse_to_one_form() -> None:
    v2 = {
        "a": "pg",
        "b": "T",
        "c": "TBW102",
        "d": "4",
        "e": "-1",
        "f": "0",
        "g": "1",
        "h": "0",
        "k": "false",
    }
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, v2)
    h = decode_send_message_header(cmd)
    assert isinstance(h, SendMessageRequestHeader)
    assert h.producer_group == "pg" and h.queue_id == -1 and h.unit_mode is False
    v1 = RemotingCommand.request(RequestCode.SEND_MESSAGE, h.to_ext_fields())
    assert v1.ext_fields["producerGroup"] == "pg"
    assert decode_send_message_header(v1) == h
    assert h.to_v2().to_ext_fields()["e"] == "-1"
    assert SendMessageRequestHeaderV2.from_ext_fields(v2).to_v1() == h


def test_send_response_carries_msg_region() -> None:
    ext = SendMessageResponseHeader("ID", 1, 5).to_ext_fields()
    assert ext == {
        "msgId": "ID",
        "queueId": "1",
        "queueOffset": "5",
        "MSG_REGION": "DefaultRegion",
        "TRACE_ON": "true",
    }


def test_client_id_capital_id() -> None:
    h = UnregisterClientRequestHeader.from_ext_fields({"clientID": "c@1", "producerGroup": "p"})
    assert h.client_id == "c@1" and h.consumer_group is None


@pytest.mark.parametrize(
    ("ext", "message"),
    [({"topic": "t"}, "consumerGroup"), ({**JAVA_PULL_EXT, "queueId": "zero"}, "queueId")],
)
def test_bad_fields_raise_header_error(ext: dict[str, str], message: str) -> None:
    with pytest.raises(HeaderError, match=message):
        PullMessageRequestHeader.from_ext_fields(ext)


SEND_V2 = {"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0"}


@pytest.mark.parametrize(
    ("key", "text", "remark"),
    [
        ("f", str(2**40), "<f> is not valid: 1099511627776 is out of the range of a Java int"),
        ("e", str(-(2**31) - 1), "<e> is not valid: -2147483649 is out of the range of a Java int"),
        (
            "g",
            str(2**70),
            "<g> is not valid: 1180591620717411303424 is out of the range of a Java long",
        ),
        ("g", str(2**63), "out of the range of a Java long"),
        ("f", "1.5", "<f> is not valid: '1.5'"),
    ],
)
def test_numbers_out_of_java_range_are_header_errors(key: str, text: str, remark: str) -> None:
    """sysFlag is a Java int, bornTimestamp a long: past them the request is refused when its
    header is read, with a remark a client can show, not a struct error from the store."""
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {**SEND_V2, key: text})
    with pytest.raises(HeaderError) as raised:
        decode_send_message_header(cmd)
    assert remark in str(raised.value)
    assert "format" not in str(raised.value)


def test_numbers_at_the_java_bounds_are_read() -> None:
    ext = {**SEND_V2, "f": str(2**31 - 1), "e": str(-(2**31)), "g": str(2**63 - 1)}
    h = decode_send_message_header(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext))
    assert (h.sys_flag, h.queue_id, h.born_timestamp) == (2**31 - 1, -(2**31), 2**63 - 1)
    low = {**SEND_V2, "g": str(-(2**63))}
    v1 = decode_send_message_header(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, low))
    assert v1.born_timestamp == -(2**63)
    pull = PullMessageRequestHeader.from_ext_fields({**JAVA_PULL_EXT, "queueOffset": str(2**40)})
    assert pull.queue_offset == 2**40  # a long: fine
    with pytest.raises(HeaderError, match=r"<maxMsgNums> is not valid: .* Java int"):
        PullMessageRequestHeader.from_ext_fields({**JAVA_PULL_EXT, "maxMsgNums": str(2**40)})

"""The compressed RegisterBrokerBody (4.9.8 and RocketMQ 5 layouts) and RocketMQ 5's
CreateTopicListRequestBody."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.common.metadata import DataVersion, TopicConfig, TopicFilterType
from mqcore.protocol.bodies import BodyError, register_compressed
from mqcore.protocol.bodies.register_compressed import (
    V5_0_0,
    decode_compressed,
    encode_compressed,
)
from mqcore.protocol.bodies.route import RegisterBrokerBody, TopicConfigSerializeWrapper
from mqcore.protocol.bodies.topic_admin import CreateTopicListRequestBody

V4_9_8 = 409


def chunk(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def java_body(lines: list[bytes], version: bytes, mappings: list[bytes] | None) -> bytes:
    """What RegisterBrokerBody.encode(true) of a Java broker deflates."""
    raw = chunk(version) + struct.pack(">i", len(lines)) + b"".join(chunk(x) for x in lines)
    raw += chunk(b'["127.0.0.1:9999"]')
    if mappings is not None:
        raw += struct.pack(">i", len(mappings)) + b"".join(chunk(m) for m in mappings)
    return zlib.compress(raw, 9)


def test_a_498_broker_body_is_read() -> None:
    data = java_body(
        [b"Orders 8 4 6 SINGLE_TAG", b"Tags 2 2 7 MULTI_TAG"],
        b'{"counter":12,"timestamp":1700000000000}',
        None,
    )
    body = decode_compressed(data, V4_9_8)
    wrapper = body.topic_config_serialize_wrapper
    assert wrapper.data_version == DataVersion(1700000000000, 12)
    assert wrapper.topic_config_table == {
        "Orders": TopicConfig("Orders", 8, 4, 6),
        "Tags": TopicConfig("Tags", 2, 2, 7, TopicFilterType.MULTI_TAG),
    }
    assert body.filter_server_list == ["127.0.0.1:9999"]


def test_a_rocketmq_5_broker_body_is_read() -> None:
    """Attributes as a sixth field, a stateVersion, and static-topic mappings at the end."""
    data = java_body(
        [b'Orders 8 8 6 SINGLE_TAG {"+message.type":"NORMAL"}'],
        b'{"counter":3,"stateVersion":0,"timestamp":5}',
        [b'{"bname":"broker-a","epoch":0,"topic":"S","totalQueues":4}'],
    )
    body = decode_compressed(data, V5_0_0)
    assert body.topic_config_serialize_wrapper.topic_config_table == {
        "Orders": TopicConfig("Orders", 8, 8, 6)
    }


@given(
    st.dictionaries(
        st.from_regex(r"[a-zA-Z0-9_%|-]{1,20}", fullmatch=True),
        st.tuples(st.integers(0, 1024), st.integers(0, 1024), st.integers(0, 7)),
        max_size=30,
    )
)
@settings(max_examples=50, deadline=None)
def test_round_trip(topics: dict[str, tuple[int, int, int]]) -> None:
    table = {name: TopicConfig(name, r, w, p) for name, (r, w, p) in topics.items()}
    body = RegisterBrokerBody(TopicConfigSerializeWrapper(table, DataVersion(9, 4)), ["a:1"])
    again = decode_compressed(encode_compressed(body), V4_9_8)
    assert again == body


def test_flags_a_compressed_body_cannot_carry_are_lost_as_in_rocketmq() -> None:
    table = {"O": TopicConfig("O", 1, 1, topic_sys_flag=1, order=True)}
    body = RegisterBrokerBody(TopicConfigSerializeWrapper(table))
    again = decode_compressed(encode_compressed(body), V4_9_8)
    assert again.topic_config_serialize_wrapper.topic_config_table["O"] == TopicConfig("O", 1, 1)


@pytest.mark.parametrize(
    "data",
    [
        b"not zlib",
        zlib.compress(b"\x00\x00"),  # ends inside a length
        zlib.compress(chunk(b"{}") + struct.pack(">i", 1) + chunk(b"only three fields")),
        zlib.compress(chunk(b"{}") + struct.pack(">i", 1) + chunk(b"T x 1 6 SINGLE_TAG")),
        zlib.compress(chunk(b"{}") + struct.pack(">i", 1) + chunk(b"T 1 1 6 NO_SUCH_TYPE")),
        zlib.compress(chunk(b"{}") + struct.pack(">i", -1)),
        zlib.compress(struct.pack(">i", 1 << 30)),  # a length beyond the data
        zlib.compress(chunk(b"{}") + struct.pack(">i", 0) + chunk(b"[1")),
        zlib.compress(chunk(b"[1]") + struct.pack(">i", 0) + chunk(b"[]")),
        zlib.compress(chunk(b'{"counter":"x"}') + struct.pack(">i", 0) + chunk(b"[]")),
    ],
)
def test_bad_bodies_raise_body_error(data: bytes) -> None:
    with pytest.raises(BodyError):
        decode_compressed(data, V4_9_8)


@given(st.binary(max_size=200))
@settings(max_examples=200, deadline=None)
def test_arbitrary_bytes_only_raise_body_error(data: bytes) -> None:
    for payload in (data, zlib.compress(data)):
        try:
            decode_compressed(payload, V5_0_0)
        except BodyError:
            pass


def test_a_topic_list_body_as_rocketmq_5_writes_it() -> None:
    java = (
        b'{"topicConfigList":[{"attributes":{},"order":false,"perm":6,"readQueueNums":8,'
        b'"topicFilterType":"SINGLE_TAG","topicName":"A","topicSysFlag":0,"writeQueueNums":8},'
        b'{"perm":4,"readQueueNums":2,"topicName":"B","writeQueueNums":2}]}'
    )
    body = CreateTopicListRequestBody.decode(java)
    assert body.topic_config_list == [TopicConfig("A", 8, 8, 6), TopicConfig("B", 2, 2, 4)]
    assert CreateTopicListRequestBody.decode(body.encode()) == body


def test_inflating_stops_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(register_compressed, "MAX_INFLATED", 1000)
    with pytest.raises(BodyError, match="beyond 1000 bytes"):
        decode_compressed(zlib.compress(b"\0" * 100_000), V4_9_8)

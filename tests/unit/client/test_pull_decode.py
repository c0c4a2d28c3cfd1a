"""Issue 12, defect 5: a pulled record the client cannot decode must not cost the records
beside it, and offsets must never move past a record nobody saw."""

from __future__ import annotations

import zlib

from client_fakes import NAMESRV, InMemoryCluster

from mqcore.client.api import PullStatus
from mqcore.client.producer import Producer
from mqcore.client.pull_decode import UndecodableMessage, decode_pulled
from mqcore.message import SysFlag, encode_record
from mqcore.protocol.bodies import MessageQueue

TAGS = "TAGS\x01TagA"


def record(offset: int, body: bytes, sys_flag: int = 0) -> bytes:
    return bytes(
        encode_record(
            topic="T",
            body=body,
            properties=TAGS.encode(),
            sys_flag=sys_flag,
            queue_offset=offset,
            physical_offset=1000 + offset,
        )
    )


def test_a_body_that_does_not_inflate_is_delivered_flagged_between_good_ones() -> None:
    packed = zlib.compress(b"big and good")
    body = (
        record(0, b"m0")
        + record(1, b"poison", SysFlag.COMPRESSED_FLAG)
        + record(2, packed, SysFlag.COMPRESSED_FLAG)
        + record(3, b"m3")
    )
    pulled = decode_pulled(body, "T")
    assert pulled.complete
    assert [m.queue_offset for m in pulled.messages] == [0, 1, 2, 3]
    bad = pulled.messages[1]
    assert isinstance(bad, UndecodableMessage)
    assert bad.body == b"poison" and "does not inflate" in bad.decode_error
    assert bad.properties["TAGS"] == "TagA" and bad.commit_log_offset == 1001
    assert [m.body for m in pulled.messages if m is not bad] == [b"m0", b"big and good", b"m3"]
    assert not any(isinstance(m, UndecodableMessage) for m in pulled.messages if m is not bad)


def test_a_record_whose_fields_do_not_parse_is_stepped_over_by_its_size() -> None:
    broken = bytearray(record(1, b"m1"))
    broken[-len(TAGS) - 2 : -len(TAGS)] = (0xFFFF).to_bytes(2, "big")  # properties length
    pulled = decode_pulled(record(0, b"m0") + bytes(broken) + record(2, b"m2"), "T")
    assert pulled.complete
    assert [m.queue_offset for m in pulled.messages] == [0, 1, 2]
    bad = pulled.messages[1]
    assert isinstance(bad, UndecodableMessage) and bad.body == bytes(broken)
    assert bad.topic == "T" and not bad.properties and bad.decode_error
    assert pulled.messages[2].body == b"m2"


def test_bytes_that_are_not_a_record_end_the_response_incompletely() -> None:
    pulled = decode_pulled(record(0, b"m0") + b"\x00" * 80, "T")
    assert not pulled.complete and [m.body for m in pulled.messages] == [b"m0"]


async def test_pull_delivers_every_record_and_moves_only_past_seen_ones(
    cluster: InMemoryCluster,
) -> None:
    broker = cluster.brokers["broker-a"]
    for i in range(10):
        body, flag = (b"poison", SysFlag.COMPRESSED_FLAG) if i == 1 else (f"m{i}".encode(), 0)
        broker._store("T", 0, body, TAGS, flag, 0)
    async with Producer("pg", namesrv=NAMESRV, client_config=cluster.config()) as p:
        api = p.instance.api
        mq = MessageQueue("T", "broker-a", 0)
        result = await api.pull(mq, group="g", offset=0, expression="TagA", suspend=False)
        assert result.status is PullStatus.FOUND and result.next_begin_offset == 10
        assert [m.queue_offset for m in result.messages] == list(range(10))
        assert isinstance(result.messages[1], UndecodableMessage)

        # garbage where record 10 should be: the next pull resumes at 10, not past it
        junk = broker._store("T", 0, b"m10", TAGS, 0, 0)
        junk.record = b"\x00" * 80
        broker._store("T", 0, b"m11", TAGS, 0, 0)
        result = await api.pull(mq, group="g", offset=9, suspend=False)
        assert [m.queue_offset for m in result.messages] == [9]
        assert result.next_begin_offset == 10

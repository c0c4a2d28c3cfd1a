"""Record codec: round trips, strictness, CRC, hosts, batches, and fuzzing."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.errors import CorruptRecordError
from mqcore.message import SysFlag, decode_record, decode_records, encode_record, patch_record
from mqcore.message.const import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2
from mqcore.message.record import (
    body_crc,
    decode_batch_body,
    decode_dispatch,
    encode_batch_body,
    encode_blank,
    peek_header,
    record_length,
)

# The first record of a real 4.9.8 store, as store-format.md §3.2 prints it.
SMOKE_PROPS = (
    "KEYS\x01key-0\x02UNIQ_KEY\x017F00000130795FFD2B27943091090000\x02"
    "CLUSTER\x01DefaultCluster\x02TAGS\x01TagA\x02seq\x010"
)


def smoke_record() -> bytearray:
    return encode_record(
        topic="SmokeTopic",
        body=b"hello-0",
        properties=SMOKE_PROPS.encode(),
        queue_id=2,
        born_timestamp=0x000001A228987909,
        born_host=("127.0.0.1", 60596),
        store_host=("127.0.0.1", 10911),
        store_timestamp=0x000001A22898796C,
    )


def test_golden_bytes_of_spec_example() -> None:
    rec = smoke_record()
    assert len(rec) == 199 == record_length(7, 10, 91)
    assert rec[:20].hex() == "000000c7daa320a7154677bc0000000200000000"
    assert rec[40:72].hex() == ("000001a2289879097f0000010000ecb4000001a22898796c7f00000100002a9f")
    assert rec[84:88].hex() == "00000007"
    assert rec[95:106].hex() == "0a536d6f6b65546f706963"
    assert rec[106:108].hex() == "005b"


def test_round_trip_and_patch() -> None:
    rec = smoke_record()
    patch_record(rec, 0, queue_offset=7, physical_offset=4096, store_timestamp=99)
    m = decode_record(rec, check_crc=True)
    assert (m.queue_offset, m.commit_log_offset, m.store_timestamp) == (7, 4096, 99)
    assert m.topic == "SmokeTopic" and m.body == b"hello-0" and m.queue_id == 2
    assert m.keys == ["key-0"] and m.tags == "TagA"
    assert m.unique_key == "7F00000130795FFD2B27943091090000"
    assert m.user_properties == {"seq": "0"}
    assert m.msg_id == "7F00000100002A9F0000000000001000"


def test_ipv6_hosts_set_sysflag_and_shift_fields() -> None:
    rec = encode_record(
        topic="T", body=b"x", born_host=("::1", 1), store_host=("fe80::2", 2), born_timestamp=5
    )
    assert len(rec) == record_length(1, 1, 0) + 24
    patch_record(rec, 0, queue_offset=1, physical_offset=2, store_timestamp=77)
    m = decode_record(rec)
    assert m.sys_flag & SysFlag.BORNHOST_V6_FLAG and m.sys_flag & SysFlag.STOREHOSTADDRESS_V6_FLAG
    assert m.born_host == ("::1", 1) and m.store_host == ("fe80::2", 2)
    assert m.store_timestamp == 77
    assert len(m.msg_id) == 56


def test_ipv4_mapped_ipv6_is_written_as_ipv4() -> None:
    rec = encode_record(topic="T", body=b"", born_host=("::ffff:10.0.0.1", 3))
    m = decode_record(rec)
    assert m.sys_flag & SysFlag.BORNHOST_V6_FLAG == 0
    assert m.born_host == ("10.0.0.1", 3)


def test_v2_magic_topic_length_is_two_bytes() -> None:
    rec = encode_record(topic="T" * 100, body=b"b", properties={"a": "b"})
    # Rewrite as a 5.x V2 record: 2-byte topic length.
    body_end = 84 + 4 + 1
    v2 = bytearray(rec[:body_end]) + struct.pack(">h", 100) + rec[body_end + 1 :]
    struct.pack_into(">ii", v2, 0, len(v2), MESSAGE_MAGIC_CODE_V2)
    m = decode_record(v2)
    assert m.topic == "T" * 100 and m.properties == {"a": "b"}


def test_strict_rejects_size_mismatch_and_lenient_accepts() -> None:
    rec = smoke_record()
    struct.pack_into(">i", rec, 0, 150)
    with pytest.raises(CorruptRecordError, match="TOTALSIZE"):
        decode_record(rec)
    assert decode_record(rec, strict=False).body == b"hello-0"


def test_crc_mismatch() -> None:
    rec = smoke_record()
    rec[88] ^= 0xFF  # flip a body byte
    with pytest.raises(CorruptRecordError, match="BODYCRC"):
        decode_record(rec, check_crc=True)
    decode_record(rec)  # without the check the record still parses


def test_blank_and_bad_magic() -> None:
    blank = encode_blank(34) + bytes(26)
    assert peek_header(blank) == (34, BLANK_MAGIC_CODE)
    with pytest.raises(CorruptRecordError, match="blank"):
        decode_record(blank + bytes(48))
    with pytest.raises(CorruptRecordError, match="magic"):
        decode_record(bytes(64))
    assert peek_header(b"\x00\x01") == (0, 0)


def test_body_crc_examples_from_spec() -> None:
    assert body_crc(b'{"room":"1","msg":"1"}') == 1438513404
    assert body_crc(b"hello-2") == 2068321936


def test_records_back_to_back_then_junk() -> None:
    a = encode_record(topic="A", body=b"1", properties={"TAGS": "x"})
    b = encode_record(topic="B", body=b"22")
    msgs = decode_records(bytes(a) + bytes(b) + b"\x00\x00\x00\x07garbage")
    assert [m.topic for m in msgs] == ["A", "B"]


def test_dispatch_request() -> None:
    rec = smoke_record()
    d = decode_dispatch(rec)
    assert (d.topic, d.queue_id, d.size, d.tags, d.keys) == ("SmokeTopic", 2, 199, "TagA", "key-0")
    assert d.uniq_key == "7F00000130795FFD2B27943091090000"


def test_topic_and_properties_limits() -> None:
    with pytest.raises(ValueError, match="127"):
        encode_record(topic="T" * 128, body=b"")
    with pytest.raises(ValueError, match="32767"):
        encode_record(topic="T", body=b"", properties={"k": "v" * 40000})


def test_batch_body_round_trip() -> None:
    items = [(0, b"one", {"TAGS": "a"}), (3, b"", {}), (1, b"x" * 1000, {"KEYS": "k1 k2"})]
    assert decode_batch_body(encode_batch_body(items)) == items


def test_batch_body_corrupt() -> None:
    raw = bytearray(encode_batch_body([(0, b"abc", {"a": "b"})]))
    struct.pack_into(">i", raw, 0, 999)
    with pytest.raises(CorruptRecordError):
        decode_batch_body(raw)
    with pytest.raises(CorruptRecordError):
        decode_batch_body(raw[:10])


texts = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x01\x02"),
    min_size=1,
    max_size=20,
)


@given(
    topic=st.text(alphabet="abcXYZ019_-%|", min_size=1, max_size=127),
    body=st.binary(max_size=300),
    props=st.dictionaries(texts, texts, max_size=5),
    queue_id=st.integers(0, 2**31 - 1),
    flag=st.integers(-(2**31), 2**31 - 1),
    ts=st.integers(0, 2**62),
    offsets=st.tuples(st.integers(0, 2**62), st.integers(0, 2**62)),
    v6=st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_round_trip_property(
    topic: str,
    body: bytes,
    props: dict[str, str],
    queue_id: int,
    flag: int,
    ts: int,
    offsets: tuple[int, int],
    v6: bool,
) -> None:
    host = ("2001:db8::7", 65535) if v6 else ("192.168.1.9", 10911)
    rec = encode_record(
        topic=topic,
        body=body,
        properties=props,
        queue_id=queue_id,
        flag=flag,
        born_timestamp=ts,
        born_host=host,
        store_host=host,
    )
    patch_record(rec, 0, queue_offset=offsets[0], physical_offset=offsets[1], store_timestamp=ts)
    m = decode_record(rec, check_crc=True)
    assert (m.topic, m.body, m.properties, m.queue_id, m.flag) == (
        topic,
        body,
        props,
        queue_id,
        flag,
    )
    assert (m.queue_offset, m.commit_log_offset, m.store_timestamp) == (*offsets, ts)
    assert m.born_host == host and m.store_size == len(rec)
    assert decode_records(bytes(rec) * 2) == [m, m]


@given(st.binary(max_size=400), st.integers(0, 50))
@settings(max_examples=500, deadline=None)
def test_arbitrary_bytes_raise_only_corrupt_record_error(data: bytes, pos: int) -> None:
    for strict in (True, False):
        try:
            decode_record(data, min(pos, len(data)), strict=strict, check_crc=True)
        except CorruptRecordError:
            pass
    decode_records(data)
    try:
        decode_batch_body(data)
    except CorruptRecordError:
        pass


@given(st.binary(min_size=1, max_size=200))
@settings(max_examples=300, deadline=None)
def test_mutated_valid_record_never_crashes(noise: bytes) -> None:
    rec = smoke_record()
    for i, b in enumerate(noise):
        rec[(i * 37 + b) % len(rec)] ^= b
    try:
        decode_record(rec, check_crc=True)
    except CorruptRecordError:
        pass

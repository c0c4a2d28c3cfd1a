"""Commit log records, batch bodies and properties: mutated valid bytes decode or raise
CorruptRecordError, in the strict (store) and lenient (pull body) modes alike."""

from __future__ import annotations

import zlib

import pytest
from fuzzing import fuzz, mutated
from hypothesis import given
from hypothesis import strategies as st

from mqcore.errors import CorruptRecordError
from mqcore.message.const import SysFlag
from mqcore.message.properties import decode_properties
from mqcore.message.record import (
    MAX_INFLATED_BODY,
    decode_batch_body,
    decode_dispatch,
    decode_record,
    decode_records,
    encode_batch_body,
    encode_record,
)

TEXT_CHARS = st.characters(exclude_categories=["Cs"], exclude_characters="\x01\x02")
PROPS = st.dictionaries(
    st.text(TEXT_CHARS, min_size=1, max_size=6),
    st.text(TEXT_CHARS, min_size=1, max_size=8),
    max_size=3,
)


def _record(
    topic: str, body: bytes, props: dict[str, str], sys_flag: int, v6: bool, zipped: bool
) -> bytes:
    host = ("::1", 10911) if v6 else ("127.0.0.1", 10911)
    if zipped:
        body = zlib.compress(body)
        sys_flag |= SysFlag.COMPRESSED_FLAG
    return bytes(
        encode_record(topic=topic, body=body, properties=props, sys_flag=sys_flag, born_host=host)
    )


RECORDS = st.builds(
    _record,
    st.text(TEXT_CHARS, min_size=1, max_size=10),
    st.binary(max_size=40),
    PROPS,
    st.sampled_from([0, 0x4, 0x8, 0xC]),
    st.booleans(),
    st.booleans(),
)
RECORD_RUNS = st.lists(RECORDS, min_size=1, max_size=3).map(b"".join)


def _decode_all_ways(data: bytes) -> None:
    for strict in (True, False):
        try:
            msg = decode_record(data, strict=strict, check_crc=strict)
        except CorruptRecordError:
            continue
        assert len(msg.body) <= MAX_INFLATED_BODY
    try:
        decode_dispatch(data)
    except CorruptRecordError:
        pass
    for msg in decode_records(data):  # lenient: never raises, stops at the first bad one
        assert len(msg.body) <= MAX_INFLATED_BODY


@fuzz(300)
@given(mutated(RECORD_RUNS))
def test_mutated_records_decode_or_raise_corrupt_record_error(data: bytes) -> None:
    _decode_all_ways(data)


@fuzz(100)
@given(st.binary(max_size=300), st.integers(0, 60))
def test_random_bytes_at_any_position(data: bytes, pos: int) -> None:
    try:
        decode_record(data, pos, strict=False)
    except CorruptRecordError:
        pass


BATCHES = st.lists(st.tuples(st.integers(), st.binary(max_size=30), PROPS), max_size=3).map(
    lambda msgs: encode_batch_body([(f & 0x7FFFFFFF, b, p) for f, b, p in msgs])
)


@fuzz(200)
@given(mutated(BATCHES))
def test_mutated_batch_bodies(data: bytes) -> None:
    try:
        for _flag, body, props in decode_batch_body(data):
            assert len(body) <= len(data)
            assert all(type(k) is str and type(v) is str for k, v in props.items())
    except CorruptRecordError:
        pass


@fuzz(200)
@given(
    st.one_of(
        st.binary(max_size=80),
        st.lists(
            st.sampled_from([b"\x01", b"\x02", b"a", b"\xff", b"\xc3\xa9", b"\xed\xa0\x80"]),
            max_size=20,
        ).map(b"".join),
    )
)
def test_properties_decode_or_raise_corrupt_record_error(data: bytes) -> None:
    try:
        props = decode_properties(data)
    except CorruptRecordError:
        return
    for name, value in props.items():
        assert name and value and "\x01" not in name and "\x02" not in value


def test_a_compressed_body_that_inflates_to_gigabytes_is_refused() -> None:
    """A record is at most 4 MiB, yet zlib inflates 1,000x: a pulled record flagged
    compressed must not make the client allocate gigabytes."""
    bomb = zlib.compress(bytes(MAX_INFLATED_BODY + 1), 1)  # 64 MiB in 286 KiB
    record = encode_record(topic="T", body=bomb, sys_flag=SysFlag.COMPRESSED_FLAG)
    with pytest.raises(CorruptRecordError, match="inflates to more than"):
        decode_record(record)
    assert decode_records(bytes(record)) == []


def test_a_record_cut_right_after_its_body_is_corrupt_not_an_index_error() -> None:
    """Found by bench/fuzz_atheris.py: the v1 topic length is one byte read by index, so a
    buffer ending after the body raised IndexError out of the lenient decoders (a pull
    body cut there would have broken the client's decoding loop)."""
    record = bytes(encode_record(topic="T", body=b"x"))
    cut = record[: len(record) - len(b"\x01T\x00\x00")]
    with pytest.raises(CorruptRecordError, match="before its topic length"):
        decode_record(cut, strict=False)
    assert decode_records(cut) == []

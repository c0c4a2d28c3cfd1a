"""The compiled record decoder (``_record.pyx``) equals the pure reference.

The twin reads regular records itself and hands everything else to the reference, so on
any bytes both give the same MessageExt or the same CorruptRecordError, word for word; and
a regular record must really be read by the twin (not quietly by the reference).
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.message import SysFlag, encode_record
from mqcore.message import record as pure_module
from mqcore.message.const import MESSAGE_MAGIC_CODE_V2
from mqcore.message.record import encode_batch_body
from tests.support.compiled import compiled_twin, outcome

pure_decode = pure_module.PURE["_decode"]
MODES = list(itertools.product((False, True), repeat=4))  # strict, crc, read_body, inflate


@pytest.fixture(scope="module")
def twin() -> Callable[..., Any]:
    module: ModuleType = compiled_twin("mqcore.message._record")
    decode: Callable[..., Any] = module.decoder(pure_decode)
    return decode


def never(*args: object) -> object:
    raise AssertionError("a regular record was handed to the reference")


hosts = st.sampled_from([("127.0.0.1", 0), ("10.0.0.1", 10911), ("255.1.0.9", 65535)]) | st.just(
    ("::1", 9876)
)
prop_text = st.text(
    st.characters(exclude_characters="\x01\x02", exclude_categories=("Cs",)), min_size=1, max_size=8
)


def records(draw: Any) -> bytes:
    """One record as the store writes it, sometimes compressed, sometimes v2."""
    body = draw(st.binary(max_size=40))
    sys_flag = draw(st.sampled_from([0, 0, 4, 8]))
    if draw(st.booleans()):
        body = zlib.compress(body)
        sys_flag |= SysFlag.COMPRESSED_FLAG
    raw = bytearray(
        encode_record(
            topic=draw(st.text(max_size=10)),
            body=body,
            properties=draw(st.dictionaries(prop_text, prop_text, max_size=4)),
            queue_id=draw(st.integers(0, 2**31 - 1)),
            flag=draw(st.integers(-(2**31), 2**31 - 1)),
            sys_flag=sys_flag,
            born_timestamp=draw(st.integers(0, 2**63 - 1)),
            born_host=draw(hosts),
            store_host=draw(hosts),
            store_timestamp=draw(st.integers(0, 2**63 - 1)),
            queue_offset=draw(st.integers(0, 2**63 - 1)),
            physical_offset=draw(st.integers(0, 2**63 - 1)),
            reconsume_times=draw(st.integers(0, 16)),
            prepared_transaction_offset=draw(st.integers(0, 2**40)),
        )
    )
    return bytes(raw)


def same(twin: Callable[..., Any], buf: Any, pos: int) -> None:
    for mode in MODES:
        assert outcome(twin, buf, pos, *mode) == outcome(pure_decode, buf, pos, *mode), mode


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_compiled_decoder_equals_the_pure_one(twin: Callable[..., Any], data: Any) -> None:
    first, second = records(data.draw), records(data.draw)
    buf = first + second
    same(twin, buf, 0)
    same(twin, buf, len(first))
    same(twin, bytearray(buf), len(first))
    same(twin, memoryview(buf), 0)
    # Damaged: bytes flipped, cut or added; the same message or the same error.
    bad = bytearray(buf)
    for _ in range(data.draw(st.integers(1, 4))):
        bad[data.draw(st.integers(0, len(bad) - 1))] = data.draw(st.integers(0, 255))
    bad = bad[: data.draw(st.integers(0, len(bad)))] + data.draw(st.binary(max_size=4))
    same(twin, bytes(bad), 0)
    same(twin, bytes(bad), data.draw(st.integers(0, len(bad) + 2)))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=160), st.integers(0, 8))
def test_compiled_decoder_on_arbitrary_bytes(
    twin: Callable[..., Any], raw: bytes, pos: int
) -> None:
    same(twin, raw, pos)


def regular(properties: bytes | dict[str, str] = b"", **fields: Any) -> bytes:
    return bytes(
        encode_record(
            topic="TopicTest",
            body=b"hello",
            properties=properties,
            born_host=("10.1.2.3", 5000),
            store_host=("192.168.0.7", 10911),
            **fields,
        )
    )


@pytest.mark.parametrize(
    "props",
    [
        b"",
        b"TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01C0A8",
        b"\x02\x02a\x01\x01b\x02\x01x\x02y\x01\x02z\x01\x02",  # empty names, values, pairs
        "n\u00e9\x01v\U0001f600\x02k\x01\u65e5".encode(),
        b"dup\x011\x02dup\x012",
        b"a\x01b\x01c",  # the value keeps its later separators
    ],
)
def test_regular_records_are_read_by_the_twin_itself(
    twin: Callable[..., Any], props: bytes
) -> None:
    module: ModuleType = compiled_twin("mqcore.message._record")
    alone = module.decoder(never)
    buf = regular(props, queue_offset=3, physical_offset=99, store_timestamp=7)
    for strict, read_body in itertools.product((False, True), repeat=2):
        got = alone(buf, 0, strict, False, read_body, True)
        assert got == pure_decode(buf, 0, strict, False, read_body, True)
    v2 = bytearray(regular(props))
    struct.pack_into(">i", v2, 4, MESSAGE_MAGIC_CODE_V2)  # a 5.x record: 2-byte topic length
    v2[88 + 5 : 88 + 5 + 1] = b"\x00\x09"
    struct.pack_into(">i", v2, 0, len(v2))
    assert alone(bytes(v2), 0, True, False, True, True) == pure_decode(
        bytes(v2), 0, True, False, True, True
    )


@pytest.mark.parametrize(
    "props",
    [b"\xff\x01v", b"k\x01\xc3", b"\xff", b"ok\x01v\x02\xfe\xfe"],  # not UTF-8, even skipped
)
def test_properties_that_are_not_utf8_raise_the_reference_error(
    twin: Callable[..., Any], props: bytes
) -> None:
    buf = regular(props)
    expected = outcome(pure_decode, buf, 0, True, False, True, True)
    assert expected[0] is not str and "not UTF-8" in expected[1]
    assert outcome(twin, buf, 0, True, False, True, True) == expected


pure_batch = pure_module.PURE["decode_batch_body"]


@pytest.fixture(scope="module")
def batch_twin() -> Callable[..., Any]:
    module: ModuleType = compiled_twin("mqcore.message._record")
    decode: Callable[..., Any] = module.batch_decoder(pure_batch)
    return decode


entries = st.lists(
    st.tuples(
        st.integers(-(2**31), 2**31 - 1),
        st.binary(max_size=30),
        st.dictionaries(prop_text, prop_text, max_size=3),
    ),
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(entries, st.data())
def test_compiled_batch_decoder_equals_the_pure_one(
    batch_twin: Callable[..., Any], batch: list[tuple[int, bytes, dict[str, str]]], data: Any
) -> None:
    raw = encode_batch_body(batch)
    module: ModuleType = compiled_twin("mqcore.message._record")
    assert module.batch_decoder(never)(raw) == pure_batch(raw) == batch  # read by the twin
    bad = bytearray(raw + data.draw(st.binary(max_size=4)))
    for _ in range(data.draw(st.integers(0, 3))):
        if bad:
            bad[data.draw(st.integers(0, len(bad) - 1))] = data.draw(st.integers(0, 255))
    bad = bad[: data.draw(st.integers(0, len(bad)))]
    for form in (bytes(bad), bad, memoryview(bad)):
        assert outcome(batch_twin, form) == outcome(pure_batch, form)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=60))
def test_compiled_batch_decoder_on_arbitrary_bytes(
    batch_twin: Callable[..., Any], raw: bytes
) -> None:
    assert outcome(batch_twin, raw) == outcome(pure_batch, raw)

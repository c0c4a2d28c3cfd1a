"""The compiled header readers (``mqcore.protocol.headers._reader``) read every header
class exactly as the generated pure readers do, errors word for word.

The compiled reader takes the regular case and hands the rest to the pure one; these tests
draw both kinds (numbers at and past the Java ranges, leading zeros and signs, text int()
takes and Java does not, values that are not text, mappings that are not dicts) so each
way out is compared with the reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.protocol.headers import CommandHeader, SendMessageRequestHeader
from mqcore.protocol.headers.send import SendMessageRequestHeaderV2
from tests.support.compiled import compiled_twin, outcome

from .test_fast_paths import HEADER_CLASSES

TWIN = "mqcore.protocol.headers._reader"

number = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, 2**63, -(2**63)]),
    st.integers(10**17, 10**19),
).map(str)
odd_number = st.sampled_from(
    ["007", "-0", "-", "--1", "+5", " 1", "1 ", "1_0", "٣", "0x1", "", "9" * 18, "-" + "9" * 18]
)
flag = st.sampled_from(["true", "false", "TRUE", "True", "yes", ""])
not_text = st.one_of(st.integers(), st.none(), st.just(["1"]), st.just(b"1"))
value = st.one_of(number, odd_number, flag, st.text(max_size=6), not_text)


def pure_and_compiled(cls: type[CommandHeader], wire_cls: type[CommandHeader]) -> Any:
    reader = cls._reader(wire_cls)
    assert type(reader).__name__ == "HeaderReader", "the compiled reader is not in use"
    return reader.pure, reader


def test_every_header_class_gets_a_compiled_reader() -> None:
    compiled_twin(TWIN)
    for cls in HEADER_CLASSES:
        pure, compiled = pure_and_compiled(cls, cls)
        assert pure is not compiled


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(HEADER_CLASSES), st.data())
def test_compiled_readers_match_the_pure_ones(cls: type[CommandHeader], data: Any) -> None:
    compiled_twin(TWIN)
    pure, compiled = pure_and_compiled(cls, cls)
    keys = [key for _, key, *_ in cls._fields_spec()]
    ext: Mapping[str, Any] = data.draw(st.dictionaries(st.sampled_from([*keys, "other"]), value))
    if data.draw(st.booleans()):  # complete, so the regular case is reached often
        ext = {**{key: data.draw(number) for key in keys}, **ext}
    if data.draw(st.integers(0, 9)) == 0:
        ext = MappingProxyType(dict(ext))  # not a dict: the pure reader's
    expected = outcome(pure, ext)
    assert outcome(compiled, ext) == expected
    if expected[0] == "ok":
        assert type(expected[1]) is cls


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from([*"abcdefghijklmn"]), value))
def test_the_send_v2_reader_matches_the_pure_one(ext: dict[str, Any]) -> None:
    compiled_twin(TWIN)
    pure, compiled = pure_and_compiled(SendMessageRequestHeader, SendMessageRequestHeaderV2)
    assert outcome(compiled, ext) == outcome(pure, ext)


def test_a_java_send_is_read_by_the_compiled_path() -> None:
    """The regular case does not fall back: a reader whose pure half refuses to run still
    reads a Java producer's header."""
    twin = compiled_twin(TWIN)
    pure, compiled = pure_and_compiled(SendMessageRequestHeader, SendMessageRequestHeaderV2)
    ext = {
        "a": "pg", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "1", "f": "0",
        "g": "1700000000000", "h": "0", "i": "TAGS\x01a", "j": "0", "k": "false",
        "m": "false", "n": "broker-a",
    }  # fmt: skip

    def refuse(_ext: Any) -> Any:
        raise AssertionError("fell back to the pure reader")

    rows = SendMessageRequestHeader._reader_rows(SendMessageRequestHeaderV2._fields_spec())
    strict = twin.reader(SendMessageRequestHeader, rows, refuse)
    assert strict(ext) == pure(ext) == compiled(ext)
    assert strict(ext).born_timestamp == 1_700_000_000_000

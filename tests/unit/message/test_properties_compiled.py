"""The compiled property codec (``_properties.pyx``) equals the pure reference on any
text, bytes or map: the same dict, the same bytes, the same CorruptRecordError text."""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType, ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.message import properties as pure_module
from tests.support.compiled import compiled_twin, outcome

PURE = pure_module.PURE
Functions = tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]


@pytest.fixture(scope="module")
def twin() -> Functions:
    module: ModuleType = compiled_twin("mqcore.message._properties")
    functions: Functions = module.functions(
        PURE["encode_properties"], PURE["decode_properties"], PURE["parse_properties_text"]
    )
    return functions


# Text made mostly of the separators and a few letters, so segments without a name, a
# value or a separator come up often; any code point (lone surrogates too) sometimes.
property_text = st.text(st.sampled_from("\x01\x02ab\u00e9\U0001f600"), max_size=20) | st.text(
    max_size=12
)


@settings(max_examples=300, deadline=None)
@given(property_text)
def test_compiled_text_parser_equals_the_pure_one(twin: Functions, text: str) -> None:
    _, decode, parse = twin
    assert outcome(parse, text) == outcome(PURE["parse_properties_text"], text)
    raw = text.encode("utf-8", "surrogatepass")  # a lone surrogate: bytes that are not UTF-8
    assert outcome(decode, raw) == outcome(PURE["decode_properties"], raw)


@settings(max_examples=200, deadline=None)
@given(
    st.binary(max_size=24)
    | st.lists(
        st.sampled_from([b"a", b"\x01", b"\x02", b"\xc3", b"\xa9", b"\xff"]), max_size=10
    ).map(b"".join)
)
def test_compiled_decoder_on_any_bytes(twin: Functions, raw: bytes) -> None:
    _, decode, _ = twin
    for form in (raw, bytearray(raw), memoryview(raw)):
        assert outcome(decode, form) == outcome(PURE["decode_properties"], form)


names = st.text(st.characters(exclude_characters="\x01\x02"), min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(names, names | st.none(), max_size=5))
def test_compiled_encoder_equals_the_pure_one(
    twin: Functions, props: dict[str, str | None]
) -> None:
    encode, decode, _ = twin
    assert outcome(encode, props) == outcome(PURE["encode_properties"], props)
    if outcome(encode, props)[0] == "ok":
        expected = {k: v for k, v in props.items() if v is not None}
        assert decode(encode(props)) == PURE["decode_properties"](encode(props)) == expected


@pytest.mark.parametrize(
    "props",
    [{}, None, {"k": 5}, {5: "v"}, MappingProxyType({"a": "1"}), {"k": "\ud800"}, {"a": None}],
)
def test_odd_maps_give_what_the_pure_encoder_gives(twin: Functions, props: Any) -> None:
    encode, _, _ = twin
    assert outcome(encode, props) == outcome(PURE["encode_properties"], props)


@pytest.mark.parametrize("text", [None, "", 5, b"k\x01v", "a\x01b\x01c\x02\x02d\x01"])
def test_odd_texts_give_what_the_pure_parser_gives(twin: Functions, text: Any) -> None:
    _, _, parse = twin
    assert outcome(parse, text) == outcome(PURE["parse_properties_text"], text)

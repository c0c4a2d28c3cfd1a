"""The compiled JSON header codec (``_header_json.pyx``) equals the pure reference: the
same command from any header, the same RemoteProtocolError text for any bad one, the same
bytes (or LocalProtocolError) on the way out."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.protocol import LanguageCode, SerializeType
from mqcore.protocol import header_json as pure_module
from mqcore.protocol.command import make_command
from tests.support.compiled import compiled_twin, outcome

from .test_codec import SEND_V2_EXT

pure_decode = pure_module.PURE["decode_json_header"]
pure_encode = pure_module.PURE["encode_json_header"]
Pair = tuple[Any, Any]


@pytest.fixture(scope="module")
def twin() -> Pair:
    module: ModuleType = compiled_twin("mqcore.protocol._header_json")
    pair: Pair = module.codec(pure_module._ext_text, pure_module._int_field)
    return pair


texts = st.text(max_size=10)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
field_names = st.sampled_from(
    ["code", "opaque", "flag", "version", "remark", "language", "extFields", "other"]
)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(-(2**31), 2**31 - 1),
    st.dictionaries(texts, texts, max_size=5),
    st.none() | texts,
    st.sampled_from(list(LanguageCode)),
    st.dictionaries(field_names, json_values, max_size=4),
)
def test_compiled_codec_equals_the_pure_one(
    twin: Pair,
    code: int,
    ext: dict[str, str],
    remark: str | None,
    language: LanguageCode,
    overrides: dict[str, Any],
) -> None:
    decode, encode = twin
    cmd = make_command(code, 5, 1, remark, ext, b"", language, 409, SerializeType.JSON)
    header = pure_encode(cmd)
    assert encode(cmd) == header
    assert decode(header, b"b") == pure_decode(header, b"b")
    # Fields of any JSON type in place of the real ones (ali-ons' numbers, nulls, junk).
    odd = orjson.dumps(orjson.loads(header) | overrides)
    assert outcome(decode, odd, b"") == outcome(pure_decode, odd, b"")


@settings(max_examples=100, deadline=None)
@given(json_values | st.binary(max_size=24).map(lambda b: b.decode("latin-1")))
def test_compiled_decoder_on_any_json_or_text(twin: Pair, value: Any) -> None:
    decode, _ = twin
    raw = value.encode() if isinstance(value, str) else orjson.dumps(value)
    assert outcome(decode, raw, b"") == outcome(pure_decode, raw, b"")


def test_ali_ons_numbers_and_nulls_become_java_text(twin: Pair) -> None:
    decode, _ = twin
    header = orjson.dumps(
        {"code": 10, "extFields": {"a": 4, "b": True, "c": None, "d": 1.5}, "remark": 3}
    )
    assert decode(header, b"") == pure_decode(header, b"")
    assert dict(decode(header, b"").ext_fields) == {"a": "4", "b": "true", "d": "1.5"}
    java = orjson.dumps({"code": 310, "extFields": SEND_V2_EXT, "language": "JAVA"})
    assert decode(bytearray(java), b"x") == pure_decode(bytearray(java), b"x")


@pytest.mark.parametrize(
    "ext", [{"k": 5}, {"k": None}, {7: "v"}, {"k": b"bytes"}], ids=["int", "none", "key", "bytes"]
)
def test_compiled_encoder_refuses_what_the_pure_one_refuses(twin: Pair, ext: Any) -> None:
    _, encode = twin
    cmd = make_command(1, 1, 0, None, ext, b"", LanguageCode.JAVA, 409, SerializeType.JSON)
    assert outcome(encode, cmd) == outcome(pure_encode, cmd)
    assert outcome(encode, cmd)[0] is not str and outcome(encode, cmd)[0] != "ok"

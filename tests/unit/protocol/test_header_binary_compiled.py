"""The compiled binary header codec (``_header_binary.pyx``) equals the pure reference.

On well-formed headers both give the same command and the same bytes; on any other bytes
both raise the same :class:`RemoteProtocolError` with the same text (a server answers one
client's bad frame and goes on); on a command that cannot be encoded both raise
:class:`LocalProtocolError`.
"""

from __future__ import annotations

import struct
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.errors import LocalProtocolError
from mqcore.protocol import LanguageCode, RemotingCommand, SerializeType
from mqcore.protocol import header_binary as pure_module
from mqcore.protocol.command import make_command
from tests.support.compiled import compiled_twin, outcome

from .test_codec import SEND_V2_EXT

pure_decode = pure_module.PURE["decode_binary_header"]
pure_encode = pure_module.PURE["encode_binary_header"]


@pytest.fixture(scope="module")
def twin() -> ModuleType:
    return compiled_twin("mqcore.protocol._header_binary")


texts = st.text(max_size=12)
i16 = st.integers(-(2**15), 2**15 - 1)
i32 = st.integers(-(2**31), 2**31 - 1)


def command(
    code: int, ext: Any, remark: Any, opaque: int = 7, flag: int = 0, version: int = 409
) -> RemotingCommand:
    return make_command(
        code, opaque, flag, remark, ext, b"", LanguageCode.JAVA, version, SerializeType.ROCKETMQ
    )


@settings(max_examples=200, deadline=None)
@given(
    i16,
    i32,
    i32,
    i16,
    st.dictionaries(texts, texts, max_size=6),
    st.none() | texts,
    st.data(),
)
def test_compiled_codec_equals_the_pure_one(
    twin: ModuleType,
    code: int,
    opaque: int,
    flag: int,
    version: int,
    ext: dict[str, str],
    remark: str | None,
    data: Any,
) -> None:
    cmd = command(code, ext, remark, opaque, flag, version)
    header = pure_encode(cmd)
    assert twin.encode_binary_header(cmd) == header
    assert twin.decode_binary_header(header, b"b") == pure_decode(header, b"b")
    # Damaged: bytes flipped, cut or added. Same command, or the same error word for word.
    bad = bytearray(header)
    for _ in range(data.draw(st.integers(0, 3))):
        if bad:
            bad[data.draw(st.integers(0, len(bad) - 1))] = data.draw(st.integers(0, 255))
    bad = bad[: data.draw(st.integers(0, len(bad)))] + data.draw(st.binary(max_size=6))
    for form in (bytes(bad), bad, memoryview(bad)):
        assert outcome(twin.decode_binary_header, form, b"") == outcome(pure_decode, form, b"")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_compiled_decoder_on_arbitrary_bytes(twin: ModuleType, raw: bytes) -> None:
    assert outcome(twin.decode_binary_header, raw, b"") == outcome(pure_decode, raw, b"")


def test_compiled_decoder_on_the_java_send_header_and_bad_lengths(twin: ModuleType) -> None:
    header = pure_encode(command(310, SEND_V2_EXT, "r\u00e9mark"))
    assert twin.decode_binary_header(header, b"x") == pure_decode(header, b"x")
    good = pure_encode(command(310, {"k": "v"}, None))
    cases = [
        good[:21] + struct.pack(">h", -1) + good[23:],  # negative key length
        good[:24] + struct.pack(">i", -1) + good[28:],  # negative value length
        good[:13] + struct.pack(">i", -5) + good[17:],  # negative remark length
        good[:17] + struct.pack(">i", 1 << 30) + good[21:],  # ext length past the end
        good[:21] + b"\x00\x01\xff" + good[24:],  # a key that is not UTF-8
        good[:-1],
        good[:16],
        b"",
    ]
    for header in cases:
        expected = outcome(pure_decode, header, b"")
        assert expected[0] is not str and expected[0] != "ok", header
        assert outcome(twin.decode_binary_header, header, b"") == expected


class Odd:
    """Neither text nor a number."""


@pytest.mark.parametrize(
    "cmd",
    [
        command(2**15, {}, None),  # code past i16
        command(1, {}, None, opaque=2**31),
        command(1, {}, None, flag=-(2**31) - 1),
        command(1, {}, None, version=-(2**15) - 1),
        command(1, {"k": 5}, None),  # type: ignore[dict-item]
        command(1, {"k": None}, None),  # type: ignore[dict-item]
        command(1, {7: "v"}, None),  # type: ignore[dict-item]
        command(1, {"k" * 40_000: "v"}, None),  # key longer than an i16
        command(1, {}, Odd()),
        command(1, {}, b"bytes remark"),
        command("1", {}, None),  # type: ignore[arg-type]
        command(1.5, {}, None),  # type: ignore[arg-type]
    ],
)
def test_compiled_encoder_refuses_what_the_pure_one_refuses(
    twin: ModuleType, cmd: RemotingCommand
) -> None:
    with pytest.raises(LocalProtocolError):
        pure_encode(cmd)
    with pytest.raises(LocalProtocolError):
        twin.encode_binary_header(cmd)


def test_compiled_encoder_takes_any_mapping_and_fails_on_unencodable_text(
    twin: ModuleType,
) -> None:
    from types import MappingProxyType

    cmd = command(1, MappingProxyType({"a": "1", "b": "\u00e9"}), "x")
    assert twin.encode_binary_header(cmd) == pure_encode(cmd)
    surrogate = command(1, {"k": "\ud800"}, None)  # no UTF-8 form: the same error as str
    assert outcome(twin.encode_binary_header, surrogate)[0] is UnicodeEncodeError
    assert outcome(pure_encode, surrogate)[0] is UnicodeEncodeError

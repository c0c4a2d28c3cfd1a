"""The fast paths of the protocol layer give exactly what the plain ways give.

Each generated or shortcut path is compared with a reference written the obvious way (the
code the fast path replaced), on fixtures and on hypothesis-generated input, errors included.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Mapping
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.common import jsonfields
from mqcore.errors import RemoteProtocolError
from mqcore.protocol import LanguageCode, RemotingCommand, SerializeType, encode
from mqcore.protocol import headers as headers_module
from mqcore.protocol.command import make_command
from mqcore.protocol.fastbuild import mutable_twin, positional_builder
from mqcore.protocol.header_binary import _read_checked, _read_fast, decode_binary_header
from mqcore.protocol.headers import (
    CommandHeader,
    HeaderError,
    PullMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    decode_send_message_header,
)
from mqcore.protocol.headers.base import invalid, parse_java_int, parse_java_long

from .test_codec import JAVA_SEND_V2_HEADER, SEND_V2_EXT

FROZEN_NS = 1_796_446_561_361_000_000

HEADER_CLASSES = sorted(
    (
        cls
        for cls in vars(headers_module).values()
        if isinstance(cls, type) and issubclass(cls, CommandHeader) and cls is not CommandHeader
    ),
    key=lambda cls: cls.__name__,
)


def reference_read(cls: type[CommandHeader], ext: Mapping[str, str], spec: Any = None) -> Any:
    """The loop the generated readers replaced: kwargs for the dataclass ``__init__``."""
    kwargs: dict[str, Any] = {}
    for attr, key, parse, _, required in spec or cls._fields_spec():
        text = ext.get(key)
        if text is None:
            if required:
                raise HeaderError(f"the custom field <{key}> is null")
            continue
        try:
            kwargs[attr] = text if parse is str else parse(text)
        except ValueError:
            raise invalid(key, text, parse) from None
    return cls(**kwargs)


def reference_write(header: CommandHeader) -> dict[str, str]:
    out = {}
    for attr, key, _, write, _ in header._fields_spec():
        value = getattr(header, attr)
        if value is not None:
            out[key] = write(value)
    return out


def outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    """What ``fn(*args)`` gives or raises, read with the clock held still.

    Some controller headers default ``invokeTime`` to now when it is absent (as 4.9.8's
    constructors do); two reads a millisecond apart would differ in that field alone.
    """
    with mock.patch.object(jsonfields.time, "time_ns", return_value=FROZEN_NS):
        try:
            return "ok", fn(*args)
        except Exception as exc:
            return type(exc).__name__, str(exc)


# -- RemotingCommand -----------------------------------------------------------------------


def test_make_command_is_the_dataclass() -> None:
    args = (310, 7, 1, "r", {"a": "b"}, b"x", LanguageCode.GO, 317, SerializeType.ROCKETMQ)
    fast, plain = make_command(*args), RemotingCommand(*args)
    assert type(fast) is RemotingCommand
    assert fast == plain and repr(fast) == repr(plain)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.code = 1  # type: ignore[misc]
    assert dataclasses.replace(fast, opaque=8) == dataclasses.replace(plain, opaque=8)


def test_builders_fall_back_to_the_class_where_no_twin_is_possible() -> None:
    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class PostInit:
        a: int

        def __post_init__(self) -> None:
            object.__setattr__(self, "a", self.a + 1)

    for cls in (NoSlots, PostInit):
        assert mutable_twin(cls) is None
        assert positional_builder(cls) is cls
    assert mutable_twin(RemotingCommand) is not None
    assert positional_builder(SendMessageResponseHeader)("m", 1, 2, None, "R", "T") == (
        SendMessageResponseHeader("m", 1, 2, None, "R", "T")
    )


@dataclasses.dataclass(frozen=True, slots=True)
class CheckedHeader(CommandHeader):
    """A header whose __post_init__ must run: read through the class, not a twin."""

    cls: int  # names that are also names in the generated code
    get: str | None = None
    text: bool = False

    def __post_init__(self) -> None:
        if self.cls < 0:
            raise ValueError("negative")


@dataclasses.dataclass(frozen=True, slots=True)
class NamesHeader(CommandHeader):
    cls: int
    obj: str
    ext: str | None = None
    get: str | None = None
    text: bool = False


def test_field_names_do_not_clash_with_generated_code() -> None:
    ext = {"cls": "5", "obj": "o", "ext": "e", "get": "g", "text": "true"}
    header = NamesHeader.from_ext_fields(ext)
    assert header == NamesHeader(5, "o", "e", "g", True)
    assert header.to_ext_fields() == ext and NamesHeader.from_header(header) == header


def test_headers_without_a_twin_are_built_by_their_class() -> None:
    ext = {"cls": "5", "get": "g", "text": "true"}
    header = CheckedHeader.from_ext_fields(ext)
    assert header == CheckedHeader(5, "g", True) == reference_read(CheckedHeader, ext)
    assert header.to_ext_fields() == ext
    assert CheckedHeader.from_header(header) == header
    with pytest.raises(ValueError, match="negative"):
        CheckedHeader.from_ext_fields({"cls": "-1"})


# -- typed headers -------------------------------------------------------------------------


def test_every_header_class_reads_and_writes_like_the_reference() -> None:
    for cls in HEADER_CLASSES:
        spec = cls._fields_spec()
        numbers = (parse_java_int, parse_java_long)
        full = {key: ("12" if parse in numbers else "true") for _, key, parse, _, _ in spec}
        header = cls.from_ext_fields(full)
        assert type(header) is cls
        assert header == reference_read(cls, full), cls
        assert header.to_ext_fields() == reference_write(header) == full, cls
        required = {key: full[key] for _, key, _, _, req in spec if req}
        assert outcome(cls.from_ext_fields, required) == outcome(reference_read, cls, required), cls
        assert outcome(cls.from_ext_fields, {}) == outcome(reference_read, cls, {}), cls


def test_send_headers_of_all_codes() -> None:
    v2 = RemotingCommand.request(310, SEND_V2_EXT)
    header = decode_send_message_header(v2)
    assert type(header) is SendMessageRequestHeader
    assert header == reference_read(
        SendMessageRequestHeader, SEND_V2_EXT, SendMessageRequestHeaderV2._fields_spec()
    )
    assert header.to_v2().to_ext_fields() == SEND_V2_EXT
    assert header.to_v2().to_v1() == header
    v1 = RemotingCommand.request(10, header.to_ext_fields())
    assert decode_send_message_header(v1) == header


number = st.one_of(
    st.integers(-(2**63), 2**63 - 1), st.sampled_from([2**31, -(2**31) - 1, 2**63, 2**70])
).map(str)
junk = st.sampled_from(["", " 1", "1_0", "x", "٣", "+5", "TRUE", "True", "false", "0x1"])
ext_values = st.one_of(number, junk, st.text(max_size=8))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(HEADER_CLASSES), st.data())
def test_generated_readers_match_the_reference(cls: type[CommandHeader], data: Any) -> None:
    keys = [key for _, key, *_ in cls._fields_spec()]
    ext = data.draw(st.dictionaries(st.sampled_from([*keys, "other"]), ext_values))
    fast = outcome(cls.from_ext_fields, ext)
    assert fast == outcome(reference_read, cls, ext)
    if fast[0] == "ok":
        assert fast[1].to_ext_fields() == reference_write(fast[1])


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(list(SEND_V2_EXT)), ext_values))
def test_v2_reader_matches_the_reference(ext: dict[str, str]) -> None:
    cmd = RemotingCommand.request(310, ext)
    expected = outcome(
        reference_read, SendMessageRequestHeader, ext, SendMessageRequestHeaderV2._fields_spec()
    )
    assert outcome(decode_send_message_header, cmd) == expected


def test_pull_header_with_odd_values_writes_like_the_reference() -> None:
    header = PullMessageRequestHeader("g", "t", True, 1, 2, 3, 4, 5, 6, subscription=7)  # type: ignore[arg-type]
    assert header.to_ext_fields() == reference_write(header)


# -- the binary header ---------------------------------------------------------------------


def binary_header(ext: Mapping[str, str], remark: str | None = None) -> bytes:
    cmd = RemotingCommand.request(
        310, ext, opaque=7, remark=remark, serialize_type=SerializeType.ROCKETMQ
    )
    return encode(cmd)[8:]


def test_fast_binary_reader_on_java_fields() -> None:
    header = binary_header(SEND_V2_EXT)
    assert _read_fast(header) == _read_checked(header)
    assert _read_fast(header) is not None
    cmd = decode_binary_header(bytearray(header), b"body")
    assert cmd.ext_fields == SEND_V2_EXT and cmd.serialize_type is SerializeType.ROCKETMQ
    assert JAVA_SEND_V2_HEADER  # the JSON twin of this header, kept in test_codec


def test_fast_binary_reader_leaves_odd_headers_to_the_checked_one() -> None:
    good = binary_header({"k": "v"})
    negative_key = good[:21] + struct.pack(">h", -1) + good[23:]
    negative_value = good[:24] + struct.pack(">i", -1) + good[28:]
    truncated = good[:-1]
    for header in (negative_key, negative_value, truncated):
        assert _read_fast(header) is None
        with pytest.raises(RemoteProtocolError):
            _read_checked(header)
    big = binary_header({"k": "v" * 40_000})  # blocks this large take the checked way
    assert _read_fast(big) is None and _read_checked(big)[6] == {"k": "v" * 40_000}
    # ...because there a key length of 0x8001 (negative as Java's short) could fit
    odd = big[:21] + struct.pack(">H", 0x8001) + big[23:]
    assert _read_fast(odd) is None
    with pytest.raises(RemoteProtocolError, match="key overruns"):
        _read_checked(odd)


text_strategy = st.text(max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(text_strategy, text_strategy, max_size=6),
    st.none() | text_strategy,
    st.data(),
)
def test_fast_binary_reader_matches_the_checked_one(
    ext: dict[str, str], remark: str | None, data: Any
) -> None:
    header = bytearray(binary_header(ext, remark))
    # Flip some bytes, cut or extend: the fast reader either agrees or leaves it.
    for _ in range(data.draw(st.integers(0, 3))):
        if header:
            header[data.draw(st.integers(0, len(header) - 1))] = data.draw(st.integers(0, 255))
    header = header[: data.draw(st.integers(0, len(header)))] + data.draw(st.binary(max_size=6))
    fast = _read_fast(header)
    checked = outcome(_read_checked, header)
    if fast is not None:
        assert checked == ("ok", fast)
    decoded = outcome(decode_binary_header, header, b"")
    if checked[0] != "ok":
        assert decoded == checked  # the same error, word for word
    else:
        cmd = decoded[1]
        code, _, version, opaque, flag, remark_out, ext_out = checked[1]
        fields = (cmd.code, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.ext_fields)
        assert fields == (code, version, opaque, flag, remark_out, ext_out)


def reference_binary_header(cmd: RemotingCommand) -> bytes:
    """The encoder before key prefixes were cached."""
    fixed = struct.pack(">hbhii", cmd.code, cmd.language.value, cmd.version, cmd.opaque, cmd.flag)
    remark = cmd.remark.encode() if cmd.remark else b""
    ext = b"".join(
        struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v
        for k, v in ((key.encode(), value.encode()) for key, value in cmd.ext_fields.items())
    )
    return fixed + struct.pack(">i", len(remark)) + remark + struct.pack(">i", len(ext)) + ext


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(text_strategy, text_strategy, max_size=6),
    st.none() | text_strategy,
    st.sampled_from(list(LanguageCode)),
)
def test_binary_encoder_matches_the_reference(
    ext: dict[str, str], remark: str | None, language: LanguageCode
) -> None:
    cmd = RemotingCommand(11, 3, 1, remark, ext, b"", language, 409, SerializeType.ROCKETMQ)
    for _ in range(2):  # the second time with the key prefixes cached
        assert encode(cmd)[8:] == reference_binary_header(cmd)

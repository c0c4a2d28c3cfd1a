"""Remoting frames and both header forms: any bytes give commands or RemoteProtocolError.

The decoder must stay bounded as well: it never buffers past ``max_frame`` and a stream it
refused stays refused.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from fuzzing import JSON_VALUES, fuzz, mutated, perturbed_json
from hypothesis import given
from hypothesis import strategies as st

from mqcore.errors import RemoteProtocolError
from mqcore.protocol import (
    NEED_DATA,
    FrameDecoder,
    LanguageCode,
    RemotingCommand,
    SerializeType,
    encode,
)
from mqcore.protocol.header_binary import decode_binary_header
from mqcore.protocol.header_json import decode_json_header

MAX_FRAME = 64 * 1024

COMMANDS = st.builds(
    RemotingCommand,
    code=st.integers(-(2**15), 2**15 - 1),
    opaque=st.integers(-(2**31), 2**31 - 1),
    flag=st.sampled_from([0, 1, 2, 3]),
    remark=st.none() | st.text(max_size=20),
    ext_fields=st.dictionaries(st.text(max_size=6), st.text(max_size=10), max_size=5),
    body=st.binary(max_size=40),
    language=st.sampled_from(list(LanguageCode)),
    version=st.integers(-(2**15), 2**15 - 1),
    serialize_type=st.sampled_from(list(SerializeType)),
)
FRAMES = st.lists(COMMANDS, min_size=1, max_size=3).map(lambda cmds: b"".join(map(encode, cmds)))


def drain(data: bytes, cuts: list[int], *, eof: bool) -> list[RemotingCommand]:
    """Feed ``data`` in pieces; commands until the decoder needs data or refuses."""
    decoder = FrameDecoder(MAX_FRAME)
    out: list[RemotingCommand] = []
    pos = 0
    pieces = [*cuts, len(data)]
    try:
        for cut in pieces:
            chunk = data[pos : pos + cut] if cut else b""
            pos += len(chunk)
            if chunk:
                decoder.receive_data(chunk)
            while (cmd := decoder.next_command()) is not NEED_DATA:
                assert isinstance(cmd, RemotingCommand)
                out.append(cmd)
            assert decoder.buffered <= max(MAX_FRAME, len(chunk))
        if eof:
            decoder.receive_data(b"")
            assert decoder.next_command() is NEED_DATA
    except RemoteProtocolError:
        # Once broken, always broken: the stream cannot be resynchronised.
        try:
            decoder.next_command()
        except RemoteProtocolError:
            return out
        raise AssertionError("decoder recovered after an error") from None
    return out


@fuzz(200)
@given(mutated(FRAMES), st.lists(st.integers(0, 40), max_size=6), st.booleans())
def test_mutated_frames_decode_or_raise_remote_protocol_error(
    data: bytes, cuts: list[int], eof: bool
) -> None:
    drain(data, cuts, eof=eof)


@fuzz(100)
@given(st.binary(max_size=300), st.lists(st.integers(0, 40), max_size=6))
def test_random_bytes_decode_or_raise_remote_protocol_error(data: bytes, cuts: list[int]) -> None:
    drain(data, cuts, eof=True)


def frame(kind: SerializeType, header: bytes, body: bytes = b"") -> bytes:
    return struct.pack(">ii", 4 + len(header) + len(body), (kind << 24) | len(header)) + (
        header + body
    )


VALID_JSON_HEADER: dict[str, Any] = {
    "code": 34,
    "extFields": {"a": "1", "b": "x"},
    "flag": 0,
    "language": "JAVA",
    "opaque": 7,
    "remark": "r",
    "serializeTypeCurrentRPC": "JSON",
    "version": 409,
}


@fuzz(200)
@given(perturbed_json(VALID_JSON_HEADER))
def test_json_headers_with_wrong_types(header: Any) -> None:
    raw = json.dumps(header).encode()
    try:
        cmd = decode_json_header(raw, b"")
    except RemoteProtocolError:
        return
    assert all(type(k) is str and type(v) is str for k, v in cmd.ext_fields.items())
    assert cmd.remark is None or type(cmd.remark) is str
    assert drain(frame(SerializeType.JSON, raw), [], eof=True) == [cmd]


@fuzz(100)
@given(JSON_VALUES)
def test_any_json_value_as_a_header(value: Any) -> None:
    try:
        decode_json_header(json.dumps(value).encode(), b"")
    except RemoteProtocolError:
        pass


def binary_header(code: int, remark: bytes, ext: list[tuple[bytes, bytes]]) -> bytes:
    body = b"".join(struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v for k, v in ext)
    return (
        struct.pack(">hbhii", code, 0, 409, 1, 0)
        + struct.pack(">i", len(remark))
        + remark
        + struct.pack(">i", len(body))
        + body
    )


BINARY_HEADERS = st.builds(
    binary_header,
    st.integers(-(2**15), 2**15 - 1),
    st.binary(max_size=12),
    st.lists(st.tuples(st.binary(max_size=6), st.binary(max_size=10)), max_size=4),
)


@fuzz(300)
@given(mutated(BINARY_HEADERS, max_ops=3))
def test_binary_headers_fast_and_checked_readers_agree(header: bytes) -> None:
    """The fast reader falls back to the checked one: either way only RemoteProtocolError,
    and a header that decodes decodes the same inside a frame."""
    try:
        cmd = decode_binary_header(header, b"")
    except RemoteProtocolError:
        return
    assert drain(frame(SerializeType.ROCKETMQ, header), [], eof=True) == [cmd]

"""Sans-IO framing: bytes in, whole :class:`RemotingCommand` objects out, and back.

Frame layout (big-endian, spec §1)::

    i32 length                 = 4 + headerLength + bodyLength (excludes itself)
    i32 (serializeType << 24) | headerLength
    header (JSON or ROCKETMQ binary, see header_json / header_binary)
    body

Modelled on h11: :class:`FrameDecoder` never touches a socket. ``receive_data`` buffers
whatever chunk arrived (``b""`` means EOF); ``next_command`` returns a command or
:data:`NEED_DATA`. The length word is checked before the frame is buffered, so a peer
announcing 2 GiB is refused at once instead of after it has filled our memory.

:class:`FrameDecoder` and :func:`encode_buffers` here are the reference; ``_codec.pyx`` is
their compiled twin, taken at import when built (see :mod:`mqcore.common.core`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from enum import Enum
from typing import Any, Final, Literal

from mqcore.common.core import load
from mqcore.errors import LocalProtocolError, RemoteProtocolError
from mqcore.protocol.codes import SerializeType
from mqcore.protocol.command import Body, RemotingCommand
from mqcore.protocol.header_binary import decode_binary_header, encode_binary_header
from mqcore.protocol.header_json import decode_json_header, encode_json_header

__all__ = [
    "DEFAULT_MAX_FRAME",
    "NEED_DATA",
    "FrameDecoder",
    "NeedData",
    "encode",
    "encode_buffers",
]

DEFAULT_MAX_FRAME: Final = 16 * 1024 * 1024
"""Java's ``com.rocketmq.remoting.frameMaxLength``: ``length + 4`` may not exceed it."""

_PREFIX = struct.Struct(">ii")
_LEN = struct.Struct(">i")
_COMPACT_AT = 64 * 1024


class NeedData(Enum):
    """Sentinel type: the decoder needs more bytes before it can return a command."""

    NEED_DATA = "NEED_DATA"


NEED_DATA: Final = NeedData.NEED_DATA


class FrameDecoder:
    """Incremental frame decoder for one connection.

    After it raised :class:`RemoteProtocolError` once it stays broken (the stream cannot be
    resynchronised); the caller must close the connection.

    A ``bytes`` chunk that arrives while nothing is buffered (the usual case: a chunk holds
    whole frames) is kept as it is and frames are sliced from it, with no copy into the
    buffer; the ``bytearray`` buffer takes over only when a frame spans chunks.
    """

    __slots__ = ("_buf", "_eof", "_error", "_pos", "max_frame")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buf: bytes | bytearray = b""
        self._pos = 0
        self._eof = False
        self._error: RemoteProtocolError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a command."""
        return len(self._buf) - self._pos

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Add bytes from the peer; ``b""`` signals end of stream."""
        if not data:
            self._eof = True
            return
        if self._eof:
            raise RuntimeError("receive_data after EOF")
        if self._error is not None:
            return
        buf = self._buf
        if self._pos == len(buf):  # nothing buffered: take the chunk as it is
            self._buf = data if type(data) is bytes else bytearray(data)
            self._pos = 0
        elif type(buf) is bytes:  # a frame spans chunks: from now on, a buffer of our own
            self._buf = bytearray(memoryview(buf)[self._pos :])
            self._buf += data
            self._pos = 0
        else:
            buf += data

    def next_command(self) -> RemotingCommand | Literal[NeedData.NEED_DATA]:
        """The next whole command, or NEED_DATA. Raises RemoteProtocolError on bad input,
        including EOF in the middle of a frame."""
        if self._error is not None:
            raise self._error
        buf, pos = self._buf, self._pos
        available = len(buf) - pos
        try:
            if available < 8:
                if self._eof and available:
                    raise RemoteProtocolError(f"connection closed inside a frame ({available} B)")
                if available >= 4:
                    self._check_length(_LEN.unpack_from(buf, pos)[0])
                return NEED_DATA
            length, word = _PREFIX.unpack_from(buf, pos)
            if length < 4 or length + 4 > self.max_frame:
                self._check_length(length)
            if available < 4 + length:
                if self._eof:
                    raise RemoteProtocolError(f"connection closed inside a frame ({available} B)")
                return NEED_DATA
            header_len = word & 0xFFFFFF
            kind = (word >> 24) & 0xFF
            if header_len > length - 4:
                raise RemoteProtocolError(
                    f"header length {header_len} exceeds frame length {length}"
                )
            if kind > SerializeType.ROCKETMQ:
                raise RemoteProtocolError(f"unknown serialize type {kind}")
            start = pos + 8
            body_start = start + header_len
            end = pos + 4 + length
            # The header is copied out either way (a few hundred bytes): no view of the
            # buffer may outlive this call, e.g. in a traceback, as it must stay resizable.
            header = buf[start:body_start]
            body = b""
            if type(buf) is bytes:
                if end > body_start:
                    body = buf[body_start:end]
            elif end > body_start:
                with memoryview(buf) as view:
                    body = view[body_start:end].tobytes()
            if kind == SerializeType.JSON:
                cmd = decode_json_header(header, body)
            else:
                cmd = decode_binary_header(header, body)
        except RemoteProtocolError as exc:
            self._error = exc
            raise
        if end == len(buf):
            self._buf = b""
            self._pos = 0
        elif end > _COMPACT_AT and type(buf) is bytearray:
            del buf[:end]
            self._pos = 0
        else:
            self._pos = end
        return cmd

    def _check_length(self, length: int) -> None:
        if length < 4:
            raise RemoteProtocolError(f"frame length {length} is smaller than 4")
        if length + 4 > self.max_frame:
            raise RemoteProtocolError(
                f"frame of {length + 4} bytes exceeds the maximum of {self.max_frame}"
            )


def encode_buffers(
    cmd: RemotingCommand, *, max_frame: int = DEFAULT_MAX_FRAME
) -> list[bytes | Body]:
    """The frame as ``[prefix+header, body]``: the body is passed through, not copied,
    so a transport can ``writelines`` a large pull body straight from memory."""
    kind = cmd.serialize_type
    if kind == SerializeType.ROCKETMQ:
        header = encode_binary_header(cmd)
    else:
        header = encode_json_header(cmd)
    header_len = len(header)
    body = cmd.body
    body_len = len(body) if type(body) is not memoryview else body.nbytes
    length = 4 + header_len + body_len
    if header_len > 0xFFFFFF:
        raise LocalProtocolError(f"header of {header_len} bytes does not fit 24 bits")
    if length + 4 > max_frame:
        raise LocalProtocolError(f"frame of {length + 4} bytes exceeds the maximum {max_frame}")
    head = _PREFIX.pack(length, (kind << 24) | header_len) + header
    if body_len:
        return [head, body]
    return [head]


def encode(cmd: RemotingCommand, *, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
    """The whole frame as one ``bytes`` (copies the body; fine for small commands)."""
    return b"".join(encode_buffers(cmd, max_frame=max_frame))


PURE: Final[dict[str, Callable[..., Any]]] = {
    "FrameDecoder": FrameDecoder,
    "encode_buffers": encode_buffers,
}
"""The pure class and function, kept for the parity tests whichever core runs."""

_compiled = load("mqcore.protocol._codec")
if _compiled is not None:
    _compiled.bind(
        decode_json_header,
        decode_binary_header,
        encode_json_header,
        encode_binary_header,
        NEED_DATA,
        DEFAULT_MAX_FRAME,
    )
    FrameDecoder = _compiled.FrameDecoder  # type: ignore[misc]
    encode_buffers = _compiled.encode_buffers

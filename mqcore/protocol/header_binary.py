"""The ROCKETMQ binary header form (serialize type 1, ``RocketMQSerializable``).

Layout (big-endian)::

    i16 code | i8 language | i16 version | i32 opaque | i32 flag
    i32 remarkLength | remark UTF-8            (length 0 = no remark)
    i32 extLength    | ext entries, each: i16 keyLength, key, i32 valueLength, value
                                           (value length 0 reads back as absent)

Java clients use it only with ``-Drocketmq.serialize.type=ROCKETMQ``; ali-ons cannot read it,
which is why a server must answer in the form of the request.

The functions here are the reference; ``_header_binary.pyx`` is their compiled twin, taken
at import when built (see :mod:`mqcore.common.core`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final

from mqcore.common.core import load
from mqcore.errors import LocalProtocolError, RemoteProtocolError
from mqcore.protocol.codes import LanguageCode, SerializeType
from mqcore.protocol.command import Body, RemotingCommand, make_command

__all__ = ["decode_binary_header", "encode_binary_header"]

_FIXED = struct.Struct(">hbhii")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_LANGUAGES = {lang.value: lang for lang in LanguageCode}

# The fast path reads lengths unsigned: a negative one then overruns, which it detects.
_FIXED_REMARK = struct.Struct(">hbhiiI")
_U16 = struct.Struct(">H").unpack_from
_U32 = struct.Struct(">I").unpack_from
_MAX_FAST_EXT = 0x8000  # smaller than any key length that is negative as an i16

_Fields = tuple[int, int, int, int, int, str | None, dict[str, str]]


def decode_binary_header(data: bytes | bytearray | memoryview, body: Body) -> RemotingCommand:
    """Parse a binary header. Raises RemoteProtocolError on truncated or bad fields."""
    fields = _read_fast(data) or _read_checked(data)
    code, lang, version, opaque, flag, remark, ext = fields
    return make_command(
        code,
        opaque,
        flag,
        remark,
        ext,
        body,
        _LANGUAGES.get(lang, LanguageCode.OTHER),
        version,
        SerializeType.ROCKETMQ,
    )


def _read_fast(data: bytes | bytearray | memoryview) -> _Fields | None:
    """The fields of a well-formed header, or None for anything else (then
    :func:`_read_checked` finds the fault). Twice as fast: one latin-1 decode of the whole
    header, and ASCII text is cut from it; bounds are checked once, at the end."""
    try:
        text = str(data, "latin-1")
        code, lang, version, opaque, flag, remark_len = _FIXED_REMARK.unpack_from(data, 0)
        pos = 17
        remark = None
        if remark_len:
            remark = str(data[pos : pos + remark_len], "utf-8")
            pos += remark_len
        (ext_len,) = _U32(data, pos)
        pos += 4
        ext_end = pos + ext_len
        if ext_len >= _MAX_FAST_EXT or ext_end > len(text):
            return None
        ext: dict[str, str] = {}
        while pos < ext_end:
            (klen,) = _U16(data, pos)
            pos += 2
            key = text[pos : pos + klen]
            if not key.isascii():
                key = str(data[pos : pos + klen], "utf-8")
            pos += klen
            (vlen,) = _U32(data, pos)
            pos += 4
            if vlen:
                value = text[pos : pos + vlen]
                if not value.isascii():
                    value = str(data[pos : pos + vlen], "utf-8")
                ext[key] = value
            pos += vlen
    except (struct.error, UnicodeDecodeError):
        return None
    # Lengths only grow ``pos``: ending exactly at the block's end means no field overran.
    if pos != ext_end:
        return None
    return code, lang, version, opaque, flag, remark, ext


def _read_checked(data: bytes | bytearray | memoryview) -> _Fields:
    """The reference reader: checks every length as it goes and names the bad field."""
    view = memoryview(data)
    end = len(view)
    try:
        code, lang, version, opaque, flag = _FIXED.unpack_from(view, 0)
        pos = _FIXED.size
        (remark_len,) = _I32.unpack_from(view, pos)
        pos += 4
        if remark_len < 0 or pos + remark_len > end:
            raise RemoteProtocolError(f"binary header remark length {remark_len} out of range")
        remark = str(view[pos : pos + remark_len], "utf-8") if remark_len else None
        pos += remark_len
        (ext_len,) = _I32.unpack_from(view, pos)
        pos += 4
        if ext_len < 0 or pos + ext_len > end:
            raise RemoteProtocolError(f"binary header ext length {ext_len} out of range")
        ext_end = pos + ext_len
        ext: dict[str, str] = {}
        while pos < ext_end:
            (klen,) = _I16.unpack_from(view, pos)
            pos += 2
            if klen < 0 or pos + klen > ext_end:
                raise RemoteProtocolError("binary header ext key overruns the ext block")
            key = str(view[pos : pos + klen], "utf-8")
            pos += klen
            (vlen,) = _I32.unpack_from(view, pos)
            pos += 4
            if vlen < 0 or pos + vlen > ext_end:
                raise RemoteProtocolError("binary header ext value overruns the ext block")
            if vlen:
                ext[key] = str(view[pos : pos + vlen], "utf-8")
            pos += vlen
    except struct.error:
        raise RemoteProtocolError("binary header truncated") from None
    except UnicodeDecodeError as exc:
        raise RemoteProtocolError(f"binary header text is not UTF-8: {exc}") from None
    return code, lang, version, opaque, flag, remark, ext


_KEY_PREFIXES: dict[str, bytes] = {}
"""Encoded ``i16 length | key`` per ext key seen: the same few dozen names every time."""


def encode_binary_header(cmd: RemotingCommand) -> bytes:
    """Encode ``cmd``'s header in the binary form. Raises LocalProtocolError on overflow."""
    parts: list[bytes] = []
    append = parts.append
    prefixes = _KEY_PREFIXES
    try:
        # LanguageCode is an IntEnum: packed as the number it is.
        fixed = _FIXED.pack(cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag)
        remark = cmd.remark.encode() if cmd.remark else b""
        for key, value in cmd.ext_fields.items():
            prefix = prefixes.get(key)
            if prefix is None:
                k = key.encode()
                prefix = _I16.pack(len(k)) + k
                if len(prefixes) < 1024:
                    prefixes[key] = prefix
            v = value.encode()
            append(prefix)
            append(_I32.pack(len(v)))
            append(v)
    except (struct.error, AttributeError) as exc:
        raise LocalProtocolError(f"cannot encode binary header: {exc}") from None
    ext = b"".join(parts)
    return b"".join((fixed, _I32.pack(len(remark)), remark, _I32.pack(len(ext)), ext))


PURE: Final[dict[str, Callable[..., Any]]] = {
    "decode_binary_header": decode_binary_header,
    "encode_binary_header": encode_binary_header,
}
"""The pure functions, kept for the parity tests whichever core runs."""

_compiled = load("mqcore.protocol._header_binary")
if _compiled is not None:
    decode_binary_header = _compiled.decode_binary_header
    encode_binary_header = _compiled.encode_binary_header

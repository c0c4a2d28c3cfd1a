"""The ROCKETMQ binary header form (serialize type 1, ``RocketMQSerializable``).

Layout (big-endian)::

    i16 code | i8 language | i16 version | i32 opaque | i32 flag
    i32 remarkLength | remark UTF-8            (length 0 = no remark)
    i32 extLength    | ext entries, each: i16 keyLength, key, i32 valueLength, value
                                           (value length 0 reads back as absent)

Java clients use it only with ``-Drocketmq.serialize.type=ROCKETMQ``; ali-ons cannot read it,
which is why a server must answer in the form of the request.
"""

from __future__ import annotations

import struct

from mqcore.errors import LocalProtocolError, RemoteProtocolError
from mqcore.protocol.codes import LanguageCode, SerializeType
from mqcore.protocol.command import Body, RemotingCommand

__all__ = ["decode_binary_header", "encode_binary_header"]

_FIXED = struct.Struct(">hbhii")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_LANGUAGES = {lang.value: lang for lang in LanguageCode}


def decode_binary_header(data: bytes | bytearray | memoryview, body: Body) -> RemotingCommand:
    """Parse a binary header. Raises RemoteProtocolError on truncated or bad fields."""
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
    return RemotingCommand(
        code=code,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext,
        body=body,
        language=_LANGUAGES.get(lang, LanguageCode.OTHER),
        version=version,
        serialize_type=SerializeType.ROCKETMQ,
    )


def encode_binary_header(cmd: RemotingCommand) -> bytes:
    """Encode ``cmd``'s header in the binary form. Raises LocalProtocolError on overflow."""
    parts: list[bytes] = []
    try:
        fixed = _FIXED.pack(cmd.code, cmd.language.value, cmd.version, cmd.opaque, cmd.flag)
        remark = cmd.remark.encode() if cmd.remark else b""
        for key, value in cmd.ext_fields.items():
            k = key.encode()
            v = value.encode()
            parts.append(_I16.pack(len(k)) + k + _I32.pack(len(v)) + v)
    except (struct.error, AttributeError) as exc:
        raise LocalProtocolError(f"cannot encode binary header: {exc}") from None
    ext = b"".join(parts)
    return b"".join((fixed, _I32.pack(len(remark)), remark, _I32.pack(len(ext)), ext))

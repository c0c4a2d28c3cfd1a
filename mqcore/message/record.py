"""Commit log record codec (RocketMQ 4.x ``CommitLog`` / ``MessageDecoder``).

Layout, big-endian, both hosts IPv4 (each IPv6 host adds 12 bytes)::

    off  size  field
      0     4  TOTALSIZE                 i32, whole record
      4     4  MAGICCODE                 DAA320A7 (v1); DAA320AB (5.x v2, 2-byte topic len)
      8     4  BODYCRC                   crc32(stored body) & 0x7FFFFFFF
     12     4  QUEUEID                   i32
     16     4  FLAG                      i32, user flag
     20     8  QUEUEOFFSET               i64, logical offset in the consume queue
     28     8  PHYSICALOFFSET            i64, commit log offset of byte 0
     36     4  SYSFLAG                   i32, see const.SysFlag
     40     8  BORNTIMESTAMP             i64 ms
     48   8|20 BORNHOST                  ip(4|16) + i32 port   (v6 when SYSFLAG & 0x10)
     56     8  STORETIMESTAMP            i64 ms
     64   8|20 STOREHOST                 ip(4|16) + i32 port   (v6 when SYSFLAG & 0x20)
     72     4  RECONSUMETIMES            i32
     76     8  PREPAREDTRANSACTIONOFFSET i64
     84  4+B   BODYLEN + BODY
        1|2+T  TOPICLEN + TOPIC          i8 (v1) or i16 (v2)
         2+P   PROPLEN + PROPERTIES      i16, see properties.py

The blank end-of-file record is ``[i32 remaining bytes][i32 BLANK_MAGIC_CODE]``.

Two decoding modes: *strict* (the store's view: TOTALSIZE must match the fields and the
record must fit) and *lenient* (the client's view of a pull body: parse field by field,
ignore TOTALSIZE, like Java's ``MessageDecoder.decode``).

``_decode`` and ``decode_batch_body`` below are the reference decoders; ``_record.pyx`` is
their compiled twin, taken at import when built (see :mod:`mqcore.common.core`): a consumer
spends most of its CPU decoding pulled records, a broker a batch send's entries. The twin
reads the regular records itself and hands every other one (errors included) to the
reference.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mqcore.common.core import load
from mqcore.common.javahash import tags_hash_code
from mqcore.errors import CorruptRecordError
from mqcore.message.const import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    SysFlag,
)
from mqcore.message.ids import host_bytes, host_from_bytes
from mqcore.message.model import HostAddr, MessageExt
from mqcore.message.properties import decode_properties, encode_properties

HEADER = struct.Struct(">iiiiiqqiq")
"""TOTALSIZE, MAGIC, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET, PHYSICALOFFSET, SYSFLAG, BORNTS."""
HEADER_SIZE = HEADER.size  # 48
PEEK = struct.Struct(">ii")
"""TOTALSIZE, MAGIC: enough to tell a record, a blank end-of-file record or the end."""
BLANK_RECORD_MIN = 8
MAX_TOPIC_LENGTH_V1 = 127
MAX_PROPERTIES_LENGTH = 32767
FULL_HEADS = {
    (born, store): struct.Struct(f">iiiiiqqiq{born}sq{store}siqi")
    for born in (8, 20)
    for store in (8, 20)
}
"""Every field before BODY (through BODYLEN) in one struct, by host sizes (8 for an IPv4
host, 20 for IPv6): what the store's batch encoder packs per record."""
TAIL_AND_BODY_LEN = struct.Struct(">iqi")
"""RECONSUMETIMES, PREPAREDTRANSACTIONOFFSET, BODYLEN (after STOREHOST)."""
QUEUE_AND_PHY_OFFSET = struct.Struct(">qq")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
MAX_INFLATED_BODY = 64 * 1024 * 1024
"""Largest body a compressed record may inflate to: RocketMQ's maxMessageSize (4 MiB,
counted compressed) at 16:1. A record past it is a zip bomb, not a message."""
_INFLATE_STEP = 1024 * 1024

_I = INT32
_Q = INT64
_H = INT16
_TAIL = struct.Struct(">iq")  # RECONSUMETIMES, PREPAREDTRANSACTIONOFFSET
_QQ = QUEUE_AND_PHY_OFFSET

QUEUE_OFFSET_POS = 20
PHYSICAL_OFFSET_POS = 28
SYSFLAG_POS = 36


def body_crc(body: bytes | bytearray | memoryview) -> int:
    """BODYCRC as stored: standard CRC32 with the top bit cleared."""
    return zlib.crc32(body) & 0x7FFFFFFF


_host_cache: dict[HostAddr, bytes] = {}


def encode_host(host: HostAddr) -> bytes:
    """BORNHOST / STOREHOST bytes: the address (4 or 16 bytes) and the i32 port. A few
    thousand hosts are remembered: the send path encodes the same ones all day."""
    raw = _host_cache.get(host)
    if raw is None:
        raw = host_bytes(host[0]) + _I.pack(host[1])
        if len(_host_cache) < 4096:
            _host_cache[host] = raw
    return raw


def _host_len(sys_flag: int, v6_bit: int) -> int:
    return 20 if sys_flag & v6_bit else 8


def store_timestamp_pos(sys_flag: int) -> int:
    """Where STORETIMESTAMP sits: it moves when the born host is IPv6."""
    return HEADER_SIZE + _host_len(sys_flag, SysFlag.BORNHOST_V6_FLAG)


def record_length(body_len: int, topic_len: int, props_len: int, sys_flag: int = 0) -> int:
    """``calMsgLength``: the TOTALSIZE of a v1 record with these field lengths."""
    born = _host_len(sys_flag, SysFlag.BORNHOST_V6_FLAG)
    store = _host_len(sys_flag, SysFlag.STOREHOSTADDRESS_V6_FLAG)
    return (
        4
        + 4
        + 4
        + 4
        + 4
        + 8
        + 8
        + 4
        + 8
        + born
        + 8
        + store
        + 4
        + 8
        + 4
        + body_len
        + 1
        + (topic_len)
        + 2
        + props_len
    )


def encode_record(
    *,
    topic: str,
    body: bytes | bytearray | memoryview,
    properties: Mapping[str, str] | bytes = b"",
    queue_id: int = 0,
    flag: int = 0,
    sys_flag: int = 0,
    born_timestamp: int = 0,
    born_host: HostAddr = ("127.0.0.1", 0),
    store_host: HostAddr = ("127.0.0.1", 0),
    store_timestamp: int = 0,
    queue_offset: int = 0,
    physical_offset: int = 0,
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
    crc: int | None = None,
) -> bytearray:
    """Encode one v1 record (what a 4.x broker writes).

    The IPv6 sysflag bits are derived from the host addresses, so they always agree.
    ``queue_offset``, ``physical_offset`` and ``store_timestamp`` are usually only known
    at append time: leave them 0 and fill them in with :func:`patch_record`.
    """
    topic_raw = topic.encode("utf-8")
    if len(topic_raw) > MAX_TOPIC_LENGTH_V1:
        raise ValueError(f"topic is {len(topic_raw)} bytes; a 4.x record allows 127")
    props_raw = properties if isinstance(properties, bytes) else encode_properties(properties)
    if len(props_raw) > MAX_PROPERTIES_LENGTH:
        raise ValueError(f"properties are {len(props_raw)} bytes; the limit is 32767")
    born = encode_host(born_host)
    store = encode_host(store_host)
    sys_flag &= ~(SysFlag.BORNHOST_V6_FLAG | SysFlag.STOREHOSTADDRESS_V6_FLAG)
    if len(born) == 20:
        sys_flag |= SysFlag.BORNHOST_V6_FLAG
    if len(store) == 20:
        sys_flag |= SysFlag.STOREHOSTADDRESS_V6_FLAG
    total = record_length(len(body), len(topic_raw), len(props_raw), sys_flag)
    buf = bytearray(total)
    HEADER.pack_into(
        buf,
        0,
        total,
        MESSAGE_MAGIC_CODE,
        body_crc(body) if crc is None else crc,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp,
    )
    pos = HEADER_SIZE
    buf[pos : pos + len(born)] = born
    pos += len(born)
    _Q.pack_into(buf, pos, store_timestamp)
    pos += 8
    buf[pos : pos + len(store)] = store
    pos += len(store)
    _TAIL.pack_into(buf, pos, reconsume_times, prepared_transaction_offset)
    pos += 12
    _I.pack_into(buf, pos, len(body))
    pos += 4
    buf[pos : pos + len(body)] = body
    pos += len(body)
    buf[pos] = len(topic_raw)
    pos += 1
    buf[pos : pos + len(topic_raw)] = topic_raw
    pos += len(topic_raw)
    _H.pack_into(buf, pos, len(props_raw))
    pos += 2
    buf[pos : pos + len(props_raw)] = props_raw
    return buf


def patch_record(
    buf: bytearray | memoryview,
    pos: int,
    *,
    queue_offset: int,
    physical_offset: int,
    store_timestamp: int | None = None,
) -> None:
    """Fill in the fields only known at append time, in place."""
    _QQ.pack_into(buf, pos + QUEUE_OFFSET_POS, queue_offset, physical_offset)
    if store_timestamp is not None:
        (sys_flag,) = _I.unpack_from(buf, pos + SYSFLAG_POS)
        _Q.pack_into(buf, pos + store_timestamp_pos(sys_flag), store_timestamp)


def encode_blank(remaining: int) -> bytes:
    """The end-of-file filler header: TOTALSIZE = bytes left in the file."""
    return PEEK.pack(remaining, BLANK_MAGIC_CODE)


def peek_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """``(TOTALSIZE, MAGIC)`` at ``pos``; ``(0, 0)`` when fewer than 8 bytes remain."""
    if len(buf) - pos < 8:
        return 0, 0
    size, magic = PEEK.unpack_from(buf, pos)
    return size, magic


def _inflate(body: bytes, limit: int) -> bytes:
    """``zlib.decompress(body)`` in bounded steps: a zip bomb (a 4 MiB record inflates to
    4 GiB) is refused once past ``limit`` instead of after it has taken the memory."""
    inflater = zlib.decompressobj()
    parts: list[bytes] = []
    size = 0
    pending = body
    while True:
        chunk = inflater.decompress(pending, _INFLATE_STEP)
        size += len(chunk)
        if size > limit:
            raise CorruptRecordError(f"compressed body inflates to more than {limit} bytes")
        parts.append(chunk)
        if inflater.eof:  # trailing bytes are ignored, as zlib.decompress does
            return b"".join(parts)
        pending = inflater.unconsumed_tail
        if not chunk and not pending:
            raise CorruptRecordError(
                "compressed body does not inflate: incomplete or truncated stream"
            )


def inflate_body(body: bytes, sys_flag: int) -> bytes:
    """The stored body of a record with COMPRESSED_FLAG, inflated; raises
    :class:`CorruptRecordError` when it does not inflate or uses an unread codec."""
    return _decompress(body, sys_flag)


def _decompress(body: bytes, sys_flag: int) -> bytes:
    kind = sys_flag & SysFlag.COMPRESSION_TYPE_MASK
    if kind in (0, SysFlag.COMPRESSION_ZLIB):
        try:
            return _inflate(body, MAX_INFLATED_BODY)
        except zlib.error as exc:
            raise CorruptRecordError(f"compressed body does not inflate: {exc}") from None
    name = {SysFlag.COMPRESSION_LZ4: "LZ4", SysFlag.COMPRESSION_ZSTD: "ZSTD"}.get(kind, "unknown")
    raise CorruptRecordError(f"body compressed with {name}, which mq does not read")


def decode_record(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    strict: bool = True,
    check_crc: bool = False,
    read_body: bool = True,
    decompress: bool = True,
) -> MessageExt:
    """Decode the record at ``pos``.

    Raises :class:`CorruptRecordError` (offset relative to ``buf``) when the bytes are not a
    record. ``strict`` also requires TOTALSIZE to match the fields and fit in ``buf``;
    ``check_crc`` verifies BODYCRC against the stored body.
    """
    return _decode(buf, pos, strict, check_crc, read_body, decompress)[0]


def _decode(
    buf: bytes | bytearray | memoryview,
    pos: int,
    strict: bool,
    check_crc: bool,
    read_body: bool,
    decompress: bool,
) -> tuple[MessageExt, int]:
    end = len(buf)
    if end - pos < HEADER_SIZE:
        raise CorruptRecordError("truncated record header", offset=pos)
    (total, magic, crc, queue_id, flag, queue_offset, phy_offset, sys_flag, born_ts) = (
        HEADER.unpack_from(buf, pos)
    )
    if magic == BLANK_MAGIC_CODE:
        raise CorruptRecordError("blank end-of-file record, not a message", offset=pos)
    if magic not in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2):
        raise CorruptRecordError(f"bad magic code 0x{magic & 0xFFFFFFFF:08X}", offset=pos)
    if total <= 0:
        raise CorruptRecordError(f"bad record size {total}", offset=pos)
    if strict and total > end - pos:
        raise CorruptRecordError(f"record of {total} bytes runs past the end", offset=pos)
    try:
        p = pos + HEADER_SIZE
        born_len = _host_len(sys_flag, SysFlag.BORNHOST_V6_FLAG)
        born_ip = host_from_bytes(bytes(buf[p : p + born_len - 4]))
        (born_port,) = _I.unpack_from(buf, p + born_len - 4)
        p += born_len
        (store_ts,) = _Q.unpack_from(buf, p)
        p += 8
        store_len = _host_len(sys_flag, SysFlag.STOREHOSTADDRESS_V6_FLAG)
        store_ip = host_from_bytes(bytes(buf[p : p + store_len - 4]))
        (store_port,) = _I.unpack_from(buf, p + store_len - 4)
        p += store_len
        reconsume, prepared = _TAIL.unpack_from(buf, p)
        p += 12
        (body_len,) = _I.unpack_from(buf, p)
        p += 4
        if body_len < 0 or p + body_len > end:
            raise CorruptRecordError(f"bad body length {body_len}", offset=pos)
        body_view = buf[p : p + body_len]
        p += body_len
        if magic == MESSAGE_MAGIC_CODE:
            if p >= end:  # buf[p] would raise IndexError, not struct.error
                raise CorruptRecordError("record ends before its topic length", offset=pos)
            topic_len = buf[p]
            p += 1
        else:
            (topic_len,) = _H.unpack_from(buf, p)
            p += 2
        if topic_len < 0 or p + topic_len > end:
            raise CorruptRecordError(f"bad topic length {topic_len}", offset=pos)
        topic = bytes(buf[p : p + topic_len]).decode("utf-8")
        p += topic_len
        (props_len,) = _H.unpack_from(buf, p)
        p += 2
        if props_len < 0 or p + props_len > end:
            raise CorruptRecordError(f"bad properties length {props_len}", offset=pos)
        props = decode_properties(buf[p : p + props_len])
        p += props_len
    except struct.error:
        raise CorruptRecordError("record runs past the end of the data", offset=pos) from None
    except (UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, CorruptRecordError):
            raise CorruptRecordError(exc.detail, offset=pos) from None
        raise CorruptRecordError(f"undecodable field: {exc}", offset=pos) from None
    if strict and p - pos != total:
        raise CorruptRecordError(
            f"TOTALSIZE {total} does not match the fields' {p - pos} bytes", offset=pos
        )
    if check_crc and body_crc(body_view) != crc:
        raise CorruptRecordError(
            f"BODYCRC {crc} does not match the body's {body_crc(body_view)}", offset=pos
        )
    body = b""
    if read_body:
        body = bytes(body_view)
        if decompress and sys_flag & SysFlag.COMPRESSED_FLAG:
            try:
                body = _decompress(body, sys_flag)
            except CorruptRecordError as exc:
                raise CorruptRecordError(exc.detail, offset=pos) from None
    msg = MessageExt(
        topic=topic,
        body=body,
        flag=flag,
        properties=props,
        queue_id=queue_id,
        store_size=total,
        queue_offset=queue_offset,
        sys_flag=sys_flag,
        born_timestamp=born_ts,
        born_host=(born_ip, born_port),
        store_timestamp=store_ts,
        store_host=(store_ip, store_port),
        commit_log_offset=phy_offset,
        body_crc=crc,
        reconsume_times=reconsume,
        prepared_transaction_offset=prepared,
        magic_code=magic,
        stored_body_length=body_len,
    )
    return msg, p


def decode_record_at(
    buf: bytes | bytearray | memoryview, pos: int, *, decompress: bool = True
) -> tuple[MessageExt, int]:
    """Leniently decode the record at ``pos`` as :func:`decode_records` does; returns it
    and the position after its last field. Raises :class:`CorruptRecordError`."""
    return _decode(buf, pos, False, False, True, decompress)


def decode_records(
    buf: bytes | bytearray | memoryview, *, read_body: bool = True, decompress: bool = True
) -> list[MessageExt]:
    """Decode a pull response body leniently: stop cleanly at the first non-record.

    Advances field by field (not by TOTALSIZE), as Java's client does, so trailing junk or
    an inconsistent TOTALSIZE never yields a phantom message.
    """
    out: list[MessageExt] = []
    pos = 0
    end = len(buf)
    while end - pos >= HEADER_SIZE:
        try:
            msg, pos = _decode(buf, pos, False, False, read_body, decompress)
        except CorruptRecordError:
            break
        out.append(msg)
    return out


@dataclass(slots=True)
class DispatchRequest:
    """What dispatching needs from one record (RocketMQ's ``DispatchRequest``): the
    consume queue entry, the index keys, the transaction state, and the properties (for
    SQL92 filters). Made by the store's ``check_message`` and by :func:`decode_dispatch`."""

    topic: str
    queue_id: int
    commit_log_offset: int
    size: int
    tags_code: int
    """The consume queue's tag slot: the tags' hash, or a delayed record's delivery time."""
    store_timestamp: int
    queue_offset: int
    keys: str | None
    uniq_key: str | None
    sys_flag: int
    properties: dict[str, str]
    prepared_transaction_offset: int = 0
    damaged: bool = False
    """Whole, but its body does not match BODYCRC: kept in the log, never delivered."""

    @property
    def tags(self) -> str | None:
        return self.properties.get(PROPERTY_TAGS)

    @property
    def transaction_type(self) -> int:
        return self.sys_flag & SysFlag.TRANSACTION_MASK

    @property
    def end_offset(self) -> int:
        return self.commit_log_offset + self.size


def decode_dispatch(
    buf: bytes | bytearray | memoryview, pos: int = 0, *, check_crc: bool = False
) -> DispatchRequest:
    """Decode only what dispatching needs (no body copy); strict. The tag slot is the
    tags' hash (a delayed record's delivery time needs the store's delay table)."""
    msg = decode_record(buf, pos, strict=True, check_crc=check_crc, read_body=False)
    props = msg.properties
    return DispatchRequest(
        topic=msg.topic,
        queue_id=msg.queue_id,
        commit_log_offset=msg.commit_log_offset,
        size=msg.store_size,
        tags_code=tags_hash_code(props.get(PROPERTY_TAGS)),
        store_timestamp=msg.store_timestamp,
        queue_offset=msg.queue_offset,
        keys=props.get(PROPERTY_KEYS),
        uniq_key=props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
        sys_flag=msg.sys_flag,
        properties=props,
        prepared_transaction_offset=msg.prepared_transaction_offset,
    )


# --- SEND_BATCH_MESSAGE body: short records -------------------------------------------
#   i32 TOTALSIZE, i32 MAGIC (0), i32 BODYCRC (0), i32 FLAG, i32 BODYLEN + body,
#   i16 PROPLEN + properties

_BATCH_HEAD = struct.Struct(">iiiii")


def encode_batch_body(messages: Iterable[tuple[int, bytes, Mapping[str, str]]]) -> bytes:
    """Encode ``(flag, body, properties)`` triples as a batch request body."""
    parts: list[bytes] = []
    for flag, body, props in messages:
        props_raw = encode_properties(props)
        total = 4 + 4 + 4 + 4 + 4 + len(body) + 2 + len(props_raw)
        parts.append(_BATCH_HEAD.pack(total, 0, 0, flag, len(body)))
        parts.append(bytes(body))
        parts.append(_H.pack(len(props_raw)))
        parts.append(props_raw)
    return b"".join(parts)


def decode_batch_body(
    buf: bytes | bytearray | memoryview,
) -> list[tuple[int, bytes, dict[str, str]]]:
    """Decode a batch request body; raises :class:`CorruptRecordError` on bad bytes."""
    out: list[tuple[int, bytes, dict[str, str]]] = []
    pos, end = 0, len(buf)
    while pos < end:
        if end - pos < _BATCH_HEAD.size + 2:
            raise CorruptRecordError("truncated batch entry", offset=pos)
        total, _magic, _crc, flag, body_len = _BATCH_HEAD.unpack_from(buf, pos)
        p = pos + _BATCH_HEAD.size
        if body_len < 0 or p + body_len + 2 > end:
            raise CorruptRecordError(f"bad batch body length {body_len}", offset=pos)
        body = bytes(buf[p : p + body_len])
        p += body_len
        (props_len,) = _H.unpack_from(buf, p)
        p += 2
        if props_len < 0 or p + props_len > end:
            raise CorruptRecordError(f"bad batch properties length {props_len}", offset=pos)
        props = decode_properties(buf[p : p + props_len])
        p += props_len
        if total != p - pos:
            raise CorruptRecordError(f"batch entry TOTALSIZE {total} != {p - pos}", offset=pos)
        out.append((flag, body, props))
        pos = p
    return out


PURE: Final[dict[str, Callable[..., Any]]] = {
    "_decode": _decode,
    "decode_batch_body": decode_batch_body,
}
"""The pure decoders, kept for the parity tests whichever core runs."""

_compiled = load("mqcore.message._record")
if _compiled is not None:
    _decode = _compiled.decoder(PURE["_decode"])
    decode_batch_body = _compiled.batch_decoder(PURE["decode_batch_body"])

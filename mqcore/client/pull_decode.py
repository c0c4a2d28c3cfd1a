"""Decode a pull response so that one bad record never costs the records beside it.

A record whose body does not inflate (the compressed sysflag on a body that is not zlib,
which a careless or hostile producer can store), or whose fields do not parse, used to
end the decoding of the whole response: the messages after it were never delivered, yet
the consumer moved to the broker's ``nextBeginOffset`` and committed past them. Here
every good record is returned, and each bad one becomes an :class:`UndecodableMessage`
at its queue offset, carrying the raw bytes and the reason, so the listener sees it (and
may log it, park it, or return RECONSUME_LATER to route it to retry and DLQ) and offsets
only move past messages somebody saw.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields

from mqcore.errors import CorruptRecordError
from mqcore.message.const import MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2, SysFlag
from mqcore.message.model import MessageExt
from mqcore.message.record import HEADER, HEADER_SIZE, decode_record_at, inflate_body

__all__ = ["PulledRecords", "UndecodableMessage", "decode_pulled"]

log = logging.getLogger("mq.client.pull")


@dataclass(slots=True, kw_only=True)
class UndecodableMessage(MessageExt):
    """A pulled record the client could not decode. ``body`` is the stored (raw) body,
    or the whole record when its fields did not parse (then ``properties`` is empty);
    ``decode_error`` says why."""

    decode_error: str = ""


@dataclass(slots=True)
class PulledRecords:
    messages: list[MessageExt]
    complete: bool
    """False when the bytes stopped making sense before the end: the messages after the
    last one returned are unknown, and the caller must not move past them."""


def decode_pulled(body: bytes | bytearray | memoryview, topic: str) -> PulledRecords:
    """The records of a pull response body of ``topic`` (see the module docstring)."""
    out: list[MessageExt] = []
    pos, end = 0, len(body)
    while end - pos >= HEADER_SIZE:
        try:
            msg, after = decode_record_at(body, pos, decompress=False)
        except CorruptRecordError as exc:
            bad = _unparsable(body, pos, topic, exc)
            if bad is None:
                log.error(
                    "pull of %s: undecodable bytes at %d of %d (%s); stopping there",
                    topic,
                    pos,
                    end,
                    exc.detail,
                )
                return PulledRecords(out, complete=False)
            out.append(bad)
            pos += bad.store_size
            continue
        pos = after
        if msg.sys_flag & SysFlag.COMPRESSED_FLAG:
            try:
                msg.body = inflate_body(msg.body, msg.sys_flag)
            except CorruptRecordError as exc:
                msg = _undecodable(msg, exc.detail)
        out.append(msg)
    return PulledRecords(out, complete=True)


def _undecodable(msg: MessageExt, why: str) -> UndecodableMessage:
    """``msg`` (all fields decoded, body raw) as an :class:`UndecodableMessage`."""
    log.warning(
        "message %s at offset %d of %s queue %d is undecodable: %s",
        msg.msg_id,
        msg.queue_offset,
        msg.topic,
        msg.queue_id,
        why,
    )
    kept = {f.name: getattr(msg, f.name) for f in fields(MessageExt) if f.init}
    return UndecodableMessage(**kept, decode_error=why)


def _unparsable(
    buf: bytes | bytearray | memoryview, pos: int, topic: str, exc: CorruptRecordError
) -> UndecodableMessage | None:
    """A record whose fields do not parse but whose header is sound (magic code, a
    TOTALSIZE inside the response) can be stepped over; None when it cannot."""
    total, magic, crc, queue_id, flag, queue_offset, phy_offset, sys_flag, born_ts = (
        HEADER.unpack_from(buf, pos)
    )
    if magic not in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2):
        return None
    if not HEADER_SIZE <= total <= len(buf) - pos:
        return None
    log.warning(
        "record at offset %d of %s queue %d is undecodable: %s",
        queue_offset,
        topic,
        queue_id,
        exc.detail,
    )
    return UndecodableMessage(
        topic=topic,
        body=bytes(buf[pos : pos + total]),
        flag=flag,
        queue_id=queue_id,
        store_size=total,
        queue_offset=queue_offset,
        sys_flag=sys_flag,
        born_timestamp=born_ts,
        commit_log_offset=phy_offset,
        body_crc=crc,
        magic_code=magic,
        decode_error=exc.detail,
    )

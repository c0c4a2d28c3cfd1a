"""Encode a batch of messages into commit log records with their final offsets.

The record layout is :mod:`mqcore.message.record`'s; per record this writes
``[fields through BODYLEN]`` (one ``FULL_HEADS`` pack), ``[BODY]``, and
``[TOPICLEN TOPIC PROPLEN PROPERTIES]`` (prepared before taking the put lock).

Why its own encoder: the generic :func:`mqcore.message.record.encode_record` builds one
bytearray per record and leaves offsets to patch. Here everything that does not depend
on the append position (CRC, properties, tails, lengths) is computed before the put
lock; inside it, one ``pack`` per record with the final queue offset, physical offset
and store timestamp, and one ``join`` for the batch - the bytes are then copied into the
mapped file once. This is the per-message budget of the hot path.

``prepare`` and ``encode`` below are the reference; ``_batch_encoder.pyx`` is their
compiled twin, taken at import when built (see :mod:`mqcore.common.core`).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from mqcore.common.core import load
from mqcore.errors import StoreError
from mqcore.message.const import (
    MESSAGE_MAGIC_CODE,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    SysFlag,
)
from mqcore.message.model import MessageExt
from mqcore.message.properties import encode_properties
from mqcore.message.record import (
    FULL_HEADS,
    INT16,
    MAX_PROPERTIES_LENGTH,
    MAX_TOPIC_LENGTH_V1,
    encode_host,
)

_BORN_V6 = SysFlag.BORNHOST_V6_FLAG
_STORE_V6 = SysFlag.STOREHOSTADDRESS_V6_FLAG
_H = INT16
_HEADS = FULL_HEADS
_TRAN_SKIP_CQ = (SysFlag.TRANSACTION_PREPARED_TYPE, SysFlag.TRANSACTION_ROLLBACK_TYPE)
"""Prepared and rolled-back records get no queue offset."""


class IllegalMessageError(StoreError):
    """A message the store refuses; ``status`` is the PutMessageStatus name."""

    def __init__(self, status: str, remark: str) -> None:
        super().__init__(remark)
        self.status = status


@dataclass(slots=True)
class PreparedBatch:
    """Position-independent parts of a batch of one topic/queue."""

    topic: str
    queue_id: int
    total: int = 0
    heads: list[tuple[int, ...]] = field(default_factory=list)
    """Per record: size, crc, flag, sys_flag, born_ts, reconsume, prepared, body_len."""
    hosts: list[tuple[bytes, bytes]] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    tails: list[bytes] = field(default_factory=list)
    tags: list[str | None] = field(default_factory=list)
    keys: list[str | None] = field(default_factory=list)
    uniq_keys: list[str | None] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.heads)


def prepare(batch: Sequence[MessageExt], max_body: int) -> PreparedBatch:
    """Validate and pre-encode; raises :class:`IllegalMessageError`."""
    first = batch[0]
    topic, queue_id = first.topic, first.queue_id
    topic_raw = topic.encode("utf-8")
    if not topic_raw or len(topic_raw) > MAX_TOPIC_LENGTH_V1:
        raise IllegalMessageError(
            "MESSAGE_ILLEGAL", f"topic must be 1..{MAX_TOPIC_LENGTH_V1} bytes"
        )
    topic_field = bytes([len(topic_raw)]) + topic_raw
    out = PreparedBatch(topic, queue_id)
    total = 0
    for msg in batch:
        if msg.topic != topic or msg.queue_id != queue_id:
            raise IllegalMessageError("MESSAGE_ILLEGAL", "a batch must target one topic and queue")
        body = msg.body
        if len(body) > max_body:
            raise IllegalMessageError("MESSAGE_ILLEGAL", f"body of {len(body)} B > maxMessageSize")
        p = msg.properties
        props = encode_properties(p) if p else b""
        if len(props) > MAX_PROPERTIES_LENGTH:
            raise IllegalMessageError(
                "PROPERTIES_SIZE_EXCEEDED", f"properties exceed {MAX_PROPERTIES_LENGTH} bytes"
            )
        born = encode_host(msg.born_host)
        store = encode_host(msg.store_host)
        sys_flag = msg.sys_flag & ~(_BORN_V6 | _STORE_V6)
        if len(born) == 20:
            sys_flag |= _BORN_V6
        if len(store) == 20:
            sys_flag |= _STORE_V6
        tail = topic_field + _H.pack(len(props)) + props
        size = 84 - 16 + len(born) + len(store) + 4 + len(body) + len(tail)
        out.heads.append(
            (
                size,
                zlib.crc32(body) & 0x7FFFFFFF,
                msg.flag,
                sys_flag,
                msg.born_timestamp,
                msg.reconsume_times,
                msg.prepared_transaction_offset,
                len(body),
            )
        )
        out.hosts.append((born, store))
        out.bodies.append(body)
        out.tails.append(tail)
        out.tags.append(p.get(PROPERTY_TAGS))
        out.keys.append(p.get(PROPERTY_KEYS))
        out.uniq_keys.append(p.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX))
        total += size
    out.total = total
    return out


def encode(
    batch: PreparedBatch, phy: int, next_queue_offset: int, store_timestamp: int
) -> tuple[bytes, list[int], list[int], int]:
    """Final bytes of the batch at ``phy``.

    Returns (data, record offsets, queue offsets (-1: no CQ entry), next queue offset).
    """
    parts: list[bytes] = []
    offsets: list[int] = []
    qoffsets: list[int] = []
    qid = batch.queue_id
    pos = phy
    qo = next_queue_offset
    heads = _HEADS
    for (size, crc, flag, sys_flag, born_ts, reconsume, prepared, blen), (
        born,
        store,
    ), body, tail in zip(batch.heads, batch.hosts, batch.bodies, batch.tails, strict=True):
        if sys_flag & 0xC in _TRAN_SKIP_CQ:
            rec_qo = 0
            qoffsets.append(-1)
        else:
            rec_qo = qo
            qoffsets.append(qo)
            qo += 1
        parts.append(
            heads[len(born), len(store)].pack(
                size,
                MESSAGE_MAGIC_CODE,
                crc,
                qid,
                flag,
                rec_qo,
                pos,
                sys_flag,
                born_ts,
                born,
                store_timestamp,
                store,
                reconsume,
                prepared,
                blen,
            )
        )
        parts.append(body)
        parts.append(tail)
        offsets.append(pos)
        pos += size
    return b"".join(parts), offsets, qoffsets, qo


PURE: Final[dict[str, Callable[..., Any]]] = {"prepare": prepare, "encode": encode}
"""The pure functions, kept for the parity tests whichever core runs."""

_compiled = load("mqcore.store._batch_encoder")
if _compiled is not None:
    prepare, encode = _compiled.encoders(prepare, encode, PreparedBatch)

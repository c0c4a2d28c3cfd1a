"""Message trace records in RocketMQ 4.x's text layout (``TraceDataEncoder``).

A trace message's body is a run of records, each ended by ``FIELD_SPLITOR`` (char 2),
whose fields are separated by ``CONTENT_SPLITOR`` (char 1); the first field names the
record type. The layouts, as the 4.9.8 Java client writes them:

- ``Pub``: type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost,
  bodyLength, costTime, msgType ordinal, offsetMsgId, success (14 fields; readers also
  accept 13 without offsetMsgId, and a 15th clientHost written by later clients);
- ``SubBefore``: type, timestamp, regionId, group, requestId, msgId, retryTimes, keys;
- ``SubAfter``: type, requestId, msgId, costTime, success, keys, contextCode,
  timestamp, group (older clients stop after keys or contextCode);
- ``EndTransaction``: type, timestamp, regionId, group, topic, msgId, tags, keys,
  storeHost, msgType ordinal, transactionId, transactionState, fromTransactionCheck.

Java writes an absent string (a message without tags or keys) as ``null`` and booleans
as ``true``/``false``; both are kept here so that traces read the same on either side.
Sans-IO: pure functions over ``str``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = [
    "CONTENT_SPLITOR",
    "FIELD_SPLITOR",
    "RMQ_SYS_TRACE_TOPIC",
    "ConsumeReturnType",
    "TraceBean",
    "TraceContext",
    "TraceMessageType",
    "TraceTransfer",
    "TraceType",
    "decode_trace_data",
    "encode_trace_context",
    "java_split",
    "join_transfers",
]

CONTENT_SPLITOR = "\x01"
FIELD_SPLITOR = "\x02"
RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
JAVA_NULL = "null"
KEY_SEPARATOR = " "


class TraceType(enum.Enum):
    PUB = "Pub"
    SUB_BEFORE = "SubBefore"
    SUB_AFTER = "SubAfter"
    END_TRANSACTION = "EndTransaction"


class TraceMessageType(enum.IntEnum):
    """``MessageType``: written as its ordinal."""

    NORMAL = 0
    TRANS_HALF = 1
    TRANS_COMMIT = 2
    DELAY = 3


class ConsumeReturnType(enum.IntEnum):
    """``ConsumeReturnType``: a SubAfter's context code is its ordinal."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


@dataclass(slots=True)
class TraceBean:
    """One message as a trace record describes it (``None``: Java's ``null``)."""

    msg_id: str = ""
    topic: str = ""
    offset_msg_id: str = ""
    tags: str | None = ""
    keys: str | None = ""
    store_host: str = ""
    client_host: str = ""
    body_length: int = 0
    retry_times: int = 0
    msg_type: TraceMessageType = TraceMessageType.NORMAL
    transaction_id: str | None = None
    transaction_state: str = ""
    from_transaction_check: bool = False


@dataclass(slots=True)
class TraceContext:
    """One step of a message's life (send, consume start, consume end, tx end); SubBefore
    and SubAfter contexts cover every message of a consumed batch."""

    trace_type: TraceType
    timestamp: int = 0
    region_id: str | None = ""
    group: str = ""
    cost_time: int = 0
    success: bool = True
    request_id: str = ""
    context_code: int = 0
    beans: list[TraceBean] = field(default_factory=list)


@dataclass(slots=True)
class TraceTransfer:
    """An encoded context: its records and the keys its trace message is indexed by."""

    data: str
    keys: list[str]


def _s(value: object) -> str:
    if value is None:
        return JAVA_NULL
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _record(*fields: object) -> str:
    return CONTENT_SPLITOR.join(_s(f) for f in fields) + FIELD_SPLITOR


def encode_trace_context(ctx: TraceContext) -> TraceTransfer:
    """``TraceDataEncoder.encoderFromContextBean``; keys are each bean's msgId and its
    message keys (so a query by either key finds the trace)."""
    t = ctx.trace_type
    parts: list[str] = []
    if t is TraceType.PUB and ctx.beans:
        b = ctx.beans[0]
        parts.append(
            _record(
                t.value,
                ctx.timestamp,
                ctx.region_id,
                ctx.group,
                b.topic,
                b.msg_id,
                b.tags,
                b.keys,
                b.store_host,
                b.body_length,
                ctx.cost_time,
                int(b.msg_type),
                b.offset_msg_id,
                ctx.success,
            )
        )
    elif t is TraceType.SUB_BEFORE:
        for b in ctx.beans:
            parts.append(
                _record(
                    t.value,
                    ctx.timestamp,
                    ctx.region_id,
                    ctx.group,
                    ctx.request_id,
                    b.msg_id,
                    b.retry_times,
                    b.keys,
                )
            )
    elif t is TraceType.SUB_AFTER:
        for b in ctx.beans:
            parts.append(
                _record(
                    t.value,
                    ctx.request_id,
                    b.msg_id,
                    ctx.cost_time,
                    ctx.success,
                    b.keys,
                    ctx.context_code,
                    ctx.timestamp,
                    ctx.group,
                )
            )
    elif t is TraceType.END_TRANSACTION and ctx.beans:
        b = ctx.beans[0]
        parts.append(
            _record(
                t.value,
                ctx.timestamp,
                ctx.region_id,
                ctx.group,
                b.topic,
                b.msg_id,
                b.tags,
                b.keys,
                b.store_host,
                int(b.msg_type),
                b.transaction_id,
                b.transaction_state,
                b.from_transaction_check,
            )
        )
    keys: list[str] = []
    for b in ctx.beans:
        keys.append(b.msg_id)
        if b.keys:
            keys.extend(k for k in b.keys.split(KEY_SEPARATOR))
    return TraceTransfer("".join(parts), keys)


def join_transfers(transfers: Iterable[TraceTransfer]) -> tuple[str, list[str]]:
    """One trace message's body and its distinct keys (``AsyncDataSendTask``)."""
    body: list[str] = []
    keys: dict[str, None] = {}
    for tr in transfers:
        body.append(tr.data)
        keys.update(dict.fromkeys(k for k in tr.keys if k))
    return "".join(body), list(keys)


def java_split(text: str, sep: str) -> list[str]:
    """``String.split`` on one char: trailing empty strings are dropped."""
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _bool(text: str) -> bool:
    return text.lower() == "true"  # Boolean.parseBoolean


def _str(text: str) -> str | None:
    return None if text == JAVA_NULL else text


def _decode_pub(line: list[str]) -> TraceContext:
    bean = TraceBean(
        topic=line[4], msg_id=line[5], tags=_str(line[6]), keys=_str(line[7]),
        store_host=line[8], body_length=int(line[9]),
        msg_type=TraceMessageType(int(line[11])),
    )  # fmt: skip
    success = True
    if len(line) == 13:
        success = _bool(line[12])
    elif len(line) >= 14:
        bean.offset_msg_id = line[12]
        success = _bool(line[13])
        if len(line) >= 15:
            bean.client_host = line[14]
    return TraceContext(
        TraceType.PUB, timestamp=int(line[1]), region_id=line[2], group=line[3],
        cost_time=int(line[10]), success=success, beans=[bean],
    )  # fmt: skip


def _decode_sub_before(line: list[str]) -> TraceContext:
    bean = TraceBean(
        msg_id=line[5], retry_times=int(line[6]), keys=_str(line[7]) if len(line) > 7 else ""
    )
    return TraceContext(
        TraceType.SUB_BEFORE, timestamp=int(line[1]), region_id=line[2], group=line[3],
        request_id=line[4], beans=[bean],
    )  # fmt: skip


def _decode_sub_after(line: list[str]) -> TraceContext:
    bean = TraceBean(msg_id=line[2], keys=_str(line[5]) if len(line) > 5 else "")
    ctx = TraceContext(
        TraceType.SUB_AFTER, request_id=line[1], cost_time=int(line[3]),
        success=_bool(line[4]), beans=[bean],
    )  # fmt: skip
    if len(line) >= 7:
        ctx.context_code = int(line[6])
    if len(line) >= 9:
        ctx.timestamp = int(line[7])
        ctx.group = line[8]
    return ctx


def _decode_end_transaction(line: list[str]) -> TraceContext:
    bean = TraceBean(
        topic=line[4], msg_id=line[5], tags=_str(line[6]), keys=_str(line[7]),
        store_host=line[8], msg_type=TraceMessageType(int(line[9])),
        transaction_id=_str(line[10]), transaction_state=line[11],
        from_transaction_check=_bool(line[12]),
    )  # fmt: skip
    return TraceContext(
        TraceType.END_TRANSACTION, timestamp=int(line[1]), region_id=line[2], group=line[3],
        beans=[bean],
    )  # fmt: skip


_DECODERS = {
    TraceType.PUB.value: _decode_pub,
    TraceType.SUB_BEFORE.value: _decode_sub_before,
    TraceType.SUB_AFTER.value: _decode_sub_after,
    TraceType.END_TRANSACTION.value: _decode_end_transaction,
}


def decode_trace_data(data: str) -> tuple[list[TraceContext], int]:
    """``TraceDataEncoder.decoderFromTraceDataString``: the contexts of one trace
    message's body, one per record, and how many records could not be read (unknown
    types, missing or non-numeric fields), which are skipped where Java would throw."""
    out: list[TraceContext] = []
    bad = 0
    for record in java_split(data, FIELD_SPLITOR):
        line = java_split(record, CONTENT_SPLITOR)
        decoder = _DECODERS.get(line[0]) if line else None
        if decoder is None:
            bad += 1
            continue
        try:
            out.append(decoder(line))
        except (IndexError, ValueError):
            bad += 1
    return out, bad

"""On-demand reads and writes behind the messages and dead-letter views.

Unlike the poller these run only when the operator asks (a search, a resend), as
Textual workers, so a slow broker never blocks typing. Lookups: by key (the index, as
``mqadmin queryMsgByKey``), by message id (offset id, else unique key), and by store
time range (SEARCH_OFFSET_BY_TIMESTAMP at both ends of each queue, then pulls, like
``mqadmin printMsg``). Dead letters: pull a group's ``%DLQ%`` queues and resend messages
to the topic they came from, as new messages with the user's keys, tags and properties.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from mqcli.tui.model import Snapshot
from mqcli.tui.poller import peek
from mqcore.client import Admin, Producer
from mqcore.errors import MQClientError
from mqcore.message import Message, MessageExt
from mqcore.message import const as mc
from mqcore.message.const import DLQ_GROUP_TOPIC_PREFIX

__all__ = [
    "MAX_RESULTS",
    "LookupQuery",
    "body_text",
    "dlq_messages",
    "hex_dump",
    "lookup",
    "original_topic",
    "parse_query",
    "parse_time",
    "resend",
]

MAX_RESULTS = 200
"""A cap on any one list (the dashboard caps time queries at 2000, key queries at 64)."""

_DROP_ON_RESEND = frozenset(
    {
        mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
        mc.PROPERTY_MIN_OFFSET,
        mc.PROPERTY_MAX_OFFSET,
        mc.PROPERTY_RETRY_TOPIC,
        mc.PROPERTY_REAL_TOPIC,
        mc.PROPERTY_REAL_QUEUE_ID,
        mc.PROPERTY_DELAY_TIME_LEVEL,
        mc.PROPERTY_RECONSUME_TIME,
        mc.PROPERTY_MAX_RECONSUME_TIMES,
        mc.PROPERTY_CONSUME_START_TIMESTAMP,
        mc.PROPERTY_CLUSTER,
        mc.PROPERTY_WAIT_STORE_MSG_OK,
        mc.PROPERTY_TRANSACTION_PREPARED,
        mc.PROPERTY_PRODUCER_GROUP,
    }
)
"""Broker- and retry-bookkeeping properties a resent message must not carry."""


@dataclass(frozen=True, slots=True)
class LookupQuery:
    """``mode`` is ``key``, ``id`` or ``time``; times are epoch ms (``time`` mode only)."""

    mode: str
    topic: str
    value: str = ""
    begin_ms: int = 0
    end_ms: int = 0


async def lookup(admin: Admin, query: LookupQuery) -> list[MessageExt]:
    """Messages matching ``query``, oldest first, at most :data:`MAX_RESULTS`."""
    if query.mode == "key":
        return await admin.query_by_key(query.topic, query.value, max_num=64)
    if query.mode == "id":
        return [await admin.find_message(query.value, query.topic or None)]
    if query.mode == "time":
        return await admin.query_by_time(
            query.topic, query.begin_ms, query.end_ms, max_num=MAX_RESULTS
        )
    raise ValueError(f"unknown lookup mode {query.mode!r}")


async def dlq_messages(admin: Admin, snapshot: Snapshot, group: str) -> list[MessageExt]:
    """The group's dead letters (every ``%DLQ%group`` queue, oldest first), capped."""
    topic = snapshot.topics.get(DLQ_GROUP_TOPIC_PREFIX + group)
    if topic is None:
        return []
    addrs = {b.name: b.addr for b in snapshot.brokers if b.broker_id == 0 and b.up}
    out: list[MessageExt] = []
    for q in topic.queues:
        addr = addrs.get(q.broker)
        offset = q.min_offset
        while addr is not None and offset < q.max_offset and len(out) < MAX_RESULTS:
            batch = await peek(admin, addr, topic.name, q.queue_id, offset, 32)
            if not batch:
                break
            out.extend(batch)
            offset = batch[-1].queue_offset + 1
    return out[:MAX_RESULTS]


def original_topic(msg: MessageExt) -> str | None:
    """Where a dead letter was first sent (``RETRY_TOPIC``, set on its first retry)."""
    return msg.properties.get(mc.PROPERTY_RETRY_TOPIC) or msg.properties.get(mc.PROPERTY_REAL_TOPIC)


async def resend(producer: Producer, messages: list[MessageExt]) -> int:
    """Send each dead letter again to its original topic; returns how many were sent."""
    sent = 0
    for msg in messages:
        topic = original_topic(msg)
        if topic is None:
            raise MQClientError(f"message {msg.msg_id} does not say which topic it came from")
        props = {k: v for k, v in msg.properties.items() if k not in _DROP_ON_RESEND}
        props.setdefault(mc.PROPERTY_ORIGIN_MESSAGE_ID, msg.msg_id)
        result = await producer.send(Message(topic, msg.body, msg.flag, props))
        sent += int(result.ok)
    return sent


_PRINTABLE = set(string.printable) - set("\x0b\x0c")


def body_text(body: bytes) -> str | None:
    """The body as UTF-8 text, or ``None`` when it is binary (then show hex)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if any(ch not in _PRINTABLE and not ch.isprintable() for ch in text):
        return None
    return text


def hex_dump(body: bytes, width: int = 16) -> str:
    """``xxd``-style lines: offset, hex bytes, printable ASCII."""
    lines = []
    for i in range(0, len(body), width):
        chunk = body[i : i + width]
        hexes = " ".join(f"{b:02x}" for b in chunk)
        ascii_ = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{i:08x}  {hexes:<{width * 3}} {ascii_}")
    return "\n".join(lines)


_REL = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_time(text: str, now_ms: int) -> int:
    """``now``, ``-10m`` / ``-2h`` (relative), epoch ms, or ISO ``2024-05-01T10:00[:00]``
    (local time)."""
    from datetime import datetime

    text = text.strip()
    if text in ("", "now"):
        return now_ms
    if text.startswith("-") and text[-1:] in _REL and text[1:-1].isdigit():
        return now_ms - int(text[1:-1]) * _REL[text[-1]]
    if text.isdigit():
        return int(text)
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError:
        raise ValueError(f"not a time: {text!r} (use now, -10m, epoch ms or ISO)") from None


def parse_query(topic: str, text: str, now_ms: int) -> LookupQuery:
    """``key:K``, ``id:ID`` or ``time:FROM..TO`` (bare text is a key) for ``topic``."""
    mode, sep, value = text.strip().partition(":")
    if not sep or mode not in ("key", "id", "time"):
        mode, value = "key", text.strip()
    value = value.strip()
    if mode != "id" and not topic:
        raise ValueError("give a topic to search in")
    if mode == "time":
        begin, _, end = value.partition("..")
        return LookupQuery(
            "time", topic, value, parse_time(begin or "-1h", now_ms), parse_time(end, now_ms)
        )
    if not value:
        raise ValueError(f"give a {mode} to look up")
    return LookupQuery(mode, topic, value)

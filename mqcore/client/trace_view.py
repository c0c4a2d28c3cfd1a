"""Reading a message's trace back: the timeline of ``mq message trace`` and the TUI.

As mqadmin ``queryMsgTraceById`` (4.9.8's ``TraceView``): the trace topic is queried by
the msg id (trace messages are keyed by it), each body is decoded, the records of that
msg id are kept, and the client host of a record is the born host of the trace message
that carried it. The records come back as one :class:`MessageTrace`: the sends, then the
consumption per consumer group, each SubBefore paired with its SubAfter by request id.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from mqcore.client.admin import Admin
from mqcore.errors import MessageIdError, MQClientError
from mqcore.message import MessageExt, decode_offset_msg_id
from mqcore.protocol.bodies.trace import (
    RMQ_SYS_TRACE_TOPIC,
    TraceContext,
    TraceType,
    decode_trace_data,
)

__all__ = ["MessageTrace", "TraceEvent", "events_of", "query_message_trace"]


@dataclass(slots=True)
class TraceEvent:
    """One record of one message, flattened (``TraceView``)."""

    type: str
    group: str
    client_host: str
    timestamp: int
    cost_ms: int
    success: bool
    msg_id: str
    request_id: str = ""
    topic: str = ""
    tags: str | None = None
    keys: str | None = None
    store_host: str = ""
    offset_msg_id: str = ""
    retry_times: int = 0
    context_code: int = 0
    transaction_state: str = ""
    """EndTransaction: COMMIT_MESSAGE, ROLLBACK_MESSAGE or UNKNOW (4.9.8's spelling)."""
    from_transaction_check: bool = False

    @property
    def status(self) -> str:
        return "success" if self.success else "failed"

    @property
    def outcome(self) -> str:
        """What a timeline shows as status: ``-`` before consumption ends; a
        transaction's end says how it ended (and whether a check-back ended it)."""
        if self.type == TraceType.SUB_BEFORE.value:
            return "-"
        if self.type == TraceType.END_TRANSACTION.value:
            return self.transaction_state + (" (check)" if self.from_transaction_check else "")
        return self.status


@dataclass(slots=True)
class MessageTrace:
    """A message's sends (and a transactional one's end), then, per consumer group, its
    consumption, oldest first."""

    msg_id: str
    trace_topic: str
    pubs: list[TraceEvent] = field(default_factory=list)
    """Pub records, and EndTransaction ones of a transactional message."""
    consumers: dict[str, list[TraceEvent]] = field(default_factory=dict)
    unreadable: int = 0
    """Records in the trace messages that could not be decoded."""

    @property
    def empty(self) -> bool:
        return not self.pubs and not self.consumers

    def to_json(self) -> dict[str, Any]:
        def one(ev: TraceEvent) -> dict[str, Any]:
            return {**asdict(ev), "status": ev.status}

        return {
            "msgId": self.msg_id,
            "traceTopic": self.trace_topic,
            "pub": [one(e) for e in self.pubs],
            "consumers": {g: [one(e) for e in evs] for g, evs in self.consumers.items()},
            "unreadable": self.unreadable,
        }


def _event(ctx: TraceContext, client_host: str) -> TraceEvent:
    bean = ctx.beans[0]
    return TraceEvent(
        type=ctx.trace_type.value,
        group=ctx.group,
        client_host=bean.client_host or client_host,
        timestamp=ctx.timestamp,
        cost_ms=ctx.cost_time,
        success=ctx.success,
        msg_id=bean.msg_id,
        request_id=ctx.request_id,
        topic=bean.topic,
        tags=bean.tags,
        keys=bean.keys,
        store_host=bean.store_host,
        offset_msg_id=bean.offset_msg_id,
        retry_times=bean.retry_times,
        context_code=ctx.context_code,
        transaction_state=bean.transaction_state,
        from_transaction_check=bean.from_transaction_check,
    )


def events_of(msg_id: str, trace_msgs: list[MessageExt]) -> tuple[list[TraceEvent], int]:
    """The records about ``msg_id`` in these trace messages, and how many were unreadable."""
    events: list[TraceEvent] = []
    unreadable = 0
    for tmsg in trace_msgs:
        contexts, bad = decode_trace_data(tmsg.body.decode("utf-8", errors="replace"))
        unreadable += bad
        for ctx in contexts:
            if ctx.beans and ctx.beans[0].msg_id == msg_id:
                events.append(_event(ctx, tmsg.born_host[0]))
    return events, unreadable


def build_trace(msg_id: str, trace_topic: str, trace_msgs: list[MessageExt]) -> MessageTrace:
    events, unreadable = events_of(msg_id, trace_msgs)
    trace = MessageTrace(msg_id, trace_topic, unreadable=unreadable)
    subs: list[TraceEvent] = []
    for ev in events:
        if ev.type in (TraceType.PUB.value, TraceType.END_TRANSACTION.value):
            trace.pubs.append(ev)
        elif ev.type in (TraceType.SUB_BEFORE.value, TraceType.SUB_AFTER.value):
            subs.append(ev)
    trace.pubs.sort(key=lambda e: e.timestamp)
    # A SubAfter of an older client has no group or time: take its SubBefore's.
    befores = {e.request_id: e for e in subs if e.type == TraceType.SUB_BEFORE.value}
    for ev in subs:
        before = befores.get(ev.request_id)
        if ev.type == TraceType.SUB_AFTER.value and before is not None:
            ev.group = ev.group or before.group
            ev.timestamp = ev.timestamp or before.timestamp
            ev.retry_times = before.retry_times
            ev.client_host = ev.client_host or before.client_host
    order = {TraceType.SUB_BEFORE.value: 0, TraceType.SUB_AFTER.value: 1}
    for ev in sorted(subs, key=lambda e: (e.timestamp, order[e.type])):
        trace.consumers.setdefault(ev.group, []).append(ev)
    return trace


async def query_message_trace(
    admin: Admin,
    msg_id: str,
    trace_topic: str | None = None,
    *,
    max_num: int = 64,
    follow_offset_id: bool = True,
) -> MessageTrace:
    """The trace of ``msg_id``: the producer's msg id (UNIQ_KEY), which traces are keyed
    by. Given an offset msg id instead (what ``mq query`` lists as msgId), the message is
    looked up and its UNIQ_KEY's trace returned (``msg_id`` of the result says which)."""
    topic = trace_topic or RMQ_SYS_TRACE_TOPIC
    found = await admin.query_by_key(
        topic, msg_id, max_num=max_num, end_ms=time.time_ns() // 1_000_000
    )
    trace = build_trace(msg_id, topic, found)
    if not trace.empty or not follow_offset_id:
        return trace
    try:
        decode_offset_msg_id(msg_id)  # not an offset msg id: no broker to ask
        stored = await admin.view_message(msg_id)
    except (MessageIdError, MQClientError):
        return trace  # not an offset msg id, or no such message
    if not stored.unique_key or stored.unique_key == msg_id:
        return trace
    return await query_message_trace(
        admin, stored.unique_key, topic, max_num=max_num, follow_offset_id=False
    )

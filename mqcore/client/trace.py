"""Message trace hooks: what a producer and a consumer record about each message.

RocketMQ 4.x's ``SendMessageTraceHookImpl`` and ``ConsumeMessageTraceHookImpl``
(``enableMsgTrace``): a send that the broker stored gives a ``Pub`` record (group,
topic, msg id, tags, keys, store host, body length, cost, status); a consumed batch a
``SubBefore`` record per message when the listener starts and a ``SubAfter`` one with
the batch's cost per message and its outcome when it returns. The records go through a
:class:`~mqcore.client.trace_dispatcher.TraceDispatcher` to the trace topic, keyed by the
msg id and the message keys, where ``mq message trace MSG_ID`` and mqadmin
``queryMsgTraceById`` find them. Messages the broker marked ``TRACE_ON=false`` (its
``traceOn`` setting) are not traced.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from mqcore.client.api import SendResult, SendStatus
from mqcore.client.trace_dispatcher import TraceDispatcher
from mqcore.message import Message, MessageExt, create_uniq_key
from mqcore.message.const import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_MSG_REGION,
    PROPERTY_TRACE_SWITCH,
    PROPERTY_TRANSACTION_PREPARED,
)
from mqcore.protocol.bodies.trace import (
    ConsumeReturnType,
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceType,
)

__all__ = ["ConsumeTraceHook", "SendTraceHook", "client_msg_id", "now_ms"]

_START_DELIVER_TIME = "__STARTDELIVERTIME"
DEFAULT_REGION = "DefaultRegion"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def client_msg_id(msg: MessageExt) -> str:
    """``MessageClientExt.getMsgId``: the producer's UNIQ_KEY, else the offset msg id."""
    return msg.unique_key or msg.msg_id


def _msg_type(msg: Message) -> TraceMessageType:
    props = msg.properties
    if PROPERTY_DELAY_TIME_LEVEL in props or _START_DELIVER_TIME in props:
        return TraceMessageType.DELAY
    if props.get(PROPERTY_TRANSACTION_PREPARED) == "true":
        return TraceMessageType.TRANS_HALF
    return TraceMessageType.NORMAL


class SendTraceHook:
    """Pub records for one producer group."""

    def __init__(self, dispatcher: TraceDispatcher, group: str) -> None:
        self.dispatcher = dispatcher
        self.group = group

    def before(self, msg: Message, broker_addr: str, body_length: int) -> TraceContext | None:
        """A context for this send attempt (None for the trace topic's own messages)."""
        if msg.topic.startswith(self.dispatcher.trace_topic):
            return None
        bean = TraceBean(
            topic=msg.topic,
            tags=msg.tags,
            keys=msg.properties.get(PROPERTY_KEYS),
            store_host=broker_addr,
            body_length=body_length,
            msg_type=_msg_type(msg),
        )
        return TraceContext(TraceType.PUB, timestamp=now_ms(), group=self.group, beans=[bean])

    def after(self, ctx: TraceContext, result: SendResult) -> None:
        """Complete and queue the context once the broker answered (and allows tracing)."""
        if not result.trace_on:
            return
        ctx.cost_time = now_ms() - ctx.timestamp
        ctx.success = result.status is SendStatus.SEND_OK
        ctx.region_id = result.region_id
        bean = ctx.beans[0]
        bean.msg_id = result.msg_id
        bean.offset_msg_id = result.offset_msg_id
        self.dispatcher.append(ctx)

    def end_transaction(
        self,
        msg: Message,
        msg_id: str,
        broker_addr: str,
        state: str,
        transaction_id: str | None,
        *,
        from_check: bool,
    ) -> None:
        """An EndTransaction record once END_TRANSACTION went to ``broker_addr``
        (``EndTransactionTraceHookImpl``); ``state`` is 4.9.8's name (COMMIT_MESSAGE,
        ROLLBACK_MESSAGE, UNKNOW)."""
        if msg.topic.startswith(self.dispatcher.trace_topic):
            return
        bean = TraceBean(
            topic=msg.topic,
            msg_id=msg_id,
            tags=msg.tags,
            keys=msg.properties.get(PROPERTY_KEYS),
            store_host=broker_addr,
            msg_type=TraceMessageType.TRANS_COMMIT,
            transaction_id=transaction_id,
            transaction_state=state,
            from_transaction_check=from_check,
        )
        self.dispatcher.append(
            TraceContext(
                TraceType.END_TRANSACTION,
                timestamp=now_ms(),
                region_id=msg.properties.get(PROPERTY_MSG_REGION) or DEFAULT_REGION,
                group=self.group,
                beans=[bean],
            )
        )


class ConsumeTraceHook:
    """SubBefore/SubAfter records for one consumer group."""

    def __init__(self, dispatcher: TraceDispatcher, group: str) -> None:
        self.dispatcher = dispatcher
        self.group = group

    def before(self, msgs: Sequence[MessageExt]) -> TraceContext | None:
        """Queue SubBefore for the batch; the context to hand to :meth:`after`."""
        beans: list[TraceBean] = []
        region: str | None = None
        for msg in msgs:
            if msg.properties.get(PROPERTY_TRACE_SWITCH) == "false":
                continue
            region = msg.properties.get(PROPERTY_MSG_REGION)
            beans.append(
                TraceBean(
                    msg_id=client_msg_id(msg),
                    topic=msg.topic,
                    tags=msg.tags,
                    keys=msg.properties.get(PROPERTY_KEYS),
                    body_length=msg.store_size,
                    retry_times=msg.reconsume_times,
                )
            )
        if not beans:
            return None
        ctx = TraceContext(
            TraceType.SUB_BEFORE,
            timestamp=now_ms(),
            region_id=region,
            group=self.group,
            request_id=create_uniq_key(),
            beans=beans,
        )
        self.dispatcher.append(ctx)
        return ctx

    def after(self, before: TraceContext, batch_size: int, outcome: ConsumeReturnType) -> None:
        """Queue SubAfter: the batch's cost shared among its messages, and its outcome."""
        now = now_ms()
        self.dispatcher.append(
            TraceContext(
                TraceType.SUB_AFTER,
                timestamp=now,
                region_id=before.region_id,
                group=self.group,
                request_id=before.request_id,
                cost_time=(now - before.timestamp) // max(1, batch_size),
                success=outcome is ConsumeReturnType.SUCCESS,
                context_code=int(outcome),
                beans=before.beans,
            )
        )

    def consumed(self, msgs: Sequence[MessageExt]) -> None:
        """A lite pull consumer's batch, handed to the caller: SubBefore and a successful
        SubAfter at once, as 4.9.8's DefaultLitePullConsumerImpl records a poll."""
        ctx = self.before(msgs)
        if ctx is not None:
            self.after(ctx, len(msgs), ConsumeReturnType.SUCCESS)

"""Receiving over gRPC: ReceiveMessage, AckMessage, ChangeInvisibleDuration and
ForwardMessageToDeadLetterQueue as RocketMQ 5's proxy serves them (its
``ReceiveMessageActivity``, ``AckMessageActivity``, ``ChangeInvisibleDurationActivity``,
``ForwardMessageToDLQActivity`` and ``ConsumerProcessor``).

Every call becomes the remoting request a 5.x remoting client sends (POP_MESSAGE,
ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, CONSUMER_SEND_MSG_BACK), handed to a broker
through the :class:`~mqcore.proxy.brokers.Brokers` seam (its POP handlers in process in
local mode, its master over remoting in cluster mode): the broker keeps each message's
state, the access point only the handles it renews for push consumers. Which broker:

- a receive goes to the broker the request's queue names (the SDKs take each broker in
  turn: a simple consumer the route's queues, a push consumer its assignments); one the
  topic's route does not list as readable, or none,
  gets the next readable broker in turn, as RocketMQ 5's ``ReceiveMessageQueueSelector``;
- an ack, change or forward goes to the broker named in the receipt handle (the broker
  that popped the message writes its name there), so it needs no route.

What the access point adds is the proxy's part:

- the long polling time (the request's, else what the call's deadline leaves beyond half
  the client's request timeout; within the proxy's 5 s to 20 s and never past the
  deadline) and the invisible time (checked against 10 s to 12 h; a push consumer's
  ``auto_renew`` takes the proxy's 60 s);
- a FIFO group (``consumeMessageOrderly``) pops in order;
- each message's receipt handle: the broker's receipt (``extraInfo``) and the message's
  commit log offset (:mod:`mqcore.proxy.receipts`);
- what 5.x's ``PopMessageResultFilterImpl`` filters out: a message whose tag only shared
  its hash with a wanted one is acknowledged, one delivered the group's maximum number of
  times already goes to the dead letter queue;
- the answer's order: the status first, then the messages, then the delivery timestamp;
- a push consumer's (``auto_renew``) messages kept invisible while it consumes, and
  visible again soon once it is gone (:mod:`mqcore.proxy.renewal`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from mqcore.client.pop_result import popped_messages
from mqcore.common.metadata import PERM_READ, SubscriptionGroupConfig
from mqcore.common.receive_settings import ReceiveSettings
from mqcore.errors import MQError
from mqcore.filter.tags import build_subscription_data
from mqcore.message.const import PROPERTY_TAGS, PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
from mqcore.message.model import MessageExt
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import SubscriptionData
from mqcore.protocol.extra_info import PROPERTY_POP_CK
from mqcore.protocol.headers import ConsumerSendMsgBackRequestHeader
from mqcore.protocol.headers.pop import (
    POLLING_FULL,
    POLLING_TIMEOUT,
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ConsumeInitMode,
    PopMessageRequestHeader,
)
from mqcore.proxy.brokers import Brokers
from mqcore.proxy.context import CallContext
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.proxy.messages import to_proto
from mqcore.proxy.receipts import ReceiptHandle, create_handle, renewed_handle
from mqcore.proxy.renewal import ReceiptHandleRenewer, RenewTimings
from mqcore.proxy.status import ProxyError, brokers_failing, ok, status, status_of_response
from mqcore.proxy.validation import validate_consumer_group, validate_topic

__all__ = ["ConsumerService", "ReceiveLimits"]

log = logging.getLogger("mq.proxy")

Request = Callable[[CallContext, str, RemotingCommand, float | None], Awaitable[RemotingCommand]]
"""``(call, broker name, request, timeout s or None)``: one remoting request through the
ACL to that broker, its answer (the service's ``_request``; ProxyError when the broker
cannot be asked)."""

MAX_MSG_NUMS_FOR_POP_REQUEST = 32
_NACK_INVISIBLE_MS = 1000
"""A message that could not be written to the client comes back this soon."""
_DEFAULT_REQUEST_TIMEOUT_MS = 3000
"""A client's request timeout when its settings are not known (the SDKs' default)."""
_ILLEGAL_POLLING_TIME_VERSION = "5.0.3"
"""Clients before this one know no ILLEGAL_POLLING_TIME: they are answered BAD_REQUEST."""


@dataclass(frozen=True, slots=True)
class ReceiveLimits:
    """The proxy's bounds of a receive (RocketMQ 5's ``ProxyConfig`` defaults); tests
    narrow them to run in seconds."""

    min_invisible_ms: int = 10_000
    """``minInvisibleTimeMillsForRecv``."""
    max_invisible_ms: int = 12 * 3600 * 1000
    """``maxInvisibleTimeMills``."""
    default_invisible_ms: int = 60_000
    """``defaultInvisibleTimeMills``: a receive that asks for ``auto_renew``."""
    min_long_polling_ms: int = 5_000
    """``grpcClientConsumerMinLongPollingTimeoutMillis``."""
    max_long_polling_ms: int = 20_000
    """``grpcClientConsumerMaxLongPollingTimeoutMillis``."""
    renew: RenewTimings = field(default_factory=RenewTimings)
    """How the handles of ``auto_renew`` receives are kept invisible (:mod:`.renewal`)."""

    @classmethod
    def of(cls, settings: ReceiveSettings) -> ReceiveLimits:
        """The limits a config's RocketMQ 5 keys set (``broker.conf``, ``mq proxy -c``)."""
        return cls(
            min_invisible_ms=settings.min_invisible_time_mills_for_recv,
            max_invisible_ms=settings.max_invisible_time_mills,
            default_invisible_ms=settings.default_invisible_time_mills,
            min_long_polling_ms=settings.grpc_client_consumer_min_long_polling_timeout_millis,
            max_long_polling_ms=settings.grpc_client_consumer_max_long_polling_timeout_millis,
            renew=RenewTimings(
                period_ms=settings.renew_schedule_period_millis,
                ahead_ms=settings.renew_ahead_time_millis,
                max_ms=settings.renew_max_time_millis,
                invisible_when_clear_ms=settings.invisible_time_millis_when_clear,
            ),
        )


def _millis(duration: object) -> int:
    seconds: int = getattr(duration, "seconds", 0)
    nanos: int = getattr(duration, "nanos", 0)
    return seconds * 1000 + nanos // 1_000_000


def _now() -> int:
    return int(time.time() * 1000)


def _entries_status(codes: set[pb.Code]) -> pb.Status:
    """One code for the whole call: the entries' one code, or MULTIPLE_RESULTS."""
    if len(codes) > 1:
        return status(pb.Code.MULTIPLE_RESULTS)
    if codes:
        return status(codes.pop())
    return status(pb.Code.INTERNAL_SERVER_ERROR, "ack message result is empty")


class ConsumerService:
    """The receiving calls of the access point. ``request`` sends one remoting request
    to a broker (ACL checked); ``settings`` is a client's last settings, if any."""

    def __init__(
        self,
        brokers: Brokers,
        request: Request,
        settings: Callable[[str], pb.Settings | None],
        command: Callable[[CallContext, int, dict[str, str]], RemotingCommand],
        limits: ReceiveLimits | None = None,
    ) -> None:
        self.brokers = brokers
        self._request = request
        self._next_broker = 0
        """Round robin over readable brokers for receives naming none of them."""
        self._settings = settings
        self._command = command
        self.limits = limits or ReceiveLimits()
        self._background: set[asyncio.Task[object]] = set()
        self.renewer = ReceiptHandleRenewer(self._change, self._alive, self.limits.renew)
        """The handles of push consumers' messages, renewed while they consume."""

    def _alive(self, client_id: str) -> bool:
        """Whether the client is still there (its settings go when its channel closes)."""
        return self._settings(client_id) is not None

    async def _handle(
        self, call: CallContext, group: str, message_id: str, text: str
    ) -> ReceiptHandle:
        """The handle a call names: the one the access point renewed for it, if it
        renews it (then no more), else the text itself."""
        renewed = await self.renewer.take(call.client_id, group, message_id, text)
        return renewed if renewed is not None else ReceiptHandle.decode(text)

    def close(self) -> None:
        """Stop renewing and drop the requests still running in the background (their
        messages come back when their invisible time ends)."""
        self.renewer.close()
        for task in list(self._background):
            task.cancel()

    async def _group(self, name: str) -> SubscriptionGroupConfig:
        with brokers_failing():
            config = await self.brokers.group_config(name)
        return config or SubscriptionGroupConfig(name)

    async def _receiving_broker(self, topic: str, wanted: str) -> str:
        """The broker a receive pops from: ``wanted`` when the topic's route has it
        readable, else the next readable one in turn. TOPIC_NOT_FOUND without a route,
        FORBIDDEN when no broker's queues are readable (RocketMQ 5's answers)."""
        with brokers_failing():
            brokers = await self.brokers.queues(topic)
        if not brokers:
            raise ProxyError(
                pb.Code.TOPIC_NOT_FOUND,
                f"No topic route info in name server for the topic: {topic}",
            )
        readable = [b.broker_name for b in brokers if b.perm & PERM_READ and b.read_queue_nums > 0]
        if not readable:
            raise ProxyError(pb.Code.FORBIDDEN, "no readable queue")
        if wanted in readable:
            return wanted
        self._next_broker += 1
        return readable[self._next_broker % len(readable)]

    def _spawn(self, work: Awaitable[object]) -> None:
        """Fire and forget (an ack of a filtered message, a nack of an unsent one), kept
        referenced until done."""

        async def run() -> object:
            try:
                return await work
            except Exception as exc:  # logged: nobody waits for it
                log.warning("background consumer request failed: %s", exc)
                return None

        task: asyncio.Task[object] = asyncio.ensure_future(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- ReceiveMessage -------------------------------------------------------------------
    def polling_time(
        self, request: spb.ReceiveMessageRequest, call: CallContext, remaining_ms: int | None
    ) -> int:
        """How long the broker may hold the pop (ms); ProxyError when the call's deadline
        leaves too little for the shortest poll."""
        limits = self.limits
        if request.HasField("long_polling_timeout"):
            polling = _millis(request.long_polling_timeout)
        else:
            settings = self._settings(call.client_id)
            timeout = _DEFAULT_REQUEST_TIMEOUT_MS
            if settings is not None and settings.HasField("request_timeout"):
                timeout = _millis(settings.request_timeout)
            budget = remaining_ms if remaining_ms is not None else limits.max_long_polling_ms
            polling = budget - timeout // 2
        polling = min(max(polling, limits.min_long_polling_ms), limits.max_long_polling_ms)
        if remaining_ms is not None and polling > remaining_ms:
            if remaining_ms < limits.min_long_polling_ms:
                old = not call.client_version or call.client_version < _ILLEGAL_POLLING_TIME_VERSION
                raise ProxyError(
                    pb.Code.BAD_REQUEST if old else pb.Code.ILLEGAL_POLLING_TIME,
                    "The deadline time remaining is not enough for polling, please check "
                    "network condition",
                )
            polling = remaining_ms
        return polling

    def invisible_time(self, request: spb.ReceiveMessageRequest) -> int:
        if request.auto_renew:
            return self.limits.default_invisible_ms
        invisible = _millis(request.invisible_duration)
        self.check_invisible_time(invisible, self.limits.min_invisible_ms)
        return invisible

    def check_invisible_time(self, invisible_ms: int, minimum: int = 0) -> None:
        if invisible_ms < minimum:
            raise ProxyError(
                pb.Code.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too small. min is {minimum}"
            )
        maximum = self.limits.max_invisible_ms
        if 0 < maximum < invisible_ms:
            raise ProxyError(
                pb.Code.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too large. max is {maximum}"
            )

    async def receive_message(
        self, request: spb.ReceiveMessageRequest, call: CallContext, remaining_ms: int | None
    ) -> AsyncIterator[spb.ReceiveMessageResponse]:
        """The server stream of one receive: a status, the messages (when found), and the
        delivery timestamp last. ``remaining_ms``: what the call's deadline leaves."""
        try:
            messages = await self._receive(request, call, remaining_ms)
            first = status(pb.Code.MESSAGE_NOT_FOUND, "no match message") if not messages else ok()
        except ProxyError as exc:
            messages, first = [], status(exc.code, exc.message)
        except Exception as exc:  # a bug: the client still gets a status, as from 5.x
            log.exception("ReceiveMessage of %s failed", call.client_id)
            messages = []
            first = status(pb.Code.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")
        sent = 0
        try:
            yield spb.ReceiveMessageResponse(status=first)
            for msg in messages:
                yield spb.ReceiveMessageResponse(message=to_proto(msg))
                sent += 1
        finally:  # the client went away: what it did not get comes back soon
            if sent < len(messages):
                self._nack(request, call, messages[sent:])
        done = spb.ReceiveMessageResponse()
        done.delivery_timestamp.FromMilliseconds(_now())
        yield done

    async def _receive(
        self, request: spb.ReceiveMessageRequest, call: CallContext, remaining_ms: int | None
    ) -> list[MessageExt]:
        """The messages popped for the client ([] when every one popped was filtered
        out); ProxyError with the status to answer otherwise (MESSAGE_NOT_FOUND when the
        poll ended empty)."""
        polling = self.polling_time(request, call, remaining_ms)
        validate_topic(request.message_queue.topic)
        validate_consumer_group(request.group)
        topic, group = request.message_queue.topic.name, request.group.name
        invisible = self.invisible_time(request)
        expression = request.filter_expression
        kind = "SQL92" if expression.type == pb.FilterType.SQL else "TAG"
        try:
            subscription = build_subscription_data(topic, expression.expression or "*", kind)
        except MQError as exc:
            raise ProxyError(pb.Code.ILLEGAL_FILTER_EXPRESSION, str(exc)) from None
        config = await self._group(group)
        broker_name = await self._receiving_broker(topic, request.message_queue.broker.name)
        header = PopMessageRequestHeader(
            consumer_group=group,
            topic=topic,
            queue_id=-1,  # every queue of the broker, as the proxy's read selector picks
            max_msg_nums=min(request.batch_size, MAX_MSG_NUMS_FOR_POP_REQUEST),
            invisible_time=invisible,
            poll_time=polling,
            born_time=_now(),
            init_mode=ConsumeInitMode.MAX,
            exp_type=subscription.expression_type,
            exp=subscription.sub_string,
            order=config.consume_message_orderly,
            attempt_id=request.attempt_id if request.HasField("attempt_id") else None,
        )
        command = self._command(call, RequestCode.POP_MESSAGE, header.to_ext_fields())
        # the broker may hold the pop for ``polling``: wait what the deadline leaves
        wait_ms = (
            remaining_ms if remaining_ms is not None else polling + _DEFAULT_REQUEST_TIMEOUT_MS
        )
        response = await self._request(call, broker_name, command, max(wait_ms, polling) / 1000)
        if response.code in (POLLING_TIMEOUT, ResponseCode.PULL_NOT_FOUND):
            raise ProxyError(pb.Code.MESSAGE_NOT_FOUND, "no new message")
        if response.code == POLLING_FULL:
            raise ProxyError(pb.Code.TOO_MANY_REQUESTS, "polling full")
        if response.code != ResponseCode.SUCCESS:
            refused = status_of_response(response)
            raise ProxyError(refused.code, refused.message)
        try:
            found = popped_messages(response, topic, broker_name)
        except MQError as exc:
            raise ProxyError(pb.Code.INTERNAL_SERVER_ERROR, str(exc)) from None
        messages = self._filter(call, request, subscription, config, found)
        if request.auto_renew:
            if not self._alive(call.client_id):
                self._nack(request, call, messages)
                raise ProxyError(
                    pb.Code.MESSAGE_NOT_FOUND, f"The client [{call.client_id}] is disconnected."
                )
            for msg in messages:
                handle = ReceiptHandle.decode(msg.properties[PROPERTY_POP_CK])
                message_id = msg.properties[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX]
                self.renewer.add(call, group, topic, message_id, handle)
        return messages

    def _filter(
        self,
        call: CallContext,
        request: spb.ReceiveMessageRequest,
        subscription: SubscriptionData,
        config: SubscriptionGroupConfig,
        found: list[MessageExt],
    ) -> list[MessageExt]:
        """Each message's receipt handle; what the client is not to get is acknowledged
        (a tag that only shared its hash) or sent to the dead letter queue (delivered the
        group's maximum number of times: the retry policy's attempts)."""
        max_attempts = config.retry_max_times + 1
        out = []
        for msg in found:
            props = msg.properties
            if not props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX):
                props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = msg.msg_id
            props[PROPERTY_POP_CK] = create_handle(props[PROPERTY_POP_CK], msg.commit_log_offset)
            handle = ReceiptHandle.decode(props[PROPERTY_POP_CK])
            message_id = props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX]
            tags = subscription.tags_set
            if tags and props.get(PROPERTY_TAGS) not in tags:
                self._spawn(self._ack(call, request.group.name, msg.topic, handle))
            elif msg.reconsume_times >= max_attempts:
                self._spawn(self._forward(call, request.group.name, msg.topic, handle, message_id))
            else:
                out.append(msg)
        return out

    def _nack(
        self, request: spb.ReceiveMessageRequest, call: CallContext, messages: list[MessageExt]
    ) -> None:
        for msg in messages:
            self._spawn(self._nack_one(call, request.group.name, msg))

    async def _nack_one(self, call: CallContext, group: str, msg: MessageExt) -> RemotingCommand:
        text = msg.properties[PROPERTY_POP_CK]
        message_id = msg.properties[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX]
        handle = await self._handle(call, group, message_id, text)
        return await self._change(call, group, msg.topic, handle, _NACK_INVISIBLE_MS)

    # -- the broker's requests ------------------------------------------------------------
    async def _ack(
        self, call: CallContext, group: str, topic: str, handle: ReceiptHandle
    ) -> RemotingCommand:
        receipt = handle.receipt
        header = AckMessageRequestHeader(
            consumer_group=group,
            topic=receipt.real_topic(topic, group),
            queue_id=receipt.queue_id,
            extra_info=handle.text,
            offset=handle.queue_offset,
        )
        command = self._command(call, RequestCode.ACK_MESSAGE, header.to_ext_fields())
        return await self._request(call, receipt.broker_name, command, None)

    async def _change(
        self, call: CallContext, group: str, topic: str, handle: ReceiptHandle, invisible_ms: int
    ) -> RemotingCommand:
        receipt = handle.receipt
        header = ChangeInvisibleTimeRequestHeader(
            consumer_group=group,
            topic=receipt.real_topic(topic, group),
            queue_id=receipt.queue_id,
            extra_info=handle.text,
            offset=handle.queue_offset,
            invisible_time=invisible_ms,
        )
        command = self._command(
            call, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext_fields()
        )
        return await self._request(call, receipt.broker_name, command, None)

    async def _forward(
        self, call: CallContext, group: str, topic: str, handle: ReceiptHandle, message_id: str
    ) -> RemotingCommand:
        """CONSUMER_SEND_MSG_BACK to the dead letter queue (level -1), then the ack."""
        if handle.commit_log_offset < 0:
            raise ProxyError(pb.Code.INVALID_RECEIPT_HANDLE, "commit log offset is empty")
        header = ConsumerSendMsgBackRequestHeader(
            offset=handle.commit_log_offset,
            group=group,
            delay_level=-1,
            origin_msg_id=message_id,
            origin_topic=handle.receipt.real_topic(topic, group),
            max_reconsume_times=0,
        )
        command = self._command(call, RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields())
        response = await self._request(call, handle.receipt.broker_name, command, None)
        if response.code == ResponseCode.SUCCESS:
            await self._ack(call, group, topic, handle)
        return response

    # -- AckMessage -----------------------------------------------------------------------
    async def ack_message(
        self, request: spb.AckMessageRequest, call: CallContext
    ) -> spb.AckMessageResponse:
        """Every entry acknowledged on its own (the proxy's default, batch ack off); the
        call's status is their one code or MULTIPLE_RESULTS."""
        validate_topic(request.topic)
        validate_consumer_group(request.group)
        acks = (self._ack_entry(request, entry, call) for entry in request.entries)
        entries = await asyncio.gather(*acks)
        codes = {entry.status.code for entry in entries}
        return spb.AckMessageResponse(status=_entries_status(codes), entries=entries)

    async def _ack_entry(
        self, request: spb.AckMessageRequest, entry: spb.AckMessageEntry, call: CallContext
    ) -> spb.AckMessageResultEntry:
        answer = ok()
        try:
            group = request.group.name
            handle = await self._handle(call, group, entry.message_id, entry.receipt_handle)
            handle.check_not_expired(_now())
            response = await self._ack(call, group, request.topic.name, handle)
            if response.code != ResponseCode.SUCCESS:
                answer = status(pb.Code.INTERNAL_SERVER_ERROR, "ack failed: status is abnormal")
        except ProxyError as exc:
            answer = status(exc.code, exc.message)
        return spb.AckMessageResultEntry(
            message_id=entry.message_id, receipt_handle=entry.receipt_handle, status=answer
        )

    # -- ChangeInvisibleDuration ----------------------------------------------------------
    async def change_invisible_duration(
        self, request: spb.ChangeInvisibleDurationRequest, call: CallContext
    ) -> spb.ChangeInvisibleDurationResponse:
        """The message invisible for the new duration from now; the answer carries the
        receipt handle later calls must use."""
        validate_topic(request.topic)
        validate_consumer_group(request.group)
        invisible = _millis(request.invisible_duration)
        self.check_invisible_time(invisible)
        group = request.group.name
        handle = await self._handle(call, group, request.message_id, request.receipt_handle)
        handle.check_not_expired(_now())
        response = await self._change(call, group, request.topic.name, handle, invisible)
        if response.code != ResponseCode.SUCCESS:
            return spb.ChangeInvisibleDurationResponse(
                status=status(
                    pb.Code.INTERNAL_SERVER_ERROR,
                    "changeInvisibleDuration failed: status is abnormal",
                )
            )
        new_handle = renewed_handle(handle, response).text
        return spb.ChangeInvisibleDurationResponse(status=ok(), receipt_handle=new_handle)

    # -- ForwardMessageToDeadLetterQueue --------------------------------------------------
    async def forward_message_to_dead_letter_queue(
        self, request: spb.ForwardMessageToDeadLetterQueueRequest, call: CallContext
    ) -> spb.ForwardMessageToDeadLetterQueueResponse:
        """The message to ``%DLQ%<group>`` now (a FIFO consumer gave up on it), then
        acknowledged; the answer is the broker's to the send back."""
        validate_topic(request.topic)
        validate_consumer_group(request.group)
        group = request.group.name
        handle = await self._handle(call, group, request.message_id, request.receipt_handle)
        response = await self._forward(
            call, request.group.name, request.topic.name, handle, request.message_id
        )
        return spb.ForwardMessageToDeadLetterQueueResponse(status=status_of_response(response))

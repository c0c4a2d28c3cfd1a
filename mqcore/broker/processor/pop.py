"""POP_MESSAGE (200050), PEEK_MESSAGE (200052), NOTIFICATION (200054) and POLLING_INFO
(200055): RocketMQ 5's PopMessageProcessor, PeekMessageProcessor, NotificationProcessor
and PollingInfoProcessor.

A pop is checked as 5.x checks it (a request older than its poll time by 500 ms is
POLLING_TIMEOUT; more than 32 messages, or a queue id past the topic's, is
INVALID_PARAMETER), then :class:`~mqcore.broker.pop.reader.PopReader` takes what it finds
and writes its checkpoint (a FIFO pop, ``order``, records its messages in the order info
instead). With nothing found and a ``pollTime``, the request is held (long polling,
:meth:`LongPollingService.hold_topics`) until something arrives on the topic or its retry
topic, then tried again; a topic with ``popPollingSize`` requests held already answers
POLLING_FULL. The answer waits for the checkpoint to be durable when the flush or
replication config asks, as a send's does.

The handlers take a channel and a RemotingCommand and return the answer (or a coroutine
of it), so another access point (gRPC) can call them in-process.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mqcore.broker.pop.keys import polling_key
from mqcore.broker.pop.reader import PopRequest
from mqcore.broker.processor.pull import build_subscription, tag_filter
from mqcore.errors import FilterSyntaxError, RequestRefused
from mqcore.filter import compile_sql
from mqcore.message.record import decode_dispatch
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import HeaderError
from mqcore.protocol.headers.pop import (
    POLLING_FULL,
    POLLING_TIMEOUT,
    NotificationRequestHeader,
    NotificationResponseHeader,
    PeekMessageRequestHeader,
    PollingInfoRequestHeader,
    PollingInfoResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from mqcore.remoting import Channel, Processor
from mqcore.store.metadata import PERM_READ, TopicConfig

from . import reply

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext
    from mqcore.store.results import RecordFilter, TagFilter

__all__ = ["PopMessageProcessor", "handlers"]

MAX_POP_NUMS = 32
_TIMEOUT_TOO_MUCH_MS = 500


class PopRefused(RequestRefused):
    """A pop check failed: answer ``code`` with ``remark``."""


def _now() -> int:
    return int(time.time() * 1000)


class PopMessageProcessor:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.config = ctx.config

    # -- checks ----------------------------------------------------------------------------
    def _check(self, group: str, topic: str, queue_id: int) -> TopicConfig:
        """Broker and topic readable, queue id in range, group known and consuming."""
        c = self.ctx
        if not self.config.broker_permission & PERM_READ:
            raise PopRefused(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.config.broker_ip1}] pop message is forbidden",
            )
        topic_config = c.topics.select(topic)
        if topic_config is None:
            raise PopRefused(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!"
            )
        if not topic_config.perm & PERM_READ:
            raise PopRefused(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] peeking message is forbidden"
            )
        if queue_id >= topic_config.read_queue_nums:
            raise PopRefused(
                ResponseCode.INVALID_PARAMETER,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] "
                f"topicConfig.readQueueNums:[{topic_config.read_queue_nums}]",
            )
        known = group in c.groups.table
        group_config = c.groups.find(group, auto_create=self.config.auto_create_subscription_group)
        if group_config is None:
            raise PopRefused(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{group}] does not exist",
            )
        if not known:
            c.persister.request(c.groups)
        if not group_config.consume_enable:
            raise PopRefused(
                ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}"
            )
        return topic_config

    def _filters(
        self, topic: str, exp_type: str | None, exp: str | None
    ) -> tuple[TagFilter | None, RecordFilter | None]:
        if not exp:
            return None, None
        kind = (exp_type or "TAG").upper()
        if kind == "TAG":
            try:
                return tag_filter(build_subscription(topic, exp, 0)), None
            except RequestRefused as exc:
                raise PopRefused(exc.code, exc.remark) from None
        if kind != "SQL92" or not self.config.enable_property_filter:
            raise PopRefused(
                ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"
            )
        try:
            sql = compile_sql(exp)
        except FilterSyntaxError:
            raise PopRefused(
                ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"
            ) from None

        def matches(record: memoryview) -> bool:
            return sql.evaluate(decode_dispatch(record).properties)

        return None, matches

    def _polling_full(self, topic: str) -> bool:
        """``popPollingSize`` requests held on the topic, or ``maxPopPollingSize`` in all."""
        held = self.ctx.long_polling.topic_held_count
        c = self.config
        return held(topic) >= c.pop_polling_size or held() >= c.max_pop_polling_size

    # -- POP_MESSAGE -----------------------------------------------------------------------
    def process_pop(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        try:
            header = PopMessageRequestHeader.from_command(request)
        except HeaderError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        now = _now()
        born = header.born_time if header.born_time > 0 else now
        if now - born - header.poll_time > _TIMEOUT_TOO_MUCH_MS:
            return reply(
                request,
                POLLING_TIMEOUT,
                f"the broker[{self.config.broker_ip1}] pop message is timeout too much",
            )
        if header.max_msg_nums > MAX_POP_NUMS:
            return reply(
                request,
                ResponseCode.INVALID_PARAMETER,
                f"the broker[{self.config.broker_ip1}] pop message's num is greater than 32",
            )
        try:
            topic_config = self._check(header.consumer_group, header.topic, header.queue_id)
            tags, records = self._filters(header.topic, header.exp_type, header.exp)
        except PopRefused as exc:
            return reply(request, exc.code, exc.remark)
        pop = PopRequest(
            group=header.consumer_group,
            topic=header.topic,
            queue_id=header.queue_id,
            max_msg_nums=max(1, header.max_msg_nums),
            invisible_time=header.invisible_time,
            init_mode=header.init_mode,
            tag_filter=tags,
            record_filter=records,
            order=header.is_order,
            attempt_id=header.attempt_id,
        )
        return self._pop(request, pop, topic_config.read_queue_nums, born + header.poll_time)

    async def _pop(
        self, request: RemotingCommand, pop: PopRequest, queue_nums: int, deadline: int
    ) -> RemotingCommand:
        c = self.ctx
        reader = c.pop.reader
        again = True
        while True:
            popped = reader.pop(pop, _now(), queue_nums)
            remaining = deadline - _now()
            if popped.buffers or remaining <= 0 or not again:
                break
            watched = (pop.topic, *reader.retry_topics(pop.topic, pop.group))
            if self._polling_full(pop.topic):
                return reply(request, POLLING_FULL, "the pop polling is full")
            wait = remaining
            if pop.order:  # a FIFO queue in flight frees itself when its time is over
                free_at = c.pop.order_info.next_free_time(pop.topic, pop.group)
                if free_at is not None:
                    wait = min(wait, max(1, free_at - _now()))
            # Woken by an arrival: pop again (held again if it was not for this group's
            # filter); not woken: the poll time is over, or a FIFO queue is free.
            key = polling_key(pop.topic, pop.group, pop.queue_id)
            held = c.pop.polling
            held[key] = held.get(key, 0) + 1
            try:
                woken = await c.long_polling.hold_topics(watched, wait / 1000)
            finally:
                left = held.pop(key) - 1
                if left:
                    held[key] = left
            again = (woken or wait < remaining) and not c.long_polling.closed
        if popped.last_put is not None and not await c.pop.revive_log.durable(popped.last_put):
            return reply(request, ResponseCode.SYSTEM_ERROR, "the checkpoint is not durable")
        header = PopMessageResponseHeader(
            pop_time=popped.pop_time,
            invisible_time=popped.invisible_time,
            revive_qid=popped.revive_qid,
            rest_num=popped.rest_num,
            start_offset_info=popped.start_offset_info,
            msg_offset_info=popped.msg_offset_info,
            order_count_info=popped.order_count_info,
        )
        if not popped.buffers:
            return reply(request, POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE", header)
        body = b"".join(popped.buffers)
        c.stats.on_get(pop.group, pop.topic, len(popped.buffers), len(body))
        return reply(request, ResponseCode.SUCCESS, "FOUND", header, body)

    # -- PEEK_MESSAGE ----------------------------------------------------------------------
    def process_peek(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        try:
            header = PeekMessageRequestHeader.from_command(request)
        except HeaderError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        if header.max_msg_nums > MAX_POP_NUMS:
            return reply(
                request, ResponseCode.INVALID_PARAMETER, "peek message's num is greater than 32"
            )
        try:
            topic_config = self._check(header.consumer_group, header.topic, header.queue_id)
        except PopRefused as exc:
            return reply(request, exc.code, exc.remark)
        peek = PopRequest(
            group=header.consumer_group,
            topic=header.topic,
            queue_id=header.queue_id,
            max_msg_nums=max(1, header.max_msg_nums),
            invisible_time=0,
        )
        found, rest = self.ctx.pop.reader.peek(peek, topic_config.read_queue_nums)
        response_header = PopMessageResponseHeader(
            pop_time=_now(), invisible_time=0, revive_qid=0, rest_num=rest
        )
        if not found:
            return reply(
                request, ResponseCode.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE", response_header
            )
        return reply(request, ResponseCode.SUCCESS, "FOUND", response_header, b"".join(found))

    # -- POLLING_INFO ----------------------------------------------------------------------
    def process_polling_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        try:
            header = PollingInfoRequestHeader.from_command(request)
        except HeaderError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        try:
            self._check(header.consumer_group, header.topic, header.queue_id)
        except PopRefused as exc:
            return reply(request, exc.code, exc.remark)
        key = polling_key(header.topic, header.consumer_group, header.queue_id)
        held = self.ctx.pop.polling.get(key)
        return reply(request, header=PollingInfoResponseHeader(polling_num=held or 0))

    # -- NOTIFICATION ----------------------------------------------------------------------
    def process_notification(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        try:
            header = NotificationRequestHeader.from_command(request)
        except HeaderError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        try:
            topic_config = self._check(header.consumer_group, header.topic, header.queue_id)
        except PopRefused as exc:
            return reply(request, exc.code, exc.remark)
        now = _now()
        born = header.born_time if header.born_time > 0 else now
        return self._notify(request, header, topic_config.read_queue_nums, born + header.poll_time)

    async def _notify(
        self,
        request: RemotingCommand,
        header: NotificationRequestHeader,
        queue_nums: int,
        deadline: int,
    ) -> RemotingCommand:
        c = self.ctx
        reader = c.pop.reader
        group, topic = header.consumer_group, header.topic
        has = reader.has_message(group, topic, header.queue_id, queue_nums)
        remaining = deadline - _now()
        if not has and remaining > 0:
            if self._polling_full(topic):
                return reply(
                    request,
                    POLLING_FULL,
                    "the notification polling is full",
                    NotificationResponseHeader(has_msg=False, polling_full=True),
                )
            watched = (topic, *reader.retry_topics(topic, group))
            await c.long_polling.hold_topics(watched, remaining / 1000)
            has = reader.has_message(group, topic, header.queue_id, queue_nums)
        return reply(request, ResponseCode.SUCCESS, None, NotificationResponseHeader(has_msg=has))


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    processor = PopMessageProcessor(ctx)
    return {
        RequestCode.POP_MESSAGE: processor.process_pop,
        RequestCode.PEEK_MESSAGE: processor.process_peek,
        RequestCode.NOTIFICATION: processor.process_notification,
        RequestCode.POLLING_INFO: processor.process_polling_info,
    }

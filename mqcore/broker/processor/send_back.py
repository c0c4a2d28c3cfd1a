"""CONSUMER_SEND_MSG_BACK (36): a consumer hands back a message it failed to consume
(remoting spec §8.8, store spec §12; RocketMQ's ``asyncConsumerSendMsgBack``).

The broker loads the record by its commit log offset and stores a copy for
``%RETRY%<group>`` with RECONSUMETIMES + 1, ``RETRY_TOPIC`` (the original topic, kept
when already set), ``ORIGIN_MESSAGE_ID`` (kept, else the record's offset msgId),
``WAIT=false`` and ``DELAY`` = the request's level if > 0, else ``3 + reconsumeTimes``:
the copy goes through ``SCHEDULE_TOPIC_XXXX`` first and reaches the retry topic after
the delay. Once the record was reconsumed ``maxReconsumeTimes`` times (the group's
``retryMaxTimes``; the request's value from version V3_4_9 on), or when the request's
level is < 0, the copy goes to ``%DLQ%<group>`` queue 0 with ``DELAY=0`` instead (the
DLQ is created with one queue, perm 6 as 4.9.8; no consumer subscribes to it by
itself). A group with ``retryQueueNums`` 0 drops failed messages: SUCCESS, nothing
stored. Body, flag, sysflag, born time/host and store host are the record's.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from mqcore.errors import CorruptRecordError
from mqcore.message.const import (
    DLQ_GROUP_TOPIC_PREFIX,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_WAIT_STORE_MSG_OK,
    RETRY_GROUP_TOPIC_PREFIX,
)
from mqcore.message.model import MessageExt
from mqcore.message.record import decode_record
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import ConsumerSendMsgBackRequestHeader, HeaderError
from mqcore.remoting import Channel, Processor
from mqcore.store.metadata import PERM_READ, PERM_WRITE
from mqcore.store.results import PutResult, PutStatus

from . import reply

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext

__all__ = ["SendBackProcessor", "handlers"]

log = logging.getLogger("mq.broker.send_back")

_V3_4_9 = 121
"""Request version from which the header's maxReconsumeTimes is honoured."""
_DLQ_NUMS_PER_GROUP = 1
_TOPIC_FLAG_UNIT_SUB = 0x2
"""TopicSysFlag of a retry topic created for a unit-mode consumer."""


class SendBackProcessor:
    """One per broker, on both servers."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self._rng = random.Random()

    def process(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        try:
            header = ConsumerSendMsgBackRequestHeader.from_command(request)
        except HeaderError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        c = self.ctx
        group = c.groups.find(header.group, auto_create=c.config.auto_create_subscription_group)
        if group is None:
            return reply(
                request,
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group not exist, {header.group}",
            )
        if not c.config.broker_permission & PERM_WRITE:
            return reply(
                request,
                ResponseCode.NO_PERMISSION,
                f"the broker[{c.config.broker_ip1}] sending message is forbidden",
            )
        if group.retry_queue_nums <= 0:
            return reply(request)  # the group keeps no retries: the message is dropped
        topic = RETRY_GROUP_TOPIC_PREFIX + header.group
        queue_id = self._rng.randrange(group.retry_queue_nums)
        config = c.topics.create_in_send_back(
            topic,
            group.retry_queue_nums,
            PERM_READ | PERM_WRITE,
            _TOPIC_FLAG_UNIT_SUB if header.unit_mode else 0,
            durable=True,
        )
        if not config.perm & PERM_WRITE:
            return reply(
                request,
                ResponseCode.NO_PERMISSION,
                f"the topic[{topic}] sending message is forbidden",
            )
        stored = self._look(header.offset)
        if stored is None:
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"look message by offset failed, {header.offset}",
            )
        props = stored.properties
        props.setdefault(PROPERTY_RETRY_TOPIC, stored.topic)
        props[PROPERTY_WAIT_STORE_MSG_OK] = "false"
        max_times = group.retry_max_times
        if request.version >= _V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        delay = header.delay_level
        if stored.reconsume_times >= max_times or delay < 0:
            topic = DLQ_GROUP_TOPIC_PREFIX + header.group
            queue_id = self._rng.randrange(_DLQ_NUMS_PER_GROUP)
            c.topics.create_in_send_back(
                topic, _DLQ_NUMS_PER_GROUP, PERM_READ | PERM_WRITE, durable=True
            )
            delay = 0
        elif delay == 0:
            delay = 3 + stored.reconsume_times
        props[PROPERTY_DELAY_TIME_LEVEL] = str(delay)
        if not props.get(PROPERTY_ORIGIN_MESSAGE_ID):
            props[PROPERTY_ORIGIN_MESSAGE_ID] = stored.msg_id
        msg = stored.rerouted(
            topic, queue_id, properties=props, reconsume_times=stored.reconsume_times + 1
        )
        msg = c.schedule_service.rewrite_delay(msg)
        result = c.appender.put((msg,))
        # WAIT is "false" on a send-back copy, so (as in 4.9.8) it is answered without
        # waiting for the flush or the slave: the original stays unconsumed until then.
        wait = msg.properties.get(PROPERTY_WAIT_STORE_MSG_OK) != "false"
        written = c.topics.unwritten_of(topic)
        if written is not None and result.ok:  # a new %RETRY%/%DLQ% topic: on disk first
            return self._await_topic(written, request, result, topic)
        if c.appender.must_wait(result, wait):
            return self._await_durable(request, result)
        return self._answer(request, result.status, result)

    def _look(self, offset: int) -> MessageExt | None:
        """``lookMessageByOffset``: the record as stored (body not inflated), or None."""
        if offset < 0:
            return None
        try:
            view = self.ctx.store.get_message(offset)
            return decode_record(view, 0, strict=True, decompress=False)
        except (CorruptRecordError, ValueError) as exc:
            log.info("send back: no message at commit log offset %d (%s)", offset, exc)
            return None

    async def _await_topic(
        self, written: Future[None], request: RemotingCommand, result: PutResult, topic: str
    ) -> RemotingCommand:
        """The answer once the topic this copy created is in ``topics.json`` (the
        consumer then counts the original as consumed); an error when it cannot be."""
        why = await self.ctx.topics.written_or_why(written, topic)
        if why is not None:
            return reply(request, ResponseCode.SYSTEM_ERROR, why)
        return self._answer(request, result.status, result)

    async def _await_durable(self, request: RemotingCommand, result: PutResult) -> RemotingCommand:
        status = await self.ctx.appender.durable(result)
        return self._answer(request, status, result)

    @staticmethod
    def _answer(request: RemotingCommand, status: PutStatus, result: PutResult) -> RemotingCommand:
        """SUCCESS only for PUT_OK; anything else is SYSTEM_ERROR with the status name, as
        RocketMQ answers (the client then resends the copy itself)."""
        if status is PutStatus.PUT_OK:
            return reply(request)
        log.info("send back refused by the store: %s %s", status.value, result.remark)
        return reply(request, ResponseCode.SYSTEM_ERROR, status.name)


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    return {RequestCode.CONSUMER_SEND_MSG_BACK: SendBackProcessor(ctx).process}

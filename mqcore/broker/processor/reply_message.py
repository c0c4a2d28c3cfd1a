"""SEND_REPLY_MESSAGE (324) / SEND_REPLY_MESSAGE_V2 (325): RocketMQ 4.9.8's
``ReplyMessageProcessor``, the broker's half of request/reply.

A replier answers a request by sending a message (``MSG_TYPE=reply``) to
``<cluster>_REPLY_TOPIC``. The broker does not wait for anyone to pull it: it pushes the
reply at once (PUSH_REPLY_MESSAGE_TO_CLIENT, 326) over the connection of the client named
by the ``REPLY_TO_CLIENT`` property, found among the registered producers (a requester is
a producer), and then, when ``storeReplyMessageEnable`` (default true), also stores it in
the reply topic so it can be looked at later.

The answer reports the push, as 4.9.8's does: SUCCESS, or SYSTEM_ERROR with 4.9.8's remark
when ``REPLY_TO_CLIENT`` is missing, names no connected producer, or the push failed. A
failed store only shows as the missing (or ``"0"``) msgId, never as the code. Checks and
topic auto-creation are the send path's (:func:`~mqcore.broker.send_checks.msg_check`).

The module is not named ``reply``: the package's :func:`~mqcore.broker.processor.reply`
helper has that name.
"""

from __future__ import annotations

import logging
import random
import time
from typing import TYPE_CHECKING

from mqcore.broker.processor import reply
from mqcore.broker.send_checks import SendRefused, born_host, msg_check
from mqcore.message import encode_properties
from mqcore.message.const import PROPERTY_MESSAGE_REPLY_TO_CLIENT, PROPERTY_PUSH_REPLY_TIME
from mqcore.message.ids import create_offset_msg_id
from mqcore.message.model import HostAddr, MessageExt
from mqcore.message.properties import parse_properties_text
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import (
    HeaderError,
    SendMessageRequestHeader,
    decode_send_message_header,
)
from mqcore.protocol.headers.reply import ReplyMessageRequestHeader
from mqcore.remoting import Channel, Processor
from mqcore.store.results import PutStatus

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext

__all__ = ["PUSH_REPLY_TIMEOUT", "ReplyMessageProcessor", "handlers"]

log = logging.getLogger("mq.broker.reply")

PUSH_REPLY_TIMEOUT = 10.0
"""Seconds to wait for the requester to take a pushed reply (4.9.8's ``callClient``)."""

_STORED = (
    PutStatus.PUT_OK,
    PutStatus.FLUSH_DISK_TIMEOUT,
    PutStatus.FLUSH_SLAVE_TIMEOUT,
    PutStatus.SLAVE_NOT_AVAILABLE,
)


def _host_text(host: HostAddr) -> str:
    return f"{host[0]}:{host[1]}"


class ReplyMessageProcessor:
    """Pushes replies to their requesters and stores them; see the module docstring."""

    def __init__(
        self,
        ctx: BrokerContext,
        *,
        store_reply: bool = True,
        push_timeout: float = PUSH_REPLY_TIMEOUT,
    ) -> None:
        self.ctx = ctx
        self.store_reply = store_reply
        """``storeReplyMessageEnable``: the reply is also stored in its topic."""
        self.push_timeout = push_timeout
        self._rng = random.Random()

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        try:
            header = decode_send_message_header(request)
        except HeaderError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        try:
            topic_config = msg_check(
                channel,
                header,
                broker_config=self.ctx.config,
                topics=self.ctx.topics,
                groups=self.ctx.groups,
            )
        except SendRefused as exc:
            return reply(request, exc.code, exc.remark)
        queue_id = header.queue_id
        if queue_id < 0:
            queue_id = self._rng.randrange(max(1, topic_config.write_queue_nums))
        body = bytes(request.body)
        msg = MessageExt(
            topic=header.topic,
            body=body,
            flag=header.flag,
            properties=parse_properties_text(header.properties),
            queue_id=queue_id,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=born_host(channel),
            store_host=self.ctx.store_host(),
            reconsume_times=header.reconsume_times or 0,
        )
        failure = await self._push(header, msg)
        ext = {
            "MSG_REGION": self.ctx.config.region_id,
            "TRACE_ON": "true" if self.ctx.config.trace_on else "false",
        }
        if failure is None:
            ext.update(msgId="0", queueId=str(queue_id), queueOffset="0")
        if self.store_reply:
            self._store(msg, ext)
        code = ResponseCode.SYSTEM_ERROR if failure is not None else ResponseCode.SUCCESS
        return RemotingCommand.response_to(request, code, failure, ext)

    async def _push(self, header: SendMessageRequestHeader, msg: MessageExt) -> str | None:
        """PUSH_REPLY_MESSAGE_TO_CLIENT to the requester; None, or why it failed."""
        sender = msg.properties.get(PROPERTY_MESSAGE_REPLY_TO_CLIENT)
        if sender is None:
            remark = f"reply message properties[{PROPERTY_MESSAGE_REPLY_TO_CLIENT}] is null"
            log.warning("%s is null, can not reply message", PROPERTY_MESSAGE_REPLY_TO_CLIENT)
            return remark
        target = self.ctx.producers.find_channel(sender)
        if target is None:
            remark = f"push reply message fail, channel of <{sender}> not found."
            log.warning(remark)
            return remark
        properties = dict(msg.properties)
        properties[PROPERTY_PUSH_REPLY_TIME] = str(int(time.time() * 1000))
        push_header = ReplyMessageRequestHeader(
            producer_group=header.producer_group,
            topic=header.topic,
            default_topic=header.default_topic,
            default_topic_queue_nums=header.default_topic_queue_nums,
            queue_id=header.queue_id,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            flag=header.flag,
            born_host=_host_text(msg.born_host),
            store_host=_host_text(msg.store_host),
            store_timestamp=int(time.time() * 1000),
            properties=encode_properties(properties).decode("utf-8"),
            reconsume_times=header.reconsume_times,
            unit_mode=header.unit_mode,
        )
        push = RemotingCommand.request(
            RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, push_header.to_ext_fields(), msg.body
        )
        # 4.9.8's remark, missing space included: clients may match on it.
        remark = f"push reply message to {sender}fail."
        try:
            answer = await target.invoke(push, self.push_timeout)
        except Exception as exc:  # a dead or slow requester must not fail the replier's call
            log.warning("push reply message to <%s> fail: %s", sender, exc)
            return remark
        if answer.code != ResponseCode.SUCCESS:
            log.warning("push reply message to <%s> refused: %s", sender, answer.remark)
            return remark
        return None

    def _store(self, msg: MessageExt, ext: dict[str, str]) -> None:
        """Append the reply; on success the answer names the stored record."""
        result = self.ctx.appender.put([msg])
        if result.status not in _STORED:
            log.warning("reply to %s not stored: %s %s", msg.topic, result.status, result.remark)
            return
        ext["msgId"] = create_offset_msg_id(msg.store_host, result.wrote_offset)
        ext["queueId"] = str(msg.queue_id)
        ext["queueOffset"] = str(result.queue_offset)


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    """SEND_REPLY_MESSAGE and its V2 (``storeReplyMessageEnable`` read once, as 4.9.8)."""
    processor = ReplyMessageProcessor(ctx, store_reply=ctx.config.store_reply_message_enable)
    return {
        RequestCode.SEND_REPLY_MESSAGE: processor.process,
        RequestCode.SEND_REPLY_MESSAGE_V2: processor.process,
    }

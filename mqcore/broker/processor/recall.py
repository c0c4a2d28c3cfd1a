"""RECALL_MESSAGE (370, RocketMQ 5): take back a timer message before its time.

The checks and answers are 5.x's ``RecallMessageProcessor``: off unless
``recallMessageEnable`` (NO_PERMISSION), a slave answers SLAVE_NOT_AVAILABLE, an unknown
topic TOPIC_NOT_EXIST, a handle that does not decode, names another topic or broker, or
whose time is past or beyond ``timerMaxDelaySec`` ILLEGAL_OPERATION. Otherwise a delete
marker (:func:`mqcore.broker.timer.recall.recall_marker`) goes through the timer rewrite
into the recalled message's slot, and the answer carries its unique key as ``msgId``.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from mqcore.broker.processor import reply
from mqcore.broker.send_checks import SendRefused, born_host
from mqcore.broker.timer.recall import RecallHandle, recall_marker
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import HeaderError
from mqcore.protocol.headers.recall import (
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
)
from mqcore.remoting import Channel, Processor
from mqcore.store.metadata import PERM_WRITE
from mqcore.store.store_config import BrokerRole

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext

__all__ = ["handlers"]

log = logging.getLogger("mq.broker.recall")
ILLEGAL_OPERATION = 604
"""5.x's ``ResponseCode.ILLEGAL_OPERATION``."""


def _refuse(request: RemotingCommand, code: int, remark: str) -> RemotingCommand:
    return reply(request, code, remark)


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    """RECALL_MESSAGE."""

    def process(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        config = ctx.config
        try:
            header = RecallMessageRequestHeader.from_command(request)
        except HeaderError as exc:
            return _refuse(request, ResponseCode.SYSTEM_ERROR, str(exc))
        if not config.recall_message_enable:
            return _refuse(
                request, ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden"
            )
        if ctx.store_config.broker_role is BrokerRole.SLAVE:
            return _refuse(
                request,
                ResponseCode.SLAVE_NOT_AVAILABLE,
                "recall failed, broker service not available",
            )
        if (
            not config.broker_permission & PERM_WRITE
            and not config.allow_recall_when_broker_not_writeable
        ):
            return _refuse(
                request,
                ResponseCode.SERVICE_NOT_AVAILABLE,
                "recall failed, broker service not available",
            )
        if ctx.topics.select(header.topic) is None:
            return _refuse(
                request,
                ResponseCode.TOPIC_NOT_EXIST,
                f"recall failed, the topic[{header.topic}] not exist",
            )
        try:
            handle = RecallHandle.decode(header.recall_handle)
        except ValueError as exc:
            return _refuse(request, ILLEGAL_OPERATION, str(exc))
        if handle.topic != header.topic:
            return _refuse(request, ILLEGAL_OPERATION, "recall failed, topic not match")
        if handle.broker_name != config.broker_name:
            return _refuse(
                request, ILLEGAL_OPERATION, "recall failed, broker service not available"
            )
        try:
            left = int(handle.timestamp) - int(time.time() * 1000)
        except ValueError:
            left = -1
        if left <= 0 or left >= ctx.store_config.timer_max_delay_sec * 1000:
            return _refuse(request, ILLEGAL_OPERATION, "recall failed, timestamp invalid")
        marker = recall_marker(
            handle,
            producer_group=header.producer_group,
            born_host=born_host(channel),
            store_host=ctx.store_host(),
        )
        timer = ctx.timer_service
        try:
            if timer is not None:
                marker = timer.rewrite(marker)
        except SendRefused as exc:
            log.info("recall of %s refused: %s", handle.message_id, exc.remark)
            return _refuse(request, ResponseCode.SYSTEM_ERROR, "recall failed, execute error")
        result = ctx.appender.put((marker,), wait=False)
        if not result.ok:
            return _refuse(request, ResponseCode.SYSTEM_ERROR, "recall failed, execute error")
        return reply(request, header=RecallMessageResponseHeader(msg_id=handle.message_id))

    return {RequestCode.RECALL_MESSAGE: process}

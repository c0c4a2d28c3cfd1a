"""Requests brokers send a :class:`~mqcore.client.instance.ClientInstance`.

* NOTIFY_CONSUMER_IDS_CHANGED (oneway): rebalance that group now;
* CHECK_TRANSACTION_STATE (oneway): ask the transactional producer of the message's
  ``PGROUP`` (it answers later with END_TRANSACTION);
* RESET_CONSUMER_CLIENT_OFFSET: hand the new offsets to the group's consumer;
* GET_CONSUMER_RUNNING_INFO: the consumer's ``running_info()`` (or a minimal one);
* CONSUME_MESSAGE_DIRECTLY: run a push consumer's listener on the given message
  (mqadmin consumeMessage, the dashboard's resend) and answer how it went;
* GET_CONSUMER_STATUS_FROM_CLIENT: the group's offsets of a topic, as this client holds
  them (mqadmin getConsumerStatus, through the broker).

:func:`register_broker_requests` installs them on the dispatcher of the instance's
connections. The last
four import their admin headers and bodies when called: a process that only produces
never loads them (start-up time of one-shot commands).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from mqcore.errors import MQError
from mqcore.message import decode_record
from mqcore.message.const import PROPERTY_PRODUCER_GROUP
from mqcore.message.model import MessageExt
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import (
    CheckTransactionStateRequestHeader,
    HeaderError,
    NotifyConsumerIdsChangedRequestHeader,
)

if TYPE_CHECKING:
    from mqcore.client.config import ConsumerHandle, ProducerHandle
    from mqcore.remoting import Channel, RequestDispatcher

__all__ = ["BrokerRequestHandlers", "ClientTables", "maybe_await", "register_broker_requests"]

log = logging.getLogger("mq.client")


async def maybe_await(value: object) -> None:
    if inspect.isawaitable(value):
        await value


class ClientTables(Protocol):
    """What the handlers read of their client instance: its groups, and two actions."""

    @property
    def producers(self) -> Mapping[str, ProducerHandle]: ...

    @property
    def consumers(self) -> Mapping[str, ConsumerHandle]: ...

    def rebalance_soon(self, group: str) -> None: ...

    def spawn(self, coro: Awaitable[Any]) -> None: ...


def register_broker_requests(instance: ClientTables, d: RequestDispatcher) -> BrokerRequestHandlers:
    """Serve the broker-initiated requests for ``instance`` on its dispatcher ``d``."""
    handlers = BrokerRequestHandlers(instance)
    d.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, handlers.on_notify_consumer_ids_changed)
    d.register(RequestCode.CHECK_TRANSACTION_STATE, handlers.on_check_transaction_state)
    d.register(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, handlers.on_reset_offset)
    d.register(RequestCode.GET_CONSUMER_RUNNING_INFO, handlers.on_get_consumer_running_info)
    d.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, handlers.on_consume_message_directly)
    d.register(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, handlers.on_get_consumer_status)
    return handlers


class BrokerRequestHandlers:
    """The handlers, reading the instance's producer and consumer tables."""

    def __init__(self, instance: ClientTables) -> None:
        self.instance = instance

    def on_notify_consumer_ids_changed(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = NotifyConsumerIdsChangedRequestHeader.from_command(request)
        log.info(
            "broker %s: consumer ids of %s changed", channel.remote_address, header.consumer_group
        )
        self.instance.rebalance_soon(header.consumer_group)
        return None

    def on_check_transaction_state(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = CheckTransactionStateRequestHeader.from_command(request)
        msg: MessageExt = decode_record(request.body, strict=False)
        group = msg.properties.get(PROPERTY_PRODUCER_GROUP, "")
        producer = self.instance.producers.get(group)
        check = getattr(producer, "check_transaction_state", None)
        if check is None:
            log.warning(
                "CHECK_TRANSACTION_STATE from %s for group %r, which has no transactional"
                " producer here",
                channel.remote_address,
                group,
            )
            return None
        addr = channel.remote_address

        async def run() -> None:
            try:
                await maybe_await(check(addr, msg, header))
            except Exception:
                log.exception("transaction check of %s failed", header.msg_id)

        self.instance.spawn(run())
        return None

    async def on_reset_offset(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | None:
        from mqcore.protocol.bodies.stats import ResetOffsetBody
        from mqcore.protocol.headers.admin import ResetOffsetRequestHeader

        header = ResetOffsetRequestHeader.from_command(request)
        offsets = ResetOffsetBody.decode(request.body).offset_table if request.body else {}
        consumer = self.instance.consumers.get(header.group)
        if consumer is None:
            return RemotingCommand.response_to(
                request, ResponseCode.SYSTEM_ERROR, f"no consumer of group {header.group} here"
            )
        log.info(
            "broker %s resets %s offsets of %s", channel.remote_address, header.group, header.topic
        )
        await maybe_await(consumer.reset_offset(header.topic, dict(offsets)))
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS)

    async def on_get_consumer_running_info(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        from mqcore.common import fastjson
        from mqcore.protocol.headers.admin import GetConsumerRunningInfoRequestHeader

        header = GetConsumerRunningInfoRequestHeader.from_command(request)
        consumer = self.instance.consumers.get(header.consumer_group)
        if consumer is None:
            return RemotingCommand.response_to(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer Group <{header.consumer_group}> not exist in this consumer",
            )
        info_fn = getattr(consumer, "running_info", None)
        if info_fn is not None:
            result = info_fn(jstack=header.jstack_enable)
            info = await result if inspect.isawaitable(result) else result
        else:  # a handle without one: what the instance knows of it
            from mqcore.client.consume_stats import ConsumerStats
            from mqcore.client.running_info import running_info

            data = consumer.consumer_data()
            info = running_info(
                properties={"consumerGroup": header.consumer_group},
                consume_type=data.consume_type,
                namesrv="",
                started_ms=0,
                subscriptions=list(data.subscription_data_set),
                queues={},
                offsets={},
                stats=ConsumerStats(),
                jstack=header.jstack_enable,
            )
        body = info.encode() if hasattr(info, "encode") else fastjson.dumps(info)
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=body)

    async def on_consume_message_directly(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        from mqcore.common import fastjson
        from mqcore.protocol.headers.admin import ConsumeMessageDirectlyResultRequestHeader

        try:
            header = ConsumeMessageDirectlyResultRequestHeader.from_command(request)
            msg = decode_record(bytes(request.body))
        except (HeaderError, MQError) as exc:
            return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR, str(exc))
        consumer = self.instance.consumers.get(header.consumer_group)
        direct = getattr(consumer, "consume_message_directly", None)
        result = await direct(msg, header.broker_name or "") if direct is not None else None
        if result is None:  # not here, not a push consumer, or not running: as 4.9.8
            remark = f"The Consumer Group <{header.consumer_group}> not exist in this consumer"
            return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR, remark)
        log.info(
            "broker %s had %s consume %s directly: %s", channel.remote_address,
            header.consumer_group, header.msg_id, result["consumeResult"],
        )  # fmt: skip
        return RemotingCommand.response_to(
            request, ResponseCode.SUCCESS, body=fastjson.dumps(result)
        )

    def on_get_consumer_status(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        from mqcore.protocol.bodies.consumer_admin import GetConsumerStatusBody
        from mqcore.protocol.headers.admin import GetConsumerStatusRequestHeader

        header = GetConsumerStatusRequestHeader.from_command(request)
        consumer = self.instance.consumers.get(header.group)
        table = getattr(consumer, "offset_table", None)
        offsets = table(header.topic) if table is not None else {}  # 4.9.8: an empty map
        body = GetConsumerStatusBody(message_queue_table=offsets)
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=body.encode())

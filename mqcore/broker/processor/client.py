"""Client management requests (RocketMQ's ClientManageProcessor and the lock half of
AdminBrokerProcessor): HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP,
CHECK_CLIENT_CONFIG, LOCK_BATCH_MQ, UNLOCK_BATCH_MQ (spec §8.1-§8.4, §8.9, §8.11).

All synchronous: they only touch in-memory tables, except that a heartbeat from a new
consumer group persists ``subscriptionGroup.json`` and may create ``%RETRY%<group>``
(persisted by the topic service), as RocketMQ does on the heartbeat path.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mqcore.broker.client_manager import (
    ClientChannelInfo,
    ConsumerGroupEvent,
    ConsumerGroupListener,
)
from mqcore.broker.processor import reply
from mqcore.errors import ConfigError, FilterSyntaxError
from mqcore.filter import compile_sql
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    CheckClientRequestBody,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    SubscriptionData,
    UnlockBatchRequestBody,
)
from mqcore.protocol.headers import (
    GetConsumerListByGroupRequestHeader,
    UnregisterClientRequestHeader,
)
from mqcore.remoting import Channel
from mqcore.store.metadata import (
    PERM_READ,
    PERM_WRITE,
    SubscriptionGroupConfig,
)
from mqcore.store.metadata.topic import RETRY_GROUP_TOPIC_PREFIX

if TYPE_CHECKING:
    from mqcore.broker.controller import BrokerController

__all__ = ["ClientProcessor", "register"]

log = logging.getLogger("mq.broker.client")

TOPIC_SYS_FLAG_UNIT_SUB = 0x2
"""``TopicSysFlag.buildSysFlag(false, true)``: retry topics of unit-mode consumers."""


def retry_topic(group: str) -> str:
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}"


class ClientProcessor:
    """Binds the client managers and the lock table to their request codes."""

    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller

    # -- heartbeat / unregister ---------------------------------------------------------

    def heart_beat(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        data = HeartbeatData.decode(request.body)
        c = self.controller
        info = ClientChannelInfo(channel, data.client_id, request.language.name, request.version)
        if any(not consumer.group_name for consumer in data.consumer_data_set):
            return reply(request, ResponseCode.SYSTEM_ERROR, "consumer groupName is blank")
        for consumer in data.consumer_data_set:
            notify = True
            group_config = self.find_or_create_group(consumer.group_name)
            if group_config is not None:
                notify = group_config.notify_consumer_ids_changed_enable
                flag = TOPIC_SYS_FLAG_UNIT_SUB if consumer.unit_mode else 0
                c.topics.create_in_send_back(
                    retry_topic(consumer.group_name),
                    group_config.retry_queue_nums,
                    PERM_READ | PERM_WRITE,
                    flag,
                )
            if c.consumer_manager.register_consumer(
                consumer.group_name,
                info,
                consumer.consume_type,
                consumer.message_model,
                consumer.consume_from_where,
                consumer.subscription_data_set,
                notify=notify,
            ):
                log.info(
                    "registerConsumer info changed %s %s %s",
                    consumer.group_name,
                    data.client_id,
                    channel.remote_address,
                )
        for producer in data.producer_data_set:
            if producer.group_name:
                c.producer_manager.register(producer.group_name, info)
        return reply(request)

    def find_or_create_group(self, group: str) -> SubscriptionGroupConfig | None:
        """The subscription group, auto-created and persisted at once when allowed."""
        manager = self.controller.subscription_group_manager
        existed = group in manager.table
        config = manager.find(
            group, auto_create=self.controller.config.auto_create_subscription_group
        )
        if config is not None and not existed:
            log.info("auto create a subscription group, %s", group)
            manager.persist()
        return config

    def unregister_client(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = UnregisterClientRequestHeader.from_command(request)
        c = self.controller
        if header.producer_group:
            c.producer_manager.unregister(header.producer_group, channel)
        if header.consumer_group:
            group_config = c.subscription_group_manager.find(header.consumer_group)
            notify = group_config.notify_consumer_ids_changed_enable if group_config else True
            c.consumer_manager.unregister_consumer(header.consumer_group, channel, notify=notify)
        return reply(request)

    def channel_closed(self, channel: Channel) -> None:
        self.controller.producer_manager.on_channel_closed(channel)
        self.controller.consumer_manager.on_channel_closed(channel)

    def scan_not_active(self) -> None:
        """ClientHousekeepingService: drop clients silent for ``channelExpiredTimeout``."""
        timeout = self.controller.config.channel_expired_timeout / 1000
        self.controller.producer_manager.scan_not_active(timeout)
        self.controller.consumer_manager.scan_not_active(timeout)

    # -- queries ------------------------------------------------------------------------

    def get_consumer_list_by_group(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetConsumerListByGroupRequestHeader.from_command(request)
        ids = self.controller.consumer_manager.client_ids(header.consumer_group)
        if not ids:
            log.warning(
                "getConsumerGroupInfo failed, %s %s", header.consumer_group, channel.remote_address
            )
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"no consumer for this group, {header.consumer_group}",
            )
        return reply(request, body=GetConsumerListByGroupResponseBody(ids).encode())

    def check_client_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        body = CheckClientRequestBody.decode(request.body)
        sub = body.subscription_data
        kind = (sub.expression_type or "TAG").upper()
        if kind == "TAG":
            return reply(request)
        if kind != "SQL92":
            return reply(
                request,
                ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                f"Expression type {sub.expression_type} is not supported",
            )
        if not self.controller.config.enable_property_filter:
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {kind}",
            )
        error = _compile_sql92(sub.sub_string)
        if error is not None:
            return reply(request, ResponseCode.SUBSCRIPTION_PARSE_FAILED, error)
        return reply(request)

    # -- orderly locks ------------------------------------------------------------------

    def lock_batch_mq(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        body = LockBatchRequestBody.decode(request.body)
        granted = self.controller.rebalance_lock_manager.try_lock_batch(
            body.consumer_group, body.mq_set, body.client_id
        )
        return reply(request, body=LockBatchResponseBody(granted).encode())

    def unlock_batch_mq(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        body = UnlockBatchRequestBody.decode(request.body)
        self.controller.rebalance_lock_manager.unlock_batch(
            body.consumer_group, body.mq_set, body.client_id
        )
        return reply(request)


def _compile_sql92(expression: str) -> str | None:
    """None when the SQL92 expression compiles, else the parser's message."""
    if not expression.strip():
        return "SQL92 expression is blank"
    try:
        compile_sql(expression)
    except FilterSyntaxError as exc:
        return str(exc)
    return None


def filter_listener(controller: BrokerController) -> ConsumerGroupListener:
    """Keep ``consumerFilter.json`` in step with SQL92 subscriptions, as RocketMQ's
    ConsumerFilterManager is fed by the same REGISTER / UNREGISTER events: a group gone
    is marked dead, not removed (see :mod:`mqcore.store.metadata.consumer_filter`); the
    file is written as soon as the table changes."""
    filters = controller.consumer_filter_manager

    def on_event(event: ConsumerGroupEvent, group: str, args: Sequence[object]) -> None:
        now_ms = time.time_ns() // 1_000_000
        if event is ConsumerGroupEvent.UNREGISTER:
            changed = filters.unregister(group, now_ms)
        elif event is ConsumerGroupEvent.REGISTER and controller.config.enable_property_filter:
            subs = [
                (s.topic, s.sub_string, s.expression_type or "TAG", s.sub_version)
                for s in args
                if isinstance(s, SubscriptionData)
            ]
            changed = filters.register_group(group, subs, now_ms)
        else:
            return
        if changed:
            persist_filters(controller)

    return on_event


def persist_filters(controller: BrokerController) -> None:
    """Write ``consumerFilter.json`` now; a failure is logged (the file is a cache)."""
    try:
        controller.consumer_filter_manager.persist()
    except ConfigError as exc:
        log.warning("consumerFilter.json not written: %s", exc)


def clean_filters(controller: BrokerController) -> None:
    """Drop filter entries dead for too long, writing the file only when some went."""
    if controller.consumer_filter_manager.clean():
        persist_filters(controller)


def register(controller: BrokerController) -> ClientProcessor:
    """Serve the client codes on both ports; watch closes; scan silent clients."""
    proc = ClientProcessor(controller)
    table = {
        RequestCode.HEART_BEAT: proc.heart_beat,
        RequestCode.UNREGISTER_CLIENT: proc.unregister_client,
        RequestCode.GET_CONSUMER_LIST_BY_GROUP: proc.get_consumer_list_by_group,
        RequestCode.CHECK_CLIENT_CONFIG: proc.check_client_config,
        RequestCode.LOCK_BATCH_MQ: proc.lock_batch_mq,
        RequestCode.UNLOCK_BATCH_MQ: proc.unlock_batch_mq,
    }
    for server in (controller.server, controller.fast_server):
        for code, fn in table.items():
            server.register(code, fn)
        server.add_close_listener(proc.channel_closed)
    controller.consumer_manager.listeners.append(filter_listener(controller))

    def start() -> None:  # returns nothing: start hooks that return awaitables are awaited
        controller.schedule(
            controller.config.client_scan_interval, proc.scan_not_active, name="client-scan"
        )
        controller.schedule(10_000, lambda: clean_filters(controller), name="filter-clean")

    controller.add_start_hook(start)
    return proc

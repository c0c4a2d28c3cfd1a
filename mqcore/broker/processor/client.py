"""Client management requests (RocketMQ's ClientManageProcessor and the lock half of
AdminBrokerProcessor): HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP,
CHECK_CLIENT_CONFIG, LOCK_BATCH_MQ, UNLOCK_BATCH_MQ (spec §8.1-§8.4, §8.9, §8.11).

They only touch in-memory tables. A heartbeat from a new consumer group creates the
group and its ``%RETRY%<group>`` topic, as RocketMQ does on the heartbeat path; the files
are written by a :class:`ConfigPersister` (coalesced, off the event loop), and a large
heartbeat is applied in steps (:class:`HeartbeatProcessor`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mqcore.broker.client_manager import (
    ClientChannelInfo,
    ConsumerManager,
    ProducerManager,
)
from mqcore.broker.processor import reply
from mqcore.errors import FilterSyntaxError
from mqcore.filter import compile_sql
from mqcore.message.const import RETRY_GROUP_TOPIC_PREFIX
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    CheckClientRequestBody,
    ConsumerData,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    UnlockBatchRequestBody,
)
from mqcore.protocol.headers import (
    GetConsumerListByGroupRequestHeader,
    UnregisterClientRequestHeader,
)
from mqcore.remoting import Channel, Processor
from mqcore.store.metadata import (
    PERM_READ,
    PERM_WRITE,
    SubscriptionGroupConfig,
    SubscriptionGroupManager,
    TopicConfig,
    TopicConfigManager,
)
from mqcore.store.metadata.persister import ConfigPersister

if TYPE_CHECKING:
    from mqcore.broker.config import BrokerConfig
    from mqcore.broker.context import BrokerContext
    from mqcore.broker.rebalance_lock import RebalanceLockManager

__all__ = ["ClientProcessor", "HeartbeatLimits", "HeartbeatProcessor", "handlers"]

log = logging.getLogger("mq.broker.client")

TOPIC_SYS_FLAG_UNIT_SUB = 0x2
"""``TopicSysFlag.buildSysFlag(false, true)``: retry topics of unit-mode consumers."""


def retry_topic(group: str) -> str:
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}"


@dataclass(frozen=True, slots=True)
class HeartbeatLimits:
    """What one HEART_BEAT may carry and create. RocketMQ bounds only the group name
    (``Validators.CHARACTER_MAX_LENGTH``, checked by its client); the rest is ours, so
    that one request cannot hold the event loop or create metadata without end. A
    real client sends one entry per group of its instance, far below these."""

    max_body_bytes: int = 1024 * 1024
    max_consumer_groups: int = 1024
    max_producer_groups: int = 1024
    max_subscriptions: int = 8192
    """Over all the heartbeat's consumer groups."""
    max_group_name_length: int = 255
    inline_body_bytes: int = 32 * 1024
    """Bodies up to this size are decoded on the loop (well under a millisecond)."""
    step: int = 256
    """Groups plus subscriptions applied between two yields to the event loop."""

    def check(self, data: HeartbeatData) -> str | None:
        """Why ``data`` is refused, or None."""
        consumers, producers = data.consumer_data_set, data.producer_data_set
        if len(consumers) > self.max_consumer_groups:
            return (
                f"heartbeat lists {len(consumers)} consumer groups, "
                f"more than the broker's limit of {self.max_consumer_groups}"
            )
        if len(producers) > self.max_producer_groups:
            return (
                f"heartbeat lists {len(producers)} producer groups, "
                f"more than the broker's limit of {self.max_producer_groups}"
            )
        subs = sum(len(c.subscription_data_set) for c in consumers)
        if subs > self.max_subscriptions:
            return (
                f"heartbeat lists {subs} subscriptions, "
                f"more than the broker's limit of {self.max_subscriptions}"
            )
        for group in [c.group_name for c in consumers] + [p.group_name for p in producers]:
            if len(group) > self.max_group_name_length:
                return f"group name longer than {self.max_group_name_length} characters"
        if any(not consumer.group_name for consumer in consumers):
            return "consumer groupName is blank"
        return None


class HeartbeatProcessor:
    """HEART_BEAT: registers a client's producer and consumer groups, auto-creating
    subscription groups and their ``%RETRY%`` topics.

    Cheap heartbeats are answered in one go; a large one is decoded on a worker thread
    and applied in steps of :attr:`HeartbeatLimits.step` with a yield in between, so no
    heartbeat holds the event loop for more than about a millisecond. What a heartbeat
    creates is written by ``persister`` (coalesced, off the loop), never once per group.
    """

    def __init__(
        self,
        *,
        groups: SubscriptionGroupManager,
        topics: TopicConfigManager,
        consumers: ConsumerManager,
        producers: ProducerManager,
        persister: ConfigPersister,
        register_topics: Callable[[Iterable[str]], None],
        auto_create_groups: Callable[[], bool],
        limits: HeartbeatLimits | None = None,
    ) -> None:
        self.groups = groups
        self.topics = topics
        self.consumers = consumers
        self.producers = producers
        self.persister = persister
        self.register_topics = register_topics
        self.auto_create_groups = auto_create_groups
        self.limits = limits or HeartbeatLimits()

    def __call__(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        body = request.body or b""
        if len(body) > self.limits.max_body_bytes:
            log.warning("heartbeat of %d bytes from %s refused", len(body), channel.remote_address)
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"heartbeat body of {len(body)} bytes exceeds the broker's limit of "
                f"{self.limits.max_body_bytes}",
            )
        if len(body) > self.limits.inline_body_bytes:
            return self._in_steps(channel, request, None)
        data = HeartbeatData.decode(body)
        refused = self._refuse(channel, request, data)
        if refused is not None:
            return refused
        if _work(data) > self.limits.step:
            return self._in_steps(channel, request, data)
        info = self._client(channel, request, data)
        batch = _Created()
        for consumer in data.consumer_data_set:
            self._register_consumer(channel, info, consumer, batch)
        for producer in data.producer_data_set:
            if producer.group_name:
                self.producers.register(producer.group_name, info)
        self._created(batch)
        return reply(request)

    async def _in_steps(
        self, channel: Channel, request: RemotingCommand, data: HeartbeatData | None
    ) -> RemotingCommand:
        if data is None:
            body = bytes(request.body or b"")
            data = await asyncio.get_running_loop().run_in_executor(
                None, HeartbeatData.decode, body
            )
            refused = self._refuse(channel, request, data)
            if refused is not None:
                return refused
        info = self._client(channel, request, data)
        batch = _Created()
        done = 0
        try:
            for consumer in data.consumer_data_set:
                if channel.closed:
                    break  # nobody to register: its close was handled already
                self._register_consumer(channel, info, consumer, batch)
                done += 1 + len(consumer.subscription_data_set)
                if done >= self.limits.step:
                    done = 0
                    await asyncio.sleep(0)
            for producer in data.producer_data_set:
                if channel.closed:
                    break
                if producer.group_name:
                    self.producers.register(producer.group_name, info)
                done += 1
                if done >= self.limits.step:
                    done = 0
                    await asyncio.sleep(0)
        finally:
            self._created(batch)
        return reply(request)

    def _refuse(
        self, channel: Channel, request: RemotingCommand, data: HeartbeatData
    ) -> RemotingCommand | None:
        why = self.limits.check(data)
        if why is None:
            return None
        log.warning("heartbeat from %s refused: %s", channel.remote_address, why)
        return reply(request, ResponseCode.SYSTEM_ERROR, why)

    @staticmethod
    def _client(
        channel: Channel, request: RemotingCommand, data: HeartbeatData
    ) -> ClientChannelInfo:
        return ClientChannelInfo(channel, data.client_id, request.language.name, request.version)

    def _register_consumer(
        self, channel: Channel, info: ClientChannelInfo, consumer: ConsumerData, batch: _Created
    ) -> None:
        name = consumer.group_name
        notify = True
        group_config = self.find_or_create_group(name, batch)
        if group_config is not None:
            notify = group_config.notify_consumer_ids_changed_enable
            queues = group_config.retry_queue_nums
            _, created = self.topics.create_if_absent(
                TopicConfig(
                    retry_topic(name),
                    read_queue_nums=queues,
                    write_queue_nums=queues,
                    perm=PERM_READ | PERM_WRITE,
                    topic_sys_flag=TOPIC_SYS_FLAG_UNIT_SUB if consumer.unit_mode else 0,
                )
            )
            if created:
                batch.topics.append(retry_topic(name))
        if self.consumers.register_consumer(
            name,
            info,
            consumer.consume_type,
            consumer.message_model,
            consumer.consume_from_where,
            consumer.subscription_data_set,
            notify=notify,
        ):
            log.info(
                "registerConsumer info changed %s %s %s",
                name,
                info.client_id,
                channel.remote_address,
            )

    def find_or_create_group(
        self, group: str, batch: _Created | None = None
    ) -> SubscriptionGroupConfig | None:
        """The subscription group, auto-created when allowed (written by the persister)."""
        existed = group in self.groups.table
        config = self.groups.find(group, auto_create=self.auto_create_groups())
        if config is not None and not existed:
            if batch is None:
                self.persister.request(self.groups)
            else:
                batch.groups += 1
        return config

    def _created(self, batch: _Created) -> None:
        """One write request per file and one name-server registration per heartbeat."""
        if batch.groups:
            log.info("auto created %d subscription group(s)", batch.groups)
            self.persister.request(self.groups)
        if batch.topics:
            log.info("created %d retry topic(s)", len(batch.topics))
            self.persister.request(self.topics)
            self.register_topics(batch.topics)


@dataclass(slots=True)
class _Created:
    groups: int = 0
    topics: list[str] = field(default_factory=list)
    """Retry topics created, registered alone with the name servers."""


def _work(data: HeartbeatData) -> int:
    consumers = data.consumer_data_set
    return (
        len(consumers)
        + len(data.producer_data_set)
        + sum(len(c.subscription_data_set) for c in consumers)
    )


class ClientProcessor:
    """Binds the client managers and the lock table to their request codes."""

    def __init__(
        self,
        heartbeat: HeartbeatProcessor,
        *,
        config: BrokerConfig,
        producers: ProducerManager,
        consumers: ConsumerManager,
        groups: SubscriptionGroupManager,
        locks: RebalanceLockManager,
    ) -> None:
        self.heart_beat = heartbeat
        self.config = config
        self.producers = producers
        self.consumers = consumers
        self.groups = groups
        self.locks = locks

    def unregister_client(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = UnregisterClientRequestHeader.from_command(request)
        if header.producer_group:
            self.producers.unregister(header.producer_group, channel)
        if header.consumer_group:
            group_config = self.groups.find(header.consumer_group)
            notify = group_config.notify_consumer_ids_changed_enable if group_config else True
            self.consumers.unregister_consumer(header.consumer_group, channel, notify=notify)
        return reply(request)

    # -- queries ------------------------------------------------------------------------

    def get_consumer_list_by_group(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetConsumerListByGroupRequestHeader.from_command(request)
        ids = self.consumers.client_ids(header.consumer_group)
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
        if not self.config.enable_property_filter:
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
        granted = self.locks.try_lock_batch(body.consumer_group, body.mq_set, body.client_id)
        return reply(request, body=LockBatchResponseBody(granted).encode())

    def unlock_batch_mq(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        body = UnlockBatchRequestBody.decode(request.body)
        self.locks.unlock_batch(body.consumer_group, body.mq_set, body.client_id)
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


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    """Heartbeats, unregistering, the group's member list, client config checks and the
    orderly locks (closed connections and silent clients are :mod:`client_housekeeping`'s)."""
    config = ctx.config
    heartbeat = HeartbeatProcessor(
        groups=ctx.groups,
        topics=ctx.topic_configs,
        consumers=ctx.consumers,
        producers=ctx.producers,
        persister=ctx.persister,
        register_topics=ctx.topics.register_topics,
        auto_create_groups=lambda: config.auto_create_subscription_group,
    )
    proc = ClientProcessor(
        heartbeat,
        config=config,
        producers=ctx.producers,
        consumers=ctx.consumers,
        groups=ctx.groups,
        locks=ctx.locks,
    )
    return {
        RequestCode.HEART_BEAT: proc.heart_beat,
        RequestCode.UNREGISTER_CLIENT: proc.unregister_client,
        RequestCode.GET_CONSUMER_LIST_BY_GROUP: proc.get_consumer_list_by_group,
        RequestCode.CHECK_CLIENT_CONFIG: proc.check_client_config,
        RequestCode.LOCK_BATCH_MQ: proc.lock_batch_mq,
        RequestCode.UNLOCK_BATCH_MQ: proc.unlock_batch_mq,
    }

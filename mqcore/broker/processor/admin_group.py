"""Consumer-group admin requests (RocketMQ's AdminBrokerProcessor, group half, and
Broker2Client): subscription groups, consume stats, offsets, connections, offset reset
(spec §9.4). Requests relayed to a consumer live in :mod:`.admin_consumer`.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING

from mqcore.broker.processor import reply, reply_when_written
from mqcore.errors import MQError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    DelayOffsetSerializeWrapper,
    GroupList,
    MessageQueue,
    OffsetWrapper,
    ProducerConnection,
    ResetOffsetBody,
    SubscriptionGroupWrapper,
)
from mqcore.protocol.headers import (
    DeleteSubscriptionGroupRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
)
from mqcore.remoting import Channel, Processor
from mqcore.store.metadata import SubscriptionGroupConfig

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext

__all__ = ["GroupAdminProcessor", "add_queue_offsets", "handlers"]

log = logging.getLogger("mq.broker.admin")


def add_queue_offsets(
    stats: ConsumeStats, ctx: BrokerContext, group: str, topic: str, queues: int
) -> None:
    """The first ``queues`` queues of ``topic`` into ``stats``: the broker's end, what
    ``group`` committed (0 when nothing) and the store time of the last consumed message
    (0 when none), as 4.9.8's consume stats show a queue; for a queue the group pops
    from, also what is in flight and invisible (:class:`PopInflightCounter`)."""
    store = ctx.store
    now = int(time.time() * 1000)
    for qid in range(queues):
        broker_offset = max(0, store.get_max_offset_in_queue(topic, qid))
        committed = ctx.offsets.query(group, topic, qid)
        consumer_offset = max(0, committed if committed is not None else 0)
        last = 0
        if consumer_offset > 0:
            last = max(0, store.get_message_store_timestamp(topic, qid, consumer_offset - 1))
        wrapper = OffsetWrapper(broker_offset, consumer_offset, last)
        popped = ctx.pop.inflight.count(topic, group, qid, now)
        if popped is not None:
            wrapper.pop_in_flight, wrapper.pop_invisible = popped.in_flight, popped.invisible
        stats.offset_table[MessageQueue(topic, ctx.config.broker_name, qid)] = wrapper


class GroupAdminProcessor:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    # -- subscription groups ------------------------------------------------------------

    async def update_and_create_subscription_group(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        """Answered once ``subscriptionGroup.json`` holds the group, as in RocketMQ; the
        write is the persister's group commit (off the loop, shared by concurrent
        creates), so the answer costs the same with ten groups or ten thousand."""
        config = SubscriptionGroupConfig.decode(request.body)
        if not config.group_name.strip():
            return reply(request, ResponseCode.SYSTEM_ERROR, "groupName is blank")
        log.info("updateAndCreateSubscriptionGroup %s from %s", config, channel.remote_address)
        manager = self.ctx.groups
        manager.update(config)
        return await reply_when_written(request, self.ctx.persister.request_durable(manager))

    def get_all_subscription_group_config(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        manager = self.ctx.groups
        wrapper = SubscriptionGroupWrapper(dict(manager.table), manager.data_version)
        return reply(request, body=wrapper.encode())

    async def delete_subscription_group(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        header = DeleteSubscriptionGroupRequestHeader.from_command(request)
        c = self.ctx
        log.info("deleteSubscriptionGroup %s from %s", header.group_name, channel.remote_address)
        written: list[Future[None]] = []
        if c.groups.delete(header.group_name) is not None:
            written.append(c.persister.request_durable(c.groups))
        if header.remove_offset:
            c.offsets.remove_group(header.group_name)
            written.append(c.persister.request_durable(c.offsets))
        c.stats.remove_group(header.group_name)
        c.pop.inflight.clear_group(header.group_name)
        return await reply_when_written(request, *written)

    # -- offsets and statistics ---------------------------------------------------------

    def get_all_consumer_offset(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        table = self.ctx.offsets.table
        body = ConsumerOffsetSerializeWrapper({k: dict(v) for k, v in list(table.items())})
        return reply(request, body=body.encode())

    def get_all_delay_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        table = self.ctx.delay_offsets.table
        return reply(request, body=DelayOffsetSerializeWrapper(dict(table)).encode())

    def get_consume_stats(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = GetConsumeStatsRequestHeader.from_command(request)
        c = self.ctx
        group = header.consumer_group
        if header.topic and header.topic.strip():
            topics = {header.topic}
        else:
            topics = c.offsets.topics_by_group(group)
        group_info = c.consumers.get_group(group)
        stats = ConsumeStats()
        for topic in sorted(topics):
            config = c.topics.select(topic)
            if config is None:
                log.warning("consumeStats: topic %s of group %s does not exist", topic, group)
                continue
            if (
                group_info is not None
                and group_info.subscriptions
                and topic not in group_info.subscriptions
            ):
                continue  # online, and no longer subscribed to it
            add_queue_offsets(stats, c, group, topic, config.read_queue_nums)
            stats.consume_tps += c.stats.group_get_tps(group, topic)
        return reply(request, body=stats.encode())

    def query_topic_consume_by_who(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        header = QueryTopicConsumeByWhoRequestHeader.from_command(request)
        c = self.ctx
        groups = c.consumers.groups_by_topic(header.topic)
        groups |= c.offsets.groups_by_topic(header.topic)
        return reply(request, body=GroupList(groups).encode())

    # -- connections --------------------------------------------------------------------

    def get_consumer_connection_list(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetConsumerConnectionListRequestHeader.from_command(request)
        group_info = self.ctx.consumers.get_group(header.consumer_group)
        if group_info is None or not group_info.channels:
            return reply(
                request,
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"the consumer group[{header.consumer_group}] not online",
            )
        return reply(request, body=group_info.connection().encode())

    def get_producer_connection_list(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetProducerConnectionListRequestHeader.from_command(request)
        infos = self.ctx.producers.group_channels(header.producer_group)
        if not infos:
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"the producer group[{header.producer_group}] not exist",
            )
        body = ProducerConnection([info.connection() for info in infos])
        return reply(request, body=body.encode())

    # -- reset offset (Broker2Client.resetOffset) ---------------------------------------

    def reset_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """Offsets of ``group`` on ``topic`` at ``timestamp`` (-1 = the end), stored and
        pushed to the live consumers with RESET_CONSUMER_CLIENT_OFFSET."""
        header = ResetOffsetRequestHeader.from_command(request)
        c = self.ctx
        topic, group = header.topic, header.group
        config = c.topics.select(topic)
        if config is None:
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}",
            )
        offsets = c.offsets
        table: dict[MessageQueue, int] = {}
        for qid in range(config.write_queue_nums):
            current = offsets.query(group, topic, qid)
            if current is None:
                return reply(
                    request,
                    ResponseCode.SYSTEM_ERROR,
                    f"THe consumer group <{group}> not exist",
                )
            if header.timestamp == -1:
                target = c.store.get_max_offset_in_queue(topic, qid)
            else:
                target = c.store.lookup_by_time(topic, qid, header.timestamp)
            target = max(0, target)
            if not header.is_force and target >= current:
                target = current
            table[MessageQueue(topic, c.config.broker_name, qid)] = target
        group_info = c.consumers.get_group(group)
        if group_info is None or not group_info.channels:
            return reply(
                request,
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"Consumer not online, so can not reset offset, Group: {group} Topic: {topic}"
                f" Timestamp: {header.timestamp}",
            )
        for mq, offset in table.items():
            offsets.commit(group, topic, mq.queue_id, offset)
        body = ResetOffsetBody(table).encode()
        fields = ResetOffsetRequestHeader(topic, group, header.timestamp, header.is_force)
        for member in list(group_info.channels.values()):
            notice = RemotingCommand.request(
                RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
                fields.to_ext_fields(),
                body,
                oneway=True,
            )
            try:
                member.channel.send(notice)
                log.info(
                    "[reset-offset] reset offset success. topic=%s, group=%s, clientId=%s",
                    topic,
                    group,
                    member.client_id,
                )
            except MQError as exc:
                log.warning("[reset-offset] cannot notify %s: %s", member.client_id, exc)
        return reply(request, body=body)


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    proc = GroupAdminProcessor(ctx)
    return {
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: proc.update_and_create_subscription_group,
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: proc.get_all_subscription_group_config,
        RequestCode.DELETE_SUBSCRIPTIONGROUP: proc.delete_subscription_group,
        RequestCode.GET_ALL_CONSUMER_OFFSET: proc.get_all_consumer_offset,
        RequestCode.GET_ALL_DELAY_OFFSET: proc.get_all_delay_offset,
        RequestCode.GET_CONSUME_STATS: proc.get_consume_stats,
        RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: proc.query_topic_consume_by_who,
        RequestCode.GET_CONSUMER_CONNECTION_LIST: proc.get_consumer_connection_list,
        RequestCode.GET_PRODUCER_CONNECTION_LIST: proc.get_producer_connection_list,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: proc.reset_offset,
    }

"""Consumer- and producer-facing admin requests of 4.9.8's AdminBrokerProcessor that
:mod:`.admin_group` does not cover: relays to a live consumer (GET_CONSUMER_RUNNING_INFO,
CONSUME_MESSAGE_DIRECTLY, INVOKE_BROKER_TO_GET_CONSUMER_STATUS), offset tools (CLONE_GROUP_OFFSET,
QUERY_CORRECTION_OFFSET, QUERY_CONSUME_TIME_SPAN), the producer table
(GET_ALL_PRODUCER_INFO) and statistics windows (VIEW_BROKER_STATS_DATA).

Codes and remarks are 4.9.8's. Two places differ on purpose, where 4.9.8 has a bug:
CLONE_GROUP_OFFSET without a topic clones every topic of the source group (4.9.8
clones the topic "null", i.e. nothing), and QUERY_CORRECTION_OFFSET leaves the filtered
groups' offsets in place (4.9.8 deletes them from its offset table while filtering).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from mqcore.broker.processor import reply
from mqcore.broker.stats_history import StatsHistory
from mqcore.errors import MessageIdError, MQError, MQTimeoutError, StoreError
from mqcore.message.ids import decode_offset_msg_id
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import MessageQueue, QueryConsumeTimeSpanBody, QueueTimeSpan
from mqcore.protocol.bodies.consumer_admin import (
    BrokerStatsData,
    BrokerStatsItem,
    GetConsumerStatusBody,
    ProducerInfo,
    ProducerTableInfo,
    QueryCorrectionOffsetBody,
)
from mqcore.protocol.headers import (
    CloneGroupOffsetRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    ViewBrokerStatsDataRequestHeader,
)
from mqcore.remoting import Channel, Processor
from mqcore.store.metadata.consumer_offset import TOPIC_GROUP_SEPARATOR

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext

__all__ = ["ConsumerAdminProcessor", "handlers"]

log = logging.getLogger("mq.broker.admin")

CALL_CLIENT_TIMEOUT = 10.0
"""Broker2Client.callClient's 10 s."""
CONSUMER_STATUS_TIMEOUT = 5.0
V3_0_7_SNAPSHOT = 28
V3_1_8_SNAPSHOT = 62
"""MQVersion ordinals below which 4.9.8 refuses to relay to a client."""
LONG_MAX = (1 << 63) - 1


def _java_remote_address(addr: str) -> str:
    """``InetSocketAddress.toString()`` of a peer: ``/ip:port``."""
    return "/" + addr


class ConsumerAdminProcessor:
    def __init__(
        self,
        ctx: BrokerContext,
        history: StatsHistory,
        *,
        wall_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ctx = ctx
        self.history = history
        """VIEW_BROKER_STATS_DATA's minute, hour and day windows."""
        self.wall_ms = wall_ms
        self.monotonic = monotonic

    # -- relays to a live consumer ------------------------------------------------------

    async def consume_message_directly(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        """The stored message named by ``msgId`` goes to one client, which consumes it
        and answers ConsumeMessageDirectlyResult (mqadmin queryMsgById -g -d)."""
        header = ConsumeMessageDirectlyResultRequestHeader.from_command(request)
        fields = dict(request.ext_fields)
        fields["brokerName"] = self.ctx.config.broker_name
        body = bytes(request.body)
        try:
            _ip, _port, offset = decode_offset_msg_id(header.msg_id or "")
            body = bytes(self.ctx.store.get_message(offset))
        except MessageIdError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        except StoreError:
            return reply(
                request, ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}"
            )
        forward = RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, fields, body)
        return await self._call_consumer(request, forward, header.consumer_group, header.client_id)

    async def get_consumer_running_info(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        """The client builds its ConsumerRunningInfo itself (mqadmin consumerStatus)."""
        header = GetConsumerRunningInfoRequestHeader.from_command(request)
        forward = RemotingCommand.request(
            RequestCode.GET_CONSUMER_RUNNING_INFO, dict(request.ext_fields), bytes(request.body)
        )
        return await self._call_consumer(request, forward, header.consumer_group, header.client_id)

    async def _call_consumer(
        self,
        request: RemotingCommand,
        forward: RemotingCommand,
        group: str,
        client_id: str | None,
    ) -> RemotingCommand:
        """``callConsumer``: the client's own answer, relayed as it is."""
        member = self.ctx.consumers.find_channel(group, client_id or "")
        if member is None:
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{group}> <{client_id}> not online",
            )
        if member.version < V3_1_8_SNAPSHOT:
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{group}> Version <{member.version}> too low to finish,"
                " please upgrade it to V3_1_8_SNAPSHOT",
            )
        try:
            answer = await member.channel.invoke(forward, CALL_CLIENT_TIMEOUT)
        except MQTimeoutError as exc:
            return reply(
                request,
                ResponseCode.CONSUME_MSG_TIMEOUT,
                f"consumer <{group}> <{client_id}> Timeout: {exc}",
            )
        except MQError as exc:
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"invoke consumer <{group}> <{client_id}> Exception: {exc}",
            )
        return RemotingCommand.response_to(
            request, answer.code, answer.remark, dict(answer.ext_fields), answer.body
        )

    async def get_consumer_status(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        """``Broker2Client.getConsumeStatus``: GET_CONSUMER_STATUS_FROM_CLIENT to every
        member (or the one ``clientAddr`` names), their offsets by client id."""
        header = GetConsumerStatusRequestHeader.from_command(request)
        group_info = self.ctx.consumers.get_group(header.group)
        members = list(group_info.channels.values()) if group_info is not None else []
        if not members:
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"No Any Consumer online in the consumer group: [{header.group}]",
            )
        wanted = (header.client_addr or "").strip()
        fields = GetConsumerStatusRequestHeader(header.topic, header.group).to_ext_fields()
        out = GetConsumerStatusBody()
        for member in members:
            if member.version < V3_0_7_SNAPSHOT:
                return reply(
                    request,
                    ResponseCode.SYSTEM_ERROR,
                    f"the client does not support this feature. version={member.version}",
                )
            if wanted and wanted != member.client_id:
                continue
            ask = RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, fields)
            try:
                answer = await member.channel.invoke(ask, CONSUMER_STATUS_TIMEOUT)
                if answer.code == ResponseCode.SUCCESS and answer.body:
                    table = GetConsumerStatusBody.decode(answer.body).message_queue_table
                    out.consumer_table[member.client_id] = table
            except MQError as exc:  # one silent client must not spoil the others
                log.error(
                    "[get-consumer-status] topic=%s group=%s error=%s",
                    header.topic,
                    header.group,
                    exc,
                )
            if wanted:
                break
        return reply(request, body=out.encode())

    # -- offset tools -------------------------------------------------------------------

    def clone_group_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = CloneGroupOffsetRequestHeader.from_command(request)
        src, dest = header.src_group, header.dest_group
        if header.topic and header.topic.strip():
            topics = {header.topic}
        else:
            topics = self.ctx.offsets.topics_by_group(src)
        group_info = self.ctx.consumers.get_group(src)
        subscribed = group_info.subscriptions if group_info is not None else {}
        for topic in sorted(topics):
            if self.ctx.topics.select(topic) is None:
                log.warning("[cloneGroupOffset], topic config not exist, %s", topic)
                continue
            if not header.offline and subscribed and topic not in subscribed:
                log.warning(
                    "[cloneGroupOffset], the consumer group[%s], topic[%s] not exist", src, topic
                )
                continue
            source = self.ctx.offsets.query_all(src, topic)
            if source:  # ``cloneOffset``: the destination's table becomes a copy
                self.ctx.offsets.table[f"{topic}{TOPIC_GROUP_SEPARATOR}{dest}"] = source
        return reply(request)

    def query_correction_offset(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        """Per queue, the smallest offset any group (minus ``filterGroups``) committed
        that is still readable; Long.MAX_VALUE where ``compareGroup`` is behind it."""
        header = QueryCorrectionOffsetHeader.from_command(request)
        topic = header.topic
        excluded = {g for g in (header.filter_groups or "").split(",") if g}
        correction: dict[int, int] = {}
        for group in self.ctx.offsets.groups_by_topic(topic) - excluded:
            for qid, offset in self.ctx.offsets.query_all(group, topic).items():
                if offset >= self.ctx.store.get_min_offset_in_queue(topic, qid):
                    correction[qid] = min(offset, correction.get(qid, LONG_MAX))
        for qid, offset in self.ctx.offsets.query_all(header.compare_group, topic).items():
            if qid in correction:
                correction[qid] = LONG_MAX if correction[qid] > offset else correction[qid]
        return reply(request, body=QueryCorrectionOffsetBody(correction).encode())

    def query_consume_time_span(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        header = QueryConsumeTimeSpanRequestHeader.from_command(request)
        topic, store = header.topic, self.ctx.store
        config = self.ctx.topics.select(topic)
        if config is None:
            return reply(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        spans: list[QueueTimeSpan] = []
        for qid in range(config.write_queue_nums):
            min_time = store.get_earliest_message_time(topic, qid)
            max_offset = store.get_max_offset_in_queue(topic, qid)
            committed = self.ctx.offsets.query(header.group, topic, qid)
            consumer_offset = committed if committed is not None else -1
            if consumer_offset > 0:
                consume_time = store.get_message_store_timestamp(topic, qid, consumer_offset - 1)
            else:
                consume_time = min_time
            delay = 0
            if consumer_offset < max_offset:
                next_time = store.get_message_store_timestamp(topic, qid, consumer_offset)
                delay = self.wall_ms() - next_time
            spans.append(
                QueueTimeSpan(
                    MessageQueue(topic, self.ctx.config.broker_name, qid),
                    min_time,
                    store.get_message_store_timestamp(topic, qid, max_offset - 1),
                    consume_time,
                    delay,
                )
            )
        return reply(request, body=QueryConsumeTimeSpanBody(spans).encode())

    # -- producers and statistics -------------------------------------------------------

    def get_all_producer_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        now_ms, now = self.wall_ms(), self.monotonic()
        table = ProducerTableInfo()
        for group, channels in sorted(self.ctx.producers.groups.items()):
            infos = [
                ProducerInfo(
                    info.client_id,
                    _java_remote_address(info.channel.remote_address),
                    info.language,
                    info.version,
                    now_ms - int((now - info.last_update) * 1000),
                )
                for info in list(channels.values())
            ]
            if infos:
                table.data[group] = infos
        return reply(request, body=table.encode())

    def view_broker_stats_data(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = ViewBrokerStatsDataRequestHeader.from_command(request)
        found = self.history.lookup(header.stats_name, header.stats_key)
        if found is None:
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The stats <{header.stats_name}> <{header.stats_key}> not exist",
            )
        minute, hour, day = (BrokerStatsItem(w.sum, w.tps, w.avgpt) for w in found)
        return reply(request, body=BrokerStatsData(minute, hour, day).encode())


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    proc = ConsumerAdminProcessor(ctx, ctx.stats_history)
    return {
        RequestCode.CONSUME_MESSAGE_DIRECTLY: proc.consume_message_directly,
        RequestCode.GET_CONSUMER_RUNNING_INFO: proc.get_consumer_running_info,
        RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: proc.get_consumer_status,
        RequestCode.CLONE_GROUP_OFFSET: proc.clone_group_offset,
        RequestCode.QUERY_CORRECTION_OFFSET: proc.query_correction_offset,
        RequestCode.QUERY_CONSUME_TIME_SPAN: proc.query_consume_time_span,
        RequestCode.GET_ALL_PRODUCER_INFO: proc.get_all_producer_info,
        RequestCode.VIEW_BROKER_STATS_DATA: proc.view_broker_stats_data,
    }

"""Store-level admin requests (RocketMQ's AdminBrokerProcessor, store half): the
housekeeping mqadmin triggers remotely (cleanExpiredCQ, cleanUnusedTopic,
deleteExpiredCommitLog), raw consume-queue units (queryCq), every group's consume
stats in one answer (brokerConsumeStats) and a half message put back for checking
(RESUME_CHECK_HALF_MESSAGE).

Each answer is 4.9.8's: same response codes, remarks and body shapes, including where
4.9.8 answers SUCCESS with only a remark (an index past a queue's end).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from mqcore.broker.processor import reply
from mqcore.broker.processor.admin_group import add_queue_offsets
from mqcore.common import fastjson
from mqcore.errors import MQError
from mqcore.message.const import PROPERTY_REAL_TOPIC, PROPERTY_TRANSACTION_CHECK_TIMES
from mqcore.message.ids import decode_offset_msg_id
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import ConsumeStats
from mqcore.protocol.bodies.store_admin import (
    ConsumeQueueData,
    ConsumeStatsList,
    QueryConsumeQueueResponseBody,
)
from mqcore.protocol.headers import QueryConsumeQueueRequestHeader
from mqcore.protocol.headers.store_admin import (
    GetConsumeStatsInBrokerHeader,
    ResumeCheckHalfMessageRequestHeader,
)
from mqcore.remoting import Channel, Processor
from mqcore.store.consume_queue import CQ_STORE_UNIT_SIZE, ENTRY

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext

__all__ = ["StoreAdminProcessor", "handlers"]

log = logging.getLogger("mq.broker.admin")
T = TypeVar("T")


class StoreAdminProcessor:
    """Handlers of CLEAN_EXPIRED_CONSUMEQUEUE, CLEAN_UNUSED_TOPIC,
    DELETE_EXPIRED_COMMITLOG, QUERY_CONSUME_QUEUE and GET_BROKER_CONSUME_STATS."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def _topic_in_use(self, topic: str) -> bool:
        """A topic the broker has a config for (its queues are not unused)."""
        return topic in self.ctx.topic_configs.table

    # -- housekeeping -------------------------------------------------------------------

    async def clean_expired_consume_queue(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        log.warning("invoke cleanExpiredConsumeQueue start (from %s)", channel.remote_address)
        removed = await _off_loop(self.ctx.store.clean_expired_consume_queues)
        log.warning("invoke cleanExpiredConsumeQueue end: %d queues destroyed", len(removed))
        return reply(request)

    async def clean_unused_topic(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        log.warning("invoke cleanUnusedTopic start (from %s)", channel.remote_address)
        removed = await _off_loop(lambda: self.ctx.store.clean_unused_topics(self._topic_in_use))
        log.warning("invoke cleanUnusedTopic end: %d queues destroyed", len(removed))
        return reply(request)

    async def delete_expired_commit_log(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        """``executeDeleteFilesManually``: one cleanup pass now, as if it were deleteWhen
        (files still have to be older than fileReservedTime, unless the disk is full)."""
        log.warning("invoke deleteExpiredCommitLog start (from %s)", channel.remote_address)
        report = await _off_loop(lambda: self.ctx.store.clean_expired(manual=True))
        log.warning(
            "invoke deleteExpiredCommitLog end: %d commit log files deleted",
            report.commit_log_files_deleted,
        )
        return reply(request)

    def resume_check_half_message(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        """The half message named by ``msgId`` is stored again with its check count at
        0, so the transaction check service asks its producer again from the start."""
        header = ResumeCheckHalfMessageRequestHeader.from_command(request)
        try:
            _ip, _port, offset = decode_offset_msg_id(header.msg_id or "")
            msg = self.ctx.store.look_message(offset)
            msg.properties[PROPERTY_TRANSACTION_CHECK_TIMES] = "0"
            result = self.ctx.appender.put((msg,))
        except (MQError, ValueError):
            log.error("Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC.")
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC.",
            )
        if not result.ok:
            log.error("Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.",
            )
        log.info(
            "Put message back to RMQ_SYS_TRANS_HALF_TOPIC. real topic=%s",
            msg.properties.get(PROPERTY_REAL_TOPIC),
        )
        return reply(request)

    # -- consume queue units ------------------------------------------------------------

    def query_consume_queue(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = QueryConsumeQueueRequestHeader.from_command(request)
        topic, qid = header.topic, header.queue_id
        cq = self.ctx.store.consume_queue(topic, qid)
        if cq is None:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"{qid}@{topic} is not exist!")
        body = QueryConsumeQueueResponseBody(cq.max_offset, cq.min_offset)
        if header.consumer_group is not None:
            sub = self.ctx.consumers.find_subscription(header.consumer_group, topic)
            body.subscription_data = sub
            if sub is None:
                body.filter_data = f"{header.consumer_group}@{topic} is not online!"
            else:
                data = self.ctx.filters.get(topic, header.consumer_group)
                body.filter_data = "null" if data is None else fastjson.dumps_pretty(data.to_json())
        # getIndexBuffer: from ``index`` to the end of what is written in its file
        view = cq.entries_view(header.index) if header.index >= cq.min_offset else None
        if view is None:
            return reply(request, remark=f"Index {header.index} of {qid}@{topic} is not exist!")
        limit = min(len(view), max(0, header.count) * CQ_STORE_UNIT_SIZE)
        limit -= limit % CQ_STORE_UNIT_SIZE
        body.queue_data = [
            ConsumeQueueData(phy, size, tags) for phy, size, tags in ENTRY.iter_unpack(view[:limit])
        ]
        return reply(request, body=body.encode())

    # -- consume stats of every group ---------------------------------------------------

    def get_broker_consume_stats(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        """``fetchAllConsumeStatsInBroker``: for every subscription group, a ConsumeStats
        per topic it has offsets for (write queues), skipping topics an online group no
        longer subscribes to, and with ``isOrder`` topics that are not ordered."""
        header = GetConsumeStatsInBrokerHeader.from_command(request)
        out = ConsumeStatsList(self.ctx.broker_addr())
        for group in sorted(self.ctx.groups.table):
            per_topic: list[ConsumeStats] = []
            group_info = self.ctx.consumers.get_group(group)
            subscribed = group_info.subscriptions if group_info is not None else {}
            for topic in sorted(self.ctx.offsets.topics_by_group(group)):
                config = self.ctx.topics.select(topic)
                if config is None:
                    log.warning("consumeStats, topic config not exist, %s", topic)
                    continue
                if header.is_order and not config.order:
                    continue
                if subscribed and topic not in subscribed:
                    continue
                stats = self._consume_stats(group, topic, config.write_queue_nums)
                out.total_diff += sum(
                    w.broker_offset - w.consumer_offset for w in stats.offset_table.values()
                )
                per_topic.append(stats)
            out.consume_stats_list.append({group: per_topic})
        return reply(request, body=out.encode())

    def _consume_stats(self, group: str, topic: str, queues: int) -> ConsumeStats:
        stats = ConsumeStats()
        add_queue_offsets(stats, self.ctx, group, topic, queues)
        stats.consume_tps = self.ctx.stats.group_get_tps(group, topic)
        return stats


async def _off_loop(fn: Callable[[], T]) -> T:
    """File deletion off the event loop (the store takes its own locks)."""
    return await asyncio.get_running_loop().run_in_executor(None, fn)


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    proc = StoreAdminProcessor(ctx)
    return {
        RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: proc.clean_expired_consume_queue,
        RequestCode.CLEAN_UNUSED_TOPIC: proc.clean_unused_topic,
        RequestCode.DELETE_EXPIRED_COMMITLOG: proc.delete_expired_commit_log,
        RequestCode.QUERY_CONSUME_QUEUE: proc.query_consume_queue,
        RequestCode.GET_BROKER_CONSUME_STATS: proc.get_broker_consume_stats,
        RequestCode.RESUME_CHECK_HALF_MESSAGE: proc.resume_check_half_message,
    }

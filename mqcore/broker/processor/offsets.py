"""Consumer offsets and queue lookups: spec §8.5, §8.6, §8.10.

QUERY_CONSUMER_OFFSET (14) keeps 4.9.8's trap: with no stored offset it answers
SUCCESS/0 when the queue starts at 0 and its first message is still "in memory", else
QUERY_NOT_FOUND (22), which Java clients read as "no offset yet".
UPDATE_CONSUMER_OFFSET (15) (usually oneway) stores into ``consumerOffset.json``'s
table; the controller persists it every ``flushConsumerOffsetInterval`` and at stop.
Unlike 4.9.8, which stores whatever it is sent, the queue must be one of the topic's and
the offset not negative: anything else would sit in the table (and in every slave's copy)
and be handed back to the group as its position.
GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), SEARCH_OFFSET_BY_TIMESTAMP (29) and
GET_EARLIEST_MSG_STORETIME (32) read the consume queues.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from mqcore.remoting import Channel, Processor

from . import reply

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext
    from mqcore.broker.topics import TopicService
    from mqcore.store.message_store import MessageStore
    from mqcore.store.metadata import ConsumerOffsetManager

__all__ = ["OffsetProcessor", "handlers"]

log = logging.getLogger("mq.broker.offsets")


class OffsetProcessor:
    def __init__(
        self, store: MessageStore, offsets: ConsumerOffsetManager, topics: TopicService
    ) -> None:
        self.store = store
        self.offsets = offsets
        self.topics = topics

    def query_consumer_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = QueryConsumerOffsetRequestHeader.from_command(request)
        offset = self.offsets.query(h.consumer_group, h.topic, h.queue_id)
        if offset is not None and offset >= 0:
            return reply(request, header=QueryConsumerOffsetResponseHeader(offset))
        from_start = self.store.get_min_offset_in_queue(h.topic, h.queue_id) <= 0
        if from_start and not self.store.check_in_disk_by_consume_offset(h.topic, h.queue_id, 0):
            return reply(request, header=QueryConsumerOffsetResponseHeader(0))
        return reply(
            request,
            ResponseCode.QUERY_NOT_FOUND,
            "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
        )

    def update_consumer_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = UpdateConsumerOffsetRequestHeader.from_command(request)
        refusal = self._check_offset_update(h)
        if refusal is not None:
            code, remark = refusal
            log.info("offset update from %s refused: %s", channel.remote_address, remark)
            return reply(request, code, remark)
        self.offsets.commit(h.consumer_group, h.topic, h.queue_id, h.commit_offset)
        return reply(request)

    def _check_offset_update(self, h: UpdateConsumerOffsetRequestHeader) -> tuple[int, str] | None:
        """(code, remark) when the update names no queue of a known topic or a negative
        offset; None when it may be stored."""
        config = self.topics.select(h.topic)
        if config is None:
            return ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist, offset not stored"
        queues = max(config.read_queue_nums, config.write_queue_nums)
        if not 0 <= h.queue_id < queues:
            return ResponseCode.SYSTEM_ERROR, (
                f"queueId[{h.queue_id}] is illegal, topic[{h.topic}] has {queues} queues; "
                "offset not stored"
            )
        if h.commit_offset < 0:
            return ResponseCode.SYSTEM_ERROR, (
                f"commitOffset[{h.commit_offset}] is illegal, it must be >= 0; offset not stored"
            )
        return None

    def get_max_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = GetMaxOffsetRequestHeader.from_command(request)
        offset = self.store.get_max_offset_in_queue(h.topic, h.queue_id)
        return reply(request, header=GetMaxOffsetResponseHeader(offset))

    def get_min_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = GetMinOffsetRequestHeader.from_command(request)
        offset = self.store.get_min_offset_in_queue(h.topic, h.queue_id)
        return reply(request, header=GetMinOffsetResponseHeader(offset))

    def search_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = SearchOffsetRequestHeader.from_command(request)
        return reply(
            request,
            header=SearchOffsetResponseHeader(
                self.offset_by_time(h.topic, h.queue_id, h.timestamp)
            ),
        )

    def offset_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """The queue offset stored exactly at ``timestamp``, else the closer neighbour
        (the left one on a tie); first/last message when all are later/earlier; 0 when
        the queue is empty (``ConsumeQueue.getOffsetInQueueByTime``)."""
        store = self.store
        lo = store.get_min_offset_in_queue(topic, queue_id)
        hi = store.get_max_offset_in_queue(topic, queue_id)
        if hi <= lo:
            return 0
        right = store.lookup_by_time(topic, queue_id, timestamp)
        if right >= hi:
            return hi - 1
        if right <= lo:
            return lo
        right_ts = store.get_message_store_timestamp(topic, queue_id, right)
        if right_ts == timestamp:
            return right
        left_ts = store.get_message_store_timestamp(topic, queue_id, right - 1)
        if left_ts < 0:
            return right
        return right if abs(timestamp - left_ts) > abs(timestamp - right_ts) else right - 1

    def get_earliest_msg_storetime(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        h = GetEarliestMsgStoretimeRequestHeader.from_command(request)
        ts = self.store.get_earliest_message_time(h.topic, h.queue_id)
        return reply(request, header=GetEarliestMsgStoretimeResponseHeader(ts))


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    p = OffsetProcessor(ctx.store, ctx.offsets, ctx.topics)
    return {
        RequestCode.QUERY_CONSUMER_OFFSET: p.query_consumer_offset,
        RequestCode.UPDATE_CONSUMER_OFFSET: p.update_consumer_offset,
        RequestCode.GET_MAX_OFFSET: p.get_max_offset,
        RequestCode.GET_MIN_OFFSET: p.get_min_offset,
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: p.search_offset,
        RequestCode.GET_EARLIEST_MSG_STORETIME: p.get_earliest_msg_storetime,
    }

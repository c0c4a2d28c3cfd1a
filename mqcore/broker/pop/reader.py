"""`PopReader`: what one POP takes from the store (5.x's popMsgFromQueue/popMsgFromTopic).

For each queue it reads from the group's pop offset (the consumer offset table; a group
without one starts as ``initMode`` says), writes one checkpoint for what it found to a
revive queue, and only then moves the pop offset past it: a message is handed out only
once a checkpoint will bring it back. It reads the group's pop retry topic(s) first on
``popFromRetryProbability`` percent of pops and otherwise after the topic, if room is
left. Everything here runs on the event loop without awaiting, so two pops of one queue
never interleave (5.x needs its QueueLockManager for that).

Messages from a retry topic are answered under the original topic with their receipt in
``POP_CK`` (5.x's default), unless ``popResponseReturnActualRetryTopic``.

A FIFO (``order``) pop writes no checkpoint and reads no retry topic: it skips a queue
whose last FIFO pop still has a message in flight, and records what it hands out in the
order info (:mod:`mqcore.broker.pop.order_info`); the group's offset stays at the first
unacknowledged message, so what is not acknowledged comes again, in order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mqcore.broker.pop.inflight import PopInflightCounter
from mqcore.broker.pop.keys import RETRY_QUEUE_NUM
from mqcore.errors import CorruptRecordError
from mqcore.message.const import RETRY_GROUP_TOPIC_PREFIX
from mqcore.message.record import decode_record, encode_record
from mqcore.protocol.bodies.pop import PopCheckPoint
from mqcore.protocol.extra_info import (
    POP_ORDER_REVIVE_QUEUE,
    PROPERTY_POP_CK,
    ExtraInfo,
    build_msg_offset_info,
    build_start_offset_info,
    pop_retry_topic_v1,
    pop_retry_topic_v2,
    retry_mark,
)
from mqcore.protocol.headers.pop import ConsumeInitMode
from mqcore.store.metadata import PERM_READ, PERM_WRITE
from mqcore.store.results import GetStatus, PutResult, RecordFilter, TagFilter

if TYPE_CHECKING:
    from collections.abc import Callable

    from mqcore.broker.config import BrokerConfig
    from mqcore.broker.pop.buffer_merge import PopBufferMergeService
    from mqcore.broker.pop.order_info import ConsumerOrderInfoManager
    from mqcore.broker.pop.revive_log import ReviveLog
    from mqcore.broker.topics import TopicService
    from mqcore.store.message_store import MessageStore
    from mqcore.store.metadata import ConsumerOffsetManager

__all__ = ["PopReader", "PopRequest", "Popped"]

_RESEEK = (GetStatus.OFFSET_TOO_SMALL, GetStatus.OFFSET_OVERFLOW_BADLY, GetStatus.OFFSET_FOUND_NULL)
_SKIPPED = (
    GetStatus.NO_MATCHED_MESSAGE,
    GetStatus.OFFSET_FOUND_NULL,
    GetStatus.MESSAGE_WAS_REMOVING,
)


@dataclass(frozen=True, slots=True)
class PopRequest:
    """What a POP asks, whichever access point it came through."""

    group: str
    topic: str
    queue_id: int
    """-1: every readable queue of the topic."""
    max_msg_nums: int
    invisible_time: int
    init_mode: int = ConsumeInitMode.MAX
    tag_filter: TagFilter | None = None
    record_filter: RecordFilter | None = None
    order: bool = False
    attempt_id: str | None = None


@dataclass(slots=True)
class Popped:
    """One pop's result: the records (as stored, or rewritten retries), and the texts a
    client builds each receipt from."""

    pop_time: int
    invisible_time: int
    revive_qid: int
    buffers: list[bytes | memoryview] = field(default_factory=list)
    rest_num: int = 0
    start_offsets: list[tuple[str, int, int]] = field(default_factory=list)
    msg_offsets: list[tuple[str, int, list[int]]] = field(default_factory=list)
    last_put: PutResult | None = None
    """The last checkpoint written: the answer waits until it is durable."""
    order_counts: list[str] = field(default_factory=list)
    """FIFO: ``orderCountInfo`` entries (how often each message was handed out before)."""

    @property
    def start_offset_info(self) -> str:
        return build_start_offset_info(self.start_offsets)

    @property
    def msg_offset_info(self) -> str:
        return build_msg_offset_info(self.msg_offsets)

    @property
    def order_count_info(self) -> str | None:
        return ";".join(self.order_counts) if self.order_counts else None


class PopReader:
    def __init__(
        self,
        config: BrokerConfig,
        store: MessageStore,
        offsets: ConsumerOffsetManager,
        topics: TopicService,
        revive_log: ReviveLog,
        order_info: ConsumerOrderInfoManager,
        order_changed: Callable[[], None],
        buffer: PopBufferMergeService,
        inflight: PopInflightCounter | None = None,
    ) -> None:
        self._config = config
        self._store = store
        self._offsets = offsets
        self._topics = topics
        self._log = revive_log
        self._order_info = order_info
        self._order_changed = order_changed
        self._buffer = buffer
        self._inflight = inflight if inflight is not None else PopInflightCounter()
        self._rng = random.Random()

    def retry_topics(self, topic: str, group: str) -> list[str]:
        """The pop retry topics a pop of ``topic`` reads (v2 and, while
        ``retrieveMessageFromPopRetryTopicV1``, v1 too)."""
        if not self._config.enable_retry_topic_v2:
            return [pop_retry_topic_v1(topic, group)]
        topics = [pop_retry_topic_v2(topic, group)]
        if self._config.retrieve_message_from_pop_retry_topic_v1:
            topics.append(pop_retry_topic_v1(topic, group))
        return topics

    # -- offsets -----------------------------------------------------------------------------
    def pop_offset(
        self, group: str, topic: str, queue_id: int, init_mode: int, *, init: bool = True
    ) -> int:
        """The group's next offset in the queue, committing the initial one if it has
        none and ``init`` (5.x's getPopOffset/getInitOffset)."""
        offset = self._offsets.query(group, topic, queue_id)
        if offset is not None and offset >= 0:
            return max(offset, self._buffer.latest_offset(topic, group, queue_id))
        store = self._store
        if init_mode == ConsumeInitMode.MIN or topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            offset = store.get_min_offset_in_queue(topic, queue_id)
        elif (
            store.get_min_offset_in_queue(topic, queue_id) <= 0
            and store.get_max_offset_in_queue(topic, queue_id) > 0
            and not store.check_in_disk_by_consume_offset(topic, queue_id, 0)
        ):
            offset = 0  # initPopOffsetByCheckMsgInMem: a young queue is read whole
        else:
            offset = max(0, store.get_max_offset_in_queue(topic, queue_id) - 1)
        if init:
            self._offsets.commit(group, topic, queue_id, offset)
        return offset

    # -- popping -----------------------------------------------------------------------------
    def pop(self, request: PopRequest, pop_time: int, queue_nums: int) -> Popped:
        """Take up to ``max_msg_nums`` messages; ``queue_nums`` is the topic's readable
        queue count."""
        rand = self._rng.randrange(100)
        if request.order:
            popped = Popped(pop_time, request.invisible_time, POP_ORDER_REVIVE_QUEUE)
            queues = [request.queue_id] if request.queue_id >= 0 else range(queue_nums)
            for i in queues:
                qid = i if request.queue_id >= 0 else (rand + i) % queue_nums
                self._from_queue_in_order(request, qid, popped)
            return popped
        popped = Popped(pop_time, request.invisible_time, self._log.next_revive_qid())
        retry_first = rand < self._config.pop_from_retry_probability
        retries = self.retry_topics(request.topic, request.group)
        if retry_first:
            for topic in retries:
                self._from_topic(request, topic, popped, rand, retry=True)
        if request.queue_id < 0:
            for i in range(queue_nums):
                self._from_queue(request, request.topic, (rand + i) % queue_nums, popped, False)
        else:
            self._from_queue(request, request.topic, request.queue_id, popped, False)
        if not retry_first:
            for topic in retries:
                self._from_topic(request, topic, popped, rand, retry=True)
        return popped

    def _from_topic(
        self, request: PopRequest, topic: str, popped: Popped, rand: int, *, retry: bool
    ) -> None:
        config = self._topics.select(topic)
        if config is None:
            if not self._store.get_max_offset_in_queue(topic, 0):
                return
            # Revived messages whose topic's config a crash lost before it was written.
            config = self._topics.create_in_send_back(
                topic, RETRY_QUEUE_NUM, PERM_READ | PERM_WRITE
            )
        n = config.read_queue_nums
        for i in range(n):
            self._from_queue(request, topic, (rand + i) % n, popped, retry)

    def _from_queue(
        self, request: PopRequest, topic: str, queue_id: int, popped: Popped, retry: bool
    ) -> None:
        store = self._store
        group = request.group
        offset = self.pop_offset(group, topic, queue_id, request.init_mode)
        room = request.max_msg_nums - len(popped.buffers)
        if room <= 0:
            popped.rest_num += max(0, store.get_max_offset_in_queue(topic, queue_id) - offset)
            return
        tags, records = (None, None) if retry else (request.tag_filter, request.record_filter)
        result = store.get_messages(topic, queue_id, offset, room, None, tags, records)
        if result.status in _RESEEK and result.next_begin_offset != offset:
            offset = result.next_begin_offset  # the store moved on: so does the group
            self._offsets.commit(group, topic, queue_id, offset)
            result = store.get_messages(topic, queue_id, offset, room, None, tags, records)
        if result.buffers:
            ck = PopCheckPoint(
                start_offset=offset,
                pop_time=popped.pop_time,
                invisible_time=request.invisible_time,
                num=len(result.buffers),
                queue_id=queue_id,
                topic=topic,
                cid=group,
                broker_name=self._config.broker_name,
                queue_offset_diff=[o - offset for o in result.queue_offsets],
            )
            if self._buffer.enabled:  # the offset moves once the checkpoint is settled
                put = self._buffer.add_ck(ck, popped.revive_qid, result.next_begin_offset)
            else:
                put = self._log.put_ck(ck, popped.revive_qid)
            if put is not None and not put.ok:  # nothing handed out without a checkpoint
                popped.rest_num += max(0, result.max_offset - offset)
                return
            if put is not None:
                popped.last_put = put
            if not self._buffer.enabled:
                self._offsets.commit(group, topic, queue_id, result.next_begin_offset)
            self._inflight.popped(
                topic,
                group,
                queue_id,
                offset,
                popped.pop_time,
                list(result.queue_offsets),
                popped.pop_time + request.invisible_time,
            )
            popped.start_offsets.append((topic, queue_id, offset))
            popped.msg_offsets.append((topic, queue_id, list(result.queue_offsets)))
            if retry and not self._config.pop_response_return_actual_retry_topic:
                popped.buffers.extend(
                    self._as_original(request, r, offset, popped) for r in result.buffers
                )
            else:
                popped.buffers.extend(result.buffers)
        elif result.status in _SKIPPED and result.next_begin_offset > offset:
            self._buffer.add_offset(topic, group, queue_id, result.next_begin_offset)
        popped.rest_num += max(0, result.max_offset - max(offset, result.next_begin_offset))

    def _from_queue_in_order(self, request: PopRequest, queue_id: int, popped: Popped) -> None:
        store, topic, group = self._store, request.topic, request.group
        offset = self.pop_offset(group, topic, queue_id, request.init_mode)
        room = request.max_msg_nums - len(popped.buffers)
        blocked = self._order_info.check_block(
            request.attempt_id, topic, group, queue_id, request.invisible_time
        )
        if room <= 0 or blocked:
            return
        tags, records = request.tag_filter, request.record_filter
        result = store.get_messages(topic, queue_id, offset, room, None, tags, records)
        if result.status in _RESEEK and result.next_begin_offset != offset:
            offset = result.next_begin_offset
            self._offsets.commit(group, topic, queue_id, offset)
            result = store.get_messages(topic, queue_id, offset, room, None, tags, records)
        if result.buffers:
            counts, least = self._order_info.update(
                request.attempt_id,
                topic,
                group,
                queue_id,
                popped.pop_time,
                request.invisible_time,
                list(result.queue_offsets),
            )
            self._order_changed()
            mark = retry_mark(topic)
            popped.order_counts += [f"{mark} qo{queue_id}%{o} {n}" for o, n in counts.items()]
            popped.order_counts.append(f"{mark} {queue_id} {least}")
            # The offset stays at the first message until it is acknowledged (5.x commits
            # the pop's start offset).
            self._offsets.commit(group, topic, queue_id, offset)
            # What was in flight is handed out again now (or was acknowledged).
            self._inflight.clear_queue(topic, group, queue_id)
            self._inflight.popped(
                topic,
                group,
                queue_id,
                offset,
                popped.pop_time,
                list(result.queue_offsets),
                popped.pop_time + request.invisible_time,
            )
            popped.start_offsets.append((topic, queue_id, offset))
            popped.msg_offsets.append((topic, queue_id, list(result.queue_offsets)))
            popped.buffers.extend(result.buffers)
        elif result.status in _SKIPPED and result.next_begin_offset > offset:
            self._offsets.commit(group, topic, queue_id, result.next_begin_offset)
        popped.rest_num += max(0, result.max_offset - max(offset, result.next_begin_offset))

    def _as_original(
        self, request: PopRequest, record: memoryview, ck_offset: int, popped: Popped
    ) -> bytes | memoryview:
        """A retry record rewritten under the original topic, its receipt in ``POP_CK``."""
        try:
            msg = decode_record(record, 0, strict=True, decompress=False)
        except CorruptRecordError:
            return record
        receipt = ExtraInfo(
            ck_queue_offset=ck_offset,
            pop_time=popped.pop_time,
            invisible_time=popped.invisible_time,
            revive_qid=popped.revive_qid,
            retry=retry_mark(msg.topic),
            broker_name=self._config.broker_name,
            queue_id=msg.queue_id,
            queue_offset=msg.queue_offset,
        )
        props = dict(msg.properties)
        props.setdefault(PROPERTY_POP_CK, receipt.encode())
        return bytes(
            encode_record(
                topic=request.topic,
                body=msg.body,
                properties=props,
                queue_id=msg.queue_id,
                flag=msg.flag,
                sys_flag=msg.sys_flag,
                born_timestamp=msg.born_timestamp,
                born_host=msg.born_host,
                store_host=msg.store_host,
                store_timestamp=msg.store_timestamp,
                queue_offset=msg.queue_offset,
                physical_offset=msg.commit_log_offset,
                reconsume_times=msg.reconsume_times,
                prepared_transaction_offset=msg.prepared_transaction_offset,
            )
        )

    # -- looking -----------------------------------------------------------------------------
    def peek(self, request: PopRequest, queue_nums: int) -> tuple[list[memoryview], int]:
        """Records from the group's pop offsets, taking nothing (PEEK_MESSAGE)."""
        queues = (
            [request.queue_id]
            if request.queue_id >= 0
            else [(self._rng.randrange(queue_nums) + i) % queue_nums for i in range(queue_nums)]
        )
        found: list[memoryview] = []
        rest = 0
        for qid in queues:
            offset = self.pop_offset(
                request.group, request.topic, qid, request.init_mode, init=False
            )
            room = request.max_msg_nums - len(found)
            result = self._store.get_messages(
                request.topic, qid, offset, max(1, room), None, request.tag_filter
            )
            if room > 0:
                found.extend(result.buffers)
            rest += max(0, result.max_offset - offset - (len(result.buffers) if room > 0 else 0))
        return found, rest

    def has_message(self, group: str, topic: str, queue_id: int, queue_nums: int) -> bool:
        """Whether a pop of ``topic`` would find anything past the group's offsets (the
        topic's queues, or one, and its retry topics), without reading records."""
        queues = [(topic, q) for q in (range(queue_nums) if queue_id < 0 else [queue_id])]
        for retry in self.retry_topics(topic, group):
            config = self._topics.select(retry)
            if config is not None:
                queues.extend((retry, q) for q in range(config.read_queue_nums))
        for t, q in queues:
            if self._store.get_max_offset_in_queue(t, q) > self.pop_offset(
                group, t, q, ConsumeInitMode.MAX, init=False
            ):
                return True
        return False

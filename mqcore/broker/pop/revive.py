"""`PopReviveService`: reads the revive topic, matches acks to checkpoints, and puts the
messages nobody acknowledged in time back for their group (RocketMQ 5's PopReviveService).

Each revive queue is read in order from the revive group's offset in the consumer offset
table (``CID_RMQ_SYS_REVIVE_GROUP``; the stored value is the last record handled, as in
5.x). A checkpoint waits in memory until its revive time; each ack read sets its bit;
a checkpoint whose bits are all set is done. A due checkpoint's unacknowledged messages
are re-put to the group's pop retry topic (``%RETRY%{group}_{topic}``, or the ``+`` form
with ``enableRetryTopicV2``; a retry message stays in its retry topic) on queue 0 with
``reconsumeTimes + 1`` and ``1ST_POP_TIME`` kept, or to ``%DLQ%{group}`` once reconsumed
the group's ``retryMaxTimes`` (5.x leaves this to the client or proxy; here remoting POP
consumers get it too).

5.x holds checkpoints and acks back in its timer wheel until they are due, and reads the
revive topic in deliver order; mq has no timer wheel yet, so its records are readable at
once and the waiting happens here. The committed revive offset never passes a checkpoint
still waiting: after a restart or a kill -9 the records from there on are read again and
the same state is rebuilt. That re-read also raises each queue's pop offset past every
checkpoint it finds (:meth:`recover`), so a consumer offset persisted before a crash never
hands out again what a checkpoint already covers. What can repeat is what 5.x repeats: a
checkpoint revived shortly before a crash is revived again (its messages were not
acknowledged).
"""

from __future__ import annotations

import heapq
import logging
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mqcore.broker.pop.inflight import PopInflightCounter
from mqcore.broker.pop.keys import ACK_TAG, BATCH_ACK_TAG, CK_TAG, RETRY_QUEUE_NUM, REVIVE_GROUP
from mqcore.broker.pop.revive_log import now_ms
from mqcore.errors import CorruptRecordError, MQError
from mqcore.message.const import (
    DLQ_GROUP_TOPIC_PREFIX,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RETRY_TOPIC,
    RETRY_GROUP_TOPIC_PREFIX,
)
from mqcore.message.model import MessageExt
from mqcore.message.record import decode_record
from mqcore.protocol.bodies.pop import AckMsg, BatchAckMsg, PopCheckPoint
from mqcore.protocol.extra_info import PROPERTY_FIRST_POP_TIME, pop_retry_topic
from mqcore.store.metadata import PERM_READ, PERM_WRITE
from mqcore.store.results import GetStatus

if TYPE_CHECKING:
    from collections.abc import Callable

    from mqcore.broker.append import Appender
    from mqcore.broker.config import BrokerConfig
    from mqcore.broker.pop.revive_log import ReviveLog
    from mqcore.broker.topics import TopicService
    from mqcore.message.model import HostAddr
    from mqcore.store.message_store import MessageStore
    from mqcore.store.metadata import ConsumerOffsetManager, SubscriptionGroupManager

__all__ = ["PopReviveService", "merge_key"]

log = logging.getLogger("mq.broker.pop.revive")

_READ_BATCH = 32
_READ_LIMIT = 8192
"""Records read per queue per pass: a long backlog is read over several passes."""
_DLQ_QUEUE_NUM = 1


def merge_key(topic: str, group: str, queue_id: int, start_offset: int, pop_time: int) -> str:
    """What an ack and its checkpoint share (5.x's mergeKey, less the broker name, which
    is this broker's for every record of its revive topic)."""
    return f"{topic}{group}{queue_id}{start_offset}{pop_time}"


@dataclass(slots=True)
class _ReviveQueue:
    qid: int
    read_offset: int
    """The next revive-queue offset to read."""
    pending: dict[str, PopCheckPoint] = field(default_factory=dict)
    """Checkpoints waiting, in the order read (so by revive offset)."""
    due: list[tuple[int, int, str]] = field(default_factory=list)
    """(revive time, revive offset, key) of the checkpoints read: a heap, so a pass looks
    at what is due only (entries of checkpoints acked meanwhile are dropped on the way)."""


class PopReviveService:
    """One task (``reviveInterval``) for all revive queues; runs on a master only."""

    def __init__(
        self,
        config: BrokerConfig,
        store: MessageStore,
        appender: Appender,
        revive_log: ReviveLog,
        offsets: ConsumerOffsetManager,
        topics: TopicService,
        groups: SubscriptionGroupManager,
        store_host: Callable[[], HostAddr],
        *,
        inflight: PopInflightCounter | None = None,
    ) -> None:
        self._config = config
        self._inflight = inflight if inflight is not None else PopInflightCounter()
        """Told when a checkpoint is done: what it left went back, out of flight."""
        self._store = store
        self._appender = appender
        self._log = revive_log
        self._offsets = offsets
        self._topics = topics
        self._groups = groups
        self._store_host = store_host
        self._queues: list[_ReviveQueue] | None = None
        self._recovering = False
        """Reading at start: each checkpoint raises its queue's pop offset. Only then,
        and never with buffer merge: there a pop offset stays behind a written
        checkpoint while buffered pops before it wait, and raising it would skip those
        (after a crash, 5.x's at-least-once: what followed them is handed out again)."""
        self._rng = random.Random()
        self.revived = 0
        """Messages put back so far (retry topic or DLQ)."""

    # -- reading ---------------------------------------------------------------------------
    def recover(self, *, to_the_end: bool = False) -> None:
        """Read every revive queue from where it got to (at first, its committed offset):
        rebuilds the waiting checkpoints. A periodic pass reads at most ``_READ_LIMIT``
        records a queue; the broker's start reads ``to_the_end`` before it serves any
        pop, and raises pop offsets past every checkpoint it reads."""
        self._log.ensure_topic()
        if self._queues is None:
            self._queues = []
            for qid in range(self._log.queue_num):
                done = self._offsets.query(REVIVE_GROUP, self._log.topic, qid)
                self._queues.append(_ReviveQueue(qid, (done if done is not None else -1) + 1))
        self._recovering = to_the_end
        try:
            for queue in self._queues:
                while not self._read(queue) and to_the_end:
                    pass
        finally:
            self._recovering = False

    def _read(self, queue: _ReviveQueue) -> bool:
        """Read up to ``_READ_LIMIT`` records; True once at the queue's end."""
        topic, read = self._log.topic, 0
        while read < _READ_LIMIT:
            result = self._store.get_messages(topic, queue.qid, queue.read_offset, _READ_BATCH)
            if result.status is GetStatus.FOUND:
                for view, offset in zip(result.buffers, result.queue_offsets, strict=True):
                    self._take(queue, view, offset)
                read += len(result.buffers)
                queue.read_offset = result.next_begin_offset
                continue
            moved = result.next_begin_offset != queue.read_offset
            if result.status in (GetStatus.OFFSET_TOO_SMALL, GetStatus.OFFSET_OVERFLOW_BADLY):
                if not moved:
                    return True
                log.warning(
                    "revive queue %d: offset %d is outside the queue, going on from %d",
                    queue.qid,
                    queue.read_offset,
                    result.next_begin_offset,
                )
                queue.read_offset = result.next_begin_offset
            elif result.status in (GetStatus.OFFSET_FOUND_NULL, GetStatus.NO_MATCHED_MESSAGE):
                queue.read_offset = max(queue.read_offset + 1, result.next_begin_offset)
            else:
                return True
            read += 1
        return False

    def _take(self, queue: _ReviveQueue, view: memoryview, offset: int) -> None:
        try:
            record = decode_record(view, 0, strict=True)
            tag = record.tags
            if tag == CK_TAG:
                ck = PopCheckPoint.decode(record.body)
                if not ck.topic or not ck.cid:
                    return
                ck.revive_offset = offset
                if self._recovering and not self._config.enable_pop_buffer_merge:
                    self._raise_pop_offset(ck)
                if _all_acked(ck):  # written with all its acks (buffer merge)
                    return
                key = merge_key(ck.topic, ck.cid, ck.queue_id, ck.start_offset, ck.pop_time)
                queue.pending[key] = ck
                heapq.heappush(queue.due, (ck.revive_time, offset, key))
            elif tag in (ACK_TAG, BATCH_ACK_TAG):
                ack: AckMsg | BatchAckMsg = (
                    AckMsg.decode(record.body)
                    if tag == ACK_TAG
                    else BatchAckMsg.decode(record.body)
                )
                key = merge_key(
                    ack.topic, ack.consumer_group, ack.queue_id, ack.start_offset, ack.pop_time
                )
                point = queue.pending.get(key)
                if point is None:  # its checkpoint was done already (or before the offset)
                    return
                for ack_offset in ack.ack_offsets:
                    index = point.index_of_ack(ack_offset)
                    if index >= 0:
                        point.bit_map |= 1 << index
                if _all_acked(point):
                    del queue.pending[key]
        except (CorruptRecordError, MQError, ValueError) as exc:
            log.warning("revive queue %d: record at %d skipped (%s)", queue.qid, offset, exc)

    def _raise_pop_offset(self, ck: PopCheckPoint) -> None:
        """A checkpoint proves its pop read up to its last message: a group's pop offset
        is at least past it (a consumer offset older than the checkpoint, e.g. the one
        persisted before a crash, would hand those messages out again)."""
        last = ck.ack_offset_by_index(ck.num - 1) if ck.num > 0 else ck.start_offset - 1
        current = self._offsets.query(ck.cid, ck.topic, ck.queue_id)
        if current is None or current <= last:
            self._offsets.commit(ck.cid, ck.topic, ck.queue_id, last + 1)

    # -- reviving --------------------------------------------------------------------------
    def revive_once(self, now: int | None = None) -> int:
        """Read what is new, revive every due checkpoint, commit the revive offsets.
        Returns the number of messages put back."""
        self.recover()
        assert self._queues is not None
        now = now_ms() if now is None else now
        count = 0
        for queue in self._queues:
            retry: list[tuple[int, int, str]] = []
            while queue.due and queue.due[0][0] <= now:
                entry = heapq.heappop(queue.due)
                ck = queue.pending.get(entry[2])
                if ck is None or ck.revive_offset != entry[1]:
                    continue  # acknowledged meanwhile
                revived, done = self._revive(ck)
                count += revived
                if done:
                    del queue.pending[entry[2]]
                    self._inflight.revived(
                        ck.topic, ck.cid, ck.queue_id, ck.start_offset, ck.pop_time
                    )
                else:
                    retry.append(entry)  # a put failed: again at the next pass
            for entry in retry:
                heapq.heappush(queue.due, entry)
            self._commit(queue)
        self.revived += count
        return count

    def _commit(self, queue: _ReviveQueue) -> None:
        if len(queue.due) > 2 * len(queue.pending) + 1024:  # mostly acked: compact
            queue.due = [(ck.revive_time, ck.revive_offset, k) for k, ck in queue.pending.items()]
            heapq.heapify(queue.due)
        first = next(iter(queue.pending.values()), None)
        done = (first.revive_offset if first is not None else queue.read_offset) - 1
        if done >= 0:
            self._offsets.commit(REVIVE_GROUP, self._log.topic, queue.qid, done)

    def _revive(self, ck: PopCheckPoint) -> tuple[int, bool]:
        """Put back each unacknowledged message of ``ck``; (put back, all handled). A
        failed put leaves its bit clear and the checkpoint waiting for the next pass."""
        if self._groups.find(ck.cid) is None:
            log.warning("revive: group %s no longer exists, checkpoint dropped", ck.cid)
            return 0, True
        revived = 0
        for index in range(ck.num):
            if ck.bit_map >> index & 1:
                continue
            offset = ck.ack_offset_by_index(index)
            msg = self._original(ck.topic, ck.queue_id, offset)
            if msg is not None and not self._put_back(ck, msg):
                continue
            ck.bit_map |= 1 << index
            revived += msg is not None
        return revived, _all_acked(ck)

    def _original(self, topic: str, queue_id: int, offset: int) -> MessageExt | None:
        phy = self._store.get_commit_log_offset_in_queue(topic, queue_id, offset)
        if phy < 0:
            log.info("revive: %s/%d@%d is gone from the store", topic, queue_id, offset)
            return None
        try:
            return decode_record(self._store.get_message(phy), 0, strict=True, decompress=False)
        except (CorruptRecordError, ValueError) as exc:
            log.warning("revive: %s/%d@%d unreadable (%s)", topic, queue_id, offset, exc)
            return None

    def _put_back(self, ck: PopCheckPoint, msg: MessageExt) -> bool:
        group = self._groups.find(ck.cid)
        max_times = group.retry_max_times if group is not None else 16
        props = dict(msg.properties)
        if msg.reconsume_times == 0 or PROPERTY_FIRST_POP_TIME not in props:
            props[PROPERTY_FIRST_POP_TIME] = str(ck.pop_time)
        if msg.reconsume_times >= max_times:
            topic = DLQ_GROUP_TOPIC_PREFIX + ck.cid
            queue_id = self._rng.randrange(_DLQ_QUEUE_NUM)
            self._topics.create_in_send_back(topic, _DLQ_QUEUE_NUM, PERM_READ | PERM_WRITE)
            props.setdefault(PROPERTY_RETRY_TOPIC, msg.topic)
            props.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, msg.msg_id)
        else:
            if ck.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                topic = ck.topic
            else:
                topic = pop_retry_topic(ck.topic, ck.cid, self._config.enable_retry_topic_v2)
            queue_id = 0
            self._ensure_retry_topic(topic, ck.cid)
        copy = msg.rerouted(
            topic, queue_id, properties=props, reconsume_times=msg.reconsume_times + 1
        )
        copy.born_host = copy.store_host = self._store_host()
        result = self._appender.put((copy,), wait=False)
        if not result.ok:
            log.warning("revive: put to %s refused (%s)", topic, result.status.value)
        return result.ok

    def _ensure_retry_topic(self, topic: str, group: str) -> None:
        if self._topics.select(topic) is not None:
            return
        self._topics.create_in_send_back(topic, RETRY_QUEUE_NUM, PERM_READ | PERM_WRITE)
        if self._offsets.query(group, topic, 0) is None:  # 5.x's initPopRetryOffset
            self._offsets.commit(group, topic, 0, 0)

    # -- figures ---------------------------------------------------------------------------
    @property
    def pending_count(self) -> int:
        """Checkpoints waiting for their revive time or their acks."""
        return sum(len(q.pending) for q in self._queues or ())


def _all_acked(ck: PopCheckPoint) -> bool:
    full = (1 << ck.num) - 1
    return ck.bit_map & full == full

"""`PopBufferMergeService`: checkpoints kept in memory a while, so that a pop acknowledged
quickly writes no checkpoint and no ack at all (RocketMQ 5's, ``enablePopBufferMerge``,
off by default as in 5.x).

With it on, a pop's checkpoint waits here up to ``popCkStayBufferTime`` (and never
closer than ``popCkStayBufferTimeOut`` to its revive time); acks of it set its bits
here. A checkpoint all acknowledged by then is dropped; any other is written to the
revive topic with the bits it has, and later acks become records as usual. A group's pop
offset moves past a pop only once its checkpoint is written or all acknowledged, in pop
order per queue (5.x's commitOffsets queues): a crash loses nothing unacknowledged, and
hands out again what was acknowledged but not yet settled (5.x's at-least-once). A
checkpoint that cannot wait (near its revive time, too many buffered) is written at once
and only its offset queued. A stop writes everything still buffered.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mqcore.broker.pop.revive_log import now_ms
from mqcore.protocol.bodies.pop import AckMsg, BatchAckMsg, PopCheckPoint

if TYPE_CHECKING:
    from mqcore.broker.config import BrokerConfig
    from mqcore.broker.pop.revive_log import ReviveLog
    from mqcore.store.metadata import ConsumerOffsetManager
    from mqcore.store.results import PutResult

__all__ = ["PopBufferMergeService"]

log = logging.getLogger("mq.broker.pop.buffer")

_QueueKey = tuple[str, str, int]
"""(topic, group, queue id)."""


@dataclass(slots=True, eq=False)
class _Wrapper:
    ck: PopCheckPoint
    revive_qid: int
    next_begin: int
    stored: bool

    @property
    def done(self) -> bool:
        full = (1 << self.ck.num) - 1
        return self.ck.bit_map & full == full


def _key(topic: str, group: str, queue_id: int, start_offset: int, pop_time: int) -> str:
    return f"{topic}{group}{queue_id}{start_offset}{pop_time}"


class PopBufferMergeService:
    def __init__(
        self, config: BrokerConfig, revive_log: ReviveLog, offsets: ConsumerOffsetManager
    ) -> None:
        self._config = config
        self._log = revive_log
        self._offsets = offsets
        self._buffer: dict[str, _Wrapper] = {}
        self._commit_queues: dict[_QueueKey, deque[_Wrapper]] = {}

    @property
    def enabled(self) -> bool:
        return self._config.enable_pop_buffer_merge

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def latest_offset(self, topic: str, group: str, queue_id: int) -> int:
        """Where the queue's last pop ended, while its offset waits here; -1 otherwise."""
        queue = self._commit_queues.get((topic, group, queue_id))
        return queue[-1].next_begin if queue else -1

    def add_ck(self, ck: PopCheckPoint, revive_qid: int, next_begin: int) -> PutResult | None:
        """Take a pop's checkpoint: None when it waits here, else the result of writing it
        at once (its offset still queued behind earlier ones)."""
        c = self._config
        wrapper = _Wrapper(ck, revive_qid, next_begin, stored=False)
        key = _key(ck.topic, ck.cid, ck.queue_id, ck.start_offset, ck.pop_time)
        can_wait = (
            ck.revive_time - now_ms() >= c.pop_ck_stay_buffer_time_out + 1500
            and len(self._buffer) < c.pop_ck_max_buffer_size
            and key not in self._buffer
        )
        put = None
        if can_wait:
            self._buffer[key] = wrapper
        else:
            put = self._log.put_ck(ck, revive_qid)
            if not put.ok:
                return put
            wrapper.stored = True
        self._commit_queues.setdefault((ck.topic, ck.cid, ck.queue_id), deque()).append(wrapper)
        return put

    def add_offset(self, topic: str, group: str, queue_id: int, next_begin: int) -> None:
        """A pop that found nothing to hand out before ``next_begin`` (5.x's addCkMock):
        the offset moves there in turn, after the buffered pops before it."""
        queue = self._commit_queues.get((topic, group, queue_id))
        if not queue:
            self._offsets.commit(group, topic, queue_id, next_begin)
            return
        mock = PopCheckPoint(0, 0, 0, 0, queue_id, topic, group)
        queue.append(_Wrapper(mock, -1, next_begin, stored=True))

    def add_ack(self, ack: AckMsg | BatchAckMsg) -> bool:
        """Merge an ack into its buffered checkpoint; False when that is not here."""
        key = _key(ack.topic, ack.consumer_group, ack.queue_id, ack.start_offset, ack.pop_time)
        wrapper = self._buffer.get(key)
        if wrapper is None or wrapper.stored:
            return False
        for offset in ack.ack_offsets:
            index = wrapper.ck.index_of_ack(offset)
            if index >= 0:
                wrapper.ck.bit_map |= 1 << index
        return True

    def scan(self, *, stopping: bool = False) -> None:
        """Write the checkpoints that waited long enough (all of them when
        ``stopping``), drop the acknowledged ones, and move pop offsets as far as the
        queued pops allow."""
        c, now = self._config, now_ms()
        for key, wrapper in list(self._buffer.items()):
            ck = wrapper.ck
            if wrapper.done:
                del self._buffer[key]
                continue
            due = (
                stopping
                or now - ck.pop_time > c.pop_ck_stay_buffer_time
                or ck.revive_time - now < c.pop_ck_stay_buffer_time_out
            )
            if not due:
                continue
            put = self._log.put_ck(ck, wrapper.revive_qid)
            if put.ok:
                wrapper.stored = True
                del self._buffer[key]
            else:
                log.warning("buffered checkpoint not written (%s): kept", put.status.value)
        self._commit()

    def _commit(self) -> None:
        for (topic, group, queue_id), queue in list(self._commit_queues.items()):
            while queue and (queue[0].stored or queue[0].done):
                wrapper = queue.popleft()
                current = self._offsets.query(group, topic, queue_id)
                if current is None or wrapper.next_begin > current:
                    self._offsets.commit(group, topic, queue_id, wrapper.next_begin)
            if not queue:
                del self._commit_queues[(topic, group, queue_id)]

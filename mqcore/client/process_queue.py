"""`ProcessQueue`: what a consumer holds for one assigned message queue.

Theory of operation
-------------------
Rebalance creates one ProcessQueue per queue it assigns to this consumer and drops it when
the queue goes to another member. The pull loop puts what it pulls here; the consume
service takes it out. Between the two, the queue is the single source of three answers:

* **flow control** -- how many messages / bytes are cached and how wide the offset span
  is, so the pull loop can back off (RocketMQ: 1000 messages, 100 MiB, span 2000);
* **commit offset** -- the smallest offset not yet consumed. Concurrent listeners finish
  out of order, so only offsets below every message still in flight may be committed:
  after consuming 5, 6, 8 of 5..8 the commit offset is 7, never 9;
* **lifecycle** -- whether pulling may continue at all (``dropped``) and, for orderly
  consumption, whether this client still holds the broker lock for the queue.

Rule 1: every change of lifecycle or lock state goes through :meth:`ProcessQueue.fire`
and the two tables below. Nothing else assigns ``state`` or ``lock_state``.

Lifecycle (``_LIFECYCLE``)::

    ASSIGNED --START--> ACTIVE --DROP--> DROPPED
        \\______________DROP______________/

ASSIGNED: created by rebalance, start offset not known yet. ACTIVE: pulling and
consuming. DROPPED: final; the pull loop and consume service stop touching the queue,
its cached messages are discarded, and its offset must not be committed any more.

Broker lock, orderly consumption only (``_LOCKING``)::

    UNLOCKED --GRANTED--> LOCKED --DENIED/RELEASED--> UNLOCKED
                          LOCKED --GRANTED--> LOCKED (refreshes the timestamp)

A lock not refreshed for :data:`LOCK_MAX_LIVE` seconds counts as lost even while the
state says LOCKED: the broker gives it away after 60 s, so we stop earlier (30 s).

Offsets arrive in increasing order per queue (one pull loop per queue), so the cache is a
dict in offset order plus a lazily cleaned min-heap for the smallest offset left.
Everything runs on one event loop: no locks are needed.
"""

from __future__ import annotations

import asyncio
import enum
import heapq
import time
from collections.abc import Callable, Iterable

from mqcore.errors import MQError
from mqcore.message import MessageExt
from mqcore.message.const import PROPERTY_MAX_OFFSET

__all__ = [
    "LOCK_MAX_LIVE",
    "PULL_MAX_IDLE",
    "LockEvent",
    "LockState",
    "ProcessQueue",
    "QueueEvent",
    "QueueState",
    "StateError",
]

LOCK_MAX_LIVE = 30.0
"""Seconds a broker lock is trusted without a refresh (RocketMQ's ``lockMaxLiveTime``)."""
PULL_MAX_IDLE = 120.0
"""Seconds without a pull after which rebalance considers the queue stuck and drops it."""


class QueueState(enum.Enum):
    ASSIGNED = "assigned"
    ACTIVE = "active"
    DROPPED = "dropped"


class QueueEvent(enum.Enum):
    START = "start"
    DROP = "drop"


class LockState(enum.Enum):
    UNLOCKED = "unlocked"
    LOCKED = "locked"


class LockEvent(enum.Enum):
    GRANTED = "granted"
    DENIED = "denied"
    RELEASED = "released"


_LIFECYCLE: dict[tuple[QueueState, QueueEvent], QueueState] = {
    (QueueState.ASSIGNED, QueueEvent.START): QueueState.ACTIVE,
    (QueueState.ASSIGNED, QueueEvent.DROP): QueueState.DROPPED,
    (QueueState.ACTIVE, QueueEvent.DROP): QueueState.DROPPED,
    (QueueState.DROPPED, QueueEvent.DROP): QueueState.DROPPED,
}

_LOCKING: dict[tuple[LockState, LockEvent], LockState] = {
    (LockState.UNLOCKED, LockEvent.GRANTED): LockState.LOCKED,
    (LockState.UNLOCKED, LockEvent.DENIED): LockState.UNLOCKED,
    (LockState.UNLOCKED, LockEvent.RELEASED): LockState.UNLOCKED,
    (LockState.LOCKED, LockEvent.GRANTED): LockState.LOCKED,
    (LockState.LOCKED, LockEvent.DENIED): LockState.UNLOCKED,
    (LockState.LOCKED, LockEvent.RELEASED): LockState.UNLOCKED,
}


class StateError(MQError, RuntimeError):
    """An event that the current state does not allow (a bug in the caller)."""


def _size(msg: MessageExt) -> int:
    return len(msg.body)


class ProcessQueue:
    """Cached messages of one assigned queue, its flow-control figures and its state."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._msgs: dict[int, MessageExt] = {}
        self._heap: list[int] = []
        self._consuming: dict[int, MessageExt] = {}
        """Orderly only: taken by the listener, not yet committed or rolled back."""
        self._bytes = 0
        self.queue_offset_max = 0
        """Highest offset ever put; the commit offset once the cache is empty is this + 1."""
        self.msg_acc_cnt = 0
        """Messages behind the head of the queue after the last pull (lag estimate)."""
        self.state = QueueState.ASSIGNED
        self.lock_state = LockState.UNLOCKED
        now = self._clock()
        self.last_pull = now
        self.last_consume = now
        self.last_lock = 0.0
        self.try_unlock_times = 0
        self.consume_lock = asyncio.Lock()
        """Orderly: held while a listener works on this queue, so rebalance only releases
        the broker lock between two batches."""

    # -- state machine ---------------------------------------------------------------------
    def fire(self, event: QueueEvent | LockEvent) -> None:
        """Apply ``event`` through the lifecycle or lock table. Raises StateError."""
        if isinstance(event, QueueEvent):
            nxt = _LIFECYCLE.get((self.state, event))
            if nxt is None:
                raise StateError(f"{event.name} not allowed in {self.state.name}")
            self.state = nxt
            if nxt is QueueState.DROPPED:
                self.lock_state = LockState.UNLOCKED
            return
        if self.state is QueueState.DROPPED and event is LockEvent.GRANTED:
            return  # a lock answer arriving after the drop changes nothing
        self.lock_state = _LOCKING[(self.lock_state, event)]
        if event is LockEvent.GRANTED:
            self.last_lock = self._clock()

    @property
    def dropped(self) -> bool:
        return self.state is QueueState.DROPPED

    def drop(self) -> None:
        self.fire(QueueEvent.DROP)

    @property
    def locked(self) -> bool:
        """Broker lock held and fresh: orderly consumption may go on."""
        return self.lock_state is LockState.LOCKED and not self.lock_expired

    @property
    def lock_expired(self) -> bool:
        return self._clock() - self.last_lock > LOCK_MAX_LIVE

    @property
    def pull_expired(self) -> bool:
        return self._clock() - self.last_pull > PULL_MAX_IDLE

    def touch_pull(self) -> None:
        self.last_pull = self._clock()

    # -- cache -----------------------------------------------------------------------------
    @property
    def msg_count(self) -> int:
        """Messages cached (including those an orderly listener is working on)."""
        return len(self._msgs) + len(self._consuming)

    @property
    def msg_size(self) -> int:
        """Body bytes cached."""
        return self._bytes

    def _min_offset(self) -> int | None:
        heap, msgs = self._heap, self._msgs
        while heap and heap[0] not in msgs:
            heapq.heappop(heap)
        return heap[0] if heap else None

    @property
    def max_span(self) -> int:
        """Highest minus lowest cached offset (concurrent flow control)."""
        low = self._min_offset()
        if low is None:
            return 0
        return next(reversed(self._msgs)) - low

    def has_messages(self) -> bool:
        return bool(self._msgs)

    def cached_offsets(self) -> tuple[int, int] | None:
        """Lowest and highest cached offset (those an orderly listener holds included);
        None when nothing is cached."""
        offsets = [o for o in (self._min_offset(), *self._consuming) if o is not None]
        if self._msgs:
            offsets.append(next(reversed(self._msgs)))
        return (min(offsets), max(offsets)) if offsets else None

    def wall_clock_ms(self, monotonic_time: float) -> int:
        """A time of this queue's clock (``last_pull``, ...) as wall-clock milliseconds;
        0 for never (``last_lock`` before a first lock)."""
        if monotonic_time <= 0:
            return 0
        return int((time.time() - (self._clock() - monotonic_time)) * 1000)

    def put(self, msgs: Iterable[MessageExt], next_offset: int | None = None) -> int:
        """Cache pulled messages (duplicates of cached offsets are ignored). Returns how
        many were new.

        ``next_offset`` is the pull's ``nextBeginOffset``: entries between the last message
        and it were filtered out, so once the cache empties the commit offset may skip
        them (else a queue ending in unwanted tags would never be committed to its end).
        """
        added = 0
        last: MessageExt | None = None
        cache, heap = self._msgs, self._heap
        tail = next(reversed(cache)) if cache else -1
        in_order = True
        for msg in msgs:
            last = msg
            offset = msg.queue_offset
            if offset in cache or offset in self._consuming:
                continue
            if offset < tail:
                in_order = False
            tail = offset
            cache[offset] = msg
            heapq.heappush(heap, offset)
            self._bytes += _size(msg)
            if offset > self.queue_offset_max:
                self.queue_offset_max = offset
            added += 1
        if not in_order:
            self._msgs = dict(sorted(cache.items()))
        if next_offset is not None and next_offset - 1 > self.queue_offset_max:
            self.queue_offset_max = next_offset - 1
        if last is not None:
            head = last.properties.get(PROPERTY_MAX_OFFSET)
            if head is not None and head.isdigit():
                self.msg_acc_cnt = max(0, int(head) - last.queue_offset)
        return added

    def remove(self, msgs: Iterable[MessageExt]) -> int:
        """Forget consumed messages; return the offset that may now be committed, or -1 if
        the cache was already empty (nothing to say)."""
        self.last_consume = self._clock()
        if not self._msgs:
            return -1
        cache = self._msgs
        for msg in msgs:
            gone = cache.pop(msg.queue_offset, None)
            if gone is not None:
                self._bytes -= _size(gone)
        if not cache:
            self._bytes = 0
            self._heap.clear()
            return self.queue_offset_max + 1
        low = self._min_offset()
        assert low is not None
        return low

    def contains(self, msg: MessageExt) -> bool:
        return msg.queue_offset in self._msgs

    def clear(self) -> None:
        self._msgs.clear()
        self._heap.clear()
        self._consuming.clear()
        self._bytes = 0
        self.queue_offset_max = 0

    # -- orderly ---------------------------------------------------------------------------
    def take(self, batch_size: int) -> list[MessageExt]:
        """Orderly: move the ``batch_size`` lowest cached messages to the consuming set."""
        self.last_consume = self._clock()
        out: list[MessageExt] = []
        while len(out) < batch_size:
            low = self._min_offset()
            if low is None:
                break
            heapq.heappop(self._heap)
            msg = self._msgs.pop(low)
            self._consuming[low] = msg
            out.append(msg)
        return out

    def commit(self) -> int:
        """Orderly: the consuming set is done; return the next offset to commit (-1 if the
        set was empty)."""
        if not self._consuming:
            return -1
        for msg in self._consuming.values():
            self._bytes -= _size(msg)
        offset = max(self._consuming) + 1
        self._consuming.clear()
        if not self._msgs:
            self._bytes = 0
        return offset

    def rollback(self) -> None:
        """Orderly: put the consuming set back to be taken again (listener suspended)."""
        self.reconsume(list(self._consuming.values()))

    def reconsume(self, msgs: Iterable[MessageExt]) -> None:
        """Orderly: put some taken messages back in front of the cache."""
        for msg in msgs:
            offset = msg.queue_offset
            if self._consuming.pop(offset, None) is not None:
                self._msgs[offset] = msg
                heapq.heappush(self._heap, offset)
        self._msgs = dict(sorted(self._msgs.items()))

    def __repr__(self) -> str:
        return (
            f"ProcessQueue({self.state.name} {self.lock_state.name} count={self.msg_count}"
            f" bytes={self._bytes} max={self.queue_offset_max})"
        )

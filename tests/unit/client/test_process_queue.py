"""ProcessQueue: commit offsets under out-of-order completion, orderly take/commit/rollback,
flow-control figures and the two state tables."""

from __future__ import annotations

import pytest

from mqcore.client.process_queue import (
    LOCK_MAX_LIVE,
    LockEvent,
    LockState,
    ProcessQueue,
    QueueEvent,
    QueueState,
    StateError,
)
from mqcore.message import MessageExt


def msgs(*offsets: int, size: int = 10, max_offset: int | None = None) -> list[MessageExt]:
    out = [MessageExt(topic="T", body=b"x" * size, queue_offset=o) for o in offsets]
    if max_offset is not None and out:
        out[-1].properties["MAX_OFFSET"] = str(max_offset)
    return out


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_commit_offset_is_smallest_unconsumed() -> None:
    pq = ProcessQueue()
    batch = msgs(5, 6, 7, 8)
    assert pq.put(batch) == 4
    assert (pq.msg_count, pq.msg_size, pq.max_span) == (4, 40, 3)
    assert pq.remove([batch[1], batch[3]]) == 5
    assert pq.remove([batch[0]]) == 7
    assert pq.msg_count == 1 and pq.msg_size == 10
    assert pq.remove([batch[2]]) == 9
    assert (pq.msg_count, pq.msg_size, pq.max_span) == (0, 0, 0)
    assert pq.remove([batch[2]]) == -1


def test_duplicates_ignored_and_lag_estimate() -> None:
    pq = ProcessQueue()
    pq.put(msgs(1, 2, max_offset=10))
    assert pq.put(msgs(2, 3)) == 1
    assert pq.msg_count == 3
    assert pq.msg_acc_cnt == 8
    assert pq.queue_offset_max == 3


def test_filtered_tail_is_skipped_once_consumed() -> None:
    pq = ProcessQueue()
    batch = msgs(3, 5)
    pq.put(batch, next_offset=9)  # 6..8 filtered out by the broker
    assert pq.remove(batch[:1]) == 5
    assert pq.remove(batch[1:]) == 9


def test_out_of_order_put_keeps_span_right() -> None:
    pq = ProcessQueue()
    pq.put(msgs(10, 11))
    pq.put(msgs(3))
    assert pq.max_span == 8
    assert pq.remove(msgs(3)) == 10


def test_orderly_take_commit_rollback() -> None:
    pq = ProcessQueue()
    pq.put(msgs(0, 1, 2, 3))
    first = pq.take(2)
    assert [m.queue_offset for m in first] == [0, 1]
    assert pq.msg_count == 4
    pq.rollback()
    again = pq.take(1)
    assert [m.queue_offset for m in again] == [0]
    assert pq.commit() == 1
    assert pq.msg_count == 3 and pq.msg_size == 30
    taken = pq.take(10)
    assert [m.queue_offset for m in taken] == [1, 2, 3]
    pq.reconsume(taken[1:])
    assert pq.commit() == 2
    assert [m.queue_offset for m in pq.take(5)] == [2, 3]
    assert pq.commit() == 4
    assert pq.commit() == -1
    assert pq.take(1) == [] and pq.msg_size == 0


def test_lifecycle_table() -> None:
    pq = ProcessQueue()
    assert pq.state is QueueState.ASSIGNED
    pq.fire(QueueEvent.START)
    assert pq.state is QueueState.ACTIVE
    with pytest.raises(StateError):
        pq.fire(QueueEvent.START)
    pq.drop()
    assert pq.dropped
    pq.drop()  # idempotent
    with pytest.raises(StateError):
        pq.fire(QueueEvent.START)


def test_lock_expires_without_refresh() -> None:
    clock = Clock()
    pq = ProcessQueue(clock=clock)
    assert not pq.locked
    pq.fire(LockEvent.GRANTED)
    assert pq.locked
    clock.now += LOCK_MAX_LIVE + 1
    assert pq.lock_state is LockState.LOCKED and not pq.locked
    pq.fire(LockEvent.GRANTED)
    assert pq.locked
    pq.fire(LockEvent.DENIED)
    assert not pq.locked
    pq.fire(LockEvent.GRANTED)
    pq.drop()
    assert pq.lock_state is LockState.UNLOCKED
    pq.fire(LockEvent.GRANTED)  # late answer after the drop
    assert not pq.locked


def test_clear() -> None:
    pq = ProcessQueue()
    pq.put(msgs(1, 2))
    pq.take(1)
    pq.clear()
    assert pq.msg_count == 0 and pq.msg_size == 0 and not pq.has_messages()

"""Where recovery after a crash may start: the checkpoint's proof as a commit log offset.

Byte layout: none of its own; it reads the ``checkpoint`` (see :mod:`checkpoint`),
consume queue entries and the records they point at.

The checkpoint proves, by store time, what was durable when it was last written: the
commit log holds every record stored before ``physicMsgTimestamp``, the consume queues
every record stored before ``logicsMsgTimestamp`` (each is the store time of the last
record covered, taken before the flush, so a record of that same millisecond may have
come after it), and the index every record stored up to ``indexMsgTimestamp`` (see
``MessageStore.flush_consume_queues``). Every record stored by the *proven time*, the
earliest of those bounds, has its bytes, its queue entry and its index entries on disk.

mq's store times never go backwards (the put path takes the later of the clock and the
last record's time), so the proven records are a prefix of the commit log; its end, the
*recovery point*, is the largest end of a queue entry whose record was stored by the
proven time. Each active queue finds its last such entry by binary search over its
entries: finding the point costs a few record reads per queue, not a pass over the log,
and what recovery then checks is what was written after the last checkpoint (a
second's worth, the consume queue flush interval). 4.9.8 picks a whole commit log file
by the store time of its first record, less a 3 s margin for clocks that step, and
checks everything from there, so its restart grows with the size of that file.

Anything that makes the proof doubtful asks for a full check instead: a checkpoint
that proves nothing or holds impossible values (:func:`checkpoint_problem`), or a queue
entry that names a record other than the one it points at
(:class:`ConsumeQueueMismatch`).

After a clean shutdown the point lies within a millisecond of the end (everything was
flushed and the checkpoint written last), so recovery also checks the last records
before it: :func:`first_queued_record` finds where a window of a given size before the
point begins on a record boundary, through the consume queues (a binary search per queue
written to in that window), and checks that the queue entry there names its record.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.errors import CorruptRecordError, StoreError
from mqcore.message.record import DispatchRequest
from mqcore.store.checkpoint import StoreCheckpoint
from mqcore.store.commitlog import CommitLog
from mqcore.store.consume_queue import ConsumeQueue, is_filler
from mqcore.store.dispatcher import ConsumeQueueTable

__all__ = [
    "ConsumeQueueMismatch",
    "RecoveryPoint",
    "checkpoint_problem",
    "find_recovery_point",
    "first_queued_record",
    "proven_timestamp",
]


class ConsumeQueueMismatch(StoreError):
    """A consume queue disagrees with the commit log: an entry names another record than
    the one at its offset, or entries of records before the recovery point are missing.
    Recovery then checks the whole commit log instead of starting from the checkpoint."""


@dataclass(frozen=True)
class RecoveryPoint:
    """The end of the proven records, and what proved it."""

    offset: int
    """Commit log offset: every record below it is durable, in its queue and indexed."""
    proven_timestamp: int
    """Store time up to which the checkpoint proves everything durable."""


def checkpoint_problem(checkpoint: StoreCheckpoint, *, index_enable: bool) -> str | None:
    """Why the checkpoint cannot be trusted to start from, or None when it can."""
    values = {
        "physicMsgTimestamp": checkpoint.physic_msg_timestamp,
        "logicsMsgTimestamp": checkpoint.logics_msg_timestamp,
    }
    if index_enable:
        values["indexMsgTimestamp"] = checkpoint.index_msg_timestamp
    for name, value in values.items():
        if value < 0:
            return f"the checkpoint's {name} is negative ({value})"
    for name, value in values.items():
        if value == 0:
            return f"the checkpoint's {name} is 0: it proves nothing flushed"
    return None


def proven_timestamp(checkpoint: StoreCheckpoint, *, index_enable: bool) -> int:
    """Store time up to which (inclusive) commit log, consume queues (and index) hold
    every record."""
    proven = min(checkpoint.physic_msg_timestamp, checkpoint.logics_msg_timestamp) - 1
    if index_enable:
        proven = min(proven, checkpoint.index_msg_timestamp)
    return max(0, proven)


def find_recovery_point(
    commit_log: CommitLog, queues: ConsumeQueueTable, proven_ts: int
) -> RecoveryPoint:
    """The end of the last record stored by ``proven_ts`` that has a queue entry (the
    commit log's first offset when there is none). Raises :class:`ConsumeQueueMismatch`."""
    best = commit_log.min_offset
    # A queue that ends below the best point so far cannot move it: newest queues first.
    for cq in sorted(queues.all(), key=lambda q: q.max_physic_offset, reverse=True):
        if cq.max_physic_offset <= best:
            break
        end = _last_proven_end(commit_log, cq, proven_ts)
        if end > best:
            best = end
    return RecoveryPoint(best, proven_ts)


def _last_proven_end(commit_log: CommitLog, cq: ConsumeQueue, proven_ts: int) -> int:
    """End of the queue's last entry whose record was stored by ``proven_ts``; -1 if none."""
    lo, hi = cq.min_offset, cq.max_offset
    if lo >= hi:
        return -1
    last = _probe(commit_log, cq, hi - 1, lo)
    if last is not None and last[2] <= proven_ts:
        return last[1]  # an idle queue: one read
    best = -1
    while lo < hi:
        mid = (lo + hi) // 2
        probe = _probe(commit_log, cq, mid, lo)
        if probe is None:  # only fillers from lo to mid
            lo = mid + 1
            continue
        index, end, stored = probe
        if stored <= proven_ts:
            best = end
            lo = mid + 1
        else:
            hi = index
    return best


def _probe(
    commit_log: CommitLog, cq: ConsumeQueue, index: int, lo: int
) -> tuple[int, int, int] | None:
    """(queue offset, record end, store time) of the nearest entry at or before ``index``
    (not below ``lo``) that points at a record; None when only fillers are there.

    A record that cannot be read (a torn tail the recovery will cut) counts as newer than
    anything proven; one that reads fine but is not this entry's raises."""
    while index >= lo:
        entry = cq.entry(index)
        if entry is None:
            return None
        phy, size, _tags = entry
        if is_filler(phy, size):
            index -= 1
            continue
        try:
            req = commit_log.check_at(phy)
        except CorruptRecordError:
            req = None
        if not isinstance(req, DispatchRequest):
            return index, phy + size, 2**63 - 1
        if (req.topic, req.queue_id, req.queue_offset, req.size) != (
            cq.topic,
            cq.queue_id,
            index,
            size,
        ):
            raise ConsumeQueueMismatch(
                f"consume queue {cq.topic}/{cq.queue_id} entry {index} points at {phy} "
                f"({size} bytes), where the commit log holds {req.topic}/{req.queue_id} "
                f"offset {req.queue_offset} ({req.size} bytes)"
            )
        return index, phy + size, req.store_timestamp
    return None


def first_queued_record(
    commit_log: CommitLog, queues: ConsumeQueueTable, from_offset: int, point: int
) -> int:
    """Commit log offset of the first record at or after ``from_offset`` that a consume
    queue names (a record boundary), or ``point`` when no queue names a record between
    them; the commit log's first offset when ``from_offset`` lies before it.

    Only queues written to after ``from_offset`` are searched; the entry chosen is checked
    against its record (it must read and be that queue's), else
    :class:`ConsumeQueueMismatch`: a check started anywhere but at a record would take
    the first bytes it cannot frame for the end of the log."""
    if from_offset <= commit_log.min_offset:
        return commit_log.min_offset
    best: tuple[int, ConsumeQueue, int, int] | None = None  # (phy, queue, index, size)
    for cq in sorted(queues.all(), key=lambda q: q.max_physic_offset, reverse=True):
        if cq.max_physic_offset <= from_offset:
            break
        found = _first_entry_from(cq, from_offset)
        if found is not None and found[1] < point and (best is None or found[1] < best[0]):
            best = (found[1], cq, found[0], found[2])
    if best is None:
        return point
    phy, cq, index, size = best
    try:
        req = commit_log.check_at(phy)
    except CorruptRecordError as exc:
        raise ConsumeQueueMismatch(
            f"consume queue {cq.topic}/{cq.queue_id} entry {index} points at {phy}, where the "
            f"commit log holds no readable record ({exc})"
        ) from None
    if not isinstance(req, DispatchRequest) or (
        req.topic,
        req.queue_id,
        req.queue_offset,
        req.size,
    ) != (cq.topic, cq.queue_id, index, size):
        held = (
            f"{req.topic}/{req.queue_id} offset {req.queue_offset} ({req.size} bytes)"
            if isinstance(req, DispatchRequest)
            else "no record"
        )
        raise ConsumeQueueMismatch(
            f"consume queue {cq.topic}/{cq.queue_id} entry {index} points at {phy} "
            f"({size} bytes), where the commit log holds {held}"
        )
    return phy


def _first_entry_from(cq: ConsumeQueue, offset: int) -> tuple[int, int, int] | None:
    """(queue offset, commit log offset, size) of the queue's first entry pointing at
    ``offset`` or later (fillers skipped); None when there is none."""
    lo, hi = cq.min_offset, cq.max_offset
    found = None
    while lo < hi:
        mid = (lo + hi) // 2
        index, entry = mid, None
        while index < hi:  # the nearest entry at or after mid that points at a record
            entry = cq.entry(index)
            if entry is None or not is_filler(entry[0], entry[1]):
                break
            index += 1
            entry = None
        if entry is None:
            hi = mid
        elif entry[0] >= offset:
            found = (index, entry[0], entry[1])
            hi = mid
        else:
            lo = index + 1
    return found

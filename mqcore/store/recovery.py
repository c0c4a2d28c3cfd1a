"""Recovery: bring commit log, consume queues and index back to one consistent end.

Byte layout: none of its own; it reads the ``abort`` marker and ``checkpoint`` (see
:mod:`checkpoint`) and the commit log / consume queue / index formats.

Every consume queue first finds its end (first invalid 20-byte entry, scanning from its
third-to-last file). Then the commit log is checked (magic, size, BODYCRC when
``checkCRCOnRecover``) from where the checkpoint lets recovery start, to its end. The
*recovery point* is the end of the records the checkpoint proves durable, queued and
indexed (see :mod:`recovery_point`); starting there, a restart costs what was written
last, not what the store holds.

* **normal** (no ``abort`` file: the last shutdown was clean): a clean shutdown flushes
  everything and writes the checkpoint last, so the point lies within a millisecond of
  the end. The check starts :data:`CLEAN_RECHECK_BYTES` before it (at a record a
  consume queue names), so the last records written before the shutdown are checked
  too. Every record had been dispatched, so a queue missing there was destroyed on
  purpose (cleanUnusedTopic) and stays so. The index is kept; entries pointing at or
  past the end found are cut. 4.9.8 checks the last three commit log files here,
  RocketMQ 5.3 the file holding the queues' end: mq did the former, about 9 s a GiB in
  Python. A checkpoint that proves nothing (a store last written by 4.9.8 before any
  index file filled up, whose indexMsgTimestamp is 0, or one never flushed) gets that
  check, from the third-to-last file.
* **abnormal** (``abort`` left by a crash): the check starts at the point. Index files
  are kept: entries past the point are cut (:meth:`IndexService.repair_tail`) and
  indexed again. A checkpoint that proves nothing asks for a full check.

In both, a checkpoint that disagrees with the files (ahead of the commit log, a queue
entry naming another record, or a queue missing entries of records before the point: a
gap) asks for a **full check**: every record from the commit log's first file is checked
and re-dispatched and the index is built again, and the log says why. The one INFO line
(:meth:`RecoveryReport.summary`) says which check ran and why.

In every check, a whole record whose body fails BODYCRC costs only itself (skipped, its
queue entry a filler), the first record that does not frame is the end (torn tail zeroed,
later files deleted), queue entries pointing past the end are dropped, every record not
yet in its queue or the index is re-dispatched (duplicates are skipped), and the
per-queue next offsets (topicQueueTable) are rebuilt from the queues. Damage to records
before where the check starts is not looked for: ``mq store verify`` checks everything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from mqcore.errors import CorruptRecordError
from mqcore.message.record import DispatchRequest
from mqcore.store.checkpoint import StoreCheckpoint
from mqcore.store.commitlog import TRANSACTION_PREPARED, TRANSACTION_ROLLBACK, CommitLog
from mqcore.store.consume_queue import FILLER_SIZE
from mqcore.store.dispatcher import ConsumeQueueTable, Dispatcher
from mqcore.store.index_service import IndexService
from mqcore.store.recovery_point import (
    ConsumeQueueMismatch,
    checkpoint_problem,
    find_recovery_point,
    first_queued_record,
    proven_timestamp,
)

log = logging.getLogger(__name__)

CLEAN_RECHECK_BYTES = 1 << 20
"""After a clean shutdown the recovery point lies within a millisecond of the end; the
check starts this much earlier (at a record boundary), so the last records written
before the shutdown are checked too (BODYCRC, their queue entries), as the records of
the last second are after a crash. About 1,000 records of 1 KiB, some 15 ms."""


@dataclass(frozen=True)
class StoreProblem:
    """Damage recovery found and worked around, with where it is."""

    path: str
    offset: int
    detail: str

    def __str__(self) -> str:
        return f"{self.path} at offset {self.offset}: {self.detail}"


@dataclass
class RecoveryReport:
    """What recovery did, for logs and tests."""

    abnormal: bool
    check: str = "checkpoint"
    """Where the commit log check started: ``checkpoint`` (at the recovery point after a
    crash, up to :data:`CLEAN_RECHECK_BYTES` before it after a clean shutdown),
    ``last files`` (the third-to-last file, as 4.9.8's normal recovery: a clean shutdown
    whose checkpoint proves nothing) or ``full`` (the first file). See
    :attr:`check_reason` for why it was not the checkpoint."""
    check_reason: str = ""
    recovery_point: int = -1
    """End of the records the checkpoint proves (-1 when it was not used)."""
    scan_from: int = 0
    """Commit log offset the check started at."""
    commit_log_end: int = 0
    redispatch_from: int = 0
    redispatched: int = 0
    """Records handed to the dispatcher again (entries they already had are skipped)."""
    index: str = "off"
    """``off``, ``kept`` (as it was), ``repaired`` (tail cut and indexed again) or
    ``rebuilt`` (dropped and built from the commit log)."""
    index_files: int = 0
    """Index files kept."""
    index_dropped: int = 0
    """Index entries cut (repaired) or dropped (rebuilt) before indexing again."""
    seconds: float = 0.0
    """Wall time of the whole load (set by the message store)."""
    topic_queue_table: dict[tuple[str, int], int] = field(default_factory=dict)
    problems: list[StoreProblem] = field(default_factory=list)
    damaged: set[int] = field(default_factory=set)
    """Commit log offsets of whole records whose body fails BODYCRC (never delivered)."""
    destroyed_queues: set[tuple[str, int]] = field(default_factory=set)
    """(topic, queue id) of checked records whose consume queue is not there after a clean
    shutdown: destroyed on purpose, so not written again by the re-dispatch."""

    @property
    def full_check(self) -> bool:
        """The check covered the whole commit log."""
        return self.check == "full"

    def summary(self) -> str:
        """The one log line: what was checked, re-dispatched and kept, and how long."""
        kind = "abnormal" if self.abnormal else "normal"
        if self.check == "full":
            how = f"{kind} recovery, full check ({self.check_reason})"
        elif self.check == "last files":
            how = f"{kind} recovery from the third-to-last file ({self.check_reason})"
        else:
            how = f"{kind} recovery from the checkpoint"
        index = self.index
        if self.index == "kept":
            index = f"kept ({self.index_files} files)"
        elif self.index == "repaired":
            index = (
                f"kept ({self.index_files} files), {self.index_dropped:,} entries past the "
                "recovery point cut and indexed again"
            )
        elif self.index == "rebuilt":
            index = f"rebuilt ({self.index_dropped:,} entries dropped)"
        damage = f", {len(self.problems)} problems (see below)" if self.problems else ""
        return (
            f"{how}: scanned the commit log from offset {self.scan_from:,} to "
            f"{self.commit_log_end:,}, {self.redispatched:,} records re-dispatched, "
            f"index {index}{damage}, {self.seconds:.3f} s"
        )


def _check_and_find_end(
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    start: int,
    report: RecoveryReport,
    *,
    check_crc: bool,
    gaps: bool = False,
    absent_queue_is_gap: bool = True,
) -> tuple[int, int]:
    """Scan from ``start`` to the first record that does not frame (the end); returns
    the end and the newest store time met.

    On the way, a whole record whose body fails BODYCRC is only skipped (the records
    after it are good: truncating there would throw them away), and every consume queue
    entry of a scanned record is checked against it: a wrong entry is rewritten, the
    entry of a damaged record becomes a filler, so consumers skip exactly that record.
    With ``gaps``, a queue whose first record here lies past the queue's end raises
    :class:`ConsumeQueueMismatch`: the entries between belong to records before ``start``.
    Without ``absent_queue_is_gap``, a queue that does not exist at all is no gap but a
    queue destroyed on purpose (cleanUnusedTopic, cleanExpiredConsumerQueue), and its
    records are left out of it, as the check from the last files always did.
    """
    newest = 0
    first_seen: set[tuple[str, int]] = set()
    for req in commit_log.scan(start, check_crc=check_crc, strict=False, tolerate_crc=True):
        newest = max(newest, req.store_timestamp)
        mf = commit_log.queue.find_by_offset(req.commit_log_offset)
        path = str(mf.path) if mf is not None else "commitlog"
        if req.damaged:
            report.damaged.add(req.commit_log_offset)
            report.problems.append(
                StoreProblem(path, req.commit_log_offset, "BODYCRC does not match: skipped")
            )
        if req.transaction_type in (TRANSACTION_PREPARED, TRANSACTION_ROLLBACK):
            continue
        cq = queues.find(req.topic, req.queue_id, create=False)
        held = cq.max_offset if cq is not None else 0
        if cq is None and not absent_queue_is_gap:
            report.destroyed_queues.add((req.topic, req.queue_id))
        if (
            gaps
            and (cq is not None or absent_queue_is_gap)
            and (req.topic, req.queue_id) not in first_seen
        ):
            first_seen.add((req.topic, req.queue_id))
            if req.queue_offset > held:
                raise ConsumeQueueMismatch(
                    f"consume queue {req.topic}/{req.queue_id} ends at offset {held}, but the "
                    f"record at {req.commit_log_offset} checked from the recovery point has "
                    f"queue offset {req.queue_offset}"
                )
        if cq is None or req.queue_offset >= held:
            continue
        if req.damaged:
            entry = (0, FILLER_SIZE, 0)
        else:
            entry = (req.commit_log_offset, req.size, req.tags_code)
        if cq.repair(req.queue_offset, *entry) and not req.damaged:
            report.problems.append(
                StoreProblem(
                    str(cq.queue.store_path),
                    req.queue_offset,
                    f"entry did not match the commit log record at {req.commit_log_offset}: "
                    "rewritten",
                )
            )
    return max(commit_log.last_scan_end, start), newest


def _check_from_checkpoint(
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    checkpoint: StoreCheckpoint,
    report: RecoveryReport,
    *,
    check_crc: bool,
    index_enable: bool,
    clean: bool,
) -> tuple[int, int, int] | str:
    """Check from the recovery point (after a ``clean`` shutdown from the first record of
    the :data:`CLEAN_RECHECK_BYTES` before it): (start, end, newest store time met), or
    why the checkpoint disagrees with the files (then a full check is needed)."""
    proven = proven_timestamp(checkpoint, index_enable=index_enable)
    try:
        point = find_recovery_point(commit_log, queues, proven).offset
        start = point
        if clean:
            start = first_queued_record(commit_log, queues, point - CLEAN_RECHECK_BYTES, point)
        # After a clean shutdown every record had been dispatched, so a queue that is not
        # there was destroyed on purpose; after a crash it counts as a gap, as before.
        end, newest = _check_and_find_end(
            commit_log,
            queues,
            start,
            report,
            check_crc=check_crc,
            gaps=True,
            absent_queue_is_gap=not clean,
        )
    except ConsumeQueueMismatch as exc:
        return str(exc)
    if checkpoint.physic_msg_timestamp > newest:
        return (
            f"the checkpoint's physicMsgTimestamp {checkpoint.physic_msg_timestamp} is ahead "
            f"of the newest record after the recovery point (stored at {newest})"
        )
    report.recovery_point = point
    return start, end, newest


def recover(
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    dispatcher: Dispatcher,
    checkpoint: StoreCheckpoint,
    *,
    index: IndexService | None,
    last_exit_ok: bool,
    check_crc: bool,
) -> RecoveryReport:
    """Run normal or abnormal recovery on loaded (not yet started) components;
    ``index`` is the index the dispatcher builds (None when the index is off)."""
    report = RecoveryReport(abnormal=not last_exit_ok)
    for cq in queues.all():
        cq.recover()
    start, end, newest = _find_end(
        commit_log, queues, checkpoint, report, check_crc=check_crc, index_enable=index is not None
    )
    # The next record is stored no earlier than the newest one kept (see the put path).
    commit_log.last_store_timestamp = newest
    report.scan_from = start
    report.commit_log_end = end
    commit_log.truncate(end)
    for cq in queues.all():
        if cq.max_physic_offset > end or cq.max_offset > 0:
            cq.truncate_dirty(end)

    report.redispatch_from, queues_from = _prepare_redispatch(commit_log, queues, index, report)
    count = 0
    for req in commit_log.scan(report.redispatch_from, check_crc=False, strict=False):
        if req.commit_log_offset in report.damaged:
            continue  # the next record's entry pads a filler in its place
        to_cq = req.commit_log_offset >= queues_from and (
            (req.topic, req.queue_id) not in report.destroyed_queues
        )
        dispatcher.dispatch(req, to_cq=to_cq, to_index=index is not None)
        count += 1
    report.redispatched = count
    dispatcher.reput_from_offset = end

    for cq in queues.all():
        cq.correct_min_offset(commit_log.min_offset)
        report.topic_queue_table[(cq.topic, cq.queue_id)] = cq.max_offset
    for problem in report.problems:
        log.error("store damage: %s", problem)
    return report


def _find_end(
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    checkpoint: StoreCheckpoint,
    report: RecoveryReport,
    *,
    check_crc: bool,
    index_enable: bool,
) -> tuple[int, int, int]:
    """Check the commit log from where this recovery can start: (start, end, newest
    store time met). From the checkpoint when it proves something and agrees with the
    files; else, after a crash or when it disagrees, from the first file (full check);
    after a clean shutdown whose checkpoint proves nothing, from the third-to-last file."""
    files = commit_log.queue.files
    if not files:
        return 0, 0, 0
    kind = "abnormal" if report.abnormal else "normal"
    problem = checkpoint_problem(checkpoint, index_enable=index_enable)
    if problem is None:
        checked = _check_from_checkpoint(
            commit_log,
            queues,
            checkpoint,
            report,
            check_crc=check_crc,
            index_enable=index_enable,
            clean=not report.abnormal,
        )
        if not isinstance(checked, str):
            return checked
        problem = checked
    elif not report.abnormal:
        # A store last written by 4.9.8 (no full index file yet: indexMsgTimestamp 0) or
        # never flushed: 4.9.8's normal recovery, what a clean restart always did.
        log.warning(
            "normal recovery checks the commit log from its third-to-last file: %s", problem
        )
        report.check, report.check_reason = "last files", problem
        start = files[max(0, len(files) - 3)].file_from_offset
        end, newest = _check_and_find_end(commit_log, queues, start, report, check_crc=check_crc)
        return start, end, newest
    log.warning("%s recovery checks the whole commit log: %s", kind, problem)
    report.check, report.check_reason = "full", problem
    report.problems.clear()  # the full check finds them again
    report.damaged.clear()
    report.destroyed_queues.clear()
    start = commit_log.min_offset
    end, newest = _check_and_find_end(commit_log, queues, start, report, check_crc=check_crc)
    return start, end, newest


def _prepare_redispatch(
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    index: IndexService | None,
    report: RecoveryReport,
) -> tuple[int, int]:
    """Where re-dispatching starts, and where re-dispatching to the consume queues does
    (before it, records only go to the index).

    After a crash the index is first cut back to the start of the check; after a full
    check it is dropped (everything is re-dispatched). After a clean shutdown the queues
    hold every record up to their end and the index every record up to its last one:
    only what follows is re-dispatched (nothing, normally), and the index is kept, less
    any entry pointing at or past the end found (a record lost after the shutdown: the
    next record written there must be indexed)."""
    if report.abnormal or report.full_check:
        start = report.scan_from
        if index is not None:
            if report.full_check:
                report.index, report.index_dropped = "rebuilt", index.drop_all()
            else:
                dropped = index.repair_tail(start, _store_time(commit_log))
                report.index, report.index_dropped = "repaired", dropped
        queues_from = start
    else:
        cq_end = queues.max_physic_end()
        start = queues_from = cq_end if cq_end >= 0 else commit_log.min_offset
        if index is not None:
            report.index = "kept"
            end = report.commit_log_end
            if index.files and index.files[-1].end_phy_offset >= end:
                dropped = index.repair_tail(end, _store_time(commit_log))
                if dropped:
                    report.index, report.index_dropped = "repaired", dropped
            start = min(start, _indexed_end(commit_log, index))
    if index is not None:
        report.index_files = len(index.files)
    return max(start, commit_log.min_offset), max(queues_from, commit_log.min_offset)


def _indexed_end(commit_log: CommitLog, index: IndexService) -> int:
    """End of the last record the index holds (0 without index files). The index names
    where that record starts; re-dispatching from there would index it again."""
    if not index.files:
        return 0
    last = index.files[-1].end_phy_offset
    try:
        req = commit_log.check_at(last)
    except CorruptRecordError:
        return last
    return last + req.size if isinstance(req, DispatchRequest) else last


def _store_time(commit_log: CommitLog) -> Callable[[int], int | None]:
    """Store time of the record at an offset (None when none is readable there)."""

    def store_time(offset: int) -> int | None:
        try:
            req = commit_log.check_at(offset)
        except CorruptRecordError:
            return None
        return req.store_timestamp if isinstance(req, DispatchRequest) else None

    return store_time

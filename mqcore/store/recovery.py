"""Recovery: bring commit log, consume queues and index back to one consistent end.

Byte layout: none of its own; it reads the ``abort`` marker and ``checkpoint`` (see
:mod:`checkpoint`) and the commit log / consume queue formats.

As in RocketMQ 4.9.8 (spec §9.2):

* every consume queue finds its end (first invalid 20-byte entry, scanning from its
  third-to-last file);
* **normal** (no ``abort`` file): scan the commit log from its third-to-last file,
  validating every record (magic, size, BODYCRC when ``checkCRCOnRecover``), to find the
  true end;
* **abnormal** (``abort`` left by a crash): pick the newest commit log file whose first
  record was stored at or before the checkpoint's min timestamp (min(physic, logics) - 3 s,
  or the index timestamp when ``messageIndexSafe``) and scan from there;
* the commit log is truncated at the end found (torn tail zeroed, later files deleted),
  consume queue entries pointing past it are dropped, and every record not yet in a
  consume queue or the index is re-dispatched (duplicates are skipped);
* finally the per-queue next offsets (topicQueueTable) are rebuilt from the queues.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from mqcore.errors import CorruptRecordError
from mqcore.store.checkpoint import StoreCheckpoint
from mqcore.store.commitlog import TRANSACTION_PREPARED, TRANSACTION_ROLLBACK, CommitLog
from mqcore.store.consume_queue import FILLER_SIZE
from mqcore.store.dispatcher import ConsumeQueueTable, Dispatcher

log = logging.getLogger(__name__)


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
    scan_from: int = 0
    commit_log_end: int = 0
    redispatch_from: int = 0
    redispatched: int = 0
    topic_queue_table: dict[tuple[str, int], int] = field(default_factory=dict)
    problems: list[StoreProblem] = field(default_factory=list)
    damaged: set[int] = field(default_factory=set)
    """Commit log offsets of whole records whose body fails BODYCRC (never delivered)."""


def _first_store_timestamp(commit_log: CommitLog, file_index: int) -> int:
    """STORETIMESTAMP of the first record of a file; 0 when it does not start with one."""
    mf = commit_log.queue.files[file_index]
    try:
        res = commit_log.check_at(mf.file_from_offset, check_crc=False)
    except CorruptRecordError:
        return 0
    if res is None or isinstance(res, int):
        return 0
    return res.store_timestamp


def choose_abnormal_start(commit_log: CommitLog, min_timestamp: int) -> int:
    """Offset of the newest file whose first record is not newer than ``min_timestamp``."""
    files = commit_log.queue.files
    for i in range(len(files) - 1, -1, -1):
        ts = _first_store_timestamp(commit_log, i)
        if ts != 0 and ts <= min_timestamp:
            return files[i].file_from_offset
    return files[0].file_from_offset if files else 0


def find_commit_log_end(commit_log: CommitLog, start: int, *, check_crc: bool) -> int:
    """Scan from ``start``; the first invalid record (or zeros) is the end."""
    for _ in commit_log.scan(start, check_crc=check_crc, strict=False):
        pass
    return max(commit_log.last_scan_end, start)


def _check_and_find_end(
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    start: int,
    report: RecoveryReport,
    *,
    check_crc: bool,
) -> int:
    """Scan from ``start`` to the first record that does not frame (the end).

    On the way, a whole record whose body fails BODYCRC is only skipped (the records
    after it are good: truncating there would throw them away), and every consume queue
    entry of a scanned record is checked against it: a wrong entry is rewritten, the
    entry of a damaged record becomes a filler, so consumers skip exactly that record.
    """
    for req in commit_log.scan(start, check_crc=check_crc, strict=False, tolerate_crc=True):
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
        if cq is None or req.queue_offset >= cq.max_offset:
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
    return max(commit_log.last_scan_end, start)


def recover(
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    dispatcher: Dispatcher,
    checkpoint: StoreCheckpoint,
    *,
    last_exit_ok: bool,
    check_crc: bool,
    index_enable: bool,
    index_safe: bool,
) -> RecoveryReport:
    """Run normal or abnormal recovery on loaded (not yet started) components."""
    report = RecoveryReport(abnormal=not last_exit_ok)
    for cq in queues.all():
        cq.recover()

    files = commit_log.queue.files
    if last_exit_ok:
        start = files[max(0, len(files) - 3)].file_from_offset if files else 0
    else:
        min_ts = checkpoint.min_timestamp_index if index_safe else checkpoint.min_timestamp
        start = choose_abnormal_start(commit_log, min_ts)
    report.scan_from = start
    end = (
        _check_and_find_end(commit_log, queues, start, report, check_crc=check_crc) if files else 0
    )
    report.commit_log_end = end
    commit_log.truncate(end)
    log.info(
        "%s recovery: commit log end %d (scan from %d)",
        "abnormal" if report.abnormal else "normal",
        end,
        start,
    )

    for cq in queues.all():
        if cq.max_physic_offset > end or cq.max_offset > 0:
            cq.truncate_dirty(end)

    # Re-dispatch what the queues and the index do not hold yet.
    cq_end = queues.max_physic_end()
    cq_from = cq_end if cq_end >= 0 else commit_log.min_offset
    if report.abnormal:
        cq_from = min(cq_from, start)
    redispatch_from = cq_from
    index = dispatcher.index
    if index_enable and index is not None:
        index_files = getattr(index, "files", [])
        idx_end = max((f.end_phy_offset for f in index_files), default=0)
        redispatch_from = min(redispatch_from, idx_end)
    redispatch_from = max(redispatch_from, commit_log.min_offset)
    report.redispatch_from = redispatch_from
    count = 0
    for req in commit_log.scan(redispatch_from, check_crc=False, strict=False):
        if req.commit_log_offset in report.damaged:
            continue  # the next record's entry pads a filler in its place
        dispatcher.dispatch(req, to_index=index_enable)
        count += 1
    report.redispatched = count
    dispatcher.reput_from_offset = end

    for cq in queues.all():
        cq.correct_min_offset(commit_log.min_offset)
        report.topic_queue_table[(cq.topic, cq.queue_id)] = cq.max_offset
    for problem in report.problems:
        log.error("store damage: %s", problem)
    return report

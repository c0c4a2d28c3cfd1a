"""Cleanup: delete expired commit log files and what only points into them.

Byte layout: none of its own; whole files go (commit log files, consume queue files,
index files), never bytes inside a file.

RocketMQ's ``CleanCommitLogService`` / ``CleanConsumeQueueService``:

* commit log files older than ``fileReservedTime`` hours (by modification time) are
  deleted when the hour is one of ``deleteWhen`` (``"04"``, or ``"04;16"``), or when the
  disk holding the commit log is fuller than ``diskMaxUsedSpaceRatio`` percent, or on a
  manual request. Above ``diskSpaceCleanForciblyRatio`` (and with
  ``cleanFileForciblyEnable``) the oldest files go regardless of age. The file being
  written is never deleted.
* then consume queue files whose last entry points below the commit log's new min
  offset, and index files whose endPhyOffset is below it, are deleted, and every queue's
  min offset is corrected at once.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mqcore.store.commitlog import CommitLog
from mqcore.store.dispatcher import ConsumeQueueTable
from mqcore.store.store_config import MessageStoreConfig

log = logging.getLogger(__name__)


class ExpiringIndex(Protocol):
    def delete_expired(self, min_commit_log_offset: int) -> None: ...


def disk_used_ratio(path: str | Path) -> float:
    """``UtilAll.getDiskPartitionSpaceUsedPercent``: the used share of the partition
    holding ``path`` (blocks reserved for root count neither as used nor as usable),
    rounded up to two decimals; -1.0 when it cannot be measured. A directory the store
    creates on first use (4.9.8 creates it at start) is measured where it will be."""
    target = Path(path)
    while not target.exists() and target.parent != target:
        target = target.parent
    try:
        st = os.statvfs(target)
    except OSError:
        return -1.0
    total = st.f_blocks * st.f_frsize
    if total <= 0:
        return -1.0
    used = total - st.f_bfree * st.f_frsize
    entire = used + st.f_bavail * st.f_frsize
    percent = -(-used * 100 // entire) if entire else 0
    return percent / 100.0


@dataclass
class CleanupReport:
    commit_log_files_deleted: int = 0
    consume_queue_files_deleted: int = 0
    commit_log_min_offset: int = 0
    disk_ratio: float = 0.0
    forced: bool = False


class CleanupService:
    """Runs one cleanup pass on demand (the store calls it periodically)."""

    def __init__(
        self,
        config: MessageStoreConfig,
        commit_log: CommitLog,
        queues: ConsumeQueueTable,
        index: ExpiringIndex | None,
        *,
        disk_ratio: Callable[[Path], float] = disk_used_ratio,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.commit_log = commit_log
        self.queues = queues
        self.index = index
        self.disk_ratio = disk_ratio
        self.clock = clock
        self.disk_full = False
        """True above ``diskSpaceWarningLevelRatio``: the broker should refuse writes."""

    def is_time_to_delete(self) -> bool:
        hour = time.localtime(self.clock()).tm_hour
        return any(int(h) == hour for h in self.config.delete_when.split(";") if h.strip())

    def check_disk(self) -> float:
        """Refuse writes above ``diskSpaceWarningLevelRatio``; resume below it."""
        ratio = self.disk_ratio(self.commit_log.path)
        full = ratio > self.config.disk_space_warning_level_ratio
        if full != self.disk_full:
            if full:
                log.error("disk %.0f%% used: refusing writes until space returns", ratio * 100)
            else:
                log.warning("disk %.0f%% used: accepting writes again", ratio * 100)
        self.disk_full = full
        return ratio

    def run(self, *, manual: bool = False) -> CleanupReport:
        cfg = self.config
        report = CleanupReport()
        ratio = self.check_disk()
        report.disk_ratio = ratio
        clean_immediately = ratio > cfg.disk_space_clean_forcibly_ratio
        space_to_delete = ratio > cfg.disk_max_used_space_ratio / 100
        if self.is_time_to_delete() or space_to_delete or manual:
            force = cfg.clean_file_forcibly_enable and clean_immediately
            report.forced = force
            now_ms = int(self.clock() * 1000)
            report.commit_log_files_deleted = self.commit_log.queue.delete_expired_by_time(
                cfg.file_reserved_time * 3_600_000, force=force, now_ms=lambda: now_ms
            )
            if report.commit_log_files_deleted:
                log.info(
                    "deleted %d expired commit log files (disk %.0f%%)",
                    report.commit_log_files_deleted,
                    ratio * 100,
                )
        min_phy = self.commit_log.min_offset
        report.commit_log_min_offset = min_phy
        for cq in self.queues.all():
            report.consume_queue_files_deleted += cq.delete_expired(min_phy)
        if self.index is not None:
            self.index.delete_expired(min_phy)
        return report

"""The index files of a store (RocketMQ's ``IndexService``): build, roll, query, expire.

Index files live in ``<root>/index/`` and are named by creation time, so name order is
creation order. Keys are ``topic#uniqKey`` then ``topic#key`` for every space-separated
key; a file that fills up is flushed and a new one continues from its end values.

The dispatcher calls :meth:`IndexService.build_index` for every record (recovery replays
records, and records below the last file's endPhyOffset are skipped, so a rebuild does
not double-index). Queries walk files newest to oldest as ``queryOffset`` does; because a
replayed boundary record may be indexed twice, duplicate offsets are dropped.

All methods take one lock: the dispatcher thread writes while broker threads query.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mqcore.errors import StoreError
from mqcore.store.index_file import IndexFile, index_file_name

__all__ = ["IndexQueryResult", "IndexService", "build_key"]

log = logging.getLogger(__name__)

# MessageSysFlag transaction bits (bits 2-3).
_TRANSACTION_MASK = 0x0C
_TRANSACTION_ROLLBACK = 0x0C


def build_key(topic: str, key: str) -> str:
    """The indexed string for ``key`` of ``topic`` (``IndexService.buildKey``)."""
    return f"{topic}#{key}"


@dataclass(frozen=True)
class IndexQueryResult:
    """Offsets found (newest first) and the newest file's end values, which the
    QUERY_MESSAGE response reports as ``indexLastUpdateTimestamp``/``...Phyoffset``."""

    phy_offsets: list[int] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phyoffset: int = 0


class IndexService:
    """All index files of one store root.

    ``readonly`` (offline tools) opens files read-only and never creates, deletes or
    writes anything; building then raises :class:`StoreError`.
    """

    def __init__(
        self,
        store_path_root: Path,
        max_hash_slot_num: int,
        max_index_num: int,
        *,
        readonly: bool = False,
    ) -> None:
        self.store_path = Path(store_path_root) / "index"
        self.max_hash_slot_num = max_hash_slot_num
        self.max_index_num = max_index_num
        self.readonly = readonly
        self._files: list[IndexFile] = []
        self._lock = threading.RLock()
        self._last_index_timestamp = 0

    # -- loading ------------------------------------------------------------------------

    def load(self, last_exit_ok: bool, checkpoint_index_ts: int) -> None:
        """Map every index file, oldest first.

        After an abnormal exit, files whose endTimestamp is past the checkpoint's index
        timestamp may be half written: they are deleted so recovery rebuilds them from the
        commit log. Read-only loading keeps them (an offline tool shows what is on disk).
        Bad files raise :class:`CorruptRecordError`.
        """
        with self._lock:
            self._close_all()
            self._last_index_timestamp = checkpoint_index_ts
            if not self.store_path.is_dir():
                return
            names = sorted(p.name for p in self.store_path.iterdir() if p.is_file())
            for name in names:
                if not name.isdigit():
                    log.warning("ignoring %s: not an index file name", self.store_path / name)
                    continue
                f = IndexFile.open(
                    self.store_path / name,
                    self.max_hash_slot_num,
                    self.max_index_num,
                    readonly=self.readonly,
                )
                if not last_exit_ok and not self.readonly and f.end_timestamp > checkpoint_index_ts:
                    log.info("abnormal exit: deleting index file %s (past checkpoint)", f.path)
                    f.destroy()
                    continue
                self._files.append(f)
            for f in self._files:
                if f.is_write_full:
                    self._last_index_timestamp = max(self._last_index_timestamp, f.end_timestamp)

    # -- writing ------------------------------------------------------------------------

    def build_index(
        self,
        topic: str,
        keys: str | None,
        uniq_key: str | None,
        commit_log_offset: int,
        store_timestamp: int,
        sys_flag: int,
    ) -> None:
        """Index one dispatched record (``IndexService.buildIndex``)."""
        record = (topic, keys, uniq_key, commit_log_offset, store_timestamp, sys_flag)
        self.build_index_many((record,))

    def build_index_many(
        self, records: Sequence[tuple[str, str | None, str | None, int, int, int]]
    ) -> None:
        """Index ``(topic, keys, uniq_key, offset, store_timestamp, sys_flag)`` records in
        commit log order, under one lock hold and with one header write per file.

        A record below the last file's endPhyOffset is already indexed (a replay) and is
        skipped; that only holds because records come in offset order across topics."""
        if self.readonly:
            raise StoreError("index service is read-only")
        with self._lock:
            f = self._last_writable_file()
            try:
                for topic, keys, uniq_key, offset, store_ts, sys_flag in records:
                    if sys_flag & _TRANSACTION_MASK == _TRANSACTION_ROLLBACK:
                        continue
                    if offset < f.end_phy_offset:
                        continue
                    prefix = topic + "#"
                    index_keys = [uniq_key] if uniq_key is not None else []
                    if keys:
                        index_keys.extend(k for k in keys.split(" ") if k)
                    for key in index_keys:
                        while not f.put_key(prefix + key, offset, store_ts, write_header=False):
                            f.write_header()
                            f = self._last_writable_file()
            finally:
                f.write_header()

    def _last_writable_file(self) -> IndexFile:
        """The last file, or a new one when it is full (``getAndCreateLastIndexFile``)."""
        prev = self._files[-1] if self._files else None
        if prev is not None and not prev.is_write_full:
            return prev
        self.store_path.mkdir(parents=True, exist_ok=True)
        stamp = int(time.time() * 1000)
        name = index_file_name(stamp)
        # Two files made in one millisecond (tiny test geometries) must not collide, and
        # name order must stay creation order.
        while (self.store_path / name).exists() or (prev is not None and name <= prev.name):
            stamp += 1
            name = index_file_name(stamp)
        new = IndexFile.create(
            self.store_path / name,
            self.max_hash_slot_num,
            self.max_index_num,
            end_phy_offset=prev.end_phy_offset if prev else 0,
            end_timestamp=prev.end_timestamp if prev else 0,
        )
        self._files.append(new)
        if prev is not None:
            self._flush_file(prev)
        return new

    def _flush_file(self, f: IndexFile) -> None:
        f.flush()
        if f.is_write_full:
            self._last_index_timestamp = max(self._last_index_timestamp, f.end_timestamp)

    def flush(self) -> None:
        """msync the newest file; full files were flushed when they rolled."""
        if self.readonly:
            return
        with self._lock:
            if self._files:
                self._flush_file(self._files[-1])

    # -- reading ------------------------------------------------------------------------

    def query(self, topic: str, key: str, max_num: int, begin: int, end: int) -> IndexQueryResult:
        """Up to ``max_num`` commit log offsets of records indexed under ``topic#key``
        with store time in ``[begin, end]``, newest first (``queryOffset``).

        Callers cap ``max_num`` (RocketMQ: ``maxMsgsNumBatch`` = 64) and must re-check the
        record's real key: only hashes are stored.
        """
        full_key = build_key(topic, key)
        found: list[int] = []
        seen: set[int] = set()
        last_ts = last_phy = 0
        with self._lock:
            for i in range(len(self._files) - 1, -1, -1):
                f = self._files[i]
                if i == len(self._files) - 1:
                    last_ts, last_phy = f.end_timestamp, f.end_phy_offset
                if f.is_time_matched(begin, end):
                    f.select_phy_offsets(found, seen, full_key, max_num, begin, end)
                if f.begin_timestamp < begin or len(found) >= max_num:
                    break
        return IndexQueryResult(found, last_ts, last_phy)

    @property
    def files(self) -> list[IndexFile]:
        """The loaded files, oldest first (a copy)."""
        with self._lock:
            return list(self._files)

    @property
    def last_index_timestamp(self) -> int:
        """End timestamp of the newest file that was full and flushed: the checkpoint's
        ``indexMsgTimestamp``."""
        return self._last_index_timestamp

    # -- cleanup ------------------------------------------------------------------------

    def delete_expired(self, min_commit_log_offset: int) -> None:
        """Delete the oldest files whose endPhyOffset < ``min_commit_log_offset`` (they only
        point into deleted commit log); the newest file always stays."""
        if self.readonly:
            return
        with self._lock:
            doomed = []
            for f in self._files[:-1]:
                if f.end_phy_offset >= min_commit_log_offset:
                    break
                doomed.append(f)
            for f in doomed:
                log.info("deleting expired index file %s", f.path)
                f.destroy()
            del self._files[: len(doomed)]

    def shutdown(self) -> None:
        """Flush (when writable) and unmap every file."""
        with self._lock:
            if not self.readonly and self._files:
                self._flush_file(self._files[-1])
            self._close_all()

    def _close_all(self) -> None:
        for f in self._files:
            f.close()
        self._files = []

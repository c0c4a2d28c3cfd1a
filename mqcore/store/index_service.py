"""The index files of a store (RocketMQ's ``IndexService``): build, roll, query, expire.

Index files live in ``<root>/index/`` and are named by creation time, so name order is
creation order. Keys are ``topic#uniqKey`` then ``topic#key`` for every space-separated
key; a file that fills up is flushed and a new one continues from its end values.

The dispatcher indexes records in commit log order (recovery replays records, and records
below the last file's endPhyOffset are skipped, so a replay does not double-index).
Queries walk files newest to oldest as ``queryOffset`` does; because a replayed boundary
record may be indexed twice, duplicate offsets are dropped. After a crash the files are
kept and their tail repaired (:meth:`IndexService.repair_tail`).

All methods take one lock: the dispatcher thread writes while broker threads query.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
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
        self._rolled: list[IndexFile] = []
        """Files that filled up since the last :meth:`flush` (it syncs them)."""
        self._lock = threading.RLock()

    # -- loading ------------------------------------------------------------------------

    def load(self) -> None:
        """Map every index file, oldest first; bad files raise :class:`CorruptRecordError`.

        Files are kept whatever the last exit was: after a crash, recovery cuts the
        newest entries back to what the checkpoint proves (:meth:`repair_tail`) and
        indexes the records after that point again, instead of dropping the files (as
        4.9.8 does) and losing or rebuilding everything they held."""
        with self._lock:
            self._close_all()
            if not self.store_path.is_dir():
                return
            names = sorted(p.name for p in self.store_path.iterdir() if p.is_file())
            for name in names:
                if not name.isdigit():
                    log.warning("ignoring %s: not an index file name", self.store_path / name)
                    continue
                self._files.append(
                    IndexFile.open(
                        self.store_path / name,
                        self.max_hash_slot_num,
                        self.max_index_num,
                        readonly=self.readonly,
                    )
                )

    def repair_tail(self, phy_offset: int, store_time: Callable[[int], int | None]) -> int:
        """After a crash: keep what indexes records below ``phy_offset``, drop the rest.

        Entries a cut-short batch wrote past the newest file's header go first, then the
        newest entries pointing at ``phy_offset`` or later, file by file from the newest;
        a newer file left empty is deleted. Returns how many entries were dropped; the
        caller indexes the records from ``phy_offset`` on again."""
        if self.readonly:
            raise StoreError("index service is read-only")
        with self._lock:
            if not self._files:
                return 0
            dropped = self._files[-1].drop_stray_entries()
            while self._files:
                f = self._files[-1]
                dropped += f.drop_from(phy_offset, store_time)
                if f.index_count > 1 or len(self._files) == 1:
                    break
                log.info("index file %s left empty by the repair: deleted", f.path)
                f.destroy()
                self._files.pop()
            return dropped

    def drop_all(self) -> int:
        """Delete every index file (a full recovery check indexes everything again);
        returns how many entries they held."""
        if self.readonly:
            raise StoreError("index service is read-only")
        with self._lock:
            held = sum(f.index_count - 1 for f in self._files)
            for f in self._files:
                f.destroy()
            self._files = []
            self._rolled = []
            return held

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
            prev.write_header()
            self._rolled.append(prev)  # synced by the next flush, off the event loop
        return new

    def flush(self) -> None:
        """Make the index durable: the newest file and those that filled up since the
        last flush.

        The headers are written under the lock, which the dispatcher holds while it
        adds entries; the sync runs outside it. The dispatcher runs on the event loop for
        every batch, and syncing a 400 MB file whose dirty pages are scattered hash
        slots takes milliseconds, tens of them on a slow disk: held under the lock, that
        stalled every send and pull each second (``flushIntervalConsumeQueue``), and a
        roll synced a whole full file on the loop itself."""
        if self.readonly:
            return
        with self._lock:
            files = [*self._rolled, *self._files[-1:]]
            self._rolled = []
            for f in files:
                if not f.closed:
                    f.write_header()
        for f in files:
            f.sync()

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
            self._rolled = [f for f in self._rolled if f not in doomed]

    def shutdown(self) -> None:
        """Flush (when writable) and unmap every file."""
        with self._lock:
            if not self.readonly:
                for f in [*self._rolled, *self._files[-1:]]:
                    if not f.closed:
                        f.flush()
            self._rolled = []
            self._close_all()

    def _close_all(self) -> None:
        for f in self._files:
            f.close()
        self._files = []
        self._rolled = []

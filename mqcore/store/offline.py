"""A read-only view of a store directory for offline tools (`mq store ...`).

It never writes, never creates a file and never takes the store lock, so it is safe on a
live broker's store and on read-only copies. File sizes are read from the files
themselves, so it opens stores written with any ``mappedFileSize*`` settings. Problems
are raised as :class:`CorruptRecordError` with the file and offset, or collected in
:attr:`OfflineStore.problems` where the view can carry on past them.
"""

from __future__ import annotations

import fcntl
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mqcore.errors import CorruptRecordError, StoreError
from mqcore.message import MessageExt, decode_record
from mqcore.message.record import DispatchRequest
from mqcore.store.checkpoint import StoreCheckpoint
from mqcore.store.commitlog import CommitLog, check_message
from mqcore.store.consume_queue import ConsumeQueue
from mqcore.store.index_file import IndexFile
from mqcore.store.index_service import IndexService
from mqcore.store.mapped_file import MappedFile
from mqcore.store.store_config import MessageStoreConfig, parse_delay_levels

DEFAULT_DELAY_LEVELS = MessageStoreConfig().message_delay_level


@dataclass(slots=True)
class CommitLogScan:
    """What one pass over the commit log found."""

    end_offset: int = 0
    """End of valid data (where a recovery would truncate)."""
    records: int = 0
    first_store_timestamp: int = 0
    last_store_timestamp: int = 0
    per_topic: dict[str, int] = field(default_factory=dict)
    corruption: CorruptRecordError | None = None


def _file_size(directory: Path) -> int | None:
    for p in sorted(directory.iterdir()):
        if p.is_file() and p.name.isdigit():
            return p.stat().st_size
    return None


def lock_holder(root: Path) -> int | None:
    """Pid holding the store's POSIX lock, or None; tests the lock without taking it."""
    path = root / "lock"
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fmt = "hhqqi"
        req = struct.pack(fmt, fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0) + bytes(8)
        try:
            res = fcntl.fcntl(fd, fcntl.F_GETLK, req)
        except OSError:
            return None
        l_type, _w, _s, _l, pid = struct.unpack_from(fmt, res)
        return int(pid) if l_type != fcntl.F_UNLCK and pid > 0 else None
    finally:
        os.close(fd)


class OfflineStore:
    """Read-only access to every file of a store root."""

    def __init__(self, root: Path, *, delay_levels: str = DEFAULT_DELAY_LEVELS) -> None:
        self.root = root
        if not root.is_dir():
            raise StoreError(f"{root} is not a directory (pass the store root, e.g. ~/store)")
        markers = ("commitlog", "consumequeue", "config", "checkpoint", "index")
        if not any((root / m).exists() for m in markers):
            raise StoreError(
                f"{root} does not look like a store root (no commitlog/, consumequeue/, "
                "config/ or checkpoint)"
            )
        self.delay_table = parse_delay_levels(delay_levels)
        self.commit_log_path = root / "commitlog"
        self.consume_queue_path = root / "consumequeue"
        self.index_path = root / "index"
        size = _file_size(self.commit_log_path) if self.commit_log_path.is_dir() else None
        self.commit_log_file_size = size or 0
        self.commitlog = CommitLog(
            self.commit_log_path, size or 1, readonly=True, delay_table=self.delay_table
        )
        if size:
            self.commitlog.load()
        self._scan: CommitLogScan | None = None
        self._queues: dict[tuple[str, int], ConsumeQueue] = {}
        self._index_files: list[IndexFile] | None = None

    # -- commit log ----------------------------------------------------------------------
    @property
    def commit_log_files(self) -> list[MappedFile]:
        return list(self.commitlog.queue.files)

    def walk_commit_log(
        self, *, check_crc: bool = False, from_offset: int | None = None
    ) -> Iterator[tuple[int, DispatchRequest | CorruptRecordError]]:
        """Yield ``(offset, record)`` for every record, or ``(offset, error)`` where a
        file stops making sense; the walk then resumes at the next file (a BLANK tail or
        zeros end a file normally). The commit log's own scan, one file at a time."""
        for mf in self.commit_log_files:
            if from_offset is not None and mf.file_end_offset <= from_offset:
                continue
            start = max(mf.file_from_offset, from_offset or 0)
            records = self.commitlog.scan(
                start, check_crc=check_crc, strict=True, until=mf.file_end_offset
            )
            try:
                for req in records:
                    yield req.commit_log_offset, req
            except CorruptRecordError as exc:
                yield (start if exc.offset is None else exc.offset), exc

    def scan(self) -> CommitLogScan:
        """One pass (cached): end of data, record count, time range, counts per topic."""
        if self._scan is not None:
            return self._scan
        scan = CommitLogScan(end_offset=self.commitlog.min_offset)
        for offset, res in self.walk_commit_log():
            if isinstance(res, CorruptRecordError):
                scan.corruption = scan.corruption or res
                break
            scan.records += 1
            scan.end_offset = offset + res.size
            if not scan.first_store_timestamp:
                scan.first_store_timestamp = res.store_timestamp
            scan.last_store_timestamp = res.store_timestamp
            scan.per_topic[res.topic] = scan.per_topic.get(res.topic, 0) + 1
        self._scan = scan
        return scan

    @property
    def min_offset(self) -> int:
        return self.commitlog.min_offset

    def read_message(self, offset: int, *, read_body: bool = True) -> MessageExt:
        """Decode the record at commit log ``offset`` (CorruptRecordError if none)."""
        view = self.commitlog.get_message(offset)
        try:
            return decode_record(view, 0, strict=True, read_body=read_body)
        except CorruptRecordError as exc:
            mf = self.commitlog.queue.find_by_offset(offset)
            raise CorruptRecordError(
                exc.detail, path=str(mf.path) if mf else None, offset=offset
            ) from None

    def check_at(self, offset: int) -> DispatchRequest | None:
        """The record at ``offset`` as the dispatcher sees it (None: not a message)."""
        mf = self.commitlog.queue.find_by_offset(offset)
        if mf is None:
            return None
        res = check_message(
            mf.view,
            offset - mf.file_from_offset,
            check_crc=False,
            delay_table=self.delay_table,
            path=str(mf.path),
            base_offset=mf.file_from_offset,
        )
        return res if isinstance(res, DispatchRequest) else None

    # -- consume queues ------------------------------------------------------------------
    def queue_ids(self) -> dict[str, list[int]]:
        """Topics and queue ids present under ``consumequeue/``."""
        out: dict[str, list[int]] = {}
        if not self.consume_queue_path.is_dir():
            return out
        for topic_dir in sorted(self.consume_queue_path.iterdir()):
            if not topic_dir.is_dir():
                continue
            ids = sorted(
                int(q.name) for q in topic_dir.iterdir() if q.is_dir() and q.name.isdigit()
            )
            if ids:
                out[topic_dir.name] = ids
        return out

    def consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        """The queue, loaded and recovered in memory (raises CorruptRecordError)."""
        key = (topic, queue_id)
        cq = self._queues.get(key)
        if cq is None:
            qdir = self.consume_queue_path / topic / str(queue_id)
            size = _file_size(qdir) if qdir.is_dir() else None
            cq = ConsumeQueue(topic, queue_id, self.consume_queue_path, size or 20, readonly=True)
            if size:
                if size % 20:
                    raise CorruptRecordError(
                        f"consume queue file size {size} is not a multiple of 20",
                        path=str(qdir),
                        offset=0,
                    )
                cq.load()
                cq.recover()
                cq.correct_min_offset(self.commitlog.min_offset)
            self._queues[key] = cq
        return cq

    # -- index, checkpoint, markers ------------------------------------------------------
    def index_files(self) -> list[IndexFile]:
        if self._index_files is None:
            files: list[IndexFile] = []
            if self.index_path.is_dir():
                for p in sorted(self.index_path.iterdir()):
                    if p.is_file():
                        files.append(IndexFile.open(p, readonly=True))
            self._index_files = files
        return self._index_files

    def query_key(
        self, topic: str, key: str, *, max_num: int = 64, begin: int = 0, end: int = 2**63 - 1
    ) -> list[MessageExt]:
        """Messages of ``topic`` carrying ``key`` (a key or unique key) stored in
        ``[begin, end]``, oldest first. Index entries hold only hashes, so every hit is
        re-checked against the record's real keys."""
        files = self.index_files()
        if not files:
            return []
        service = IndexService(
            self.root, files[0].max_hash_slot_num, files[0].max_index_num, readonly=True
        )
        try:
            service.load()
            result = service.query(topic, key, max_num, begin, end)
        finally:
            service.shutdown()
        found = []
        for phy in result.phy_offsets:
            if phy < self.min_offset:
                continue
            msg = self.read_message(phy)
            if msg.topic == topic and (key in msg.keys or msg.unique_key == key):
                found.append(msg)
        return sorted(found, key=lambda m: (m.store_timestamp, m.commit_log_offset))

    def checkpoint(self) -> StoreCheckpoint | None:
        path = self.root / "checkpoint"
        return StoreCheckpoint(path, readonly=True) if path.exists() else None

    @property
    def abort_exists(self) -> bool:
        return (self.root / "abort").exists()

    def lock_holder(self) -> int | None:
        return lock_holder(self.root)

    def close(self) -> None:
        for cq in self._queues.values():
            cq.close()
        for f in self._index_files or []:
            f.close()
        self.commitlog.close()

    def __enter__(self) -> OfflineStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

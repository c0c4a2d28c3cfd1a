"""MappedFileQueue: an append-only logical byte stream cut into equal-size mapped files.

Byte layout: a directory of files, each exactly ``mapped_file_size`` bytes, named by the
20-digit decimal logical offset of their first byte::

    <dir>/00000000000000000000   logical bytes [0, S)
    <dir>/00000000000001048576   logical bytes [S, 2S)   (S = 1048576 here)

Logical offset ``X`` lives in the file starting at ``X - X % S`` at position ``X % S``.
The head files may have been deleted (cleanup), so the first file need not start at 0.

The list of files is replaced, never mutated in place, so readers on other threads
(flush, pull) can iterate a snapshot without taking the lock.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from pathlib import Path

from mqcore.errors import CorruptRecordError, StoreError
from mqcore.store.mapped_file import MappedFile, offset_to_file_name


class MappedFileQueue:
    """Files of one commit log or one consume queue."""

    def __init__(self, store_path: Path, mapped_file_size: int, *, readonly: bool = False) -> None:
        self.store_path = store_path
        self.mapped_file_size = mapped_file_size
        self.readonly = readonly
        self.files: list[MappedFile] = []
        self.flushed_where = 0
        self._lock = threading.Lock()

    # -- loading -----------------------------------------------------------------------
    def load(self) -> None:
        """Map every file in the directory, in offset order; sizes must all match.

        Positions start at the file size (full); recovery sets the real end.
        """
        if not self.store_path.is_dir():
            return
        names = sorted(p for p in self.store_path.iterdir() if p.is_file() and p.name.isdigit())
        files: list[MappedFile] = []
        try:
            for p in names:
                files.append(MappedFile(p, self.mapped_file_size, readonly=self.readonly))
        except BaseException:
            for mf in files:
                mf.close()
            raise
        for prev, cur in itertools.pairwise(files):
            if cur.file_from_offset != prev.file_from_offset + self.mapped_file_size:
                for mf in files:
                    mf.close()
                raise CorruptRecordError(
                    f"file does not follow {prev.path.name} (gap or overlap)",
                    path=str(cur.path),
                    offset=0,
                )
        self.files = files

    # -- lookup ------------------------------------------------------------------------
    @property
    def first_file(self) -> MappedFile | None:
        files = self.files
        return files[0] if files else None

    @property
    def last_file(self) -> MappedFile | None:
        files = self.files
        return files[-1] if files else None

    @property
    def min_offset(self) -> int:
        """Logical offset of the first byte still on disk (-1 when empty, like Java)."""
        files = self.files
        return files[0].file_from_offset if files else -1

    @property
    def max_offset(self) -> int:
        """Logical offset just past the written data."""
        files = self.files
        return files[-1].max_offset if files else 0

    def find_by_offset(self, offset: int) -> MappedFile | None:
        """The file holding logical ``offset``, or None when it is not on disk."""
        files = self.files
        if not files:
            return None
        first = files[0].file_from_offset
        idx = (offset - first) // self.mapped_file_size
        if 0 <= idx < len(files):
            mf = files[idx]
            if mf.file_from_offset <= offset < mf.file_end_offset:
                return mf
        return None

    def get_last_file(self, start_offset: int = 0, *, create: bool = True) -> MappedFile | None:
        """The file to append to; creates the next one when the last is full.

        ``start_offset`` chooses the first file's start when the queue is empty (it is
        rounded down to a file boundary).
        """
        last = self.last_file
        if last is not None and not last.is_full:
            return last
        if not create or self.readonly:
            return last
        if last is None:
            create_offset = start_offset - start_offset % self.mapped_file_size
        else:
            create_offset = last.file_end_offset
        with self._lock:
            self.store_path.mkdir(parents=True, exist_ok=True)
            path = self.store_path / offset_to_file_name(create_offset)
            if path.exists():
                path.unlink()  # a dirty leftover past the recovered end
            mf = MappedFile(path, self.mapped_file_size, create=True)
            self.files = [*self.files, mf]
        return mf

    # -- flushing ----------------------------------------------------------------------
    def flush(self, least_pages: int = 0) -> bool:
        """Flush the file holding ``flushed_where``; True when nothing was left to flush."""
        files = self.files
        if not files:
            return True
        mf = self.find_by_offset(self.flushed_where)
        if mf is None:
            mf = files[0] if self.flushed_where < files[0].file_from_offset else None
        if mf is None:
            return True
        pos = mf.flush(least_pages)
        where = mf.file_from_offset + pos
        if mf.is_full and pos >= mf.file_size:
            where = mf.file_end_offset
        self.flushed_where = where
        return where >= self.max_offset

    def flush_all(self) -> None:
        """Flush until everything written is durable."""
        for _ in range(len(self.files) + 1):
            if self.flush(0):
                break

    # -- truncation and deletion -------------------------------------------------------
    def set_write_end(self, offset: int) -> None:
        """Declare ``offset`` the end of data: zero the tail, drop later files."""
        keep: list[MappedFile] = []
        drop: list[MappedFile] = []
        for mf in self.files:
            if mf.file_from_offset + self.mapped_file_size <= offset:
                mf.wrote_position = mf.flushed_position = mf.file_size
                keep.append(mf)
            elif mf.file_from_offset <= offset:
                pos = offset - mf.file_from_offset
                if not self.readonly:
                    mf.zero_from(pos)
                mf.wrote_position = mf.flushed_position = pos
                keep.append(mf)
            else:
                drop.append(mf)
        with self._lock:
            self.files = keep
        for mf in drop:
            if self.readonly:
                mf.close()
            else:
                mf.destroy()
        self.flushed_where = min(max(self.flushed_where, offset), offset)

    def delete_first_files(self, count: int) -> list[MappedFile]:
        """Remove the ``count`` oldest files from disk; returns them (closed)."""
        with self._lock:
            gone = self.files[:count]
            self.files = self.files[count:]
        for mf in gone:
            mf.destroy()
        return gone

    def delete_expired_by_time(
        self,
        expired_ms: int,
        *,
        force: bool,
        max_batch: int = 10,
        interval_s: float = 0.0,
        now_ms: Callable[[], int] | None = None,
    ) -> int:
        """Delete files whose last modification is older than ``expired_ms`` (never the last).

        ``force`` deletes the oldest regardless of age (disk full). Stops at the first
        file too young, so only a head prefix goes.
        """
        clock = now_ms or (lambda: int(time.time() * 1000))
        files = self.files[:-1]  # the file being written is never deleted
        count = 0
        for mf in files:
            if count >= max_batch:
                break
            try:
                mtime = int(mf.path.stat().st_mtime * 1000)
            except FileNotFoundError:
                mtime = 0
            if not force and clock() < mtime + expired_ms:
                break
            count += 1
            if interval_s and count > 1:
                time.sleep(interval_s)  # throttling the disk, not synchronisation
        if count:
            self.delete_first_files(count)
        return count

    def delete_files_before(self, is_expired: Callable[[MappedFile], bool]) -> int:
        """Delete head files (never the last) for which ``is_expired`` holds."""
        files = self.files[:-1]
        count = 0
        for mf in files:
            if not is_expired(mf):
                break
            count += 1
        if count:
            self.delete_first_files(count)
        return count

    def reset_to_empty(self, start_offset: int) -> None:
        """Drop every file (used when a consume queue lies entirely behind the log)."""
        with self._lock:
            gone = self.files
            self.files = []
        for mf in gone:
            mf.destroy()
        self.flushed_where = start_offset

    def close(self) -> None:
        with self._lock:
            files = self.files
            self.files = []
        for mf in files:
            mf.close()

    def check_writable(self) -> None:
        if self.readonly:
            raise StoreError(f"{self.store_path} is open read-only")

"""MappedFile: one preallocated store file mapped into memory.

Byte layout: a file of exactly ``file_size`` bytes named by the 20-digit decimal logical
offset of its byte 0 (``00000000001073741824``). Bytes ``[0, wrote_position)`` hold data;
the rest is zeros (the file is created sparse with ``truncate``). What the data *means*
belongs to the owner (commit log records, 20-byte consume queue entries).

Why mmap: appends are a single memcpy into the page cache and readers get zero-copy
``memoryview`` slices; durability comes from :func:`sync_mapped` after the dirty range.
A readonly MappedFile maps with ``ACCESS_READ``, never creates, truncates or writes.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import sys
from pathlib import Path

from mqcore.errors import CorruptRecordError, DiskFullError, StoreError

OS_PAGE_SIZE = 4096
_FDATASYNC_COVERS_MMAP = sys.platform.startswith("linux") and hasattr(os, "fdatasync")
FILE_NAME_DIGITS = 20


def sync_mapped(mm: mmap.mmap, path: Path, start: int, length: int) -> None:
    """Make ``mm``'s dirty pages durable without stopping the other threads.

    ``mmap.flush`` (msync) holds the GIL for the whole write-back: a flush thread syncing
    tens of MiB stalls the broker's event loop for as long (measured: 205 ms for 100 MiB).
    On Linux the page cache is one, so ``fdatasync`` on the file writes back the pages
    dirtied through the mapping too (it covers every range msync would), and it releases
    the GIL. Elsewhere msync stays.
    """
    if _FDATASYNC_COVERS_MMAP:
        fd = os.open(path, os.O_RDWR)
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)
    else:
        mm.flush(start, length)


def offset_to_file_name(offset: int) -> str:
    """``UtilAll.offset2FileName``: 20-digit zero-padded decimal."""
    return f"{offset:0{FILE_NAME_DIGITS}d}"


def _data_regions(fd: int, start: int, end: int) -> list[tuple[int, int]]:
    """``[from, to)`` ranges of ``fd`` that hold data between ``start`` and ``end``."""
    regions: list[tuple[int, int]] = []
    pos = start
    try:
        while pos < end:
            data = os.lseek(fd, pos, os.SEEK_DATA)
            if data >= end:
                break
            hole = min(os.lseek(fd, data, os.SEEK_HOLE), end)
            regions.append((data, hole))
            pos = hole
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # no data past pos
            return regions
        return [(start, end)]  # no SEEK_DATA here: treat it all as data
    return regions


RESERVE_STEP = 4 * 1024 * 1024
"""Blocks are reserved this far ahead of the writes: one fallocate per 4 MiB written."""


def reserve_blocks(fd: int, size: int, path: Path, offset: int = 0) -> None:
    """Give ``size`` bytes of a file from ``offset`` their disk blocks before any write.

    A write into a mapped page the file system cannot back kills the process with
    SIGBUS; reserving the blocks first turns a full disk into :class:`DiskFullError`
    here. File systems without fallocate keep the sparse file (as before)."""
    try:
        os.posix_fallocate(fd, offset, size)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DiskFullError(f"no space left for {path} ({size} more bytes)") from None
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise StoreError(f"cannot allocate {path}: {exc.strerror}") from None


class MappedFile:
    """A fixed-size file mapped read-write (or read-only) with append bookkeeping.

    ``wrote_position`` is the end of written data; ``flushed_position`` the end of data
    known durable. Positions are set by the owner after recovery.
    """

    __slots__ = (
        "_closed",
        "_mm",
        "_reserved",
        "file_from_offset",
        "file_size",
        "flushed_position",
        "path",
        "readonly",
        "store_timestamp",
        "view",
        "wrote_position",
    )

    def __init__(
        self, path: Path, file_size: int, *, readonly: bool = False, create: bool = False
    ) -> None:
        self.path = path
        self.file_size = file_size
        self.readonly = readonly
        try:
            self.file_from_offset = int(path.name)
        except ValueError:
            raise CorruptRecordError(
                "store file name is not a 20-digit offset", path=str(path)
            ) from None
        self.store_timestamp = 0
        self._closed = False
        flags = os.O_RDONLY if readonly else os.O_RDWR | (os.O_CREAT if create else 0)
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot open {path}: {exc.strerror}") from None
        try:
            actual = os.fstat(fd).st_size
            created = create and not readonly and actual == 0
            if created:
                os.ftruncate(fd, file_size)  # sparse: blocks are reserved as writes advance
                try:
                    reserve_blocks(fd, min(file_size, RESERVE_STEP), path)
                except StoreError:
                    with contextlib.suppress(OSError):
                        os.unlink(path)  # no room to roll to a new file: no file either
                    raise
                actual = file_size
            if actual != file_size:
                raise CorruptRecordError(
                    f"file is {actual} bytes, expected {file_size}", path=str(path), offset=actual
                )
            access = mmap.ACCESS_READ if readonly else mmap.ACCESS_WRITE
            self._mm = mmap.mmap(fd, file_size, access=access)
        finally:
            os.close(fd)
        self.view = memoryview(self._mm)
        self.wrote_position = 0 if create else file_size
        self.flushed_position = self.wrote_position
        self._reserved = min(file_size, RESERVE_STEP) if created else 0
        """Bytes from the start known to have blocks (an existing file is checked again
        at its first write: fallocate over allocated blocks costs nothing)."""

    # -- geometry ----------------------------------------------------------------------
    @property
    def file_end_offset(self) -> int:
        return self.file_from_offset + self.file_size

    @property
    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    @property
    def remaining(self) -> int:
        return self.file_size - self.wrote_position

    @property
    def max_offset(self) -> int:
        """Logical offset just past the written data."""
        return self.file_from_offset + self.wrote_position

    # -- writing -----------------------------------------------------------------------
    def reserve_to(self, end: int) -> None:
        """Every write below ``end`` has disk blocks (raises DiskFullError otherwise)."""
        if end <= self._reserved:
            return
        new = min(self.file_size, max(end, self._reserved + RESERVE_STEP))
        fd = os.open(self.path, os.O_RDWR)
        try:
            reserve_blocks(fd, new - self._reserved, self.path, self._reserved)
        finally:
            os.close(fd)
        self._reserved = new

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Copy ``data`` at the write position (one memcpy); returns the in-file position."""
        if self.readonly:
            raise StoreError(f"{self.path} is open read-only")
        pos = self.wrote_position
        end = pos + len(data)
        if end > self.file_size:
            raise StoreError(f"{self.path}: append of {len(data)} bytes past the file end")
        if end > self._reserved:
            self.reserve_to(end)
        self._mm[pos:end] = data
        self.wrote_position = end
        return pos

    def write_at(self, pos: int, data: bytes | bytearray | memoryview) -> None:
        """Overwrite bytes below the file size (used to repair or fill)."""
        self.reserve_to(pos + len(data))
        self._mm[pos : pos + len(data)] = data

    @property
    def mm(self) -> mmap.mmap:
        """The raw map, for ``struct.pack_into`` by owners (after :meth:`reserve_to`)."""
        return self._mm

    def flush(self, least_pages: int = 0) -> int:
        """msync the dirty range if at least ``least_pages`` pages are dirty.

        Returns the new flushed position. ``least_pages == 0`` flushes whatever is dirty.
        """
        if self.readonly or self._closed:
            return self.flushed_position
        write = self.wrote_position
        flushed = self.flushed_position
        if write <= flushed:
            return flushed
        if least_pages > 0 and (write // OS_PAGE_SIZE - flushed // OS_PAGE_SIZE) < least_pages:
            return flushed
        start = flushed - flushed % mmap.PAGESIZE
        sync_mapped(self._mm, self.path, start, write - start)
        self.flushed_position = write
        return write

    def zero_from(self, pos: int) -> None:
        """Zero bytes from ``pos`` to the end (truncate a torn tail in place).

        Only the file's data regions are read (SEEK_DATA/SEEK_HOLE, with pread, not
        through the map) and only non-zero bytes are written: on tmpfs even reading a
        hole through a map allocates a page, which a full disk answers with SIGBUS."""
        if pos < self.file_size:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                for start, end in _data_regions(fd, pos, self.file_size):
                    p = start
                    while p < end:
                        n = min(1 << 20, end - p)
                        data = os.pread(fd, n, p)
                        if data.count(0) != len(data):
                            self._mm[p : p + len(data)] = bytes(len(data))
                        p += max(len(data), 1)
            finally:
                os.close(fd)
        self.wrote_position = min(self.wrote_position, pos)
        self.flushed_position = min(self.flushed_position, pos)

    # -- reading -----------------------------------------------------------------------
    def slice(self, pos: int, size: int) -> memoryview:
        """Zero-copy view of ``size`` bytes at in-file ``pos``."""
        return self.view[pos : pos + size]

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        """Unmap. If readers still hold views, the map lives on until they drop them."""
        if self._closed:
            return
        self._closed = True
        self.view.release()
        try:
            self._mm.close()
        except BufferError:
            pass  # views handed to readers keep the mapping alive; GC unmaps later

    def destroy(self) -> None:
        """Close and delete the file (cleanup of expired files)."""
        self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    @property
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        return (
            f"MappedFile({self.path.name}, wrote={self.wrote_position}, "
            f"flushed={self.flushed_position})"
        )

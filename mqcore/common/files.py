"""Crash-safe small-file writes: config JSON, KV tables, local consumer offsets.

``write_atomically`` writes a temporary file in the same directory, fsyncs it, renames it
over the target and fsyncs the directory, so a crash leaves the complete old or the
complete new file, never a torn one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["fsync_dir", "write_atomically", "write_chunks", "write_synced"]

_IOV_MAX = 1024
"""Buffers per ``writev`` call (Linux's ``IOV_MAX``; POSIX guarantees at least 16)."""
try:
    _IOV_MAX = max(16, min(_IOV_MAX, os.sysconf("SC_IOV_MAX")))
except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
    pass


def write_chunks(fd: int, chunks: Sequence[bytes | memoryview]) -> None:
    """Write ``chunks`` one after the other at ``fd``'s position with ``writev``, up to
    :data:`_IOV_MAX` of them per call, going on after short writes.

    The kernel copies the buffers while the GIL is released: a big file kept as many
    pieces is written without first being joined into one object, which would hold the
    GIL for the whole copy."""
    pending = list(chunks)
    start = 0
    while start < len(pending):
        batch = pending[start : start + _IOV_MAX]
        written = os.writev(fd, batch)
        if written == sum(map(len, batch)):  # the usual case, without a loop in Python
            start += len(batch)
            continue
        for chunk in batch:
            size = len(chunk)
            if written < size:
                pending[start] = memoryview(chunk)[written:]  # short write: the rest next
                break
            written -= size
            start += 1


def write_synced(path: Path, data: bytes | Sequence[bytes | memoryview]) -> None:
    """Write ``data`` (bytes, or pieces written one after the other) to ``path``
    (truncating) and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_chunks(fd, [data] if isinstance(data, (bytes, bytearray, memoryview)) else data)
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, *, tmp: Path | None = None) -> None:
    """Replace ``path`` with ``data`` so that readers and crashes never see a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp or path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write_synced(tmp, data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)

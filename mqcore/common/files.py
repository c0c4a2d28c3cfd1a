"""Crash-safe small-file writes: config JSON, KV tables, local consumer offsets.

``write_atomically`` writes a temporary file in the same directory, fsyncs it, renames it
over the target and fsyncs the directory, so a crash leaves the complete old or the
complete new file, never a torn one.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fsync_dir", "write_atomically", "write_synced"]


def write_synced(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (truncating) and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
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

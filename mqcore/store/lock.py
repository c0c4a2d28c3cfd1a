"""The store's ``lock`` file and ``abort`` marker.

Byte layout:

* ``lock``: the 4 ASCII bytes ``lock``; the owner holds an exclusive POSIX record lock
  (``fcntl`` F_SETLK) on byte 0, exactly what Java's ``FileChannel.tryLock(0, 1, false)``
  takes on Linux, so a Java broker and mq exclude each other. ``flock`` would not conflict
  with POSIX locks, hence ``fcntl.lockf``.
* ``abort``: an empty file present while a writer runs; found at start-up it means the
  last run crashed (abnormal recovery).

The holder's pid is found with ``F_GETLK``, which reports the pid of a conflicting POSIX
lock, so the lock file itself stays the 4 bytes RocketMQ writes.
"""

from __future__ import annotations

import fcntl
import os
import struct
from pathlib import Path

from mqcore.errors import StoreError, StoreLockedError

LOCK_CONTENT = b"lock"


def _lock_holder_pid(fd: int) -> int | None:
    """Pid of the process holding a write lock on byte 0, via F_GETLK (Linux layout)."""
    # struct flock { short l_type; short l_whence; off_t l_start; off_t l_len; pid_t l_pid; }
    fmt = "hhqqi"
    try:
        req = struct.pack(fmt, fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
        res = fcntl.fcntl(fd, fcntl.F_GETLK, req + bytes(max(0, 32 - struct.calcsize(fmt))))
        l_type, _w, _s, _l, pid = struct.unpack_from(fmt, res)
    except (OSError, struct.error):
        return None
    if l_type == fcntl.F_UNLCK or pid <= 0:
        return None
    return int(pid)


class StoreLock:
    """Exclusive ownership of a store root; released by :meth:`release` or process exit."""

    def __init__(self, root: Path) -> None:
        self.path = root / "lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise :class:`StoreLockedError` naming the holder's pid."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot open {self.path}: {exc.strerror}") from None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError:
            pid = _lock_holder_pid(fd)
            os.close(fd)
            who = f"process {pid}" if pid else "another process"
            raise StoreLockedError(
                f"store {self.path.parent} is locked by {who}; stop it first or use another "
                "--store directory"
            ) from None
        if os.pread(fd, 4, 0) != LOCK_CONTENT:
            os.pwrite(fd, LOCK_CONTENT, 0)
            os.ftruncate(fd, len(LOCK_CONTENT))
        self._fd = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, 0)
            finally:
                os.close(self._fd)
                self._fd = None


def abort_path(root: Path) -> Path:
    return root / "abort"


def create_abort_file(root: Path) -> None:
    """Mark the store as running (a crash will leave this behind)."""
    p = abort_path(root)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
    os.fsync(fd)
    os.close(fd)


def remove_abort_file(root: Path) -> None:
    try:
        abort_path(root).unlink()
    except FileNotFoundError:
        pass


def abort_file_exists(root: Path) -> bool:
    return abort_path(root).exists()

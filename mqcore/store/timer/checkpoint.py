"""TimerCheckpoint: the ``config/timercheck`` file (RocketMQ 5's ``TimerCheckpoint``).

Byte layout (a 4096-byte mapped file, big-endian)::

    off  size  field
      0     8  i64 lastReadTimeMs          the wheel's committed read time: slots before
                                           it are delivered
      8     8  i64 lastTimerLogFlushPos    timer log offset flushed when it was written
     16     8  i64 lastTimerQueueOffset    min(committed timer-topic offset, master's)
     24     8  i64 masterTimerQueueOffset  the committed timer-topic queue offset (a
                                           master's own; a slave's copy of its master's)
     32     8  i64 dataVersion.stateVersion
     40     8  i64 dataVersion.timestamp
     48     8  i64 dataVersion.counter
     56  4040  zeros

The values live in memory; :meth:`flush` writes them all (and syncs), after the timer log
and the wheel they describe were flushed.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path

from mqcore.errors import StoreError
from mqcore.store.mapped_file import OS_PAGE_SIZE, reserve_blocks, sync_mapped

__all__ = ["CHECKPOINT", "TimerCheckpoint", "TimerCheckpointValues"]

CHECKPOINT = struct.Struct(">qqqqqqq")


@dataclass(slots=True)
class TimerCheckpointValues:
    """The seven numbers (``TimerCheckpoint.encode``'s 56 bytes, GET_TIMER_CHECK_POINT)."""

    last_read_time_ms: int = 0
    last_timer_log_flush_pos: int = 0
    last_timer_queue_offset: int = 0
    master_timer_queue_offset: int = 0
    state_version: int = 0
    version_timestamp: int = 0
    version_counter: int = 0

    def encode(self) -> bytes:
        return CHECKPOINT.pack(
            self.last_read_time_ms,
            self.last_timer_log_flush_pos,
            self.last_timer_queue_offset,
            self.master_timer_queue_offset,
            self.state_version,
            self.version_timestamp,
            self.version_counter,
        )

    @classmethod
    def decode(cls, data: bytes | memoryview) -> TimerCheckpointValues:
        return cls(*CHECKPOINT.unpack_from(data, 0))

    def next_version(self, state_version: int = 0) -> None:
        """``DataVersion.nextVersion``: a new timestamp, the counter one up."""
        self.state_version = state_version
        self.version_timestamp = int(time.time() * 1000)
        self.version_counter += 1


class TimerCheckpoint(TimerCheckpointValues):
    """The values above, backed by the mapped file."""

    __slots__ = ("_mm", "existed", "path")

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.existed = path.exists() and path.stat().st_size > 0
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot open {path}: {exc.strerror}") from None
        try:
            if os.fstat(fd).st_size < OS_PAGE_SIZE:
                os.ftruncate(fd, OS_PAGE_SIZE)
            # its one page gets its block now: a write into a hole of a full disk's file
            # through the map would be SIGBUS (DiskFullError here instead)
            reserve_blocks(fd, OS_PAGE_SIZE, path)
            self._mm = mmap.mmap(fd, OS_PAGE_SIZE)
        finally:
            os.close(fd)
        if self.existed:
            values = TimerCheckpointValues.decode(self._mm[: CHECKPOINT.size])
            for f in dataclasses.fields(TimerCheckpointValues):
                setattr(self, f.name, getattr(values, f.name))

    def flush(self) -> None:
        if self._mm.closed:
            return
        self._mm[: CHECKPOINT.size] = self.encode()
        sync_mapped(self._mm, self.path, 0, OS_PAGE_SIZE)

    def close(self, *, flush: bool = True) -> None:
        if not self._mm.closed:
            if flush:
                self.flush()
            self._mm.close()

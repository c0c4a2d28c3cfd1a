"""StoreCheckpoint: the ``checkpoint`` file telling recovery where it may start.

Byte layout (4096-byte file, big-endian, RocketMQ 4.9.8 ``StoreCheckpoint``)::

    off  size  field
      0     8  i64 physicMsgTimestamp  store ts of the last message flushed to the commit log
      8     8  i64 logicsMsgTimestamp  store ts of the last message flushed to a consume queue
     16     8  i64 indexMsgTimestamp   4.9.8: end ts of the last full and flushed index
                                       file; mq: 1 ms before the last record whose index
                                       entries are flushed (see MessageStore.flush_consume_queues)
     24  4072  zeros (5.x puts masterFlushedOffset and confirmPhyOffset at 24 and 32)

Values are kept in memory and only written to the file by :meth:`flush`, after the data
they describe is durable, so a crash never leaves a checkpoint ahead of the data.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

from mqcore.errors import CorruptRecordError, StoreError
from mqcore.store.mapped_file import sync_mapped

CHECKPOINT_FILE_SIZE = 4096
_LAYOUT = struct.Struct(">qqq")
_RECOVERY_MARGIN_MS = 3000


class StoreCheckpoint:
    """Read or maintain the checkpoint file (readonly never creates or writes it)."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        self.readonly = readonly
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
        self._mm: mmap.mmap | None = None
        if readonly:
            if path.exists():
                data = path.read_bytes()
                if len(data) < _LAYOUT.size:
                    raise CorruptRecordError(
                        f"checkpoint is {len(data)} bytes, expected {CHECKPOINT_FILE_SIZE}",
                        path=str(path),
                        offset=len(data),
                    )
                self._set(data)
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot open {path}: {exc.strerror}") from None
        try:
            size = os.fstat(fd).st_size
            if size < CHECKPOINT_FILE_SIZE:
                os.ftruncate(fd, CHECKPOINT_FILE_SIZE)
            self._mm = mmap.mmap(fd, CHECKPOINT_FILE_SIZE)
        finally:
            os.close(fd)
        self._set(self._mm[: _LAYOUT.size])

    def _set(self, data: bytes) -> None:
        self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp = (
            _LAYOUT.unpack_from(data, 0)
        )

    @property
    def min_timestamp(self) -> int:
        """``getMinTimestamp``: min(physic, logics) - 3 s, floored at 0."""
        return max(
            0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - _RECOVERY_MARGIN_MS
        )

    @property
    def min_timestamp_index(self) -> int:
        """``getMinTimestampIndex``: also no later than the index checkpoint."""
        return min(self.min_timestamp, self.index_msg_timestamp)

    def flush(self) -> None:
        """Write the three timestamps and msync the page."""
        if self._mm is None:
            return
        _LAYOUT.pack_into(
            self._mm,
            0,
            self.physic_msg_timestamp,
            self.logics_msg_timestamp,
            self.index_msg_timestamp,
        )
        # fdatasync where it covers the map (releases the GIL; msync holds it for the
        # write-back, a stall of the event loop each second on a slow disk)
        sync_mapped(self._mm, self.path, 0, mmap.PAGESIZE)

    def close(self) -> None:
        if self._mm is not None:
            self.flush()
            self._mm.close()
            self._mm = None

    def as_dict(self) -> dict[str, int]:
        return {
            "physicMsgTimestamp": self.physic_msg_timestamp,
            "logicsMsgTimestamp": self.logics_msg_timestamp,
            "indexMsgTimestamp": self.index_msg_timestamp,
        }

"""TimerLog: the ``timerlog/`` mapped files, one 52-byte unit per timer enqueue (RocketMQ 5).

Byte layout (RocketMQ 5's ``TimerLog``; big-endian; files of ``mappedFileSizeTimerLog``,
100 MiB by default, named by their 20-digit start offset like commit log files)::

    unit  off size
            0    4  i32 size         52
            4    8  i64 prevPos      the slot's previous unit (-1: first of its slot)
           12    4  i32 magic        1 default, | 2 roll, | 4 delete marker
           16    8  i64 enqueueTime  the wheel's write time when enqueued (ms)
           24    4  i32 delay        deliver time - enqueueTime (ms)
           28    8  i64 offsetPy     the timer-topic record in the commit log
           36    4  i32 sizePy       its size
           40    4  i32 topicHash    String.hashCode of the real topic (metrics)
           44    8  i64 reserved     0

    blank off size                    (when a unit + 16 no longer fits in a file)
            0    4  i32 size         bytes left in the file
            4    8  i64 0
           12    4  i32 magic        0xCBD43194 (the commit log's BLANK magic)

A slot's units form a chain backwards from the wheel's ``lastPos`` through ``prevPos``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from mqcore.errors import StoreError
from mqcore.store.mapped_file import MappedFile
from mqcore.store.mapped_file_queue import MappedFileQueue

__all__ = [
    "BLANK_MAGIC_CODE",
    "MAGIC_DEFAULT",
    "MAGIC_DELETE",
    "MAGIC_ROLL",
    "UNIT",
    "UNIT_PRE_SIZE_FOR_MSG",
    "UNIT_SIZE",
    "TimerLog",
    "TimerUnit",
    "is_magic_ok",
]

UNIT = struct.Struct(">iqiqiqiiq")
UNIT_SIZE = UNIT.size  # 52
UNIT_PRE_SIZE_FOR_MSG = 28
"""Where ``offsetPy`` starts in a unit."""
_BLANK = struct.Struct(">iqi")
_HEAD = struct.Struct(">i8xiqi24x")
"""A unit's size, magic, enqueue time and delay, the rest skipped (recovery's read)."""
MIN_BLANK_LEN = _BLANK.size  # 16
BLANK_MAGIC_CODE = -875286124
"""RocketMQ's ``0xBBCCDDEE ^ 1880681586 + 8`` (``+`` binds first): 0xCBD43194."""
MAGIC_DEFAULT = 1
MAGIC_ROLL = 1 << 1
MAGIC_DELETE = 1 << 2


def is_magic_ok(magic: int) -> bool:
    """``isMagicOK``: only the four low bits may be set."""
    return (magic | 0xF) == 0xF


class TimerUnit(NamedTuple):
    """One unit, decoded; ``delayed_time`` is the absolute deliver time (ms)."""

    prev_pos: int
    magic: int
    enqueue_time: int
    delayed_time: int
    offset_py: int
    size_py: int
    topic_hash: int = 0

    def encode(self) -> bytes:
        return UNIT.pack(
            UNIT_SIZE,
            self.prev_pos,
            self.magic,
            self.enqueue_time,
            self.delayed_time - self.enqueue_time,
            self.offset_py,
            self.size_py,
            self.topic_hash,
            0,
        )

    @classmethod
    def decode(cls, data: bytes | memoryview, pos: int = 0) -> TimerUnit:
        _size, prev, magic, enq, delay, off, size, topic_hash, _ = UNIT.unpack_from(data, pos)
        return cls(prev, magic, enq, enq + delay, off, size, topic_hash)

    @property
    def roll(self) -> bool:
        return bool(self.magic & MAGIC_ROLL)

    @property
    def delete(self) -> bool:
        return bool(self.magic & MAGIC_DELETE)


class TimerLog:
    """Append units; read one by its offset. The files are a :class:`MappedFileQueue`."""

    def __init__(self, path: Path, file_size: int) -> None:
        if file_size < UNIT_SIZE + MIN_BLANK_LEN:
            raise StoreError(f"mappedFileSizeTimerLog {file_size} cannot hold a unit")
        self.file_size = file_size
        self.queue = MappedFileQueue(path, file_size)

    def load(self) -> None:
        self.queue.load()

    def append(self, unit: bytes) -> int:
        """Append one encoded unit; its logical offset. A file without room for it and a
        blank after is closed with a blank first (``TimerLog.append``)."""
        mf = self.queue.get_last_file(0)
        if mf is None:
            raise StoreError("cannot create a timer log file")
        if len(unit) + MIN_BLANK_LEN > mf.remaining:
            mf.append(_BLANK.pack(mf.remaining, 0, BLANK_MAGIC_CODE))
            mf.wrote_position = mf.file_size
            mf = self.queue.get_last_file(0)
            if mf is None:
                raise StoreError("cannot create a timer log file")
        return mf.file_from_offset + mf.append(unit)

    def read_unit(self, offset: int) -> TimerUnit | None:
        """The unit at logical ``offset``; None when no written unit is there."""
        mf = self.queue.find_by_offset(offset)
        if mf is None:
            return None
        pos = offset - mf.file_from_offset
        if pos + UNIT_SIZE > mf.wrote_position:
            return None
        return TimerUnit.decode(mf.view, pos)

    def scan(self, begin: int, *, check: bool) -> Iterator[tuple[int, TimerUnit | None]]:
        """``recoverAndRevise``'s walk from the file holding ``begin``: ``(offset, unit)``
        for each good unit, and a last ``(end, None)`` naming where the data ends (the
        first unit that is not one when ``check``; else each file's written end)."""
        files = self.queue.files
        if not files:
            yield 0, None
            return
        index = len(files) - 1
        while index > 0 and begin < files[index].file_from_offset:
            index -= 1
        end = files[index].file_from_offset
        for mf in files[index:]:
            limit = mf.file_size if check else mf.wrote_position
            position = 0
            stop = False
            while position + UNIT_SIZE <= limit:
                size, _prev, magic = _BLANK.unpack_from(mf.view, position)
                if magic == BLANK_MAGIC_CODE:
                    break
                if size != UNIT_SIZE or not is_magic_ok(magic):
                    if check:
                        stop = True
                        break
                else:
                    yield mf.file_from_offset + position, TimerUnit.decode(mf.view, position)
                position += UNIT_SIZE
            end = mf.file_from_offset + position
            if stop:
                break
        yield end, None

    def last_units(self, begin: int, *, check: bool) -> tuple[int, dict[int, int]]:
        """:meth:`scan` for recovery, at C speed over each file: the end of the units and,
        per deliver time, the offset of its last unit (all ``reviseSlot`` needs: a
        slot's chain runs backwards from its last unit)."""
        files = self.queue.files
        last: dict[int, int] = {}
        if not files:
            return 0, last
        index = len(files) - 1
        while index > 0 and begin < files[index].file_from_offset:
            index -= 1
        end = files[index].file_from_offset
        for mf in files[index:]:
            limit = mf.file_size if check else mf.wrote_position
            usable = limit - limit % UNIT_SIZE
            base = mf.file_from_offset
            position = 0
            stop = False
            for size, magic, enq, delay in _HEAD.iter_unpack(mf.view[:usable]):
                if magic == BLANK_MAGIC_CODE:
                    break
                if size != UNIT_SIZE or (magic | 0xF) != 0xF:
                    if check:
                        stop = True
                        break
                else:
                    last[enq + delay] = base + position
                position += UNIT_SIZE
            end = base + position
            if stop:
                break
        return end, last

    @property
    def max_offset(self) -> int:
        return self.queue.max_offset

    @property
    def flushed_where(self) -> int:
        return self.queue.flushed_where

    def set_write_end(self, offset: int) -> None:
        """Declare ``offset`` the end of the units (the recovered end)."""
        self.queue.set_write_end(offset)
        self.queue.flushed_where = offset

    def flush(self) -> None:
        self.queue.flush_all()

    def delete_expired(self, commit_log_min: int) -> int:
        """Drop head files (never the last) whose last unit points below the commit
        log's first record: every message they name is gone (RocketMQ's
        ``deleteExpiredFileByOffsetForTimerLog``). Returns the files deleted."""
        last_unit = self.file_size - (self.file_size - MIN_BLANK_LEN) % UNIT_SIZE
        last_unit -= MIN_BLANK_LEN + UNIT_SIZE

        def expired(mf: MappedFile) -> bool:
            unit = TimerUnit.decode(mf.view, last_unit)
            return 0 <= unit.offset_py < commit_log_min

        return self.queue.delete_files_before(expired)

    def close(self) -> None:
        self.queue.close()

"""TimerWheel: the ``timerwheel`` file, one slot per precision tick (RocketMQ 5).

Byte layout (RocketMQ 5's ``TimerWheel`` and ``Slot``; big-endian)::

    file  = slots_total * 2 slots of 32 bytes (7 days of 1 s ticks twice: 38,707,200 B)
    slot  off size
            0    8  i64 time      deliver time // precisionMs (the tick this slot holds)
            8    8  i64 firstPos  timer log offset of the slot's first unit
           16    8  i64 lastPos   timer log offset of its last unit (units chain backwards)
           24    4  i32 num       units in the slot (delete markers count -1)
           28    4  i32 magic     unused by RocketMQ, kept

A time ``t`` (ms) lives in slot ``t // precisionMs % (slots_total * 2)``. A slot whose
stored tick is not the asked one is stale (a tick of an earlier turn): it reads as
empty. The tick is stored, not the time, as RocketMQ 5 does "to be compatible with
precision 1000" (older wheels stored seconds).

RocketMQ keeps the wheel in a heap buffer and copies it into the mapped file at each
flush; here slots are written straight into the shared mapping, so a killed process
loses none of them (the timer log, replayed at start, repairs a wheel that lost pages
in a power cut, as RocketMQ's does).
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from mqcore.errors import CorruptRecordError, StoreError
from mqcore.store.mapped_file import reserve_blocks, sync_mapped

__all__ = ["IGNORE", "SLOT", "SLOT_SIZE", "Slot", "TimerWheel"]

SLOT = struct.Struct(">qqqii")
SLOT_SIZE = SLOT.size  # 32
_HEAD = struct.Struct(">qqq")
_LAST = struct.Struct(">q")
IGNORE = -2
"""``reviseSlot``'s "leave this position as it is"."""
_PAGE = 4096
_CHUNK = 1 << 20


class Slot(NamedTuple):
    """One slot as read: ``time_ms`` is -1 (and the positions -1) for an empty one."""

    time_ms: int
    first_pos: int
    last_pos: int
    num: int = 0
    magic: int = 0


EMPTY = Slot(-1, -1, -1)


class TimerWheel:
    """The mapped wheel file; ``slots_total`` ticks per turn, two turns in the file."""

    def __init__(self, path: Path, slots_total: int, precision_ms: int) -> None:
        self.path = path
        self.slots_total = slots_total
        self.precision_ms = precision_ms
        self.ring = slots_total * 2
        self.length = self.ring * SLOT_SIZE
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot open {path}: {exc.strerror}") from None
        try:
            size = os.fstat(fd).st_size
            self.existed = size != 0
            """The file was there before (a new one holds nothing to recover)."""
            if size not in (0, self.length):
                raise CorruptRecordError(
                    f"timer wheel is {size} bytes, expected {self.length}",
                    path=str(path),
                    offset=size,
                )
            if size == 0:
                os.ftruncate(fd, self.length)  # sparse, as RandomAccessFile.setLength
            self._mm = mmap.mmap(fd, self.length)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._reserved = bytearray(self.length // _PAGE + 1)
        """Pages known to have disk blocks: a slot is written only into such a page, so a
        full disk is a DiskFullError at the put, not SIGBUS in the mapped write."""

    # -- slot math -----------------------------------------------------------------------
    def slot_index(self, time_ms: int) -> int:
        return time_ms // self.precision_ms % self.ring

    # -- reading -------------------------------------------------------------------------
    def raw_slot(self, time_ms: int) -> Slot:
        """The slot ``time_ms`` maps to, whatever tick it holds (time in ms)."""
        tick, first, last, num, magic = SLOT.unpack_from(self._mm, self.slot_index(time_ms) * 32)
        return Slot(tick * self.precision_ms, first, last, num, magic)

    def get_slot(self, time_ms: int) -> Slot:
        """The slot of ``time_ms``'s tick, or :data:`EMPTY` when it holds another tick."""
        tick, first, last, num, magic = SLOT.unpack_from(self._mm, self.slot_index(time_ms) * 32)
        if tick != time_ms // self.precision_ms:
            return EMPTY
        return Slot(tick * self.precision_ms, first, last, num, magic)

    def num(self, time_ms: int) -> int:
        return self.get_slot(time_ms).num

    # -- writing -------------------------------------------------------------------------
    def _reserve(self, pos: int) -> None:
        page = pos // _PAGE
        if not self._reserved[page]:
            reserve_blocks(self._fd, _PAGE, self.path, page * _PAGE)
            self._reserved[page] = 1

    def put_slot(
        self, time_ms: int, first_pos: int, last_pos: int, num: int | None = None, magic: int = 0
    ) -> None:
        """Write a slot; without ``num`` only the tick and positions (RocketMQ's
        three-argument ``putSlot`` leaves num and magic as they were)."""
        pos = self.slot_index(time_ms) * 32
        self._reserve(pos)
        tick = time_ms // self.precision_ms
        if num is None:
            _HEAD.pack_into(self._mm, pos, tick, first_pos, last_pos)
        else:
            SLOT.pack_into(self._mm, pos, tick, first_pos, last_pos, num, magic)

    def revise_slot(self, time_ms: int, first_pos: int, last_pos: int, *, force: bool) -> None:
        """``reviseSlot``: set the positions of ``time_ms``'s slot (:data:`IGNORE` keeps
        one); a slot holding another tick is only taken over when ``force``."""
        pos = self.slot_index(time_ms) * 32
        tick = time_ms // self.precision_ms
        self._reserve(pos)
        if _LAST.unpack_from(self._mm, pos)[0] != tick:
            if force:
                self.put_slot(time_ms, last_pos if first_pos == IGNORE else first_pos, last_pos)
            return
        if first_pos != IGNORE:
            _LAST.pack_into(self._mm, pos + 8, first_pos)
        if last_pos != IGNORE:
            _LAST.pack_into(self._mm, pos + 16, last_pos)

    # -- whole-wheel scans -----------------------------------------------------------------
    def live_slots(self, start_ms: int) -> Iterator[Slot]:
        """Every slot holding a tick of the turn-and-a-half from ``start_ms`` on (what
        ``checkPhyPos`` and ``getAllNum`` walk), in file order. Pages of zeros, most of a
        young wheel, are skipped without unpacking (read with pread: reading a hole
        through the map would allocate it on tmpfs)."""
        start_tick = start_ms // self.precision_ms
        first_index = start_tick % self.ring
        zero_page = bytes(_PAGE)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            for chunk_at in range(0, self.length, _CHUNK):
                data = os.pread(fd, min(_CHUNK, self.length - chunk_at), chunk_at)
                for page_at in range(0, len(data), _PAGE):
                    page = data[page_at : page_at + _PAGE]
                    if page == zero_page:
                        continue
                    base = (chunk_at + page_at) // SLOT_SIZE
                    for i, (tick, first, last, num, magic) in enumerate(SLOT.iter_unpack(page)):
                        index = base + i
                        expected = start_tick + (index - first_index) % self.ring
                        if tick == expected:
                            yield Slot(tick * self.precision_ms, first, last, num, magic)
        finally:
            os.close(fd)

    def check_phy_pos(self, start_ms: int, max_offset: int) -> int:
        """``checkPhyPos``: the least first position of a live slot whose last unit lies
        beyond ``max_offset`` (a wheel ahead of a damaged timer log); a huge number when
        there is none."""
        least = 2**63 - 1
        for slot in self.live_slots(start_ms):
            if slot.last_pos > max_offset:
                least = min(least, slot.first_pos)
        return least

    def all_num(self, start_ms: int) -> int:
        """``getAllNum``: units in every live slot from ``start_ms`` on."""
        return sum(slot.num for slot in self.live_slots(start_ms))

    # -- lifecycle -----------------------------------------------------------------------
    def flush(self) -> None:
        sync_mapped(self._mm, self.path, 0, self.length)

    def close(self) -> None:
        if not self._mm.closed:
            self._mm.close()
            os.close(self._fd)

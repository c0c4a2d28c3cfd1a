"""The timer files of a store, read without writing (``mq store inspect``).

Reads ``config/timercheck``, ``timerwheel`` and ``timerlog/`` with plain reads, never
maps, creates or locks anything, so it is safe on a live broker's store and on one
RocketMQ 5 wrote. The wheel stores ticks (time // ``timerPrecisionMs``) and a store does
not say its precision, so the precision is the one of 100, 200, 500, 1000 ms that puts
the wheel's ticks nearest the checkpoint's read time (a wrong one puts them years off).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mqcore.store.timer.checkpoint import CHECKPOINT, TimerCheckpointValues
from mqcore.store.timer.wheel import SLOT, SLOT_SIZE

__all__ = ["TimerFilesState", "read_timer_files"]

_PRECISIONS = (100, 200, 500, 1000)
_PAGE = 4096
_CHUNK = 1 << 20


@dataclass(slots=True)
class TimerFilesState:
    """What the timer files say: the checkpoint, the wheel's waiting messages and slots
    from the read time on (due times: as each slot's tick ends), the timer log's files."""

    last_read_time_ms: int
    master_timer_queue_offset: int
    last_timer_queue_offset: int
    last_timer_log_flush_pos: int
    precision_ms: int | None
    waiting: int
    slots: int
    next_due_ms: int | None
    last_due_ms: int | None
    timer_log_files: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _slots(path: Path) -> list[tuple[int, int, int]]:
    """(index, tick, num) of every slot that is not all zeros."""
    out: list[tuple[int, int, int]] = []
    zero = bytes(_PAGE)
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        for at in range(0, size, _CHUNK):
            data = os.pread(fd, min(_CHUNK, size - at), at)
            for page_at in range(0, len(data) - len(data) % SLOT_SIZE, _PAGE):
                page = data[page_at : page_at + _PAGE]
                if page == zero:
                    continue
                base = (at + page_at) // SLOT_SIZE
                usable = len(page) - len(page) % SLOT_SIZE
                for i, (tick, _first, _last, num, _magic) in enumerate(
                    SLOT.iter_unpack(page[:usable])
                ):
                    if tick:
                        out.append((base + i, tick, num))
    finally:
        os.close(fd)
    return out


def read_timer_files(root: Path) -> TimerFilesState | None:
    """The timer state of the store at ``root``; None when it has no timer files."""
    check = root / "config" / "timercheck"
    wheel = root / "timerwheel"
    if not check.exists() and not wheel.exists():
        return None
    values = TimerCheckpointValues()
    try:
        raw = check.read_bytes()
        if len(raw) >= CHECKPOINT.size:
            values = TimerCheckpointValues.decode(raw[: CHECKPOINT.size])
    except OSError:
        pass
    slots = _slots(wheel) if wheel.exists() else []
    ring = wheel.stat().st_size // SLOT_SIZE if wheel.exists() else 0
    read = values.last_read_time_ms
    precision = None
    if slots and read > 0:
        newest = max(tick for _, tick, _ in slots)
        precision = min(_PRECISIONS, key=lambda p: abs(newest * p - read))
    waiting = count = 0
    next_due = last_due = None
    if precision is not None and ring:
        start_tick = read // precision
        first_index = start_tick % ring
        for index, tick, num in slots:
            if tick != start_tick + (index - first_index) % ring:
                continue  # a tick of an earlier turn: delivered
            waiting += num
            count += 1
            due = (tick + 1) * precision  # delivered as its tick ends
            next_due = due if next_due is None else min(next_due, due)
            last_due = due if last_due is None else max(last_due, due)
    log_dir = root / "timerlog"
    files = sorted(p for p in log_dir.iterdir() if p.name.isdigit()) if log_dir.is_dir() else []
    return TimerFilesState(
        last_read_time_ms=read,
        master_timer_queue_offset=values.master_timer_queue_offset,
        last_timer_queue_offset=values.last_timer_queue_offset,
        last_timer_log_flush_pos=values.last_timer_log_flush_pos,
        precision_ms=precision,
        waiting=waiting,
        slots=count,
        next_due_ms=next_due,
        last_due_ms=last_due,
        timer_log_files=len(files),
    )

"""The timer files' byte layouts (RocketMQ 5): wheel slots, timer log units and blanks,
the timercheck checkpoint, and the slot math."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.errors import CorruptRecordError, DiskFullError
from mqcore.store.timer import TimerCheckpoint, TimerCheckpointValues, TimerLog, TimerUnit
from mqcore.store.timer.timer_log import (
    BLANK_MAGIC_CODE,
    MAGIC_DELETE,
    MAGIC_ROLL,
    UNIT_SIZE,
    is_magic_ok,
)
from mqcore.store.timer.wheel import EMPTY, IGNORE, SLOT_SIZE, TimerWheel

i64 = st.integers(-(2**63), 2**63 - 1)
i32 = st.integers(-(2**31), 2**31 - 1)
SLOTS = 50  # a small wheel: 100 slots in the file


def test_constants_are_rocketmq_5s() -> None:
    assert UNIT_SIZE == 52 and SLOT_SIZE == 32
    # TimerLog.BLANK_MAGIC_CODE = 0xBBCCDDEE ^ 1880681586 + 8, with Java's precedence
    java = (0xBBCCDDEE ^ (1880681586 + 8)) & 0xFFFFFFFF
    assert struct.unpack(">i", java.to_bytes(4, "big"))[0] == BLANK_MAGIC_CODE
    assert is_magic_ok(1 | MAGIC_ROLL | MAGIC_DELETE) and not is_magic_ok(0x10)


@given(
    prev=i64,
    magic=st.integers(0, 15),
    enqueue=st.integers(0, 2**62),
    delay=i32,
    offset=i64,
    size=i32,
    topic_hash=i32,
)
def test_unit_round_trip_and_layout(
    prev: int, magic: int, enqueue: int, delay: int, offset: int, size: int, topic_hash: int
) -> None:
    unit = TimerUnit(prev, magic, enqueue, enqueue + delay, offset, size, topic_hash)
    data = unit.encode()
    assert len(data) == UNIT_SIZE
    assert TimerUnit.decode(data) == unit
    fields = struct.unpack(">iqiqiqiiq", data)
    assert fields == (52, prev, magic, enqueue, delay, offset, size, topic_hash, 0)
    assert struct.unpack_from(">q", data, 28)[0] == offset  # UNIT_PRE_SIZE_FOR_MSG


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 10**9), min_size=1, max_size=60))
def test_timer_log_rolls_files_with_a_blank_and_scans_back(tmp_path_factory, delays) -> None:  # type: ignore[no-untyped-def]
    root: Path = tmp_path_factory.mktemp("tl")
    log = TimerLog(root / "timerlog", 52 * 4 + 20)  # room for 4 units and a blank
    log.load()
    offsets = []
    for i, d in enumerate(delays):
        unit = TimerUnit(-1, 1, 1000, 1000 + d, i * 100, 99)
        offsets.append(log.append(unit.encode()))
    files = log.queue.files
    for mf in files[:-1]:
        size, zero, magic = struct.unpack_from(">iqi", mf.view, 4 * 52)
        assert (zero, magic) == (0, BLANK_MAGIC_CODE) and size == mf.file_size - 4 * 52
    scanned = list(log.scan(0, check=True))
    assert [o for o, u in scanned if u is not None] == offsets
    assert [u.delayed_time for _, u in scanned if u is not None] == [1000 + d for d in delays]
    assert scanned[-1] == (log.max_offset, None)
    last: dict[int, int] = {}
    for off, unit in scanned:
        if unit is not None:
            last[unit.delayed_time] = off
    assert log.last_units(0, check=True) == (log.max_offset, last)  # recovery's fast walk
    for off, d in zip(offsets, delays, strict=True):
        got = log.read_unit(off)
        assert got is not None and got.delayed_time == 1000 + d
    log.close()


def test_scan_stops_at_a_torn_unit(tmp_path: Path) -> None:
    log = TimerLog(tmp_path / "timerlog", 4096)
    log.load()
    for i in range(3):
        log.append(TimerUnit(-1, 1, 0, 5, i, 1).encode())
    mf = log.queue.files[0]
    mf.write_at(52 * 2, struct.pack(">i", 51))  # the third unit's size is wrong
    assert [o for o, u in log.scan(0, check=True)] == [0, 52, 104]
    assert list(log.scan(0, check=True))[-1] == (104, None)
    assert log.last_units(0, check=True) == (104, {5: 52})
    log.close()


@given(
    st.integers(1, 10**13),
    st.sampled_from([100, 200, 500, 1000]),
)
def test_slot_index_is_tick_mod_two_turns(time_ms: int, precision: int) -> None:
    ring = SLOTS * 2
    index = time_ms // precision % ring
    assert 0 <= index < ring
    assert (time_ms + ring * precision) // precision % ring == index  # one turn of the file
    assert (time_ms + precision) // precision % ring == (index + 1) % ring


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**4), i64, i64, i32), min_size=1, max_size=30))
def test_wheel_put_get_and_stale_slots(tmp_path_factory, writes) -> None:  # type: ignore[no-untyped-def]
    root: Path = tmp_path_factory.mktemp("w")
    wheel = TimerWheel(root / "timerwheel", SLOTS, 1000)
    base = 1_800_000_000_000
    last: dict[int, tuple[int, int, int, int]] = {}
    for tick, first, end, num in writes:
        t = base + tick * 1000
        wheel.put_slot(t, first, end, num, 7)
        last[wheel.slot_index(t)] = (t, first, end, num)
    for t, first, end, num in last.values():
        slot = wheel.get_slot(t + 999)  # any time within the tick
        assert (slot.time_ms, slot.first_pos, slot.last_pos, slot.num, slot.magic) == (
            t,
            first,
            end,
            num,
            7,
        )
        assert wheel.get_slot(t + SLOTS * 2 * 1000) is EMPTY  # a later turn: stale
        raw = struct.unpack_from(">qqqii", wheel._mm, wheel.slot_index(t) * 32)
        assert raw == (t // 1000, first, end, num, 7)
    wheel.close()


def test_revise_slot_takes_over_stale_slots_only_when_forced(tmp_path: Path) -> None:
    wheel = TimerWheel(tmp_path / "timerwheel", SLOTS, 1000)
    t = 1_800_000_000_000
    wheel.revise_slot(t, IGNORE, 520, force=False)
    assert wheel.get_slot(t) is EMPTY
    wheel.revise_slot(t, IGNORE, 520, force=True)
    assert wheel.get_slot(t)[:3] == (t, 520, 520)
    wheel.revise_slot(t, IGNORE, 572, force=False)
    assert wheel.get_slot(t)[:3] == (t, 520, 572)
    wheel.put_slot(t + 1000, 0, 52, 3)
    assert wheel.all_num(t) == 3
    assert wheel.check_phy_pos(t, 100) == 520  # slots whose last unit lies past 100
    assert wheel.check_phy_pos(t, 1000) == 2**63 - 1
    wheel.close()


def test_wheel_of_the_wrong_size_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "timerwheel"
    path.write_bytes(b"\0" * 100)
    with pytest.raises(CorruptRecordError):
        TimerWheel(path, SLOTS, 1000)


def test_default_wheel_is_rocketmq_5s_size(tmp_path: Path) -> None:
    wheel = TimerWheel(tmp_path / "timerwheel", 7 * 86400, 1000)
    assert (tmp_path / "timerwheel").stat().st_size == 38_707_200
    assert not wheel.existed
    wheel.close()
    again = TimerWheel(tmp_path / "timerwheel", 7 * 86400, 1000)
    assert again.existed and again.all_num(0) == 0
    again.close()


@given(st.tuples(i64, i64, i64, i64, i64, i64, i64))
def test_checkpoint_values_round_trip(values: tuple[int, ...]) -> None:
    cp = TimerCheckpointValues(*values)
    data = cp.encode()
    assert len(data) == 56 and struct.unpack(">7q", data) == values
    assert TimerCheckpointValues.decode(data) == cp


def test_checkpoint_file(tmp_path: Path) -> None:
    path = tmp_path / "config" / "timercheck"
    cp = TimerCheckpoint(path)
    assert not cp.existed and path.stat().st_size == 4096
    cp.last_read_time_ms, cp.last_timer_log_flush_pos = 1_800_000_000_000, 5200
    cp.last_timer_queue_offset, cp.master_timer_queue_offset = 41, 42
    cp.next_version()
    cp.close()
    raw = path.read_bytes()
    assert struct.unpack_from(">4q", raw) == (1_800_000_000_000, 5200, 41, 42)
    assert struct.unpack_from(">q", raw, 48)[0] == 1  # the data version's counter
    again = TimerCheckpoint(path)
    assert again.existed and again.master_timer_queue_offset == 42
    assert again.version_counter == 1
    again.close()


def test_a_full_disk_is_an_error_before_a_slot_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slot goes only into a page given its disk blocks first: on a full disk the put
    raises DiskFullError (a write through the map into a hole would be SIGBUS)."""
    wheel = TimerWheel(tmp_path / "timerwheel", 7 * 86400, 1000)
    t = 1_800_000_000_000
    wheel.put_slot(t, 0, 52, 1)  # its page has blocks from now on

    def full(*_args: object) -> None:
        raise DiskFullError("no space left")

    monkeypatch.setattr("mqcore.store.timer.wheel.reserve_blocks", full)
    wheel.put_slot(t + 1000, 52, 104, 1)  # same page: no new blocks needed
    with pytest.raises(DiskFullError):
        wheel.put_slot(t + 3_600_000, 104, 156, 1)  # another page
    with pytest.raises(DiskFullError):
        wheel.revise_slot(t + 7_200_000, IGNORE, 208, force=True)
    assert wheel.get_slot(t + 3_600_000) is EMPTY  # nothing was written
    wheel.close()

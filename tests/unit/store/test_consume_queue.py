"""ConsumeQueue: entries, offsets, idempotent puts, fillers, truncation, time lookup."""

from __future__ import annotations

import struct
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from mqcore.store.consume_queue import ENTRY, FILLER_SIZE, ConsumeQueue, count_valid_entries

SIZE = 10 * 20  # ten entries per file


def _cq(tmp_path: Path) -> ConsumeQueue:
    return ConsumeQueue("T", 0, tmp_path, SIZE)


def test_put_and_read_across_files(tmp_path: Path) -> None:
    cq = _cq(tmp_path)
    for i in range(25):
        assert cq.put(i * 100, 100, i, i)
    assert (cq.min_offset, cq.max_offset) == (0, 25)
    assert len(cq.queue.files) == 3
    assert cq.entry(13) == (1300, 100, 13)
    assert cq.entry(25) is None
    assert [e[0] for e in cq.iter_entries(8, 4)] == [8, 9, 10, 11]
    raw = (tmp_path / "T" / "0" / "00000000000000000200").read_bytes()
    assert struct.unpack_from(">qiq", raw, 0) == (1000, 100, 10)
    cq.close()


def test_duplicate_puts_are_skipped(tmp_path: Path) -> None:
    cq = _cq(tmp_path)
    cq.put(0, 10, 0, 0)
    cq.put(10, 10, 0, 1)
    assert not cq.put(0, 10, 0, 0)
    assert not cq.put(10, 10, 0, 1)
    assert cq.max_offset == 2
    cq.close()


def test_queue_starting_mid_file_gets_fillers(tmp_path: Path) -> None:
    cq = _cq(tmp_path)
    assert cq.put(5000, 50, 7, 13)  # file 200 (offsets 10..19), fill 10..12
    assert cq.queue.files[0].file_from_offset == 200
    assert cq.entry(10) == (0, FILLER_SIZE, 0)
    assert (cq.min_offset, cq.max_offset) == (13, 14)
    cq.close()
    again = _cq(tmp_path)
    again.load()
    again.recover()
    again.correct_min_offset(0)
    assert (again.min_offset, again.max_offset) == (13, 14)
    again.close()


def test_recover_finds_end_and_truncate_dirty(tmp_path: Path) -> None:
    cq = _cq(tmp_path)
    for i in range(23):
        cq.put(i * 100, 100, 0, i)
    cq.close()
    cq = _cq(tmp_path)
    cq.load()
    cq.recover()
    assert cq.max_offset == 23 and cq.max_physic_offset == 2300
    cq.truncate_dirty(1550)  # records at 1500 (end 1600) and later point past the end
    assert cq.max_offset == 15 and cq.max_physic_offset == 1500
    assert len(cq.queue.files) == 2
    assert cq.put(1500, 50, 0, 15)
    cq.close()


def test_offset_by_time_binary_search(tmp_path: Path) -> None:
    cq = _cq(tmp_path)
    for i in range(30):
        cq.put(i * 100, 100, 0, i)
    times = {i * 100: 1000 + i * 10 for i in range(30)}

    def store_time(phy: int, _size: int) -> int | None:
        return times.get(phy)

    assert cq.offset_by_time(0, store_time) == 0
    assert cq.offset_by_time(1105, store_time) == 11
    assert cq.offset_by_time(1110, store_time) == 11
    assert cq.offset_by_time(99999, store_time) == 30
    cq.close()


def test_delete_expired_and_min_offset(tmp_path: Path) -> None:
    cq = _cq(tmp_path)
    for i in range(35):
        cq.put(i * 100, 100, 0, i)
    assert cq.delete_expired(2050) == 2  # files with entries 0..19 point below 2050
    assert cq.min_offset == 21  # first entry at or past the log's min offset
    assert cq.max_offset == 35
    cq.close()


def _valid_prefix_one_by_one(data: bytes) -> int:
    for i in range(len(data) // 20):
        phy, size, _ = ENTRY.unpack_from(data, i * 20)
        if phy < 0 or size <= 0:
            return i
    return len(data) // 20


_entries = st.lists(
    st.tuples(
        st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from([0, 1, -1, 2**32])),
        st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, 1, -1, 256, 2**24])),
        st.integers(-(2**63), 2**63 - 1),
    ),
    max_size=40,
)


@given(_entries, st.binary(max_size=19))
def test_valid_entries_are_counted_as_one_by_one(
    entries: list[tuple[int, int, int]], tail: bytes
) -> None:
    data = b"".join(ENTRY.pack(*e) for e in entries) + tail
    assert count_valid_entries(data) == _valid_prefix_one_by_one(data)


def test_recover_stops_at_the_first_invalid_entry(tmp_path: Path) -> None:
    cq = _cq(tmp_path)
    for i in range(15):
        cq.put(i * 100, 100, i, i)
    cq.close()
    path = tmp_path / "T" / "0" / "00000000000000000000"
    data = bytearray(path.read_bytes())
    data[6 * 20 + 8 : 6 * 20 + 12] = bytes(4)  # entry 6: size 0
    path.write_bytes(bytes(data))
    again = _cq(tmp_path)
    again.load()
    again.recover()
    assert (again.max_offset, again.max_physic_offset) == (6, 600)
    again.close()

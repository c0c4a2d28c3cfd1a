"""The epoch file: RocketMQ 5's checkpoint text, epochs' ends, the consistent point of
two logs, truncation, and the ``.bak`` fall-back."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqcore.errors import StoreError
from mqcore.store.epoch_file import (
    EPOCH_FILE_NAME,
    EpochEntry,
    EpochFileCache,
    decode_epoch_file,
)

OPEN = (1 << 63) - 1


def cache(*entries: tuple[int, int], path: Path | None = None) -> EpochFileCache:
    c = EpochFileCache(path)
    for epoch, start in entries:
        assert c.append(epoch, start)
    return c


def test_the_file_is_rocketmq_5s_checkpoint_text(tmp_path: Path) -> None:
    path = tmp_path / EPOCH_FILE_NAME
    cache((1, 0), (2, 4096), (5, 9000), path=path)
    body = "1-0\n2-4096\n5-9000\n"
    crc = zlib.crc32(body.encode()) & 0x7FFFFFFF
    assert path.read_text() == f"3\n{crc}\n{body}"
    assert (tmp_path / f"{EPOCH_FILE_NAME}.bak").read_text().startswith("2\n")


def test_a_file_written_by_rocketmq_5_reads_back(tmp_path: Path) -> None:
    body = "3-0\n4-123\n"
    crc = zlib.crc32(body.encode()) & 0x7FFFFFFF
    path = tmp_path / EPOCH_FILE_NAME
    path.write_text(f"2\n{crc}\n{body}")
    c = EpochFileCache(path)
    c.load()
    assert c.entries == [EpochEntry(3, 0, 123), EpochEntry(4, 123, OPEN)]
    assert c.last_epoch == 4
    assert decode_epoch_file(f"2\n0\n{body}")  # checksum 0: not checked


@pytest.mark.parametrize(
    "text",
    ["", "1\n", "x\n0\n1-0\n", "2\n0\n1-0\n", "1\n5\n1-0\n", "1\n0\n1-x\n"],
    ids=["empty", "no-crc", "bad-count", "short", "bad-crc", "bad-entry"],
)
def test_a_damaged_file_is_refused(text: str) -> None:
    with pytest.raises(StoreError):
        decode_epoch_file(text)


def test_a_damaged_file_is_read_from_its_backup(tmp_path: Path) -> None:
    path = tmp_path / EPOCH_FILE_NAME
    cache((1, 0), (2, 50), path=path)
    path.write_text("2\n1\n1-0\n2-5")  # torn
    c = EpochFileCache(path)
    c.load()
    assert [e.epoch for e in c.entries] == [1]  # the .bak: the file before epoch 2


def test_epochs_only_move_forward() -> None:
    c = cache((3, 100))
    assert not c.append(3, 200) and not c.append(4, 100) and not c.append(2, 300)
    assert c.append(4, 150)
    assert c.entries == [EpochEntry(3, 100, 150), EpochEntry(4, 150, OPEN)]
    assert c.entry_at(120) == EpochEntry(3, 100, 150) and c.entry_at(99) is None


def test_the_consistent_point_is_the_end_of_the_newest_shared_epoch() -> None:
    master = cache((1, 0), (2, 100), (4, 300))
    master.set_last_end(500)
    old = cache((1, 0), (2, 100), (3, 250))  # epoch 3 was this one's, never replicated
    old.set_last_end(280)
    assert old.find_consistent_point(master) == 250  # epoch 2 ends at 250 here, 300 there
    assert master.find_consistent_point(master) == 500
    assert cache((7, 0)).find_consistent_point(master) == -1


def test_truncation(tmp_path: Path) -> None:
    path = tmp_path / EPOCH_FILE_NAME
    c = cache((1, 0), (2, 100), (3, 200), path=path)
    c.truncate_from_offset(150)
    assert [e.epoch for e in c.entries] == [1, 2] and c.entries[-1].end_offset == OPEN
    c.truncate_from_epoch(2)
    again = EpochFileCache(path)
    again.load()
    assert [e.epoch for e in again.entries] == [1]
    c.truncate_from_epoch(0)  # nothing left: no file brings them back
    again.load()
    assert again.entries == [] and not path.exists()


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1 << 40)), max_size=20))
def test_what_is_written_reads_back(pairs: list[tuple[int, int]]) -> None:
    c = EpochFileCache()
    for epoch, start in pairs:
        c.append(epoch, start)
    entries = c.entries
    assert [e.epoch for e in entries] == sorted({e.epoch for e in entries})
    text = f"{len(entries)}\n0\n" + "".join(f"{e.epoch}-{e.start_offset}\n" for e in entries)
    back = EpochFileCache()
    back.replace(decode_epoch_file(text))
    assert back.entries == entries

"""MappedFile and MappedFileQueue: preallocation, append, flush, readonly, rolling."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from mqcore.errors import CorruptRecordError, StoreError
from mqcore.store.index_file import IndexFile
from mqcore.store.mapped_file import MappedFile, offset_to_file_name
from mqcore.store.mapped_file_queue import MappedFileQueue


def test_file_name_is_20_digit_offset() -> None:
    assert offset_to_file_name(0) == "00000000000000000000"
    assert offset_to_file_name(1073741824) == "00000000001073741824"


def test_create_append_flush_and_reopen(tmp_path: Path) -> None:
    p = tmp_path / offset_to_file_name(4096)
    mf = MappedFile(p, 4096, create=True)
    assert p.stat().st_size == 4096
    assert mf.file_from_offset == 4096
    assert mf.append(b"abc") == 0
    assert mf.append(b"defg") == 3
    assert mf.max_offset == 4096 + 7
    assert bytes(mf.slice(1, 4)) == b"bcde"
    assert mf.flush() == 7
    mf.close()
    assert p.read_bytes()[:8] == b"abcdefg\x00"
    again = MappedFile(p, 4096)
    assert again.wrote_position == 4096  # owners set the real end after recovery
    again.close()


def test_append_past_end_is_refused(tmp_path: Path) -> None:
    mf = MappedFile(tmp_path / offset_to_file_name(0), 4096, create=True)
    mf.append(bytes(4000))
    with pytest.raises(StoreError):
        mf.append(bytes(100))
    mf.close()


def test_wrong_size_file_is_corrupt(tmp_path: Path) -> None:
    p = tmp_path / offset_to_file_name(0)
    p.write_bytes(b"x" * 100)
    with pytest.raises(CorruptRecordError) as ei:
        MappedFile(p, 4096)
    assert ei.value.path == str(p)


def test_readonly_never_writes_or_creates(tmp_path: Path) -> None:
    p = tmp_path / offset_to_file_name(0)
    with pytest.raises(StoreError):
        MappedFile(p, 4096, readonly=True, create=True)
    assert not p.exists()
    p.write_bytes(bytes(4096))
    os.chmod(p, 0o444)
    mf = MappedFile(p, 4096, readonly=True)
    with pytest.raises(StoreError):
        mf.append(b"x")
    with pytest.raises(TypeError):
        mf.write_at(0, b"x")  # the map itself is ACCESS_READ
    mf.close()


def test_close_with_live_views_keeps_them_valid(tmp_path: Path) -> None:
    mf = MappedFile(tmp_path / offset_to_file_name(0), 4096, create=True)
    mf.append(b"payload")
    view = mf.slice(0, 7)
    mf.close()  # must not raise although a reader holds a view
    assert bytes(view) == b"payload"


def test_queue_rolls_and_finds_by_offset(tmp_path: Path) -> None:
    q = MappedFileQueue(tmp_path, 4096)
    for _ in range(3):
        mf = q.get_last_file()
        assert mf is not None
        mf.append(bytes(4096))
    last = q.get_last_file()
    assert last is not None
    last.append(b"zz")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [offset_to_file_name(i * 4096) for i in range(4)]
    assert q.max_offset == 3 * 4096 + 2
    found = q.find_by_offset(5000)
    assert found is not None and found.file_from_offset == 4096
    assert q.find_by_offset(10**9) is None
    q.set_write_end(4096 + 10)
    assert len(q.files) == 2 and q.max_offset == 4096 + 10
    assert sorted(p.name for p in tmp_path.iterdir()) == names[:2]
    q.close()


def test_queue_load_detects_gaps_and_sizes(tmp_path: Path) -> None:
    (tmp_path / offset_to_file_name(0)).write_bytes(bytes(4096))
    (tmp_path / offset_to_file_name(8192)).write_bytes(bytes(4096))
    with pytest.raises(CorruptRecordError):
        MappedFileQueue(tmp_path, 4096).load()


def test_delete_expired_keeps_last_file(tmp_path: Path) -> None:
    q = MappedFileQueue(tmp_path, 4096)
    for _ in range(4):
        mf = q.get_last_file()
        assert mf is not None
        mf.append(bytes(4096))
    for mf in q.files:
        os.utime(mf.path, (1, 1))
    assert q.delete_expired_by_time(1000, force=False) == 3
    assert len(q.files) == 1 and q.min_offset == 3 * 4096
    q.close()


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="fdatasync covers mapped pages on Linux only"
)
def test_flush_writes_back_with_fdatasync_which_releases_the_gil(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # mmap.flush (msync) holds the GIL through the write-back and stalls the event loop.
    synced: list[str] = []
    real = os.fdatasync

    def recording(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fdatasync", recording)
    mf = MappedFile(tmp_path / offset_to_file_name(0), 8192, create=True)
    try:
        mf.append(b"x" * 5000)
        assert mf.flush() == 5000
        assert synced == [str(mf.path)]
        assert mf.flush() == 5000 and len(synced) == 1  # nothing dirty: no sync
    finally:
        mf.close()
    index = IndexFile.create(tmp_path / "index", 8, 16)
    try:
        index.flush()
        assert synced[-1] == str(tmp_path / "index")
    finally:
        index.close()

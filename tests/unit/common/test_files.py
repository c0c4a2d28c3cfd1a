"""Crash-safe file writes: pieces written with writev land as their concatenation, also
past writev's buffer limit and after short writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.common import files
from mqcore.common.files import write_synced


@given(st.lists(st.binary(max_size=40), max_size=60), st.integers(16, 40))
@settings(max_examples=100, deadline=None)
def test_pieces_land_as_their_concatenation(
    tmp_path_factory: pytest.TempPathFactory, chunks: list[bytes], iov_max: int
) -> None:
    path = tmp_path_factory.mktemp("w") / "f"
    path.write_bytes(b"old content, longer than some of the new ones")
    saved = files._IOV_MAX
    files._IOV_MAX = iov_max  # more pieces than one writev takes
    try:
        write_synced(path, chunks)
    finally:
        files._IOV_MAX = saved
    assert path.read_bytes() == b"".join(chunks)


def test_short_writes_go_on_where_they_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.writev

    def short(fd: int, buffers: list[memoryview]) -> int:
        """At most 7 bytes per call, so a write stops inside a piece."""
        first = bytes(buffers[0])[:7]
        return real(fd, [first])

    monkeypatch.setattr(os, "writev", short)
    chunks = [b"alpha", b"", b"a somewhat longer piece", memoryview(b"view"), b"z"]
    path = tmp_path / "f"
    write_synced(path, chunks)
    assert path.read_bytes() == b"".join(bytes(c) for c in chunks)


def test_bytes_alone(tmp_path: Path) -> None:
    path = tmp_path / "f"
    write_synced(path, b"one piece")
    assert path.read_bytes() == b"one piece"
    write_synced(path, bytearray(b"two"))
    assert path.read_bytes() == b"two"

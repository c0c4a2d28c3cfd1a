"""Consume queue and index files of random or damaged bytes, opened read-only as the
offline tools open a store: results or CorruptRecordError/StoreError, never another
exception, and nothing is written."""

from __future__ import annotations

import tempfile
from pathlib import Path

from fuzzing import fuzz, mutated
from hypothesis import given
from hypothesis import strategies as st

from mqcore.errors import StoreError
from mqcore.store.consume_queue import ENTRY, FILLER, ConsumeQueue
from mqcore.store.index_file import IndexFile

CQ_FILE_SIZE = 200  # ten entries

ENTRIES = st.lists(
    st.one_of(
        st.builds(
            ENTRY.pack,
            st.integers(-(2**63), 2**63 - 1),
            st.integers(-(2**31), 2**31 - 1),
            st.integers(-(2**63), 2**63 - 1),
        ),
        st.builds(ENTRY.pack, st.integers(0, 10_000), st.integers(1, 500), st.integers(0, 9)),
        st.just(FILLER),
        st.just(bytes(20)),
    ),
    max_size=10,
).map(lambda entries: b"".join(entries).ljust(CQ_FILE_SIZE, b"\0"))
CQ_FILES = st.lists(
    st.one_of(mutated(ENTRIES, max_ops=2), st.binary(max_size=CQ_FILE_SIZE + 5)),
    min_size=1,
    max_size=3,
)
FILE_NAMES = st.sampled_from(["00000000000000000000", "00000000000000000200", "400", "٣"])


@fuzz(150)
@given(CQ_FILES, st.lists(FILE_NAMES, min_size=1, max_size=3), st.integers(-2, 40))
def test_consume_queue_files(files: list[bytes], names: list[str], probe: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        qdir = Path(tmp) / "T" / "0"
        qdir.mkdir(parents=True)
        for i, data in enumerate(files):
            name = names[i % len(names)] if i < len(names) else f"{i * CQ_FILE_SIZE:020d}"
            (qdir / name).write_bytes(data)
        before = {p.name: p.read_bytes() for p in qdir.iterdir()}
        cq = ConsumeQueue("T", 0, Path(tmp), CQ_FILE_SIZE, readonly=True)
        try:
            cq.load()
            cq.recover()
            cq.correct_min_offset(probe * 10)
            assert cq.min_offset >= 0
            cq.entry(probe)
            cq.entries_view(probe)
            cq.offset_by_time(probe, lambda phy, size: phy)
            for _ in cq.iter_entries(limit=50):
                pass
        except StoreError:  # CorruptRecordError included
            pass
        finally:
            cq.close()
        assert {p.name: p.read_bytes() for p in qdir.iterdir()} == before


def _index_seed(keys: list[str]) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "20260101000000000"
        f = IndexFile.create(path, 8, 16)
        for i, key in enumerate(keys):
            f.put_key(key, 100 * i, 1_700_000_000_000 + 1000 * i)
        f.flush()
        f.close()
        return path.read_bytes()


INDEX_SEEDS = st.lists(st.sampled_from(["T#a", "T#b", "T#c", "U#a"]), max_size=14).map(_index_seed)


@fuzz(150)
@given(
    st.one_of(mutated(INDEX_SEEDS, max_ops=3), st.binary(max_size=500)),
    st.booleans(),
    st.sampled_from(["T#a", "T#b", "U#a", "none"]),
)
def test_index_files(data: bytes, geometry: bool, key: str) -> None:
    """With the geometry given or inferred from the bytes (``mq store dump index``)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "20260101000000000"
        path.write_bytes(data)
        try:
            f = IndexFile.open(path, *((8, 16) if geometry else (None, None)))
        except StoreError:
            return
        try:
            for entry in f.iter_entries():
                assert f.entry(entry.index_no) == entry
            for slot in range(f.max_hash_slot_num):
                f.slot(slot)
            found = f.query(key, 32, 0, 2**62)
            assert len(found) <= 32 and len(set(found)) == len(found)
        finally:
            f.close()
        assert path.read_bytes() == data

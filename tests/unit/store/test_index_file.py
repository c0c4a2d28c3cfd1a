"""IndexFile: RocketMQ byte layout, chain walking, the real 4.9.8 fixture, hostile bytes."""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqcore.common.javahash import index_key_hash
from mqcore.errors import CorruptRecordError
from mqcore.store.index_file import (
    DEFAULT_MAX_HASH_SLOT_NUM,
    DEFAULT_MAX_INDEX_NUM,
    IndexEntry,
    IndexFile,
    index_file_name,
    index_file_size,
    infer_geometry,
)

FIXTURE_INDEX_NAME = "20261129184202721"
T0 = 1_795_977_722_716


def make(tmp_path: Path, slots: int = 100, entries: int = 10, **kw: int) -> IndexFile:
    return IndexFile.create(tmp_path / "20260101000000000", slots, entries, **kw)


def test_geometry_defaults_and_name() -> None:
    assert index_file_size(DEFAULT_MAX_HASH_SLOT_NUM, DEFAULT_MAX_INDEX_NUM) == 420_000_040
    assert index_file_size(100, 1000) == 20_440
    name = index_file_name(T0)
    assert len(name) == 17 and name.isdigit() and name.endswith("716")


def test_spec_example_raw_bytes(tmp_path: Path) -> None:
    """Spec §8.4: uniq key is entry 1, `SmokeTopic#key-0` entry 2 in slot hash % slots."""
    assert index_key_hash("SmokeTopic#key-0") == 79711007
    assert index_key_hash("TopicTest#KEY1") == 1656969516
    f = make(tmp_path)
    assert f.put_key("SmokeTopic#7F00000100002A9F0000000000000000", 0, T0)
    assert f.put_key("SmokeTopic#key-0", 0, T0)
    assert f.put_key("TopicTest#KEY1", 197, T0 + 5_999)
    f.flush()
    f.close()
    raw = (tmp_path / "20260101000000000").read_bytes()
    assert len(raw) == 40 + 100 * 4 + 10 * 20
    assert struct.unpack(">qqqqii", raw[:40]) == (T0, T0 + 5_999, 0, 197, 3, 4)
    slot = 79711007 % 100
    assert struct.unpack_from(">i", raw, 40 + slot * 4) == (2,)
    base = 40 + 100 * 4
    assert struct.unpack_from(">iqii", raw, base + 2 * 20) == (79711007, 0, 0, 0)
    # timeDiff is whole seconds since beginTimestamp
    assert struct.unpack_from(">iqii", raw, base + 3 * 20) == (1656969516, 197, 5, 0)
    assert raw[base : base + 20] == bytes(20)  # entry 0 is never used


def test_chain_in_one_slot_and_hash_filter(tmp_path: Path) -> None:
    f = make(tmp_path, slots=1, entries=20)  # every key shares slot 0
    for i in range(10):
        assert f.put_key(f"T#{'a' if i % 2 else 'b'}", 1000 + i, T0 + i * 1000)
    entries = list(f.iter_entries())
    assert [e.prev_index for e in entries] == list(range(10))
    assert f.slot(0) == 10
    assert f.query("T#a", 64, 0, 2**62) == [1009, 1007, 1005, 1003, 1001]
    assert f.query("T#b", 2, 0, 2**62) == [1008, 1006]
    # the time window cuts the chain: entries older than begin end the walk
    assert f.query("T#a", 64, T0 + 3000, T0 + 7000) == [1007, 1005, 1003]
    assert f.query("T#zzz", 64, 0, 2**62) == []


def test_chain_stops_on_bad_prev_index(tmp_path: Path) -> None:
    f = make(tmp_path, slots=1, entries=8)
    for i in range(3):
        f.put_key("T#k", 10 * i, T0)
    f.close()
    path = tmp_path / "20260101000000000"
    raw = bytearray(path.read_bytes())
    base = 40 + 4
    struct.pack_into(">i", raw, base + 1 * 20 + 16, 3)  # entry 1 -> entry 3: a cycle
    path.write_bytes(bytes(raw))
    g = IndexFile.open(path, 1, 8)
    assert g.query("T#k", 64, 0, 2**62) == [20, 10, 0]


def test_full_file_refuses_keys(tmp_path: Path) -> None:
    f = make(tmp_path, slots=4, entries=3)
    assert f.put_key("T#1", 0, T0) and f.put_key("T#2", 1, T0)
    assert f.is_write_full
    assert not f.put_key("T#3", 2, T0)
    assert f.index_count == 3


def test_create_presets_previous_end(tmp_path: Path) -> None:
    f = make(tmp_path, end_phy_offset=4096, end_timestamp=T0)
    assert (f.begin_phy_offset, f.end_phy_offset) == (4096, 4096)
    assert (f.begin_timestamp, f.end_timestamp) == (T0, T0)
    f.put_key("T#k", 5000, T0 + 1500)
    assert (f.begin_phy_offset, f.begin_timestamp) == (5000, T0 + 1500)
    assert f.entry(1).time_diff == 0
    assert f.query("T#k", 10, T0 + 1500, T0 + 1500) == [5000]


def test_reopen_roundtrip_and_readonly(tmp_path: Path) -> None:
    f = make(tmp_path)
    f.put_key("T#k", 77, T0)
    f.flush()
    f.close()
    g = IndexFile.open(tmp_path / "20260101000000000")  # geometry inferred
    assert (g.max_hash_slot_num, g.max_index_num) == (100, 10)
    assert list(g.iter_entries()) == [IndexEntry(1, index_key_hash("T#k"), 77, 0, 0)]
    with pytest.raises(Exception, match="read-only"):
        g.put_key("T#x", 1, T0)


def test_wrong_length_and_bad_header(tmp_path: Path) -> None:
    p = tmp_path / "x"
    p.write_bytes(bytes(39))
    with pytest.raises(CorruptRecordError) as err:
        IndexFile.open(p, 100, 10)
    assert err.value.path == str(p)
    p.write_bytes(bytes(index_file_size(100, 10) - 1))
    with pytest.raises(CorruptRecordError, match="expected"):
        IndexFile.open(p, 100, 10)
    raw = bytearray(index_file_size(100, 10))
    struct.pack_into(">i", raw, 36, 11)  # indexCount beyond maxIndexNum
    p.write_bytes(bytes(raw))
    with pytest.raises(CorruptRecordError, match="indexCount"):
        IndexFile.open(p, 100, 10)


# -- the real RocketMQ 4.9.8 store --------------------------------------------------------


def _record_keys(commitlog: bytes, offset: int) -> tuple[str, list[str]]:
    """Topic and UNIQ_KEY + KEYS of the v1 record at ``offset`` (IPv4 hosts, spec §3.2)."""
    size, _magic = struct.unpack_from(">ii", commitlog, offset)
    assert 0 < size < 4096
    record = commitlog[offset : offset + size]
    (phy,) = struct.unpack_from(">q", record, 28)
    (sys_flag,) = struct.unpack_from(">i", record, 36)
    assert phy == offset and sys_flag & 0x30 == 0
    (body_len,) = struct.unpack_from(">i", record, 84)
    pos = 88 + body_len
    topic = record[pos + 1 : pos + 1 + record[pos]].decode()
    pos += 1 + record[pos]
    (props_len,) = struct.unpack_from(">h", record, pos)
    props = dict(
        kv.split("\x01", 1)
        for kv in record[pos + 2 : pos + 2 + props_len].decode().split("\x02")
        if kv
    )
    keys = [props["UNIQ_KEY"], *(k for k in props.get("KEYS", "").split(" ") if k)]
    return topic, keys


@pytest.mark.parametrize(("key", "count"), [("k42", 1), ("dk3", 1), ("k0", 1)])
def test_fixture_index_finds_keys(fixture_store: Path, key: str, count: int) -> None:
    commitlog = (fixture_store / "commitlog" / "00000000000000000000").read_bytes()
    f = IndexFile.open(fixture_store / "index" / FIXTURE_INDEX_NAME, 100, 1000)
    offsets = f.query(f"FixtureTopic#{key}", 64, 0, 2**62)
    assert len(offsets) == count
    for off in offsets:
        topic, keys = _record_keys(commitlog, off)
        assert topic == "FixtureTopic" and key in keys
    f.close()


def test_fixture_every_entry_points_at_its_key(fixture_store: Path) -> None:
    commitlog = (fixture_store / "commitlog" / "00000000000000000000").read_bytes()
    path = fixture_store / "index" / FIXTURE_INDEX_NAME
    assert infer_geometry(path.read_bytes()) == (100, 1000)
    f = IndexFile.open(path)
    assert (f.index_count, f.begin_phy_offset, f.end_phy_offset) == (241, 0, 25018)
    entries = list(f.iter_entries())
    assert len(entries) == 240  # 120 records x (uniq key + key)
    for e in entries:
        topic, keys = _record_keys(commitlog, e.phy_offset)
        assert e.key_hash in {index_key_hash(f"{topic}#{k}") for k in keys}
        assert 0 <= e.prev_index < e.index_no
    f.close()


# -- hostile bytes ------------------------------------------------------------------------

_SIZE = index_file_size(4, 6)


def _header(count: int, slots: int) -> bytes:
    return struct.pack(">qqqqii", T0, T0 + 9000, 0, 500, slots, count)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.one_of(
        st.binary(max_size=300),
        st.binary(min_size=_SIZE, max_size=_SIZE),
        st.builds(
            lambda c, s, body: (_header(c, s) + body)[:_SIZE].ljust(_SIZE, b"\0"),
            st.integers(0, 6),
            st.integers(0, 4),
            st.binary(min_size=_SIZE - 40, max_size=_SIZE - 40),
        ),
    ),
    key=st.text(max_size=8),
    begin=st.integers(-(2**40), 2**42),
    span=st.integers(0, 2**42),
    geometry_known=st.booleans(),
)
def test_arbitrary_bytes_only_raise_corrupt(
    data: bytes, key: str, begin: int, span: int, geometry_known: bool
) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "20260101000000000"
        p.write_bytes(data)
        try:
            f = IndexFile.open(p, 4, 6) if geometry_known else IndexFile.open(p)
        except CorruptRecordError:
            return
        try:
            list(f.iter_entries())
            f.query(key, 64, begin, begin + span)
            f.is_time_matched(begin, begin + span)
        finally:
            f.close()


def _unwritten_bytes(path: Path, length: int) -> int | None:
    """Bytes of ``[0, length)`` in extents the file system marks unwritten (reserved
    but never written), from the FIEMAP ioctl; None where it is not supported."""
    import fcntl
    import os

    fs_ioc_fiemap, extent_unwritten, count = 0xC020660B, 0x800, 512
    head = struct.pack("=QQIIII", 0, length, 0, 0, count, 0)
    buf = bytearray(head + bytes(56 * count))
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        fcntl.ioctl(fd, fs_ioc_fiemap, buf)
    except OSError:
        return None
    finally:
        os.close(fd)
    mapped = struct.unpack_from("=I", buf, 20)[0]
    unwritten = 0
    for i in range(mapped):
        logical, _phys, size, _r1, _r2, flags = struct.unpack_from("=QQQQQI", buf, 32 + 56 * i)
        if flags & extent_unwritten and logical < length:
            unwritten += min(size, length - logical)
    return unwritten


def test_slot_table_is_written_at_creation(tmp_path: Path) -> None:
    """The hash slots are written at random places through the map: a new file has them
    written (zeros) at once, not only reserved, so that a first write to a slot page
    finds an ordinary page instead of making the file system split an extent (about
    150 µs each on ext4, on the event loop)."""
    f = IndexFile.create(tmp_path / "idx", 10_000, 4_000)  # slots span 10 pages
    try:
        head = 40 + 10_000 * 4
        unwritten = _unwritten_bytes(f.path, head)
        if unwritten is None:
            pytest.skip("the file system under tmp_path has no FIEMAP to ask")
        assert unwritten == 0
        assert (f.path.stat().st_blocks * 512) >= head
    finally:
        f.close()

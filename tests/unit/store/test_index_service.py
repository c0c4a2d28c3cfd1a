"""IndexService: keys per record, rolling, queries across files, recovery, expiry."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqcore.errors import StoreError
from mqcore.store.index_service import IndexService

T0 = 1_795_977_722_000
RECORD = 100  # bytes between commit log offsets of the fake records


def build(svc: IndexService, n: int, *, start: int = 0) -> None:
    """Record i: store time T0 + i s, keys `k<i>` and `hot` (+ `even` on even i)."""
    for i in range(start, n):
        keys = f"k{i} hot" + (" even" if i % 2 == 0 else "")
        svc.build_index("T", keys, f"U{i:04d}", i * RECORD, T0 + i * 1000, 0)


@pytest.fixture
def svc(tmp_path: Path) -> IndexService:
    s = IndexService(tmp_path, 7, 5)  # 4 keys per file: records straddle files
    s.load()
    return s


def test_every_key_and_uniq_key_is_found_across_files(svc: IndexService) -> None:
    build(svc, 120)
    files = svc.files
    assert len(files) > 50
    names = [f.name for f in files]
    assert names == sorted(names) and len(set(names)) == len(names)
    for i in range(120):
        want = [i * RECORD]
        assert svc.query("T", f"k{i}", 64, 0, 2**62).phy_offsets == want
        assert svc.query("T", f"U{i:04d}", 64, 0, 2**62).phy_offsets == want
    assert svc.query("T", "nope", 64, 0, 2**62).phy_offsets == []
    assert svc.query("Other", "k1", 64, 0, 2**62).phy_offsets == []


def test_time_range_and_max_num(svc: IndexService) -> None:
    build(svc, 120)
    got = svc.query("T", "hot", 64, T0 + 10_000, T0 + 20_000).phy_offsets
    assert got == [i * RECORD for i in range(20, 9, -1)]  # exactly, newest first
    got = svc.query("T", "even", 64, T0 + 10_000, T0 + 20_000).phy_offsets
    assert got == [i * RECORD for i in range(20, 9, -2)]
    assert svc.query("T", "hot", 5, 0, 2**62).phy_offsets == [
        i * RECORD for i in (119, 118, 117, 116, 115)
    ]
    assert svc.query("T", "k5", 64, T0 + 6000, T0 + 9000).phy_offsets == []
    res = svc.query("T", "hot", 64, 0, 2**62)
    assert len(res.phy_offsets) == 64
    last = svc.files[-1]
    assert res.index_last_update_timestamp == last.end_timestamp == T0 + 119_000
    assert res.index_last_update_phyoffset == last.end_phy_offset == 119 * RECORD


def test_roll_presets_and_flushes(svc: IndexService) -> None:
    build(svc, 3)
    first, second = svc.files[:2]
    assert first.is_write_full and not second.closed
    assert second.begin_phy_offset >= first.end_phy_offset
    assert all(f.is_write_full for f in svc.files[:-1])


def test_rollback_not_indexed_prepared_is(svc: IndexService) -> None:
    svc.build_index("T", "rb", None, 0, T0, 0x0C)
    svc.build_index("T", "pr", None, 100, T0, 0x04)
    svc.build_index("T", "cm", None, 200, T0, 0x08)
    assert svc.query("T", "rb", 64, 0, 2**62).phy_offsets == []
    assert svc.query("T", "pr", 64, 0, 2**62).phy_offsets == [100]
    assert svc.query("T", "cm", 64, 0, 2**62).phy_offsets == [200]


def test_empty_keys_and_double_spaces(svc: IndexService) -> None:
    svc.build_index("T", "  a  b ", None, 0, T0, 0)
    svc.build_index("T", "", None, 100, T0, 0)
    svc.build_index("T", None, None, 200, T0, 0)
    assert sum(f.index_count - 1 for f in svc.files) == 2


def test_rebuild_is_idempotent(svc: IndexService) -> None:
    build(svc, 40)
    counts = sum(f.index_count for f in svc.files)
    build(svc, 40)  # replay: everything below the last endPhyOffset is skipped
    assert sum(f.index_count for f in svc.files) - counts <= 4  # only the boundary record
    for i in range(40):
        assert svc.query("T", f"k{i}", 64, 0, 2**62).phy_offsets == [i * RECORD]


def _hot(svc: IndexService) -> list[int]:
    return svc.query("T", "hot", 64, 0, 2**62).phy_offsets


def _store_time(phy: int) -> int:
    return T0 + phy // RECORD * 1000


def test_reload_keeps_every_file_and_repair_cuts_the_tail(tmp_path: Path) -> None:
    svc = IndexService(tmp_path, 7, 5)
    svc.load()
    build(svc, 21)  # 63 keys: 15 full files + 1 partial
    svc.shutdown()
    n_files = len(list((tmp_path / "index").iterdir()))

    again = IndexService(tmp_path, 7, 5)
    again.load()  # kept, whatever the last exit was
    assert len(again.files) == n_files
    assert again.query("T", "k20", 64, 0, 2**62).phy_offsets == [20 * RECORD]
    # a crash: recovery keeps what indexes records below 12 and indexes the rest again
    dropped = again.repair_tail(12 * RECORD, _store_time)
    assert dropped == sum(3 + (i % 2 == 0) for i in range(12, 21))
    assert len(again.files) < n_files  # files left empty are gone
    last = again.files[-1]
    assert last.end_phy_offset == 11 * RECORD and last.end_timestamp == T0 + 11_000
    assert _hot(again) == [i * RECORD for i in range(11, -1, -1)]
    assert again.query("T", "k15", 64, 0, 2**62).phy_offsets == []
    build(again, 25, start=12)
    for i in range(25):  # every key once: nothing lost, nothing doubled
        assert again.query("T", f"k{i}", 64, 0, 2**62).phy_offsets == [i * RECORD]
        assert again.query("T", f"U{i:04d}", 64, 0, 2**62).phy_offsets == [i * RECORD]
    assert _hot(again) == [i * RECORD for i in range(24, -1, -1)]
    entries = [e.phy_offset for f in again.files for e in f.iter_entries()]
    assert entries == sorted(entries)
    again.shutdown()


def test_repair_within_one_file_restores_the_slots_chains(tmp_path: Path) -> None:
    svc = IndexService(tmp_path, 7, 200)  # one file, 7 slots: long shared chains
    svc.load()
    build(svc, 30)
    f = svc.files[0]
    count, slots = f.hash_slot_count, [f.slot(i) for i in range(7)]
    build(svc, 40, start=30)
    assert svc.repair_tail(30 * RECORD, _store_time) == sum(3 + (i % 2 == 0) for i in range(30, 40))
    assert (f.hash_slot_count, [f.slot(i) for i in range(7)]) == (count, slots)
    assert _hot(svc) == [i * RECORD for i in range(29, -1, -1)]
    build(svc, 40, start=30)
    assert _hot(svc) == [i * RECORD for i in range(39, -1, -1)]
    svc.shutdown()


def test_entries_past_the_header_of_a_cut_batch_are_dropped(tmp_path: Path) -> None:
    """A crash between a batch's entries and its header write: the slots name entries
    the header does not count. Left so, the next key of such a slot would start a new
    chain and every older entry of it would be lost to lookups."""
    svc = IndexService(tmp_path, 7, 200)
    svc.load()
    build(svc, 5)
    f = svc.files[0]
    f.put_key("T#hot", 5 * RECORD, T0 + 5000, write_header=False)
    f.put_key("T#k5", 5 * RECORD, T0 + 5000, write_header=False)
    for g in svc.files:
        g.close()  # killed: the map's bytes stay, the header was never written

    crashed = IndexService(tmp_path, 7, 200)
    crashed.load()
    assert crashed.files[0].index_count == f.index_count - 2
    assert crashed.repair_tail(5 * RECORD, _store_time) == 2
    build(crashed, 7, start=5)
    assert _hot(crashed) == [i * RECORD for i in range(6, -1, -1)]
    assert crashed.query("T", "k5", 64, 0, 2**62).phy_offsets == [5 * RECORD]
    crashed.shutdown()


def test_drop_all_deletes_the_files(tmp_path: Path) -> None:
    svc = IndexService(tmp_path, 7, 5)
    svc.load()
    build(svc, 6)
    assert svc.drop_all() == sum(3 + (i % 2 == 0) for i in range(6))
    assert svc.files == [] and not any((tmp_path / "index").iterdir())
    build(svc, 2)
    assert svc.query("T", "k1", 64, 0, 2**62).phy_offsets == [RECORD]
    svc.shutdown()


def test_delete_expired_keeps_last(svc: IndexService) -> None:
    build(svc, 30)
    files = svc.files
    cut = 15 * RECORD
    svc.delete_expired(cut)
    assert all(f.end_phy_offset >= cut for f in svc.files)
    gone = [f for f in files if f not in svc.files]
    assert gone and all(not f.path.exists() for f in gone)
    svc.delete_expired(10**12)
    assert len(svc.files) == 1 and svc.files[0] is files[-1]


def test_readonly_never_writes(tmp_path: Path, fixture_store: Path) -> None:
    ro = IndexService(tmp_path, 7, 5, readonly=True)
    ro.load()
    assert not (tmp_path / "index").exists()
    with pytest.raises(StoreError):
        ro.build_index("T", "k", None, 0, T0, 0)

    fixture = IndexService(fixture_store, 100, 1000, readonly=True)
    fixture.load()
    assert [f.name for f in fixture.files] == ["20261129184202721"]
    res = fixture.query("FixtureTopic", "k42", 64, 0, 2**62)
    assert res.phy_offsets == [8370]
    assert fixture.query("FixtureTopic", "dk3", 64, 0, 2**62).phy_offsets == [23446]
    assert res.index_last_update_phyoffset == 25018
    fixture.delete_expired(10**12)
    fixture.shutdown()
    assert (fixture_store / "index" / "20261129184202721").exists()


def test_geometry_mismatch_is_reported(tmp_path: Path) -> None:
    svc = IndexService(tmp_path, 7, 5)
    svc.load()
    build(svc, 1)
    svc.shutdown()
    other = IndexService(tmp_path, 8, 5)
    with pytest.raises(StoreError, match="expected"):
        other.load()


def test_flush_syncs_rolled_files_outside_the_lock(
    svc: IndexService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flush syncs the newest file and every file that filled up since the last flush,
    and none of it under the lock the dispatcher takes for each batch: a sync takes
    milliseconds, and the dispatcher runs on the event loop."""
    import threading

    from mqcore.store.index_file import IndexFile

    synced: list[str] = []
    held: list[bool] = []

    def sync(self: IndexFile) -> None:
        got: list[bool] = []

        def take() -> None:  # another thread, as the event loop would be
            if svc._lock.acquire(timeout=5):
                got.append(True)
                svc._lock.release()
            else:
                got.append(False)

        other = threading.Thread(target=take)
        other.start()
        other.join()
        held.append(not got[0])
        synced.append(self.name)

    monkeypatch.setattr(IndexFile, "sync", sync)
    build(svc, 3)  # several files (4 keys each, 2-3 keys a record)
    names = [f.name for f in svc.files]
    assert len(names) > 1
    assert synced == []  # rolling no longer syncs on the caller's (the loop's) thread
    svc.flush()
    assert synced == names
    assert held and not any(held)
    synced.clear()
    svc.flush()
    assert synced == names[-1:]  # the rolled ones once, the newest every time


def test_a_rolled_file_reads_back_after_flush(tmp_path: Path) -> None:
    """The headers of rolled files are written before their sync: another service
    opening the store after a flush sees every file's entries."""
    svc = IndexService(tmp_path, 7, 5)
    svc.load()
    build(svc, 10)
    svc.flush()
    again = IndexService(tmp_path, 7, 5, readonly=True)
    again.load()
    for i in range(10):
        assert again.query("T", f"k{i}", 64, 0, 2**62).phy_offsets == [i * RECORD]
    svc.shutdown()
    again.shutdown()

"""Recovery after a kill starts from the checkpoint: it checks and re-dispatches only the
records written after it, keeps the index files (cutting and rebuilding their tail), and
falls back to a full check when the checkpoint or a consume queue cannot be trusted."""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from storetest_util import kill, make_msg, next_millisecond, open_store

from mqcore.message.record import decode_record
from mqcore.store import MessageStore
from mqcore.store.recovery import RecoveryReport

OLD = 600
"""Records the checkpoint covers (several commit log and index files)."""
TAIL = 30
"""Records written after the last checkpoint."""
QUEUES = 3


@dataclass
class Crashed:
    offsets: list[int]
    """Commit log offset of record i (OLD old ones, the marker, then TAIL)."""
    marker: int
    """Record OLD, alone in its millisecond, the last one the checkpoint names."""
    index_files: dict[str, int]
    """Index file name -> inode before the kill."""


def _msg(i: int) -> object:
    return make_msg(queue_id=i % QUEUES, body=f"v{i}".encode(), keys=f"k{i}", uniq=f"U{i:06d}")


def crash_after_checkpoint(root: Path) -> Crashed:
    """OLD records, the marker, a checkpoint, TAIL more records, then a kill.

    The consume queue flusher never runs by itself (its interval is an hour): the one
    checkpoint is the explicit flush, taken when the marker is the last record. Store
    times have millisecond resolution, so the marker gets a millisecond of its own and
    the tail starts a millisecond later: the checkpoint then proves exactly the records
    before the marker."""
    store = open_store(root, flush_interval_consume_queue=3_600_000)
    offsets = [store.put_message(_msg(i)).wrote_offset for i in range(OLD)]  # type: ignore[arg-type]
    next_millisecond()
    offsets.append(store.put_message(_msg(OLD)).wrote_offset)  # type: ignore[arg-type]
    store.flush()
    next_millisecond()
    for i in range(OLD + 1, OLD + 1 + TAIL):
        offsets.append(store.put_message(_msg(i)).wrote_offset)  # type: ignore[arg-type]
    assert store.index is not None
    files = {f.name: f.path.stat().st_ino for f in store.index.files}
    assert len(files) > 2 and len(store.commit_log.queue.files) > 1
    kill(store)
    assert (root / "abort").exists()
    return Crashed(offsets, offsets[OLD], files)


def _report(store: MessageStore) -> RecoveryReport:
    rep = store.recovery_report
    assert rep is not None and rep.abnormal
    return rep


def _assert_everything_is_there(store: MessageStore, total: int) -> None:
    for i in range(total):
        for key in (f"k{i}", f"U{i:06d}"):
            found = store.query_by_key("TopicA", key).phy_offsets
            assert len(found) == 1, (key, found)
            assert decode_record(store.get_message(found[0])).body == f"v{i}".encode()
    for q in range(QUEUES):
        assert _bodies(store, q) == [f"v{i}".encode() for i in range(q, total, QUEUES)]


def _bodies(store: MessageStore, queue_id: int) -> list[bytes]:
    """Every body of a queue, pulled as a consumer would."""
    bodies: list[bytes] = []
    offset = 0
    while offset < store.get_max_offset_in_queue("TopicA", queue_id):
        got = store.get_messages("TopicA", queue_id, offset, 32)
        bodies += [decode_record(b).body for b in got.buffers]
        assert got.next_begin_offset > offset
        offset = got.next_begin_offset
    return bodies


def test_recovery_checks_only_what_followed_the_checkpoint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    crashed = crash_after_checkpoint(tmp_path)
    caplog.set_level(logging.INFO, logger="mqcore.store")
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert not rep.full_check
        assert rep.scan_from == crashed.marker  # the first record the checkpoint lacks
        assert rep.redispatched == 1 + TAIL  # of 631 records
        assert rep.commit_log_end == store.max_phy_offset
        # The index files stay: the ones before the tail are the same files on disk; only
        # the entries of the marker and the tail (key + uniq key) were cut and rebuilt.
        assert rep.index == "repaired" and rep.index_dropped == 2 * (1 + TAIL)
        assert store.index is not None
        now = {f.name: f.path.stat().st_ino for f in store.index.files}
        kept = {name for name in crashed.index_files if now.get(name) == crashed.index_files[name]}
        assert len(kept) >= len(crashed.index_files) - 1
        _assert_everything_is_there(store, OLD + 1 + TAIL)
        nxt = store.put_message(_msg(OLD + 1 + TAIL))  # type: ignore[arg-type]
        assert nxt.queue_offset == (OLD + 1 + TAIL) // QUEUES
        lines = [r.getMessage() for r in caplog.records if "recovery" in r.getMessage()]
        assert len(lines) == 1 and lines[0].startswith(
            "abnormal recovery from the checkpoint: scanned the commit log from offset "
            f"{crashed.marker:,} to {rep.commit_log_end:,}, 31 records re-dispatched, index kept"
        )
    finally:
        store.shutdown()


def test_a_clean_restart_logs_a_normal_recovery(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(tmp_path)
    for i in range(20):
        store.put_message(_msg(i))  # type: ignore[arg-type]
    store.shutdown()
    caplog.set_level(logging.INFO, logger="mqcore.store")
    store = open_store(tmp_path)
    try:
        rep = store.recovery_report
        assert rep is not None and not rep.abnormal and rep.index == "kept"
        assert any(
            r.getMessage().startswith("normal recovery from the checkpoint: scanned")
            for r in caplog.records
        )
    finally:
        store.shutdown()


def _checkpoint_bytes(physic: int, logics: int, index: int) -> bytes:
    return struct.pack(">qqq", physic, logics, index) + bytes(4096 - 24)


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ((0, 0, 0), "proves nothing"),
        ((-5, 2**62, 2**62), "negative"),
        ((2**62, 2**62, 2**62), "ahead of the newest record"),
    ],
    ids=["zeroed", "negative", "ahead-of-the-log"],
)
def test_a_damaged_checkpoint_falls_back_to_a_full_check(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    values: tuple[int, int, int],
    reason: str,
) -> None:
    crash_after_checkpoint(tmp_path)
    (tmp_path / "checkpoint").write_bytes(_checkpoint_bytes(*values))
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.full_check and reason in rep.check_reason
        assert rep.scan_from == store.min_phy_offset == 0
        assert rep.redispatched == OLD + 1 + TAIL
        assert rep.index == "rebuilt"
        _assert_everything_is_there(store, OLD + 1 + TAIL)
        warned = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert any("checks the whole commit log" in r.getMessage() for r in warned)
    finally:
        store.shutdown()


def _cq_file(root: Path, queue_id: int) -> Path:
    return sorted((root / "consumequeue" / "TopicA" / str(queue_id)).iterdir())[-1]


def test_a_consume_queue_entry_naming_another_record_falls_back_to_a_full_check(
    tmp_path: Path,
) -> None:
    crash_after_checkpoint(tmp_path)
    # Queue 2's last entry (recovery reads it first) takes queue 1's last entry.
    q1, q2 = _cq_file(tmp_path, 1), _cq_file(tmp_path, 2)
    d1, d2 = q1.read_bytes(), bytearray(q2.read_bytes())
    end1, end2 = len(d1.rstrip(b"\0")), len(d2.rstrip(b"\0"))
    end1, end2 = end1 + (-end1) % 20, end2 + (-end2) % 20
    d2[end2 - 20 : end2] = d1[end1 - 20 : end1]
    q2.write_bytes(bytes(d2))
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.full_check and "consume queue TopicA/2" in rep.check_reason
        _assert_everything_is_there(store, OLD + 1 + TAIL)  # the entry was rewritten
    finally:
        store.shutdown()


def test_a_consume_queue_missing_entries_before_the_checkpoint_falls_back(
    tmp_path: Path,
) -> None:
    crashed = crash_after_checkpoint(tmp_path)
    # Queue 0 loses entries of old records (150-159): its tail records then lie past
    # its end, a gap no re-dispatch from the checkpoint could fill.
    path = tmp_path / "consumequeue" / "TopicA" / "0" / f"{100 * 20:020d}"
    data = bytearray(path.read_bytes())
    data[50 * 20 : 60 * 20] = bytes(200)
    path.write_bytes(bytes(data))
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.full_check and "consume queue TopicA/0 ends at offset 150" in (rep.check_reason)
        assert rep.scan_from == 0 < crashed.marker
        _assert_everything_is_there(store, OLD + 1 + TAIL)
    finally:
        store.shutdown()


def _commit_log_file(root: Path, offset: int) -> tuple[Path, int]:
    size = 64 * 1024
    start = offset - offset % size
    return root / "commitlog" / f"{start:020d}", offset - start


def test_a_damaged_record_in_the_tail_costs_only_itself(tmp_path: Path) -> None:
    crashed = crash_after_checkpoint(tmp_path)
    hit = OLD + 10
    path, pos = _commit_log_file(tmp_path, crashed.offsets[hit])
    data = bytearray(path.read_bytes())
    body_at = data.index(f"v{hit}".encode(), pos)
    data[body_at] ^= 0x01
    path.write_bytes(bytes(data))
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert not rep.full_check and rep.scan_from == crashed.marker
        assert rep.damaged == {crashed.offsets[hit]}
        assert rep.commit_log_end == store.max_phy_offset > crashed.offsets[-1]
        assert _bodies(store, hit % QUEUES) == [
            f"v{i}".encode() for i in range(hit % QUEUES, OLD + 1 + TAIL, QUEUES) if i != hit
        ]
        assert store.query_by_key("TopicA", f"k{OLD + 11}").phy_offsets == [
            crashed.offsets[OLD + 11]
        ]
    finally:
        store.shutdown()


def test_a_torn_last_record_costs_only_itself(tmp_path: Path) -> None:
    crashed = crash_after_checkpoint(tmp_path)
    last = crashed.offsets[-1]
    path, pos = _commit_log_file(tmp_path, last)
    data = bytearray(path.read_bytes())
    data[pos + 8 :] = bytes(len(data) - pos - 8)  # the copy stopped after size and magic
    path.write_bytes(bytes(data))
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert not rep.full_check and rep.scan_from == crashed.marker
        assert rep.commit_log_end == store.max_phy_offset == last
        assert rep.redispatched == TAIL
        _assert_everything_is_there(store, OLD + TAIL)
        assert store.query_by_key("TopicA", f"k{OLD + TAIL}").phy_offsets == []
    finally:
        store.shutdown()


def test_without_the_index_recovery_still_starts_from_the_checkpoint(tmp_path: Path) -> None:
    store = open_store(tmp_path, message_index_enable=False)
    for i in range(50):
        store.put_message(_msg(i))  # type: ignore[arg-type]
    next_millisecond()
    store.put_message(_msg(50))  # type: ignore[arg-type]
    store.flush()
    next_millisecond()
    store.put_message(_msg(51))  # type: ignore[arg-type]
    kill(store)
    store = open_store(tmp_path, message_index_enable=False)
    try:
        rep = _report(store)
        assert not rep.full_check and rep.index == "off" and rep.redispatched == 2
        assert store.get_max_offset_in_queue("TopicA", 0) == 18
    finally:
        store.shutdown()

"""A restart after a clean shutdown starts from the checkpoint: it checks the records
after the recovery point and a short window before it, not the last three commit log
files; a checkpoint that proves nothing gets 4.9.8's check from the third-to-last file,
one that disagrees with the files a full check, and a store written by RocketMQ 4.9.8
opens and serves as before."""

from __future__ import annotations

import logging
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from storetest_util import make_msg, next_millisecond, open_store

from mqcore.message.record import decode_record
from mqcore.store import MessageStore, recovery
from mqcore.store.recovery import RecoveryReport

COUNT = 1500
"""Records before the shutdown (four 64 KiB commit log files)."""
QUEUES = 3
WINDOW = 4096
"""The clean recheck window the tests use (the default 1 MiB would hold their whole log)."""
FILE = 64 * 1024


@dataclass
class Clean:
    offsets: list[int]
    """Commit log offset of record i; the last one is alone in its millisecond."""
    end: int


def _msg(i: int) -> object:
    return make_msg(queue_id=i % QUEUES, body=f"v{i}".encode(), keys=f"k{i}", uniq=f"U{i:06d}")


def shut_down_cleanly(root: Path, count: int = COUNT) -> Clean:
    """``count`` records, the last one a millisecond after the others, and a clean
    shutdown: the checkpoint then proves exactly the records before the last one."""
    store = open_store(root)
    offsets = [store.put_message(_msg(i)).wrote_offset for i in range(count - 1)]  # type: ignore[arg-type]
    next_millisecond()
    offsets.append(store.put_message(_msg(count - 1)).wrote_offset)  # type: ignore[arg-type]
    end = store.max_phy_offset
    assert len(store.commit_log.queue.files) >= 4
    store.shutdown()
    assert not (root / "abort").exists()
    return Clean(offsets, end)


@pytest.fixture(autouse=True)
def _small_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recovery, "CLEAN_RECHECK_BYTES", WINDOW)


def _report(store: MessageStore) -> RecoveryReport:
    rep = store.recovery_report
    assert rep is not None and not rep.abnormal
    return rep


def _bodies(store: MessageStore, queue_id: int) -> list[bytes]:
    """Every body of a queue, pulled as a consumer would (each one decodes with its CRC)."""
    bodies: list[bytes] = []
    offset = 0
    while offset < store.get_max_offset_in_queue("TopicA", queue_id):
        got = store.get_messages("TopicA", queue_id, offset, 32)
        bodies += [decode_record(b, check_crc=True).body for b in got.buffers]
        assert got.next_begin_offset > offset
        offset = got.next_begin_offset
    return bodies


def _assert_readable(
    store: MessageStore, present: list[int], total: int, *, damaged: int | None = None
) -> None:
    """Records ``present`` (of 0..total-1) are in their queues, in order, and each is
    found once by key and by unique key; the others are not found. A ``damaged`` record
    is only left out of its queue: its index entries stay (the index is kept, and a key
    query returns it as it is, as before)."""
    for q in range(QUEUES):
        assert _bodies(store, q) == [f"v{i}".encode() for i in present if i % QUEUES == q]
    for i in range(total):
        if i == damaged:
            continue
        for key in (f"k{i}", f"U{i:06d}"):
            found = store.query_by_key("TopicA", key).phy_offsets
            assert len(found) == (1 if i in present else 0), (key, found)
            if found:
                assert decode_record(store.get_message(found[0])).body == f"v{i}".encode()


def _summaries(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The INFO lines about recovery (the summary)."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.INFO and "recovery" in r.getMessage()
    ]


def test_a_clean_restart_checks_only_the_tail_after_the_checkpoint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clean = shut_down_cleanly(tmp_path)
    caplog.set_level(logging.INFO, logger="mqcore.store")
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.check == "checkpoint" and rep.problems == []
        # The checkpoint proves every record but the last one (alone in its millisecond).
        assert rep.recovery_point == clean.offsets[-1]
        # The check starts at the first record of the window before the point, well after
        # the third-to-last file, where 4.9.8 (and mq until now) start.
        assert rep.scan_from == min(o for o in clean.offsets if o >= clean.offsets[-1] - WINDOW)
        files = store.commit_log.queue.files
        assert rep.scan_from > files[-3].file_from_offset
        assert rep.commit_log_end == store.max_phy_offset == clean.end
        assert rep.index == "kept" and rep.redispatched == 0
        assert _summaries(caplog) == [
            f"normal recovery from the checkpoint: scanned the commit log from offset "
            f"{rep.scan_from:,} to {clean.end:,}, {rep.redispatched} records re-dispatched, "
            f"index kept ({rep.index_files} files), {rep.seconds:.3f} s"
        ]
        _assert_readable(store, list(range(COUNT)), COUNT)
        nxt = store.put_message(_msg(COUNT))  # type: ignore[arg-type]
        assert nxt.queue_offset == COUNT // QUEUES
        assert nxt.wrote_offset == clean.end
    finally:
        store.shutdown()


def test_by_default_the_window_is_a_mebibyte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.undo()
    assert recovery.CLEAN_RECHECK_BYTES == 1 << 20
    clean = shut_down_cleanly(tmp_path)
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.check == "checkpoint" and rep.recovery_point == clean.offsets[-1]
        assert rep.scan_from == 0  # the whole log is shorter than the window
    finally:
        store.shutdown()


def _index_entries(store: MessageStore) -> int:
    assert store.index is not None
    return sum(f.index_count - 1 for f in store.index.files)


def test_repeated_clean_restarts_stay_on_the_checkpoint(tmp_path: Path) -> None:
    """A restart that writes nothing leaves the checkpoint as it was; one that writes
    moves it: either way the next clean restart starts from it, re-dispatches nothing
    and adds nothing to the index (each used to index the last record again)."""
    shut_down_cleanly(tmp_path)
    entries = 2 * COUNT
    for round_no in range(3):
        store = open_store(tmp_path)
        try:
            rep = _report(store)
            assert rep.check == "checkpoint", rep.check_reason
            assert rep.scan_from > store.commit_log.queue.files[-2].file_from_offset
            assert rep.redispatched == 0 and _index_entries(store) == entries
            if round_no == 1:
                next_millisecond()
                store.put_message(_msg(COUNT))  # type: ignore[arg-type]
                entries += 2
        finally:
            store.shutdown()
    store = open_store(tmp_path)
    try:
        _assert_readable(store, list(range(COUNT + 1)), COUNT + 1)
    finally:
        store.shutdown()


def _checkpoint_bytes(physic: int, logics: int, index: int) -> bytes:
    return struct.pack(">qqq", physic, logics, index) + bytes(4096 - 24)


def test_a_checkpoint_ahead_of_the_log_asks_for_a_full_check(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shut_down_cleanly(tmp_path)
    (tmp_path / "checkpoint").write_bytes(_checkpoint_bytes(2**62, 2**62, 2**62))
    caplog.set_level(logging.INFO, logger="mqcore.store")
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.check == "full" and "ahead of the newest record" in rep.check_reason
        assert rep.scan_from == 0 and rep.recovery_point == -1
        assert rep.index == "rebuilt" and rep.redispatched == COUNT
        warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any(m.startswith("normal recovery checks the whole commit log") for m in warned)
        infos = _summaries(caplog)
        assert len(infos) == 1 and infos[0].startswith(
            "normal recovery, full check (the checkpoint's physicMsgTimestamp"
        )
        _assert_readable(store, list(range(COUNT)), COUNT)
    finally:
        store.shutdown()


def test_a_checkpoint_that_proves_nothing_gets_the_check_from_the_third_to_last_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """What a clean restart did until now, and 4.9.8's normal recovery."""
    shut_down_cleanly(tmp_path)
    (tmp_path / "checkpoint").write_bytes(_checkpoint_bytes(0, 0, 0))
    caplog.set_level(logging.INFO, logger="mqcore.store")
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.check == "last files" and "proves nothing" in rep.check_reason
        files = store.commit_log.queue.files
        assert rep.scan_from == files[-3].file_from_offset and rep.index == "kept"
        infos = _summaries(caplog)
        assert len(infos) == 1 and infos[0].startswith(
            "normal recovery from the third-to-last file (the checkpoint's physicMsgTimestamp "
            "is 0: it proves nothing flushed): scanned the commit log from offset "
            f"{rep.scan_from:,}"
        )
        _assert_readable(store, list(range(COUNT)), COUNT)
    finally:
        store.shutdown()


def _cq_file(root: Path, queue_id: int) -> Path:
    return sorted((root / "consumequeue" / "TopicA" / str(queue_id)).iterdir())[-1]


def _copy_entry(root: Path, src: tuple[int, int], dst: tuple[int, int]) -> None:
    """Consume queue entry ``dst`` (queue id, queue offset) becomes a copy of ``src``."""
    unit = 100  # entries per file (storetest_util)

    def where(queue_id: int, index: int) -> tuple[Path, int]:
        first = index - index % unit
        path = root / "consumequeue" / "TopicA" / str(queue_id) / f"{first * 20:020d}"
        return path, (index - first) * 20

    src_path, src_pos = where(*src)
    dst_path, dst_pos = where(*dst)
    entry = src_path.read_bytes()[src_pos : src_pos + 20]
    data = bytearray(dst_path.read_bytes())
    data[dst_pos : dst_pos + 20] = entry
    dst_path.write_bytes(bytes(data))


def test_a_consume_queue_entry_naming_another_record_asks_for_a_full_check(
    tmp_path: Path,
) -> None:
    """Queue 2 holds the newest record, so its entries are searched first: its middle
    entry (the first the binary search reads) names queue 1's record instead."""
    shut_down_cleanly(tmp_path)
    _copy_entry(tmp_path, (1, 250), (2, 250))
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.check == "full" and "consume queue TopicA/2 entry 250" in rep.check_reason
        assert [p.offset for p in rep.problems] == [250]  # the entry, rewritten
        _assert_readable(store, list(range(COUNT)), COUNT)
    finally:
        store.shutdown()


def test_a_wrong_consume_queue_entry_in_the_window_is_rewritten(tmp_path: Path) -> None:
    """Queue 2's last entry (the last record's) names queue 1's last record: the check of
    the window and tail finds it and rewrites it, as the check of the last files did."""
    shut_down_cleanly(tmp_path)
    _copy_entry(tmp_path, (1, COUNT // QUEUES - 1), (2, COUNT // QUEUES - 1))
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.check == "checkpoint"
        assert [p.offset for p in rep.problems] == [COUNT // QUEUES - 1]
        _assert_readable(store, list(range(COUNT)), COUNT)
    finally:
        store.shutdown()


def test_a_consume_queue_missing_entries_before_the_point_asks_for_a_full_check(
    tmp_path: Path,
) -> None:
    """Queue 0 loses its last 30 entries: they belong to records before the point, which
    no re-dispatch from the point would write again."""
    shut_down_cleanly(tmp_path)
    path = _cq_file(tmp_path, 0)
    data = bytearray(path.read_bytes())
    end = len(data.rstrip(b"\0"))
    end += (-end) % 20
    data[end - 30 * 20 : end] = bytes(30 * 20)
    path.write_bytes(bytes(data))
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.check == "full" and "consume queue TopicA/0 ends at offset" in (rep.check_reason)
        _assert_readable(store, list(range(COUNT)), COUNT)
    finally:
        store.shutdown()


def test_queues_destroyed_on_purpose_stay_destroyed(tmp_path: Path) -> None:
    """cleanUnusedTopic destroyed TopicB's queues, whose records are among the newest:
    after a clean shutdown that is no gap (as after a crash it would be), the queues are
    not written again, and the restart still starts from the checkpoint."""
    store = open_store(tmp_path)
    for i in range(400):
        store.put_message(_msg(i))  # type: ignore[arg-type]
        store.put_message(make_msg("TopicB", i % 2, f"b{i}".encode()))
    assert store.clean_unused_topics(lambda topic: topic == "TopicA") == [
        ("TopicB", 0),
        ("TopicB", 1),
    ]
    store.shutdown()
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.check == "checkpoint", rep.check_reason
        assert rep.scan_from < rep.recovery_point < rep.commit_log_end
        assert rep.destroyed_queues == {("TopicB", 0), ("TopicB", 1)}
        assert store.topics() == {"TopicA": [0, 1, 2]}
        _assert_readable(store, list(range(400)), 400)
        again = store.put_message(make_msg("TopicB", 1, b"again"))
        assert again.queue_offset == 0  # the queue starts again, as after the destroy
    finally:
        store.shutdown()


def _commit_log_file(root: Path, offset: int) -> tuple[Path, int]:
    start = offset - offset % FILE
    return root / "commitlog" / f"{start:020d}", offset - start


def _flip_body(root: Path, offset: int, i: int) -> None:
    path, pos = _commit_log_file(root, offset)
    data = bytearray(path.read_bytes())
    data[data.index(f"v{i}".encode(), pos)] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_damaged_record_before_the_point_costs_only_itself(tmp_path: Path) -> None:
    """A body damaged after the shutdown among the last records before the point: the
    window finds it, as the check from the third-to-last file did; it is never served."""
    clean = shut_down_cleanly(tmp_path)
    hit = COUNT - 4
    assert clean.offsets[hit] >= clean.offsets[-1] - WINDOW
    _flip_body(tmp_path, clean.offsets[hit], hit)
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.check == "checkpoint" and rep.damaged == {clean.offsets[hit]}
        assert rep.commit_log_end == clean.end
        _assert_readable(store, [i for i in range(COUNT) if i != hit], COUNT, damaged=hit)
    finally:
        store.shutdown()


def test_a_damaged_record_after_the_point_costs_only_itself(tmp_path: Path) -> None:
    clean = shut_down_cleanly(tmp_path)
    hit = COUNT - 1
    _flip_body(tmp_path, clean.offsets[hit], hit)
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.check == "checkpoint" and rep.damaged == {clean.offsets[hit]}
        assert rep.commit_log_end == clean.end
        _assert_readable(store, list(range(COUNT - 1)), COUNT, damaged=hit)
        nxt = store.put_message(_msg(COUNT))  # type: ignore[arg-type]
        assert nxt.queue_offset == COUNT // QUEUES and nxt.wrote_offset == clean.end
    finally:
        store.shutdown()


@pytest.mark.parametrize("lost", [1, 5], ids=["last-record", "last-five-records"])
def test_a_tail_lost_after_the_shutdown_keeps_everything_before_it(
    tmp_path: Path, lost: int
) -> None:
    """The newest records were zeroed after the shutdown (a disk that lost its last
    writes): the checkpoint is then ahead of the log, the full check ends the log where
    the records stop, drops their queue entries and index entries, and the next record
    written there gets its queue offset and is found by key."""
    clean = shut_down_cleanly(tmp_path)
    first_lost = COUNT - lost
    start = clean.offsets[first_lost]
    path, pos = _commit_log_file(tmp_path, start)
    data = bytearray(path.read_bytes())
    data[pos:] = bytes(len(data) - pos)
    path.write_bytes(bytes(data))
    for later in sorted((tmp_path / "commitlog").iterdir()):
        if int(later.name) > start:
            later.write_bytes(bytes(FILE))
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.check == "full" and "ahead of the newest record" in rep.check_reason
        assert rep.commit_log_end == store.max_phy_offset == start
        _assert_readable(store, list(range(first_lost)), COUNT)
        nxt = store.put_message(_msg(COUNT))  # type: ignore[arg-type]
        assert nxt.wrote_offset == start
        assert nxt.queue_offset == len(range(COUNT % QUEUES, first_lost, QUEUES))
        assert store.query_by_key("TopicA", f"k{COUNT}").phy_offsets == [start]
    finally:
        store.shutdown()


def test_a_lost_tail_is_cut_from_the_index_when_the_checkpoint_still_agrees(
    tmp_path: Path,
) -> None:
    """Only the last record (the one the checkpoint does not prove) is torn: the check
    from the checkpoint ends the log before it and cuts its index entries, so the next
    record written at its offset is indexed (the index skips records below its end)."""
    store = open_store(tmp_path, message_index_enable=True)
    for i in range(50):
        store.put_message(_msg(i))  # type: ignore[arg-type]
    next_millisecond()
    store.put_message(_msg(50))  # type: ignore[arg-type]
    store.flush()  # the checkpoint proves 0-49 and names record 50's millisecond
    proving_50 = (tmp_path / "checkpoint").read_bytes()
    next_millisecond()
    last = store.put_message(_msg(51)).wrote_offset  # type: ignore[arg-type]
    store.shutdown()
    # The shutdown wrote a checkpoint naming record 51; the disk kept the one before it
    # and lost the end of record 51.
    (tmp_path / "checkpoint").write_bytes(proving_50)
    path, pos = _commit_log_file(tmp_path, last)
    data = bytearray(path.read_bytes())
    data[pos + 8 :] = bytes(len(data) - pos - 8)  # record 51 keeps only size and magic
    path.write_bytes(bytes(data))
    store = open_store(tmp_path)
    try:
        rep = _report(store)
        assert rep.check == "checkpoint", rep.check_reason
        assert rep.commit_log_end == store.max_phy_offset == last
        assert rep.index == "repaired" and rep.index_dropped == 2  # k51 and U000051
        assert store.query_by_key("TopicA", "k51").phy_offsets == []
        nxt = store.put_message(_msg(52))  # type: ignore[arg-type]
        assert nxt.wrote_offset == last
        assert store.query_by_key("TopicA", "k52").phy_offsets == [last]
    finally:
        store.shutdown()


def _open_fixture_copy(root: Path, **overrides: object) -> MessageStore:
    return open_store(
        root,
        mapped_file_size_commit_log=1048576,
        mapped_file_size_consume_queue=6000,
        max_hash_slot_num=100,
        max_index_num=1000,
        **overrides,
    )


def _fixture_copy(fixture_store: Path, tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(fixture_store, root)
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return root


def _assert_fixture_served(store: MessageStore, added: int = 0) -> None:
    """What 4.9.8 wrote is served (and ``added`` more messages in queue 1)."""
    ends = [store.get_max_offset_in_queue("FixtureTopic", q) for q in range(4)]
    assert ends == [28, 28 + added, 27, 27]
    bodies = set()
    for q in range(4):
        got = store.get_messages("FixtureTopic", q, 0, 64)
        bodies |= {decode_record(b, check_crc=True).body for b in got.buffers}
    assert bodies >= {f"body-{i}".encode() for i in range(100)}
    assert len(bodies) == 110 + added
    for key, body in (("k42", b"body-42"), ("dk3", b"delay-body-3")):
        hit = store.query_by_key("FixtureTopic", key)
        assert [decode_record(b).body for b in hit.buffers] == [body]


def test_a_rocketmq_store_opens_and_serves_after_its_clean_shutdown(
    fixture_store: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """4.9.8 left indexMsgTimestamp 0 (no index file filled up): its checkpoint proves
    nothing, so the first restart checks from the third-to-last file, as 4.9.8 does; mq
    then writes a checkpoint of its own, and the next clean restart starts from it."""
    root = _fixture_copy(fixture_store, tmp_path)
    caplog.set_level(logging.INFO, logger="mqcore.store")
    store = _open_fixture_copy(root)
    try:
        rep = _report(store)
        assert rep.check == "last files" and "indexMsgTimestamp is 0" in rep.check_reason
        assert rep.problems == [] and rep.commit_log_end == store.max_phy_offset
        _assert_fixture_served(store)
        sent = store.put_message(make_msg("FixtureTopic", 1, b"after", keys="mq-new"))
    finally:
        store.shutdown()
    store = _open_fixture_copy(root)
    try:
        rep = _report(store)
        assert rep.check == "checkpoint" and rep.recovery_point <= sent.wrote_offset
        assert rep.problems == []
        _assert_fixture_served(store, added=1)
        hit = store.query_by_key("FixtureTopic", "mq-new")
        assert hit.phy_offsets == [sent.wrote_offset]
    finally:
        store.shutdown()


def test_a_rocketmq_store_without_the_index_starts_from_its_checkpoint(
    fixture_store: Path, tmp_path: Path
) -> None:
    """Without the index, 4.9.8's physic and logics timestamps prove what it wrote."""
    root = _fixture_copy(fixture_store, tmp_path)
    store = _open_fixture_copy(root, message_index_enable=False)
    try:
        rep = _report(store)
        assert rep.check == "checkpoint" and rep.problems == []
        assert 0 <= rep.scan_from <= rep.recovery_point <= rep.commit_log_end
        assert rep.commit_log_end == store.max_phy_offset
        assert [store.get_max_offset_in_queue("FixtureTopic", q) for q in range(4)] == [
            28,
            28,
            27,
            27,
        ]
    finally:
        store.shutdown()

"""Normal and abnormal recovery: torn tails, lost or dirty consume queue entries."""

from __future__ import annotations

import struct
from pathlib import Path

from storetest_util import make_msg, open_store

from mqcore.message.record import decode_record
from mqcore.store import MessageStore


def crash(store: MessageStore) -> None:
    """Stop like a killed process: no final flushes of state, abort file left behind."""
    assert store._flusher is not None and store._cq_flusher is not None
    store._flusher._stop.set()
    store._cq_flusher._stop.set()
    store._flusher._thread.join(5)  # type: ignore[union-attr]
    store._cq_flusher._thread.join(5)  # type: ignore[union-attr]
    store._running = False
    store._close_files()
    store._lock.release()


def _fill(store: MessageStore, n: int) -> list[int]:
    msgs = [make_msg(queue_id=i % 2, body=f"v{i}".encode(), keys=f"k{i}") for i in range(n)]
    return [store.put_message(m).wrote_offset for m in msgs]


def test_normal_restart_keeps_everything(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    offs = _fill(store, 300)
    store.shutdown()
    store = open_store(tmp_path)
    try:
        rep = store.recovery_report
        assert rep is not None and not rep.abnormal
        assert rep.commit_log_end == store.max_phy_offset
        assert store.topic_queue_table == {("TopicA", 0): 150, ("TopicA", 1): 150}
        assert store.put_message(make_msg(queue_id=1)).queue_offset == 150
        assert decode_record(store.get_message(offs[-1])).body == b"v299"
    finally:
        store.shutdown()


def test_hand_torn_last_record_is_truncated(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    offs = _fill(store, 40)
    end = store.max_phy_offset
    crash(store)
    last = offs[-1]
    seg = last - last % (64 * 1024)
    path = tmp_path / "commitlog" / f"{seg:020d}"
    with open(path, "r+b") as f:  # tear the last record: garbage in its body
        f.seek(last - seg + 90)
        f.write(b"\xff\xff\xff")
    store = open_store(tmp_path)
    try:
        rep = store.recovery_report
        assert rep is not None and rep.abnormal
        assert store.max_phy_offset == last < end
        raw = path.read_bytes()
        assert raw[last - seg :].count(0) == len(raw) - (last - seg)  # tail zeroed
        assert store.get_max_offset_in_queue("TopicA", 1) == 19  # entry 19 dropped
        assert store.put_message(make_msg(queue_id=1, body=b"again")).queue_offset == 19
        assert store.query_by_key("TopicA", "k38").phy_offsets == [offs[38]]
    finally:
        store.shutdown()


def test_torn_header_and_partial_copy(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    offs = _fill(store, 10)
    crash(store)
    path = tmp_path / "commitlog" / f"{0:020d}"
    with open(path, "r+b") as f:  # a half-copied record after the last one
        f.seek(offs[-1] + 200)
        f.write(struct.pack(">ii", 500, -626843481) + b"\x01" * 30)
    store = open_store(tmp_path)
    try:
        assert store.max_phy_offset == offs[-1] + (offs[-1] - offs[-2])
        assert store.get_max_offset_in_queue("TopicA", 1) == 5
    finally:
        store.shutdown()


def test_lost_consume_queue_entries_are_rebuilt(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    _fill(store, 500)
    crash(store)
    for qdir in (tmp_path / "consumequeue" / "TopicA").iterdir():
        files = sorted(qdir.iterdir())
        files[-1].unlink()  # lose the newest CQ file of each queue
        data = bytearray(files[-2].read_bytes())
        data[-400:] = bytes(400)  # and some entries of the one before
        files[-2].write_bytes(bytes(data))
    (tmp_path / "checkpoint").write_bytes(bytes(4096))  # force a full rescan
    store = open_store(tmp_path)
    try:
        for q in (0, 1):
            assert store.get_max_offset_in_queue("TopicA", q) == 250
            got = store.get_messages("TopicA", q, 240, 32)
            assert [decode_record(b).queue_offset for b in got.buffers] == list(range(240, 250))
    finally:
        store.shutdown()


def test_consume_queue_entries_past_log_end_are_dropped(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    offs = _fill(store, 100)
    crash(store)
    seg = offs[90] - offs[90] % (64 * 1024)
    path = tmp_path / "commitlog" / f"{seg:020d}"
    data = bytearray(path.read_bytes())
    data[offs[90] - seg :] = bytes(len(data) - (offs[90] - seg))  # lose the log tail
    path.write_bytes(bytes(data))
    store = open_store(tmp_path)
    try:
        assert store.max_phy_offset == offs[90]
        assert store.get_max_offset_in_queue("TopicA", 0) == 45
        assert store.get_max_offset_in_queue("TopicA", 1) == 45
        cq = store.consume_queue("TopicA", 0)
        assert cq is not None and cq.max_physic_offset <= offs[90]
    finally:
        store.shutdown()


def _bodies(store: MessageStore, queue_id: int) -> list[bytes]:
    got = store.get_messages("TopicA", queue_id, 0, 100)
    return [decode_record(b, 0).body for b in got.buffers]


def test_a_damaged_body_costs_only_its_record(tmp_path: Path) -> None:
    """BODYCRC fails on record 15: recovery skips it (its queue entry becomes a filler)
    instead of truncating the log there and losing records 16-19."""
    store = open_store(tmp_path)
    offs = _fill(store, 20)
    end = store.max_phy_offset
    store.shutdown()
    path = tmp_path / "commitlog" / f"{0:020d}"
    view = bytearray(path.read_bytes())
    body_at = view.index(b"v15", offs[15])
    view[body_at] ^= 0x01
    path.write_bytes(bytes(view))
    store = open_store(tmp_path)
    try:
        assert store.max_phy_offset == end
        assert _bodies(store, 1) == [f"v{i}".encode() for i in range(1, 20, 2) if i != 15]
        assert _bodies(store, 0) == [f"v{i}".encode() for i in range(0, 20, 2)]
        rep = store.recovery_report
        assert rep is not None and rep.damaged == {offs[15]}
        assert [p.offset for p in rep.problems] == [offs[15]]
        assert "BODYCRC" in str(rep.problems[0])
    finally:
        store.shutdown()


def test_a_wrong_consume_queue_entry_is_rewritten_from_the_commit_log(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    _fill(store, 20)
    store.shutdown()
    cq_file = tmp_path / "consumequeue" / "TopicA" / "0" / f"{0:020d}"
    data = bytearray(cq_file.read_bytes())
    data[3 * 20 : 3 * 20 + 8] = (999_999).to_bytes(8, "big")  # entry 3 points elsewhere
    data[5 * 20 + 8 : 5 * 20 + 12] = (7).to_bytes(4, "big")  # entry 5 has a wrong size
    cq_file.write_bytes(bytes(data))
    store = open_store(tmp_path)
    try:
        assert _bodies(store, 0) == [f"v{i}".encode() for i in range(0, 20, 2)]
        rep = store.recovery_report
        assert rep is not None and sorted(p.offset for p in rep.problems) == [3, 5]
    finally:
        store.shutdown()

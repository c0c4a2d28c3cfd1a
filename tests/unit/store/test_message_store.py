"""MessageStore facade: put/get semantics, filters, statuses, lookups, flush, config."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from storetest_util import make_msg, open_store, small_config, store_threads

from mqcore.common.javahash import tags_hash_code
from mqcore.errors import ConfigError, StoreError
from mqcore.message.record import decode_record
from mqcore.store import FlushDiskType, GetStatus, MessageStore, MessageStoreConfig, PutStatus


def test_put_get_roundtrip_and_statuses(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    try:
        results = [store.put_message(make_msg(body=f"m{i}".encode())) for i in range(10)]
        assert [r.queue_offset for r in results] == list(range(10))
        assert all(r.status is PutStatus.PUT_OK for r in results)
        got = store.get_messages("TopicA", 0, 3, 4)
        assert got.status is GetStatus.FOUND
        assert got.next_begin_offset == 7 and got.queue_offsets == [3, 4, 5, 6]
        assert all(isinstance(b, memoryview) for b in got.buffers)
        msgs = [decode_record(b) for b in got.buffers]
        assert [m.body for m in msgs] == [b"m3", b"m4", b"m5", b"m6"]
        assert msgs[0].commit_log_offset == results[3].wrote_offset
        assert msgs[0].store_timestamp == results[3].store_timestamp
        assert store.get_messages("TopicA", 0, 10, 4).status is GetStatus.OFFSET_OVERFLOW_ONE
        bad = store.get_messages("TopicA", 0, 99, 4)
        assert bad.status is GetStatus.OFFSET_OVERFLOW_BADLY and bad.next_begin_offset == 0
        assert store.get_messages("Nope", 0, 0, 4).status is GetStatus.NO_MATCHED_LOGIC_QUEUE
        assert store.get_min_offset_in_queue("TopicA", 0) == 0
        assert store.get_max_offset_in_queue("TopicA", 0) == 10
        assert decode_record(store.get_message(results[2].wrote_offset)).body == b"m2"
        assert store.look_message(results[2].wrote_offset).body == b"m2"
    finally:
        store.shutdown()


def test_max_bytes_still_returns_one(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    try:
        for _ in range(3):
            store.put_message(make_msg(body=b"z" * 500))
        got = store.get_messages("TopicA", 0, 0, 32, max_bytes=10)
        assert got.message_count == 1 and got.next_begin_offset == 1
    finally:
        store.shutdown()


def test_tag_filter_on_consume_queue(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    try:
        for i in range(6):
            store.put_message(make_msg(tags="TagA" if i % 2 else "TagB", body=str(i).encode()))
        want = tags_hash_code("TagA")
        got = store.get_messages("TopicA", 0, 0, 32, tag_filter=lambda code: code == want)
        assert [decode_record(b).body for b in got.buffers] == [b"1", b"3", b"5"]
        assert got.next_begin_offset == 6
        none = store.get_messages("TopicA", 0, 0, 32, tag_filter=lambda code: False)
        assert none.status is GetStatus.NO_MATCHED_MESSAGE and none.next_begin_offset == 6
    finally:
        store.shutdown()


def test_batch_is_one_copy_with_consecutive_offsets(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    try:
        store.put_message(make_msg(queue_id=2))
        batch = [make_msg(queue_id=2, body=f"b{i}".encode(), keys=f"bk{i}") for i in range(32)]
        res = store.put_messages(batch)
        assert res.ok and res.msg_count == 32 and res.queue_offset == 1
        assert res.record_offsets[0] == res.wrote_offset
        assert res.wrote_offset + res.wrote_bytes == store.max_phy_offset
        got = store.get_messages("TopicA", 2, 1, 64)
        assert [decode_record(b).queue_offset for b in got.buffers] == list(range(1, 33))
        assert store.query_by_key("TopicA", "bk7").phy_offsets == [res.record_offsets[7]]
        mixed = store.put_messages([make_msg(queue_id=0), make_msg(queue_id=1)])
        assert mixed.status is PutStatus.MESSAGE_ILLEGAL
    finally:
        store.shutdown()


def test_transaction_types_and_schedule_topic(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    try:
        prepared = store.put_message(make_msg(sys_flag=0x4))
        assert prepared.ok and prepared.queue_offset == 0
        assert store.get_max_offset_in_queue("TopicA", 0) == 0  # PREPARED: no CQ entry
        commit = store.put_message(make_msg(sys_flag=0x8))
        assert commit.queue_offset == 0 and store.get_max_offset_in_queue("TopicA", 0) == 1
        delayed = store.put_message(
            make_msg("SCHEDULE_TOPIC_XXXX", 2, props={"DELAY": "3", "REAL_TOPIC": "TopicA"})
        )
        cq = store.consume_queue("SCHEDULE_TOPIC_XXXX", 2)
        assert cq is not None
        entry = cq.entry(0)
        assert entry is not None and entry[2] == delayed.store_timestamp + 10_000
    finally:
        store.shutdown()


def test_illegal_messages_are_refused(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    try:
        assert store.put_message(make_msg(body=b"x" * 20000)).status is PutStatus.MESSAGE_ILLEGAL
        assert store.put_message(make_msg(topic="t" * 128)).status is PutStatus.MESSAGE_ILLEGAL
        big_props = {"p": "v" * 40000}
        status = store.put_message(make_msg(props=big_props)).status
        assert status is PutStatus.PROPERTIES_SIZE_EXCEEDED
    finally:
        store.shutdown()
    assert store.put_message(make_msg()).status is PutStatus.SERVICE_NOT_AVAILABLE


def test_lookup_by_time_and_store_time(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    try:
        stamps = []
        for i in range(5):
            stamps.append(store.put_message(make_msg(body=str(i).encode())).store_timestamp)
            deadline = time.monotonic() + 1
            while int(time.time() * 1000) <= stamps[-1] and time.monotonic() < deadline:
                pass  # next message gets a later millisecond
        assert store.lookup_by_time("TopicA", 0, stamps[2]) == 2
        assert store.lookup_by_time("TopicA", 0, 0) == 0
        assert store.lookup_by_time("TopicA", 0, stamps[-1] + 1) == 5
        assert store.get_message_store_timestamp("TopicA", 0, 3) == stamps[3]
        assert store.get_earliest_message_time("TopicA", 0) == stamps[0]
    finally:
        store.shutdown()


def test_sync_flush_group_commit(tmp_path: Path) -> None:
    store = open_store(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    try:
        flusher = store._flusher
        assert flusher is not None
        calls = []
        real = flusher.flush_to

        def counting(target: int, least_pages: int = 0) -> int:
            calls.append(target)
            return real(target, least_pages)

        flusher.flush_to = counting  # type: ignore[method-assign]
        results: list[PutStatus] = []
        lock = threading.Lock()

        def worker() -> None:
            for _ in range(25):
                r = store.put_message(make_msg())
                assert r.flush_future is not None
                with lock:
                    results.append(r.wait(5))

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert results == [PutStatus.PUT_OK] * 200
        assert store.commit_log.flushed_where >= store.max_phy_offset - 0
        assert len(calls) < 200  # waiters shared flushes
    finally:
        store.shutdown()


def test_threads_stop_and_abort_removed(tmp_path: Path) -> None:
    before = len(store_threads())
    store = open_store(tmp_path)
    assert (tmp_path / "abort").exists()
    assert len(store_threads()) == before + 2
    store.shutdown()
    assert len(store_threads()) == before
    assert not (tmp_path / "abort").exists()
    assert (tmp_path / "lock").read_bytes() == b"lock"
    assert (tmp_path / "checkpoint").stat().st_size == 4096


def test_readonly_open_does_not_write(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    for i in range(50):
        store.put_message(make_msg(queue_id=i % 2, keys=f"k{i}"))
    store.shutdown()
    before = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in tmp_path.rglob("*")}
    ro = MessageStore.open_readonly(tmp_path)
    try:
        assert ro.get_max_offset_in_queue("TopicA", 1) == 25
        assert len(ro.query_by_key("TopicA", "k7").phy_offsets) == 1
        assert ro.put_message(make_msg()).status is PutStatus.SERVICE_NOT_AVAILABLE
        with pytest.raises(StoreError):
            ro.start()
    finally:
        ro.shutdown()
    after = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in tmp_path.rglob("*")}
    assert after == before


def test_config_keys_and_validation(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "# comment\nstorePathRootDir=/data/store\nmapedFileSizeCommitLog=8192\n"
        "mappedFileSizeConsumeQueue=1001\nflushDiskType=SYNC_FLUSH\nbrokerName=b\n"
        "messageIndexEnable=false\n"
    )
    cfg = MessageStoreConfig.from_properties(conf)
    assert cfg.mapped_file_size_commit_log == 8192
    assert cfg.mapped_file_size_consume_queue == 1020  # rounded up to 20
    assert cfg.flush_disk_type is FlushDiskType.SYNC_FLUSH
    assert cfg.commit_log_path == Path("/data/store/commitlog")
    assert not cfg.message_index_enable
    assert cfg.to_properties()["mappedFileSizeCommitLog"] == "8192"
    default = MessageStoreConfig()
    assert default.mapped_file_size_commit_log == 1 << 30
    assert default.mapped_file_size_consume_queue == 6_000_000
    assert default.max_message_size == 4 << 20
    assert default.delay_level_table()[18] == 7_200_000
    for bad in (
        {"flushDiskType": "SOMETIMES"},
        {"mappedFileSizeCommitLog": "big"},
        {"messageIndexEnable": "yes"},
        {"deleteWhen": "25"},
        {"messageDelayLevel": "1s 5x"},
        {"diskMaxUsedSpaceRatio": "99"},
    ):
        with pytest.raises(ConfigError):
            MessageStoreConfig.from_properties(bad)
    assert small_config(tmp_path).root == tmp_path

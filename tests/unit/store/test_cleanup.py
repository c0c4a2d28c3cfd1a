"""Cleanup of expired commit log files and of queue/index files pointing only into them."""

from __future__ import annotations

import os
from pathlib import Path

from storetest_util import make_msg, open_store

from mqcore.message.record import decode_record
from mqcore.store import GetStatus, MessageStore


def _age_all_but_last(root: Path) -> None:
    files = sorted((root / "commitlog").iterdir())
    for p in files[:-1]:
        os.utime(p, (1, 1))


def _fill(store: MessageStore, n: int) -> None:
    for i in range(n):
        assert store.put_message(make_msg(queue_id=i % 2, body=b"x" * 200, keys=f"k{i}")).ok


def test_expired_files_deleted_and_min_offsets_follow(tmp_path: Path) -> None:
    store = open_store(tmp_path, file_reserved_time=1, max_index_num=64)
    try:
        _fill(store, 2000)
        n_files = len(list((tmp_path / "commitlog").iterdir()))
        n_index = len(list((tmp_path / "index").iterdir()))
        assert n_files > 4 and n_index > 4
        _age_all_but_last(tmp_path)
        report = store.clean_expired(manual=True)
        assert report.commit_log_files_deleted == n_files - 1
        assert len(list((tmp_path / "commitlog").iterdir())) == 1
        min_phy = store.min_phy_offset
        assert min_phy == report.commit_log_min_offset > 0
        for q in (0, 1):
            cq = store.consume_queue("TopicA", q)
            assert cq is not None
            first = cq.entry(cq.min_offset)
            assert first is not None and first[0] >= min_phy
            prev = cq.entry(cq.min_offset - 1)
            assert prev is None or prev[0] < min_phy
            assert store.get_max_offset_in_queue("TopicA", q) == 1000
            got = store.get_messages("TopicA", q, 0, 4)
            assert got.status is GetStatus.OFFSET_TOO_SMALL
            assert got.next_begin_offset == cq.min_offset
            got = store.get_messages("TopicA", q, cq.min_offset, 4)
            assert decode_record(got.buffers[0]).commit_log_offset >= min_phy
        assert report.consume_queue_files_deleted > 0
        assert len(list((tmp_path / "index").iterdir())) < n_index
        assert store.query_by_key("TopicA", "k5").phy_offsets == []
    finally:
        store.shutdown()
    reopened = open_store(tmp_path, max_index_num=64)
    try:
        assert reopened.min_phy_offset == min_phy
        cq = reopened.consume_queue("TopicA", 0)
        assert cq is not None and cq.entry(cq.min_offset)[0] >= min_phy  # type: ignore[index]
    finally:
        reopened.shutdown()


def test_young_files_kept_unless_disk_is_full(tmp_path: Path) -> None:
    store = open_store(tmp_path, file_reserved_time=72, delete_when="04")
    try:
        _fill(store, 1000)
        n_files = len(list((tmp_path / "commitlog").iterdir()))
        assert store.clean_expired(manual=True).commit_log_files_deleted == 0
        store.cleanup.disk_ratio = lambda _p: 0.88  # above the forcible-clean ratio
        report = store.cleanup.run()
        assert report.forced and report.commit_log_files_deleted == min(10, n_files - 1)
        assert not store.cleanup.disk_full
        store.cleanup.disk_ratio = lambda _p: 0.95
        store.cleanup.run()
        assert store.cleanup.disk_full
        assert not store.put_message(make_msg()).ok
    finally:
        store.shutdown()

"""Thousands of messages over many small commit log and consume queue files."""

from __future__ import annotations

import itertools
from pathlib import Path

from storetest_util import make_msg, open_store

from mqcore.message.record import decode_record
from mqcore.store import GetStatus, MessageStore


def test_thousands_of_messages_span_many_files(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    n, queues = 4000, 3
    offsets: dict[int, int] = {}
    try:
        for i in range(n):
            q = i % queues
            body = f"body-{i}-".encode() * (1 + i % 7)
            if i % 10 == 0:
                res = store.put_messages([make_msg(queue_id=q, body=body, keys=f"k{i}")])
            else:
                res = store.put_message(make_msg(queue_id=q, body=body, keys=f"k{i}"))
            assert res.ok
            offsets[i] = res.wrote_offset
        commit_files = sorted((tmp_path / "commitlog").iterdir())
        cq_files = sorted((tmp_path / "consumequeue" / "TopicA" / "0").iterdir())
        assert len(commit_files) > 5 and len(cq_files) > 5
        for a, b in itertools.pairwise(commit_files):
            assert int(b.name) - int(a.name) == 64 * 1024
            assert a.stat().st_size == 64 * 1024
        _read_all(store, n, queues)
    finally:
        store.shutdown()
    reopened = open_store(tmp_path)
    try:
        _read_all(reopened, n, queues)
        assert reopened.get_max_offset_in_queue("TopicA", 0) == (n + queues - 1) // queues
        hit = reopened.query_by_key("TopicA", "k3999")
        assert hit.phy_offsets == [offsets[3999]]
    finally:
        reopened.shutdown()
    ro = MessageStore.open_readonly(tmp_path)
    try:
        assert sum(1 for _ in ro.commit_log.iter_records()) == n
    finally:
        ro.shutdown()


def _read_all(store: MessageStore, n: int, queues: int) -> None:
    for q in range(queues):
        expected = list(range(q, n, queues))
        seen: list[int] = []
        offset = 0
        while True:
            got = store.get_messages("TopicA", q, offset, 32)
            if got.status is GetStatus.OFFSET_OVERFLOW_ONE:
                break
            assert got.status is GetStatus.FOUND
            for qo, buf in zip(got.queue_offsets, got.buffers, strict=True):
                msg = decode_record(buf, check_crc=True)
                i = int(msg.body.split(b"-")[1])
                assert msg.queue_offset == qo and msg.queue_id == q
                assert msg.body == f"body-{i}-".encode() * (1 + i % 7)
                seen.append(i)
            offset = got.next_begin_offset
        assert seen == expected

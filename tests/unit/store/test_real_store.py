"""Reading the real RocketMQ 4.9.8 store fixture exactly, without touching it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqcore.common.javahash import tags_hash_code
from mqcore.message.record import decode_record
from mqcore.store import GetStatus, MessageStore

FIXTURE = Path(__file__).resolve().parents[3] / ".." / "shared" / "fixtures" / "rocketmq-store"


@pytest.fixture(scope="module")
def store() -> MessageStore:
    assert FIXTURE.is_dir(), f"fixture store missing at {FIXTURE}"
    s = MessageStore.open_readonly(FIXTURE)
    yield s  # type: ignore[misc]
    s.shutdown()


def test_geometry_and_offsets(store: MessageStore) -> None:
    assert store.commit_log.mapped_file_size == 1048576
    assert store.topics() == {"FixtureTopic": [0, 1, 2, 3], "SCHEDULE_TOPIC_XXXX": [2]}
    maxes = [store.get_max_offset_in_queue("FixtureTopic", q) for q in range(4)]
    assert maxes == [28, 28, 27, 27]
    assert [store.get_min_offset_in_queue("FixtureTopic", q) for q in range(4)] == [0] * 4
    assert store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 2) == 10
    assert store.min_phy_offset == 0


def test_commit_log_records(store: MessageStore) -> None:
    records = list(store.commit_log.iter_records())
    assert len(records) == 120
    assert records[-1][0] + len(records[-1][1]) == store.max_phy_offset
    msgs = [decode_record(view, check_crc=True) for _, view in records]
    first = msgs[0]
    assert (first.topic, first.queue_id, first.body, first.tags) == (
        "FixtureTopic",
        0,
        b"body-0",
        "TagA",
    )
    assert sum(m.topic == "SCHEDULE_TOPIC_XXXX" for m in msgs) == 10


def test_schedule_queue_tag_slots_are_deliver_times(store: MessageStore) -> None:
    cq = store.consume_queue("SCHEDULE_TOPIC_XXXX", 2)
    assert cq is not None
    entries = list(cq.iter_entries())
    assert len(entries) == 10
    for _qo, phy, _size, tags in entries:
        assert tags == store.get_store_time(phy) + 10_000  # type: ignore[operator]


def test_consume_queue_entries_point_at_their_records(store: MessageStore) -> None:
    for q in range(4):
        got = store.get_messages("FixtureTopic", q, 0, 64)
        assert got.status is GetStatus.FOUND
        assert got.message_count == store.get_max_offset_in_queue("FixtureTopic", q)
        for qo, buf in zip(got.queue_offsets, got.buffers, strict=True):
            msg = decode_record(buf)
            assert (msg.topic, msg.queue_id, msg.queue_offset) == ("FixtureTopic", q, qo)
        cq = store.consume_queue("FixtureTopic", q)
        assert cq is not None
        for _qo, phy, _size, tags in cq.iter_entries():
            assert tags == tags_hash_code(store.look_message(phy, read_body=False).tags)


def test_index_and_checkpoint(store: MessageStore) -> None:
    hit = store.query_by_key("FixtureTopic", "k42")
    assert len(hit.phy_offsets) == 1
    assert decode_record(hit.buffers[0]).body == b"body-42"
    delayed = store.query_by_key("FixtureTopic", "dk3")
    assert [decode_record(b).body for b in delayed.buffers] == [b"delay-body-3"]
    cp = store.checkpoint
    assert cp is not None and cp.physic_msg_timestamp > 0
    assert store.lookup_by_time("FixtureTopic", 0, 0) == 0
    assert store.lookup_by_time("FixtureTopic", 0, 2**62) == 28

"""Deferred dispatch: with a driver set, a put only appends; dispatch_pending builds the
consume queue and index entries of every append since the last pass, in one go."""

from __future__ import annotations

from pathlib import Path

import pytest
from storetest_util import make_msg, open_store

from mqcore.common.javahash import tags_hash_code
from mqcore.message.record import decode_record
from mqcore.store import MessageStore
from mqcore.store.dispatcher import Arrival


@pytest.fixture
def store(tmp_path: Path) -> MessageStore:
    s = open_store(tmp_path, message_delay_level="1s 5s")
    wakes: list[int] = []
    s.on_append = lambda: wakes.append(1)
    s.wakes = wakes  # type: ignore[attr-defined]
    yield s  # type: ignore[misc]
    s.shutdown()


def test_a_put_appends_and_wakes_the_driver_but_writes_no_entry(store: MessageStore) -> None:
    result = store.put_message(make_msg(uniq="U1"))
    assert result.ok and store.wakes == [1]  # type: ignore[attr-defined]
    assert decode_record(store.get_message(result.wrote_offset)).body == b"hello"
    assert store.queues.find("TopicA", 0, create=False) is None  # no entry written yet
    assert store.dispatch_behind_bytes() == result.wrote_bytes
    assert store.dispatch_pending() == [Arrival("TopicA", 0, 1, tags_hash_code("TagA"))]
    assert store.get_messages("TopicA", 0, 0, 8).message_count == 1
    assert store.query_by_key("TopicA", "U1").phy_offsets == [result.wrote_offset]
    assert store.dispatch_behind_bytes() == 0
    assert store.dispatch_pending() == []


def test_a_read_before_the_pass_sees_every_acknowledged_append(store: MessageStore) -> None:
    first = store.put_message(make_msg(uniq="U1"))
    assert store.get_messages("TopicA", 0, 0, 8).message_count == 1  # dispatched on demand
    second = store.put_message(make_msg(uniq="U2"))
    assert store.query_by_key("TopicA", "U2").phy_offsets == [second.wrote_offset]
    assert store.get_max_offset_in_queue("TopicA", 0) == 2
    # The driver's pass still hears of both arrivals, to wake held pulls.
    assert store.dispatch_pending() == [
        Arrival("TopicA", 0, 1, tags_hash_code("TagA")),
        Arrival("TopicA", 0, 2, tags_hash_code("TagA")),
    ]
    assert first.ok and store.dispatch_pending() == []


def test_one_pass_covers_many_puts_one_arrival_per_queue(store: MessageStore) -> None:
    puts = [store.put_message(make_msg(queue_id=i % 2, keys=f"k{i}")) for i in range(6)]
    puts.append(store.put_messages([make_msg(queue_id=1, tags=None) for _ in range(3)]))
    arrivals = store.dispatch_pending()
    # Several entries per queue: the tag code is unknown (None) and pulls re-filter.
    assert sorted(arrivals) == [Arrival("TopicA", 0, 3, None), Arrival("TopicA", 1, 6, None)]
    cq = store.consume_queue("TopicA", 1)
    assert cq is not None
    entries = [cq.entry(i) for i in range(6)]
    assert [e[0] for e in entries if e] == [
        puts[1].wrote_offset,
        puts[3].wrote_offset,
        puts[5].wrote_offset,
        *puts[6].record_offsets,
    ]
    assert [e[2] for e in entries if e] == [tags_hash_code("TagA")] * 3 + [0] * 3
    for i in range(6):
        assert store.query_by_key("TopicA", f"k{i}").phy_offsets == [puts[i].wrote_offset]


def test_transaction_and_delay_rules_hold_when_deferred(store: MessageStore) -> None:
    prepared = store.put_message(make_msg(uniq="P", sys_flag=0x4))
    rolled_back = store.put_message(make_msg(uniq="R", sys_flag=0xC))
    delayed = store.put_message(make_msg("SCHEDULE_TOPIC_XXXX", 1, props={"DELAY": "2"}, uniq="D"))
    store.dispatch_pending()
    assert store.get_max_offset_in_queue("TopicA", 0) == 0  # no entry for either
    assert store.query_by_key("TopicA", "P").phy_offsets == [prepared.wrote_offset]
    assert store.query_by_key("TopicA", "R").phy_offsets == []
    assert rolled_back.ok
    cq = store.consume_queue("SCHEDULE_TOPIC_XXXX", 1)
    entry = cq.entry(0) if cq is not None else None
    assert entry is not None and entry[2] == delayed.store_timestamp + 5000


def test_a_failed_pass_is_retried_without_losing_or_doubling_entries(
    store: MessageStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = [store.put_message(make_msg(keys="a")) for _ in range(2)]
    index = store.dispatcher.index
    assert index is not None
    real = index.build_index_many

    def full_disk(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(index, "build_index_many", full_disk)
    with pytest.raises(OSError):
        store.dispatch_pending()
    monkeypatch.setattr(index, "build_index_many", real)
    later = store.put_message(make_msg(keys="a"))
    assert store.dispatch_pending() == [Arrival("TopicA", 0, 3, None)]
    assert store.get_max_offset_in_queue("TopicA", 0) == 3
    offsets = sorted(store.query_by_key("TopicA", "a").phy_offsets)
    assert offsets == [first[0].wrote_offset, first[1].wrote_offset, later.wrote_offset]


def test_shutdown_dispatches_what_is_pending(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.on_append = lambda: None
    store.put_message(make_msg())
    store.shutdown()
    reopened = MessageStore.open_readonly(tmp_path)  # reads queues as they are, no replay
    try:
        assert reopened.get_max_offset_in_queue("TopicA", 0) == 1
    finally:
        reopened.shutdown()


def test_one_pass_over_several_topics_indexes_every_record(store: MessageStore) -> None:
    """Index entries go in commit log order across topics: grouped by topic, the second
    topic's records fell below the first's endPhyOffset and were skipped as replays."""
    topics = ["TopicA", "TopicB", "TopicA", "TopicC", "TopicB"]
    puts = [store.put_message(make_msg(topic=t, keys=f"k{i}")) for i, t in enumerate(topics)]
    store.dispatch_pending()
    for i, (topic, put) in enumerate(zip(topics, puts, strict=True)):
        assert store.query_by_key(topic, f"k{i}").phy_offsets == [put.wrote_offset]
    index = store.index
    assert index is not None
    offsets = [e.phy_offset for f in index.files for e in f.iter_entries()]
    assert offsets == sorted(offsets)

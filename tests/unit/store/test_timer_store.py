"""TimerMessageStore in-process: a real store, a fake clock, enqueue and dequeue steps."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from storetest_util import make_msg, small_config

from mqcore.message.const import TIMER_TOPIC
from mqcore.message.model import MessageExt
from mqcore.message.properties import encode_properties
from mqcore.store import MessageStore
from mqcore.store.results import PutResult, PutStatus
from mqcore.store.timer import TimerMessageStore, build_delete_key
from mqcore.store.timer.offline import read_timer_files

T0 = 1_800_000_000_000  # a whole second


class Clock:
    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def timer_msg(topic: str, queue_id: int, deliver_tick: int, uniq: str, **props: str) -> MessageExt:
    """What the broker's send rewrite stores in the timer topic."""
    msg = make_msg(
        TIMER_TOPIC,
        0,
        uniq.encode(),
        uniq=uniq,
        props={
            "TIMER_DELIVER_MS": str(deliver_tick + 1000),
            "TIMER_OUT_MS": str(deliver_tick),
            "REAL_TOPIC": topic,
            "REAL_QID": str(queue_id),
            **props,
        },
    )
    return msg


class Harness:
    def __init__(self, root: Path, clock: Clock, **overrides: object) -> None:
        self.root = root
        self.clock = clock
        self.overrides = overrides
        self.fail_puts = 0
        self.store = MessageStore(small_config(root, **overrides))
        self.store.start()
        self.timer = TimerMessageStore(self.store, self.store.config, put=self._put, clock=clock)
        self.timer.load()

    def _put(self, batch: Sequence[MessageExt]) -> PutResult:
        if self.fail_puts:
            self.fail_puts -= 1
            return PutResult(PutStatus.SERVICE_NOT_AVAILABLE)
        return self.store.put_messages(batch)

    def send(self, msg: MessageExt) -> None:
        assert self.store.put_message(msg).ok

    def step(self) -> None:
        """One pass of the broker's timer task: enqueue all, dequeue all due."""
        while self.timer.enqueue(64) == 64:
            pass
        self.timer.commit_enqueue()
        while self.timer.dequeue(64) >= 0 and not self.timer.stalled:
            pass
        self.timer.commit_dequeue()

    def delivered(self, topic: str, queue_id: int = 0) -> list[MessageExt]:
        cq = self.store.consume_queue(topic, queue_id)
        if cq is None:
            return []
        return [self.store.look_message(phy) for _, phy, _, _ in cq.iter_entries()]

    def close(self) -> None:
        self.timer.close()
        self.store.shutdown()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def harness(tmp_path: Path, clock: Clock) -> Iterator[Harness]:
    h = Harness(tmp_path, clock)
    yield h
    h.close()


def test_message_is_delivered_at_its_tick_not_before(harness: Harness, clock: Clock) -> None:
    harness.send(timer_msg("Orders", 2, T0 + 5000, "u1", TAGS="paid"))
    harness.step()
    assert harness.timer.congest_num == 1
    clock.now = T0 + 5999  # the slot of T0+5000 is read once the clock is past it
    harness.step()
    assert harness.delivered("Orders", 2) == []
    clock.now = T0 + 6000
    harness.step()
    (msg,) = harness.delivered("Orders", 2)
    assert msg.body == b"u1"
    assert msg.properties["TAGS"] == "paid"
    assert "REAL_TOPIC" not in msg.properties and "REAL_QID" not in msg.properties
    assert msg.properties["TIMER_ENQUEUE_MS"] == str(T0)
    assert msg.properties["TIMER_DEQUEUE_MS"] == str(T0 + 6000)
    assert msg.properties["TIMER_OUT_MS"] == str(T0 + 5000)
    assert harness.timer.congest_num == 0
    assert harness.timer.commit_read_time_ms == T0 + 6000


def test_past_message_is_delivered_at_once_without_the_wheel(
    harness: Harness, clock: Clock
) -> None:
    harness.send(timer_msg("Orders", 0, T0 - 3000, "late"))
    harness.step()
    (msg,) = harness.delivered("Orders")
    assert msg.properties["TIMER_ENQUEUE_MS"] == str(2**63 - 1)
    assert harness.timer.timer_log is not None
    assert harness.timer.timer_log.max_offset == 0


def test_slot_keeps_enqueue_order_and_many_slots(harness: Harness, clock: Clock) -> None:
    for i in range(30):
        harness.send(timer_msg("Orders", 0, T0 + 1000 * (i % 3), f"m{i}"))
    harness.step()
    clock.now = T0 + 10_000
    harness.step()
    bodies = [m.body.decode() for m in harness.delivered("Orders")]
    expected = [f"m{i}" for r in range(3) for i in range(30) if i % 3 == r]
    assert bodies == expected


def test_long_delay_rolls_through_the_timer_topic(tmp_path: Path, clock: Clock) -> None:
    h = Harness(tmp_path, clock, timer_roll_window_slot=10)
    try:
        h.send(timer_msg("Orders", 0, T0 + 25_000, "far"))
        h.step()
        for t in range(1, 27):
            clock.now = T0 + t * 1000
            h.step()
            if t < 26:
                assert h.delivered("Orders") == [], t
        (msg,) = h.delivered("Orders")
        assert int(msg.properties["TIMER_ROLL_TIMES"]) >= 2
        assert h.store.get_max_offset_in_queue(TIMER_TOPIC, 0) > 1  # rolled copies
    finally:
        h.close()


def test_delete_marker_removes_the_message_of_its_slot(harness: Harness, clock: Clock) -> None:
    harness.send(timer_msg("Orders", 0, T0 + 2000, "keep"))
    harness.send(timer_msg("Orders", 0, T0 + 2000, "gone"))
    marker = timer_msg(
        "Orders", 0, T0 + 2000, "marker", TIMER_DEL_UNIQKEY=build_delete_key("Orders", "gone")
    )
    harness.send(marker)
    harness.step()
    assert harness.timer.congest_num == 1  # two units, one delete marker
    clock.now = T0 + 4000
    harness.step()
    assert [m.body for m in harness.delivered("Orders")] == [b"keep"]
    assert harness.timer.deleted_count == 1


def test_failed_put_is_retried_and_the_slot_waits(harness: Harness, clock: Clock) -> None:
    harness.send(timer_msg("Orders", 0, T0 + 1000, "a"))
    harness.step()
    clock.now = T0 + 3000
    harness.fail_puts = 2
    harness.step()  # the first put fails: the read time stays at the slot
    assert harness.delivered("Orders") == []
    assert harness.timer.commit_read_time_ms <= T0 + 1000
    harness.step()
    harness.step()
    assert [m.body for m in harness.delivered("Orders")] == [b"a"]


def test_recovery_after_a_crash_loses_nothing(tmp_path: Path, clock: Clock) -> None:
    h = Harness(tmp_path, clock)
    for i in range(10):
        h.send(timer_msg("Orders", 0, T0 + 2000 + 1000 * (i % 5), f"m{i}"))
    h.step()
    h.timer.flush()  # a checkpoint with all ten enqueued
    for i in range(10, 20):
        h.send(timer_msg("Orders", 0, T0 + 2000 + 1000 * (i % 5), f"m{i}"))
    h.step()  # enqueued after the checkpoint
    clock.now = T0 + 4000
    h.step()  # two slots delivered, not checkpointed
    delivered_before = {m.body for m in h.delivered("Orders")}
    assert delivered_before
    # kill -9: the maps stay as they are, nothing more is written
    h.timer.checkpoint._mm.close()  # type: ignore[union-attr]
    h.timer.checkpoint = None
    h.timer.close()
    h.store.flush()
    h.store.shutdown()

    clock.now = T0 + 20_000
    h2 = Harness(tmp_path, clock)
    try:
        h2.step()
        bodies = [m.body for m in h2.delivered("Orders")]
        assert set(bodies) == {f"m{i}".encode() for i in range(20)}
        assert len(bodies) >= 20  # duplicates possible, counted by the caller
    finally:
        h2.close()


def test_clean_restart_delivers_nothing_twice(tmp_path: Path, clock: Clock) -> None:
    h = Harness(tmp_path, clock)
    for i in range(6):
        h.send(timer_msg("Orders", 0, T0 + 1000 * (i + 1), f"m{i}"))
    h.step()
    clock.now = T0 + 4000
    h.step()
    h.close()
    clock.now = T0 + 10_000
    h2 = Harness(tmp_path, clock)
    try:
        h2.step()
        bodies = [m.body for m in h2.delivered("Orders")]
        assert sorted(bodies) == [f"m{i}".encode() for i in range(6)]
    finally:
        h2.close()


def test_a_message_refused_for_good_does_not_take_its_group_with_it(
    harness: Harness, clock: Clock
) -> None:
    """Puts go in groups per queue; a copy the store refuses (its properties grew past
    32767 bytes with TIMER_ENQUEUE_MS/TIMER_DEQUEUE_MS) is skipped alone."""
    big = timer_msg("Orders", 0, T0 + 1000, "big")
    room = 32767 - len(encode_properties(big.properties)) - len("pad") - 2 - 8
    big.properties["pad"] = "x" * room
    harness.send(timer_msg("Orders", 0, T0 + 1000, "a"))
    harness.send(big)
    harness.send(timer_msg("Orders", 0, T0 + 1000, "b"))
    harness.send(timer_msg("Orders", 1, T0 + 1000, "c"))
    harness.step()
    clock.now = T0 + 2000
    harness.step()
    assert [m.body for m in harness.delivered("Orders", 0)] == [b"a", b"b"]
    assert [m.body for m in harness.delivered("Orders", 1)] == [b"c"]
    assert harness.timer.commit_read_time_ms == T0 + 2000


def test_a_clean_stop_finishes_the_slot_it_began(tmp_path: Path, clock: Clock) -> None:
    h = Harness(tmp_path, clock)
    for i in range(10):
        h.send(timer_msg("Orders", 0, T0 + 1000, f"m{i}"))
    h.step()
    clock.now = T0 + 2000
    h.timer.move_write_time()
    assert h.timer.dequeue(3) == 3  # a third of the slot put, the read time still on it
    assert len(h.delivered("Orders")) == 3 and h.timer.curr_read_time_ms == T0 + 1000
    assert h.timer.finish_slot()
    h.timer.commit_dequeue()
    h.close()
    h2 = Harness(tmp_path, clock)
    try:
        h2.step()
        assert sorted(m.body for m in h2.delivered("Orders")) == sorted(
            f"m{i}".encode() for i in range(10)
        )  # each once
    finally:
        h2.close()


def test_the_files_read_offline(tmp_path: Path, clock: Clock) -> None:
    h = Harness(tmp_path, clock)
    for i in range(5):
        h.send(timer_msg("Orders", 0, T0 + 3000 + 1000 * (i % 2), f"m{i}"))
    h.send(timer_msg("Orders", 0, T0 - 1000, "past"))
    h.step()
    clock.now = T0 + 1500
    h.step()
    h.timer.flush()
    state = read_timer_files(tmp_path)
    assert state is not None
    assert (state.waiting, state.slots, state.precision_ms) == (5, 2, 1000)
    assert (state.next_due_ms, state.last_due_ms) == (T0 + 4000, T0 + 5000)
    assert state.master_timer_queue_offset == 6 and state.timer_log_files == 1
    assert state.last_read_time_ms == T0 + 1000
    h.close()
    assert read_timer_files(tmp_path / "elsewhere") is None


def test_a_timer_queue_made_anew_is_followed(harness: Harness, clock: Clock) -> None:
    for i in range(3):
        harness.send(timer_msg("Orders", 0, T0 + 1000, f"m{i}"))
    harness.step()
    assert harness.timer.curr_queue_offset == 3
    harness.store.clean_unused_topics(lambda topic: topic != TIMER_TOPIC)  # queue destroyed
    harness.send(timer_msg("Orders", 0, T0 + 1000, "after"))
    harness.step()
    clock.now = T0 + 2000
    harness.step()
    assert sorted(m.body for m in harness.delivered("Orders")) == [b"after", b"m0", b"m1", b"m2"]

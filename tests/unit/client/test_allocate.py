"""Allocation strategies: RocketMQ's arithmetic, and every queue owned exactly once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.client.allocate import (
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueByMachineRoomNearby,
    AllocateMessageQueueConsistentHash,
    AllocateStrategy,
    strategy_by_name,
)
from mqcore.protocol.bodies.base import MessageQueue


def queues(n: int, broker: str = "broker-a", topic: str = "T") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def ids(result: list[MessageQueue]) -> list[int]:
    return [mq.queue_id for mq in result]


def test_averagely_blocks() -> None:
    s = AllocateMessageQueueAveragely()
    cids = ["c2", "c0", "c1"]  # unsorted on purpose
    assert [ids(s.allocate("g", c, queues(8), cids)) for c in ("c0", "c1", "c2")] == [
        [0, 1, 2],
        [3, 4, 5],
        [6, 7],
    ]
    assert [ids(s.allocate("g", c, queues(2), cids)) for c in ("c0", "c1", "c2")] == [[0], [1], []]
    assert s.allocate("g", "stranger", queues(4), cids) == []
    assert s.allocate("g", "c0", [], cids) == []


def test_by_circle() -> None:
    s = AllocateMessageQueueAveragelyByCircle()
    cids = ["a", "b", "c"]
    assert [ids(s.allocate("g", c, queues(8), cids)) for c in cids] == [
        [0, 3, 6],
        [1, 4, 7],
        [2, 5],
    ]


def test_sorting_follows_java_compare_to() -> None:
    mqs = [MessageQueue("T", "b", 0), MessageQueue("T", "a", 1), MessageQueue("T", "a", 0)]
    got = AllocateMessageQueueAveragely().allocate("g", "c", mqs, ["c"])
    assert got == [MessageQueue("T", "a", 0), MessageQueue("T", "a", 1), MessageQueue("T", "b", 0)]


def test_by_config() -> None:
    fixed = queues(2)
    assert AllocateMessageQueueByConfig(fixed).allocate("g", "x", queues(9), ["y"]) == fixed


def test_by_machine_room() -> None:
    mqs = queues(3, "hz@b1") + queues(3, "sh@b2") + queues(2, "bj@b3")
    s = AllocateMessageQueueByMachineRoom({"hz", "sh"})
    got = [s.allocate("g", c, mqs, ["c0", "c1", "c2", "c3"]) for c in ("c0", "c1", "c2", "c3")]
    flat = [mq for part in got for mq in part]
    assert sorted(flat) == sorted(mq for mq in mqs if not mq.broker_name.startswith("bj"))
    assert [len(p) for p in got] == [2, 2, 1, 1]


def test_nearby_prefers_own_room() -> None:
    mqs = queues(4, "hz-b1") + queues(4, "sh-b2") + queues(2, "bj-b3")
    s = AllocateMessageQueueByMachineRoomNearby(
        AllocateMessageQueueAveragely(),
        broker_room=lambda name: name.split("-")[0],
        consumer_room=lambda cid: cid.split("-")[0],
    )
    cids = ["hz-1", "hz-2", "sh-1"]
    got = {c: s.allocate("g", c, mqs, cids) for c in cids}
    assert {mq.broker_name for mq in got["sh-1"]} >= {"sh-b2"}
    assert all(mq.broker_name != "sh-b2" for mq in got["hz-1"] + got["hz-2"])
    flat = [mq for part in got.values() for mq in part]
    assert sorted(flat) == sorted(mqs)  # bj queues (no consumer there) are shared too


def test_consistent_hash_is_stable_when_a_member_leaves() -> None:
    s = AllocateMessageQueueConsistentHash(virtual_nodes=10)
    mqs = queues(64)
    before = {c: set(s.allocate("g", c, mqs, ["a", "b", "c", "d"])) for c in "abcd"}
    after = {c: set(s.allocate("g", c, mqs, ["a", "b", "c"])) for c in "abc"}
    for c in "abc":
        assert before[c] <= after[c]  # survivors keep what they had
    assert set().union(*after.values()) == set(mqs)


def test_strategy_by_name() -> None:
    assert strategy_by_name("avg").name == "AVG"
    assert strategy_by_name("CONSISTENT_HASH").name == "CONSISTENT_HASH"
    with pytest.raises(ValueError, match="unknown allocation strategy"):
        strategy_by_name("RANDOM")


PARTITIONING: list[AllocateStrategy] = [
    AllocateMessageQueueAveragely(),
    AllocateMessageQueueAveragelyByCircle(),
    AllocateMessageQueueConsistentHash(),
    AllocateMessageQueueConsistentHash(virtual_nodes=1),
]


@pytest.mark.parametrize("strategy", PARTITIONING, ids=lambda s: f"{s.name}")
@given(n_queues=st.integers(0, 40), n_brokers=st.integers(1, 3), n_cids=st.integers(1, 12))
@settings(max_examples=60, deadline=None)
def test_every_queue_owned_exactly_once(
    strategy: AllocateStrategy, n_queues: int, n_brokers: int, n_cids: int
) -> None:
    mqs = [mq for b in range(n_brokers) for mq in queues(n_queues, f"broker-{b}")]
    cids = [f"10.0.0.{i}@{1000 + i}" for i in range(n_cids)]
    owned = [mq for c in cids for mq in strategy.allocate("g", c, mqs, cids)]
    assert sorted(owned) == sorted(mqs)

"""RebalanceLockManager: contention, refresh, expiry, unlock."""

from __future__ import annotations

from mqcore.broker.rebalance_lock import RebalanceLockManager
from mqcore.protocol.bodies import MessageQueue


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


Q0, Q1, Q2 = (MessageQueue("T", "broker-a", i) for i in range(3))


def test_two_clients_contend() -> None:
    clock = Clock()
    locks = RebalanceLockManager(60_000, clock)
    assert locks.try_lock_batch("g", {Q0, Q1}, "c1") == {Q0, Q1}
    assert locks.try_lock_batch("g", {Q1, Q2}, "c2") == {Q2}
    assert locks.holder("g", Q1) == "c1"
    assert locks.is_locked("g", Q2, "c2") and not locks.is_locked("g", Q2, "c1")
    # other groups are independent
    assert locks.try_lock_batch("other", {Q1}, "c2") == {Q1}


def test_refresh_keeps_and_expiry_releases() -> None:
    clock = Clock()
    locks = RebalanceLockManager(60_000, clock)
    locks.try_lock_batch("g", {Q0, Q1}, "c1")
    clock.now += 40
    assert locks.try_lock_batch("g", {Q0}, "c1") == {Q0}  # refresh Q0 only
    clock.now += 30  # Q1 is 70 s old, Q0 30 s
    assert locks.holder("g", Q1) is None
    assert locks.try_lock_batch("g", {Q0, Q1}, "c2") == {Q1}
    assert locks.holder("g", Q0) == "c1" and locks.holder("g", Q1) == "c2"


def test_unlock_only_own_entries() -> None:
    clock = Clock()
    locks = RebalanceLockManager(60_000, clock)
    locks.try_lock_batch("g", {Q0}, "c1")
    locks.try_lock_batch("g", {Q1}, "c2")
    assert locks.unlock_batch("g", {Q0, Q1}, "c2") == 1
    assert locks.holder("g", Q0) == "c1" and locks.holder("g", Q1) is None
    assert locks.try_lock_batch("g", {Q1}, "c3") == {Q1}
    assert locks.unlock_batch("g", {Q0}, "c1") == 1
    assert locks.unlock_batch("g", {Q1}, "c3") == 1
    assert locks.table == {}
    assert locks.unlock_batch("missing", {Q0}, "c1") == 0

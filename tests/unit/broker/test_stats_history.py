"""StatsHistory: the minute, hour and day windows VIEW_BROKER_STATS_DATA answers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import pytest

from mqcore.broker import stats as stats_module
from mqcore.broker import stats_history as history_module
from mqcore.broker.stats import BrokerStatsManager
from mqcore.broker.stats_history import StatsHistory
from mqcore.common.aio import run_in_slices


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_windows_cover_a_minute_an_hour_and_a_day() -> None:
    clock = Clock()
    stats = BrokerStatsManager(clock=clock)
    history = StatsHistory(stats, lambda: "DefaultCluster", clock=clock)
    # 10 puts of 2 messages (100 bytes) in each 10-minute slot, for 30 hours
    for slot in range(180):
        for _ in range(10):
            stats.on_put("T", 2, 100)
        for _ in range(600):  # one-second samples of the minute window
            clock.now += 1
            if _ % 60 == 0:
                stats.sample()
        stats.sample()
        history.sample_hour_ring()
        if slot % 6 == 5:
            history.sample_day_ring()
    found = history.lookup("TOPIC_PUT_NUMS", "T")
    assert found is not None
    minute, hour, day = found
    assert hour.sum == 6 * 20  # the last 6 ten-minute slots
    assert abs(hour.tps - hour.sum / 3600) < 1e-9
    assert hour.avgpt == 2.0  # messages per put
    assert day.sum == 24 * 6 * 20
    assert minute.sum == 0  # nothing was put in the last minute
    for _ in range(5):  # 10 messages within the last minute
        stats.on_put("T", 2, 100)
        clock.now += 1
        stats.sample()
    found = history.lookup("TOPIC_PUT_NUMS", "T")
    assert found is not None and found[0].sum == 10 and found[0].avgpt == 2.0
    size = history.lookup("TOPIC_PUT_SIZE", "T")
    assert size is not None and size[2].sum == 24 * 6 * 1000 + 500
    broker = history.lookup("BROKER_PUT_NUMS", "DefaultCluster")
    assert broker is not None and broker[2].sum == day.sum + 10


def test_unknown_names_keys_and_clusters_are_none() -> None:
    stats = BrokerStatsManager()
    history = StatsHistory(stats, lambda: "C1")
    stats.on_get("g", "T", 3, 30)
    assert history.lookup("GROUP_GET_NUMS", "T@g") is not None
    assert history.lookup("GROUP_GET_NUMS", "T@other") is None
    assert history.lookup("SNDBCK_PUT_NUMS", "T") is None
    assert history.lookup("BROKER_GET_NUMS", "C2") is None
    # a key born after the last sample counts from zero
    found = history.lookup("GROUP_GET_NUMS", "T@g")
    assert found is not None and found[1].sum == found[2].sum == 3
    stats.remove_group("g")
    history.sample_hour_ring()
    assert history.lookup("GROUP_GET_NUMS", "T@g") is None


async def test_a_sample_taken_in_slices_equals_one_taken_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The broker's timers take the one-second sample and the ring samples a slice at a
    time (a zero budget: the loop gets a turn after every step); the figures read the
    same as when taken at once, and a key deleted between slices is no error."""
    yields = []

    async def every_step(steps: Iterable[object]) -> int:
        yields.append(await run_in_slices(steps, 0.0))
        return yields[-1]

    monkeypatch.setattr(stats_module, "run_in_slices", every_step)
    monkeypatch.setattr(history_module, "run_in_slices", every_step)
    clock = Clock()
    sliced, whole = BrokerStatsManager(clock=clock), BrokerStatsManager(clock=clock)
    histories = [StatsHistory(s, lambda: "C", clock=clock) for s in (sliced, whole)]
    for stats in (sliced, whole):
        for i in range(1000):
            stats.on_put(f"T{i}", 1 + i % 3, 10)
            stats.on_get("g", f"T{i}", 1, 10)
    clock.now += 10
    whole.sample()
    whole_history = histories[1]
    whole_history.sample_hour_ring()
    whole_history.sample_day_ring()

    async def deletes_meanwhile() -> None:
        await asyncio.sleep(0)
        sliced.remove_topic("T999")

    deleting = asyncio.create_task(deletes_meanwhile())
    await sliced.sample_in_slices()
    await deleting
    await histories[0].sample_hour_ring_in_slices()
    await histories[0].sample_day_ring_in_slices()
    for i in (0, 1, 500):
        assert sliced.topic_put_snapshot(f"T{i}") == whole.topic_put_snapshot(f"T{i}")
        for name, key in (("TOPIC_PUT_NUMS", f"T{i}"), ("GROUP_GET_NUMS", f"T{i}@g")):
            assert histories[0].lookup(name, key) == whole_history.lookup(name, key)
    assert histories[0].lookup("TOPIC_PUT_NUMS", "T999") is None
    assert sliced.put_tps() == whole.put_tps()
    assert min(yields) >= 2  # 2,000 keys: the loop had turns within each sample

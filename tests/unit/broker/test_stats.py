"""BrokerStatsManager: totals, sliding-window rates, day roll-over."""

from __future__ import annotations

import datetime
import tracemalloc

from mqcore.broker.stats import BrokerStatsManager


class Clocks:
    def __init__(self) -> None:
        self.mono = 0.0
        self.wall = datetime.datetime(2024, 5, 1, 23, 59, 0).timestamp()

    def tick(self, seconds: float = 1.0) -> None:
        self.mono += seconds
        self.wall += seconds


def make() -> tuple[BrokerStatsManager, Clocks]:
    clocks = Clocks()
    stats = BrokerStatsManager(clock=lambda: clocks.mono, wall_clock=lambda: clocks.wall)
    return stats, clocks


def test_totals_per_topic_and_group() -> None:
    stats, _ = make()
    stats.on_put("T", 1, 100)
    stats.on_put("T", 3, 300)
    stats.on_put("U", 1, 10)
    stats.on_get("g", "T", 2, 200)
    stats.on_get("g", "T", 0, 0)
    t = stats.topic_put_snapshot("T")
    assert (t.msgs, t.bytes, t.calls) == (4, 400, 2)
    g = stats.group_get_snapshot("g", "T")
    assert (g.key, g.msgs, g.bytes, g.calls) == ("T@g", 2, 200, 2)
    assert stats.group_get_snapshot("g", "U").msgs == 0
    assert stats.put_total.msgs == 5 and stats.get_total.msgs == 2
    assert {s.key for s in stats.topic_snapshots()} == {"T", "U"}
    assert {s.key for s in stats.group_snapshots()} == {"T@g"}
    stats.remove_topic("T")
    assert {s.key for s in stats.group_snapshots()} == set()


def test_rates_over_windows() -> None:
    stats, clocks = make()
    for _ in range(20):  # 10 msgs/s for 20 s
        stats.on_put("T", 10, 1000)
        stats.store_stats.on_appended(10, 1000)  # the store's count (putTps)
        stats.on_get("g", "T", 5, 500)
        clocks.tick()
        stats.sample()
    assert stats.put_tps(10) == 10.0
    assert stats.get_transferred_tps(10) == 5.0
    assert stats.get_total_tps(10) == 1.0
    assert stats.get_found_tps(10) == 1.0
    assert stats.group_get_tps("g", "T") == 5.0
    assert stats.topic_put_snapshot("T").bytes_per_second == 1000.0
    for _ in range(10):  # idle for 10 s: the 10 s rate drops, the 60 s one halves
        clocks.tick()
        stats.sample()
    assert stats.put_tps(10) == 0.0
    assert stats.put_tps(60) == 200 / 30
    info = stats.runtime_info()
    assert info["putTps"].split(" ")[0] == "0.0"
    assert len(info["putTps"].split(" ")) == 3
    assert info["msgPutTotalTodayNow"] == "200"
    assert info["putMessageTimesTotal"] == "200" and info["putMessageAverageSize"] == "100.0"


def test_day_rollover() -> None:
    stats, clocks = make()
    stats.on_put("T", 7, 70)
    stats.on_get("g", "T", 3, 30)
    clocks.tick(120)  # past midnight
    stats.sample()
    stats.on_put("T", 1, 10)
    info = stats.runtime_info()
    assert info["msgPutTotalTodayMorning"] == "7"
    assert info["msgGetTotalTodayMorning"] == "3"
    assert info["msgPutTotalYesterdayMorning"] == "0"
    assert info["msgPutTotalTodayNow"] == "8"
    clocks.tick(86400)
    stats.sample()
    info = stats.runtime_info()
    assert info["msgPutTotalYesterdayMorning"] == "7"
    assert info["msgPutTotalTodayMorning"] == "8"


def test_hot_path_allocates_nothing_per_call() -> None:
    stats, _ = make()
    stats.on_put("T", 1, 100)
    stats.on_get("g", "T", 1, 100)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(10_000):
            stats.on_put("T", 1, 100)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert grown < 64 * 1024  # no per-message growth (10k calls)

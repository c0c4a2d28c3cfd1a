"""Put/get timings as 4.9.8's StoreStatsService keeps them (buckets, minute roll, px)."""

from __future__ import annotations

import time
from concurrent.futures import Future

from mqcore.broker.store_stats import (
    DISTRIBUTE_LABELS,
    StoreStatsService,
    StoreTiming,
)
from mqcore.store.results import PutResult, PutStatus


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_distribution_and_latencies_show_the_last_complete_minute() -> None:
    clock = Clock()
    stats = StoreStatsService(clock)
    assert stats.runtime_info()["putMessageDistributeTime"] == "null"
    assert stats.runtime_info()["putLatency99"] == "0.00"
    for ms in (0, 0, 5, 10, 49, 50, 999, 1000, 9999, 10_000, 60_000):
        stats.on_put(ms, ok=True)
    stats.on_put(3, ok=False)
    clock.now += 59.9
    stats.sample()
    assert stats.runtime_info()["putMessageDistributeTime"] == "null"  # not a minute yet
    clock.now += 0.2
    stats.sample()
    counts = [2, 2, 2, 1, 0, 0, 1, 1, 0, 0, 0, 1, 2]
    expected = "".join(f"{label}:{n} " for label, n in zip(DISTRIBUTE_LABELS, counts, strict=True))
    info = stats.runtime_info()
    assert info["putMessageDistributeTime"] == expected
    assert info["putMessageEntireTimeMax"] == "60000"
    assert info["putMessageFailedTimes"] == "1"
    # 12 puts: index int(12 * 0.99) = 11 is the 2nd of the 2 in bucket (9000, 10000]
    # (9 before it): 9000 + 1000 * 2 / 2; 0.999 -> index 11 as well
    assert info["putLatency99"] == "10000.00" and info["putLatency999"] == "10000.00"
    assert stats.put_latency(0.2) == 1.0  # index 2: the 2nd of the 2 in (0, 1]
    assert stats.put_latency(0.3) == 3.0  # index 3: the one in (2, 3]
    clock.now += 61
    stats.sample()  # a quiet minute
    assert stats.runtime_info()["putMessageDistributeTime"] == "".join(
        f"{label}:0 " for label in DISTRIBUTE_LABELS
    )
    assert stats.runtime_info()["putLatency99"] == "0.00"


def test_latency_interpolates_inside_a_fine_bucket() -> None:
    clock = Clock()
    stats = StoreStatsService(clock)
    for _ in range(100):
        stats.on_put(1, ok=True)  # bucket (0, 1]
    for _ in range(100):
        stats.on_put(30, ok=True)  # bucket (28, 30]
    clock.now += 60
    stats.sample()
    # index int(200 * 0.99) = 198: 98th of 100 in (28, 30] -> 28 + 2 * 98 / 100
    assert stats.runtime_info()["putLatency99"] == "29.96"
    assert stats.put_latency(0.25) == 0.5  # index 50 of 100 in (0, 1]


def test_store_timing_times_puts_and_gets_and_skips_refusals() -> None:
    stats = StoreStatsService(Clock())
    timing = StoreTiming(stats)
    timing.on_put(PutResult(PutStatus.PROPERTIES_SIZE_EXCEEDED), time.monotonic())
    assert stats.put_failed_times == 1 and sum(stats._distribute) == 1
    # refused before the log: not timed
    timing.on_put(PutResult(PutStatus.SERVICE_NOT_AVAILABLE), time.monotonic())
    assert stats.put_failed_times == 1 and sum(stats._distribute) == 1
    future: Future[bool] = Future()
    ok = PutResult(PutStatus.PUT_OK, msg_count=2, wrote_bytes=300, flush_future=future)
    timing.on_put(ok, time.monotonic())
    assert (stats.put_times_total, stats.put_size_total) == (2, 300)  # failures not counted
    assert sum(stats._distribute) == 1  # timed once the group commit is done
    future.set_result(True)
    assert sum(stats._distribute) == 2 and stats.put_failed_times == 1
    timing.on_get(time.monotonic() - 0.05)
    assert stats.get_entire_time_max >= 50

"""The loop-lag monitor: bookkeeping with a made-up clock, and one real stall.

The real-loop test blocks the loop for 300 ms and asserts the monitor saw at least
250 ms: a loaded machine can only make the measured lag longer, never shorter.
"""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from mqcore.common.loop_lag import HISTORY_MINUTES, LoopLagFigures, LoopLagMonitor
from tests.support import until


def test_the_largest_lag_per_minute_is_kept_for_ten_minutes() -> None:
    monitor = LoopLagMonitor(warn_ms=10_000)
    monitor.record(5, now=0.0)
    monitor.record(40, now=30.0)  # minute 0
    monitor.record(7, now=65.0)  # minute 1
    monitor.record(300, now=125.0)  # minute 2
    monitor.record(2, now=185.0)  # minute 3
    figures = monitor.figures(now=190.0)
    assert figures.last_ms == 2
    assert figures.max_ms == 300
    assert figures.max_ms_last_minute == 2  # 300 ms was more than a minute ago
    assert figures.per_minute_ms == (0.0,) * 6 + (40.0, 7.0, 300.0, 2.0)
    # in minute 10 the history is minutes 1 to 10: minute 0 (40 ms) has left it
    later = monitor.figures(now=605.0)
    assert later.per_minute_ms == (7.0, 300.0, 2.0) + (0.0,) * (HISTORY_MINUTES - 3)
    assert later.max_ms_last_minute == 0
    assert monitor.figures(now=900.0).max_ms == 0  # all older than ten minutes


def test_the_last_minute_is_the_last_sixty_seconds() -> None:
    monitor = LoopLagMonitor(warn_ms=10_000)
    monitor.record(120, now=1000.0)
    assert monitor.figures(now=1000.0).max_ms_last_minute == 120
    assert monitor.figures(now=1055.0).max_ms_last_minute == 120
    assert monitor.figures(now=1065.0).max_ms_last_minute == 0
    monitor.record(-3, now=1066.0)  # a wake-up a little early is no lag
    assert monitor.last_ms == 0


def test_stalls_are_warned_about_at_most_every_ten_seconds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    monitor = LoopLagMonitor(warn_ms=200, server="broker b1")
    with caplog.at_level(logging.WARNING, logger="mq.loop"):
        monitor.record(150, now=1.0)  # under the threshold: silent
        monitor.record(450, now=2.0)
        monitor.record(250, now=3.0)
        monitor.record(900, now=4.0)
        monitor.record(210, now=12.5)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "broker b1: the event loop stalled for 450 ms (every request waited as long)",
        "broker b1: the event loop stalled for 210 ms (every request waited as long); "
        "2 more over 200 ms since the last warning, the longest 900 ms",
    ]
    assert monitor.stalls == 4


def test_runtime_keys_round_trip_and_are_absent_from_other_brokers() -> None:
    monitor = LoopLagMonitor(warn_ms=10_000)
    monitor.record(12.4, now=5.0)
    info = monitor.figures(now=5.0).runtime_info()
    assert info["loopLagMaxMsLastMinute"] == "12"
    assert info["loopLagMaxMs"] == "12"
    assert info["loopLagMaxMsPerMinute"] == ",".join(["0"] * 9 + ["12"])
    parsed = LoopLagFigures.from_runtime_info(info)
    assert parsed is not None and parsed.max_ms_last_minute == 12
    assert parsed.per_minute_ms[-1] == 12 and parsed.stalls == 0
    assert LoopLagFigures.from_runtime_info({"brokerVersionDesc": "V4_9_8"}) is None


async def test_a_blocked_loop_is_measured(caplog: pytest.LogCaptureFixture) -> None:
    monitor = LoopLagMonitor(interval=0.02, server="test")
    monitor.start()
    try:
        await until(lambda: monitor.samples > 0, 5, "the monitor measuring")  # asleep now
        with caplog.at_level(logging.WARNING, logger="mq.loop"):
            time.sleep(0.3)  # holds the loop, as a slow callback would
            await until(lambda: monitor.figures().max_ms_last_minute >= 250, 5, "the stall seen")
        assert monitor.stalls >= 1
        assert "the event loop stalled for" in caplog.text
    finally:
        await monitor.stop()
    count = monitor.samples
    await asyncio.sleep(0.1)
    assert monitor.samples == count  # stopped

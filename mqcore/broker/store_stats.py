"""`StoreStatsService`'s timing half: how long appends and reads of the store take.

RocketMQ 4.9.8 times every ``putMessage(s)`` (until the result is known: the group
commit's flush under SYNC_FLUSH) and every ``getMessage`` in milliseconds. Puts fall into
two sets of buckets that are swapped out once a minute: 13 coarse ones printed as
``putMessageDistributeTime`` and fine ones (1 ms steps up to 20 ms, then wider) from
which ``putLatency99``/``putLatency999`` are interpolated. Both show the last complete
minute: ``putMessageDistributeTime`` is ``null`` and the latencies ``0.00`` until one
has passed. Appends refused before they reach the commit log (store not writable, a
message illegal before encoding) are not timed and not counted as failures, as there.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from mqcore.store.results import PutStatus

if TYPE_CHECKING:
    from mqcore.store.message_store import MessageStore
    from mqcore.store.results import PutResult

__all__ = ["DISTRIBUTE_LABELS", "StoreStatsService", "observe_store"]

DISTRIBUTE_LABELS = (
    "[<=0ms]",
    "[0~10ms]",
    "[10~50ms]",
    "[50~100ms]",
    "[100~200ms]",
    "[200~500ms]",
    "[500ms~1s]",
    "[1~2s]",
    "[2~3s]",
    "[3~4s]",
    "[4~5s]",
    "[5~10s]",
    "[10s~]",
)
_DISTRIBUTE_BOUNDS = (10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10_000)
"""Upper bounds (exclusive) of labels 1..11; <= 0 ms is label 0, the rest label 12."""


def _fine_bounds() -> list[int]:
    """The fine buckets' upper bounds (inclusive): steps of 1 ms x 20, 2 x 15, 5 x 10,
    10 x 10, 50 x 6, 100 x 5, 1000 x 9, then one bucket for everything above."""
    bounds: list[int] = []
    edge = 0
    for step, times in ((1, 20), (2, 15), (5, 10), (10, 10), (50, 6), (100, 5), (1000, 9)):
        for _ in range(times):
            edge += step
            bounds.append(edge)
    return bounds


_FINE_BOUNDS = _fine_bounds()
_NOT_TIMED = (PutStatus.SERVICE_NOT_AVAILABLE, PutStatus.MESSAGE_ILLEGAL)
ROLL_INTERVAL = 60.0
"""Seconds between bucket swaps (4.9.8's ``printTPSInterval``)."""


class StoreStatsService:
    """Put/get timings of one store. Fed from the event loop and the flush thread's
    callbacks; the counters are plain integers (a lost update only skews a figure)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.put_entire_time_max = 0
        self.get_entire_time_max = 0
        self.put_failed_times = 0
        self.put_times_total = 0
        """Messages appended (``putMessageTimesTotal``: every put, the broker's own too)."""
        self.put_size_total = 0
        self._distribute = [0] * len(DISTRIBUTE_LABELS)
        self._last_distribute: list[int] | None = None
        self._fine = [0] * (len(_FINE_BOUNDS) + 1)
        self._last_fine = [0] * (len(_FINE_BOUNDS) + 1)
        self._last_roll = clock()

    # -- feeding ------------------------------------------------------------------------
    def on_appended(self, msgs: int, size: int) -> None:
        """An append of ``msgs`` messages, ``size`` bytes succeeded (CommitLog's count)."""
        self.put_times_total += msgs
        self.put_size_total += size

    def on_put(self, elapsed_ms: int, ok: bool) -> None:
        """One append took ``elapsed_ms`` (``setPutMessageEntireTimeMax``)."""
        self._fine[bisect.bisect_left(_FINE_BOUNDS, elapsed_ms)] += 1
        coarse = bisect.bisect_right(_DISTRIBUTE_BOUNDS, elapsed_ms) + 1
        self._distribute[0 if elapsed_ms <= 0 else coarse] += 1
        if elapsed_ms > self.put_entire_time_max:
            self.put_entire_time_max = elapsed_ms
        if not ok:
            self.put_failed_times += 1

    def on_get(self, elapsed_ms: int) -> None:
        if elapsed_ms > self.get_entire_time_max:
            self.get_entire_time_max = elapsed_ms

    def sample(self) -> None:
        """Swap the buckets once :data:`ROLL_INTERVAL` has passed (call every second)."""
        now = self._clock()
        if now - self._last_roll < ROLL_INTERVAL:
            return
        self._last_roll = now
        self._last_distribute, self._distribute = self._distribute, [0] * len(DISTRIBUTE_LABELS)
        self._last_fine, self._fine = self._fine, [0] * (len(_FINE_BOUNDS) + 1)

    # -- reading ------------------------------------------------------------------------
    def put_latency(self, px: float) -> float:
        """``findPutMessageEntireTimePX``: the ``px`` quantile of the last minute's puts
        in ms, interpolated linearly inside its bucket (0 when there were none)."""
        counts = self._last_fine
        index = int(sum(counts) * px)
        passed = 0
        for i, count in enumerate(counts):
            if index <= passed + count:
                upper = _FINE_BOUNDS[i] if i < len(_FINE_BOUNDS) else (1 << 63) - 1
                lower = _FINE_BOUNDS[i - 1] if i > 0 else 0
                return lower + ((upper - lower) * (index - passed) / count if count else 0.0)
            passed += count
        return 0.0

    def distribute_time(self) -> str:
        """``putMessageDistributeTime``: ``"[<=0ms]:3 [0~10ms]:1 ... "`` (trailing space)
        for the last complete minute, ``"null"`` before one has passed."""
        last = self._last_distribute
        if last is None:
            return "null"
        return "".join(f"{label}:{n} " for label, n in zip(DISTRIBUTE_LABELS, last, strict=True))

    def runtime_info(self) -> dict[str, str]:
        return {
            "putMessageEntireTimeMax": str(self.put_entire_time_max),
            "putMessageFailedTimes": str(self.put_failed_times),
            "putMessageDistributeTime": self.distribute_time(),
            "getMessageEntireTimeMax": str(self.get_entire_time_max),
            "dispatchMaxBuffer": "0",  # 4.9.8 declares it but never sets it
            "putLatency99": f"{self.put_latency(0.99):.2f}",
            "putLatency999": f"{self.put_latency(0.999):.2f}",
        }


class StoreTiming:
    """The store's observer (:class:`~mqcore.store.observer.StoreObserver`): times
    appends and reads into ``stats`` where 4.9.8's DefaultMessageStore times them, around
    the append (until its group commit under SYNC_FLUSH) and around each read."""

    __slots__ = ("stats",)

    def __init__(self, stats: StoreStatsService) -> None:
        self.stats = stats

    def on_put(self, result: PutResult, started: float) -> None:
        if result.status in _NOT_TIMED:
            return
        stats = self.stats
        if result.ok:
            stats.on_appended(result.msg_count, result.wrote_bytes)
        future = result.flush_future
        if future is None:
            stats.on_put(int((time.monotonic() - started) * 1000), result.ok)
        else:
            future.add_done_callback(
                lambda _f: stats.on_put(int((time.monotonic() - started) * 1000), result.ok)
            )

    def on_get(self, started: float) -> None:
        self.stats.on_get(int((time.monotonic() - started) * 1000))


def observe_store(store: MessageStore, stats: StoreStatsService) -> None:
    """Have ``store`` report its appends and reads to ``stats``."""
    store.observer = StoreTiming(stats)

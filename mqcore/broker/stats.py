"""`BrokerStatsManager`: in-memory put/get statistics (RocketMQ's BrokerStatsManager and
the store's StoreStatsService rolled into one).

The hot path (``on_put`` / ``on_get``, called once per send or pull) only adds integers
to two counter objects: the broker-wide one and the topic's (or ``topic@group``'s).
Rates come from snapshots a periodic :meth:`sample` (every second, driven by the
controller or by :meth:`run`) takes of every counter into a bounded ring, so reading a
rate is one subtraction and nothing is allocated per message.

What it answers:

* totals (messages, bytes, calls) broker-wide, per topic, per ``topic@group``;
* rates over the last 10 s / 60 s / 600 s broker-wide (``putTps`` in runtime info is
  ``"<10s> <60s> <600s>"`` as RocketMQ prints it; tools read the first number) and over
  up to 60 s per topic or group (``consumeTps`` of GET_CONSUME_STATS, the dashboard);
* "messages today / yesterday": totals at the last two local midnights
  (``msgPutTotalTodayMorning``, ``msgPutTotalYesterdayMorning``, ...);
* the store's put/get timings and failed puts (:mod:`mqcore.broker.store_stats`);
* per topic, how large the messages put are (``rocketmq_message_size``'s buckets).
"""

from __future__ import annotations

import asyncio
import bisect
import datetime
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from mqcore.broker.store_stats import StoreStatsService
from mqcore.common.aio import run_all, run_in_slices
from mqcore.metrics.names import MESSAGE_SIZE_BUCKETS

__all__ = ["BrokerStatsManager", "StatsItem", "StatsSnapshot"]

_GLOBAL_SAMPLES = 601  # 10 minutes of one-second samples, as StoreStatsService keeps
_KEY_SAMPLES = 61  # one minute per topic / group
_KEYS_PER_STEP = 256
"""Keys sampled between two chances to give the loop back (about 0.1 ms of work)."""


class StatsItem:
    """Counters of one key; ``samples`` holds ``(t, msgs, bytes, calls)`` snapshots."""

    __slots__ = ("bytes", "calls", "msgs", "samples")

    def __init__(self, max_samples: int = _KEY_SAMPLES) -> None:
        self.msgs = 0
        self.bytes = 0
        self.calls = 0
        self.samples: deque[tuple[float, int, int, int]] = deque(maxlen=max_samples)

    def add(self, msgs: int, size: int) -> None:
        """One call that moved ``msgs`` messages of ``size`` bytes in total."""
        self.msgs += msgs
        self.bytes += size
        self.calls += 1

    def sample(self, now: float) -> None:
        self.samples.append((now, self.msgs, self.bytes, self.calls))

    def rates(self, window: int) -> tuple[float, float, float]:
        """(msgs/s, bytes/s, calls/s) over the last ``window`` seconds of samples (or
        what there is of them, so a young broker still shows a rate)."""
        samples = self.samples
        if len(samples) < 2:
            return 0.0, 0.0, 0.0
        last = samples[-1]
        first = samples[max(0, len(samples) - 1 - window)]
        dt = last[0] - first[0]
        if dt <= 0:
            return 0.0, 0.0, 0.0
        return (last[1] - first[1]) / dt, (last[2] - first[2]) / dt, (last[3] - first[3]) / dt


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    """Totals and one-minute rates of one key, for admin answers and the dashboard."""

    key: str
    msgs: int
    bytes: int
    calls: int
    tps: float
    bytes_per_second: float


def _local_date(wall: float) -> datetime.date:
    return datetime.datetime.fromtimestamp(wall).date()


def java_double(value: float) -> str:
    """``String.valueOf(double)`` for the magnitudes these figures take: ``0.0``,
    ``123.5``; scientific (``1.0E7``) from 10^7 on, as Java writes it."""
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(float(value))
    mantissa, _, exponent = f"{value:.16e}".partition("e")
    digits = repr(float(mantissa))
    return f"{digits}E{int(exponent)}"


def _fmt(value: float) -> str:
    return repr(round(value, 2))


class BrokerStatsManager:
    """Put/get statistics of one broker. Single-threaded (the event loop), as the
    processors that feed it."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._clock = clock
        self._wall = wall_clock
        self.put_total = StatsItem(_GLOBAL_SAMPLES)
        self.get_total = StatsItem(_GLOBAL_SAMPLES)
        self.get_found = 0
        """Pulls that returned messages (``getFoundTps`` is derived from samples)."""
        self._get_found_samples: deque[tuple[float, int]] = deque(maxlen=_GLOBAL_SAMPLES)
        self.topic_put: dict[str, StatsItem] = {}
        self.group_get: dict[str, StatsItem] = {}
        """Keyed ``topic@group`` as RocketMQ's GROUP_GET_NUMS."""
        self.put_sizes: dict[str, list[int]] = {}
        """Per topic, puts by average message size: one count per bucket of
        :data:`~mqcore.metrics.names.MESSAGE_SIZE_BUCKETS` and one above them, then the
        sum of the sizes (RocketMQ 5 records ``wroteBytes / msgNum`` once per put)."""
        self.boot_wall_ms = int(self._wall() * 1000)
        self._today = _local_date(self._wall())
        self.put_today_morning = 0
        self.get_today_morning = 0
        self.put_yesterday_morning = 0
        self.get_yesterday_morning = 0
        self.store_stats = StoreStatsService(clock)
        self.store_put = StatsItem(_GLOBAL_SAMPLES)
        """Every append to the store (``putTps``, ``putMessageTimesTotal``), where
        ``put_total`` counts client sends only (``msgPutTotal*``), as 4.9.8 splits them."""
        self.sample()

    # -- hot path -----------------------------------------------------------------------

    def on_put(self, topic: str, msgs: int, size: int) -> None:
        """``msgs`` messages of ``size`` bytes in total were stored to ``topic``."""
        item = self.topic_put.get(topic)
        if item is None:
            item = self.topic_put[topic] = StatsItem()
        item.add(msgs, size)
        self.put_total.add(msgs, size)
        sizes = self.put_sizes.get(topic)
        if sizes is None:
            sizes = self.put_sizes[topic] = [0] * (len(MESSAGE_SIZE_BUCKETS) + 2)
        average = size // msgs if msgs > 1 else size
        sizes[bisect.bisect_left(MESSAGE_SIZE_BUCKETS, average)] += 1
        sizes[-1] += average

    def on_get(self, group: str, topic: str, msgs: int, size: int) -> None:
        """A pull of ``group`` on ``topic`` returned ``msgs`` messages, ``size`` bytes
        (call it with 0 for a pull that found nothing: it counts as a get call)."""
        key = f"{topic}@{group}"
        item = self.group_get.get(key)
        if item is None:
            item = self.group_get[key] = StatsItem()
        item.add(msgs, size)
        self.get_total.add(msgs, size)
        if msgs:
            self.get_found += 1

    # -- sampling -----------------------------------------------------------------------

    def sample(self) -> None:
        """Snapshot every counter (call once a second) and roll the day totals at local
        midnight, at once."""
        run_all(self._sample_steps())

    async def sample_in_slices(self) -> None:
        """:meth:`sample` a slice at a time: with 10,000 topics and groups one sample is
        ~10 ms of the loop, every second; this way a request waits at most a slice."""
        await run_in_slices(self._sample_steps())

    def _sample_steps(self) -> Iterator[None]:
        """The sample, yielding between runs of keys. Each key's snapshot carries the time
        it was taken, so rates stay exact when a sample is spread over a few slices."""
        now = self._clock()
        store = self.store_stats
        store.sample()
        self.store_put.msgs, self.store_put.bytes = store.put_times_total, store.put_size_total
        self.store_put.sample(now)
        self.put_total.sample(now)
        self.get_total.sample(now)
        self._get_found_samples.append((now, self.get_found))
        for table in (self.topic_put, self.group_get):
            for n, item in enumerate(list(table.values()), 1):
                item.sample(now)
                if n % _KEYS_PER_STEP == 0:
                    yield
                    now = self._clock()
        today = _local_date(self._wall())
        if today != self._today:
            self._today = today
            self.put_yesterday_morning = self.put_today_morning
            self.get_yesterday_morning = self.get_today_morning
            self.put_today_morning = self.put_total.msgs
            self.get_today_morning = self.get_total.msgs

    async def run(self, interval: float = 1.0) -> None:
        """Sample every ``interval`` seconds until cancelled."""
        while True:
            await asyncio.sleep(interval)
            self.sample()

    def remove_topic(self, topic: str) -> None:
        """Forget a deleted topic's statistics (and its groups')."""
        self.topic_put.pop(topic, None)
        self.put_sizes.pop(topic, None)
        prefix = f"{topic}@"
        for key in [k for k in self.group_get if k.startswith(prefix)]:
            del self.group_get[key]

    def remove_group(self, group: str) -> None:
        suffix = f"@{group}"
        for key in [k for k in self.group_get if k.endswith(suffix)]:
            del self.group_get[key]

    # -- reads --------------------------------------------------------------------------

    def put_tps(self, window: int = 10) -> float:
        """Messages appended to the store per second (4.9.8's ``putTps``)."""
        return self.store_put.rates(window)[0]

    def get_transferred_tps(self, window: int = 10) -> float:
        """Messages handed to consumers per second."""
        return self.get_total.rates(window)[0]

    def get_total_tps(self, window: int = 10) -> float:
        """Pull calls per second."""
        return self.get_total.rates(window)[2]

    def get_found_tps(self, window: int = 10) -> float:
        samples = self._get_found_samples
        if len(samples) < 2:
            return 0.0
        last, first = samples[-1], samples[max(0, len(samples) - 1 - window)]
        dt = last[0] - first[0]
        return (last[1] - first[1]) / dt if dt > 0 else 0.0

    def topic_put_snapshot(self, topic: str) -> StatsSnapshot:
        return self._snapshot(topic, self.topic_put.get(topic))

    def group_get_snapshot(self, group: str, topic: str) -> StatsSnapshot:
        key = f"{topic}@{group}"
        return self._snapshot(key, self.group_get.get(key))

    def group_get_tps(self, group: str, topic: str, window: int = 60) -> float:
        """Messages/s ``group`` pulled from ``topic`` (GET_CONSUME_STATS ``consumeTps``)."""
        item = self.group_get.get(f"{topic}@{group}")
        return item.rates(window)[0] if item is not None else 0.0

    def topic_snapshots(self) -> Iterator[StatsSnapshot]:
        for key, item in list(self.topic_put.items()):
            yield self._snapshot(key, item)

    def group_snapshots(self) -> Iterator[StatsSnapshot]:
        """Per ``topic@group`` get statistics."""
        for key, item in list(self.group_get.items()):
            yield self._snapshot(key, item)

    @staticmethod
    def _snapshot(key: str, item: StatsItem | None) -> StatsSnapshot:
        if item is None:
            return StatsSnapshot(key, 0, 0, 0, 0.0, 0.0)
        tps, bps, _ = item.rates(60)
        return StatsSnapshot(key, item.msgs, item.bytes, item.calls, tps, bps)

    def runtime_info(self) -> dict[str, str]:
        """The statistics keys of GET_BROKER_RUNTIME_INFO, as RocketMQ spells them."""
        put, get = self.put_total, self.get_total
        windows = (10, 60, 600)
        store = self.store_stats
        times = store.put_times_total or 1  # 4.9.8 shows 1 before the first put (a divisor)
        return {
            "msgPutTotalTodayNow": str(put.msgs),
            "msgGetTotalTodayNow": str(get.msgs),
            "msgPutTotalTodayMorning": str(self.put_today_morning),
            "msgGetTotalTodayMorning": str(self.get_today_morning),
            "msgPutTotalYesterdayMorning": str(self.put_yesterday_morning),
            "msgGetTotalYesterdayMorning": str(self.get_yesterday_morning),
            "putTps": " ".join(_fmt(self.put_tps(w)) for w in windows),
            "getTransferedTps": " ".join(_fmt(self.get_transferred_tps(w)) for w in windows),
            "getTotalTps": " ".join(_fmt(self.get_total_tps(w)) for w in windows),
            "getFoundTps": " ".join(_fmt(self.get_found_tps(w)) for w in windows),
            "getMissTps": " ".join(
                _fmt(max(0.0, self.get_total_tps(w) - self.get_found_tps(w))) for w in windows
            ),
            "putMessageTimesTotal": str(times),
            "putMessageSizeTotal": str(store.put_size_total),
            "putMessageAverageSize": java_double(store.put_size_total / times),
            "bootTimestamp": str(self.boot_wall_ms),
            **self.store_stats.runtime_info(),
        }

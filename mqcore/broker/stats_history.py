"""`StatsHistory`: the last hour and day of the broker's put/get counters, for
VIEW_BROKER_STATS_DATA (mqadmin statsAll, exportMetrics, the dashboard's charts).

RocketMQ's StatsItem keeps three rings per key: a minute (10 s samples), an hour
(10 min samples) and a day (hourly samples). The minute comes from
:class:`~mqcore.broker.stats.BrokerStatsManager`'s own one-second samples; this class adds
the two slower rings, sampled by :meth:`sample_hour_ring` (every 10 minutes) and
:meth:`sample_day_ring` (every hour). Each window's figures are the difference between
its oldest sample and the counters now: ``sum``, ``tps`` (sum per second) and ``avgpt``
(sum per call).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from mqcore.broker.stats import BrokerStatsManager, StatsItem

__all__ = ["STATS_NAMES", "StatsHistory", "WindowStats"]

MINUTE_SECONDS = 60
HOUR_SAMPLE_SECONDS = 600
DAY_SAMPLE_SECONDS = 3600
_HOUR_SAMPLES = 7  # 60 minutes of 10-minute samples, as RocketMQ's csListHour
_DAY_SAMPLES = 25  # 24 hours of hourly samples, as csListDay

STATS_NAMES: dict[str, tuple[str, int]] = {
    "TOPIC_PUT_NUMS": ("topic", 0),
    "TOPIC_PUT_SIZE": ("topic", 1),
    "GROUP_GET_NUMS": ("group", 0),
    "GROUP_GET_SIZE": ("group", 1),
    "BROKER_PUT_NUMS": ("broker-put", 0),
    "BROKER_GET_NUMS": ("broker-get", 0),
}
"""RocketMQ statistic name -> (counter family, 0 for messages or 1 for bytes). Keys are
the topic, ``topic@group``, or the cluster name for the broker-wide ones."""

_Sample = tuple[float, int, int, int]  # (time s, msgs, bytes, calls)


@dataclass(frozen=True, slots=True)
class WindowStats:
    sum: int
    tps: float
    avgpt: float


def _window(first: _Sample, last: _Sample, which: int) -> WindowStats:
    total = int(last[1 + which] - first[1 + which])
    dt = last[0] - first[0]
    calls = last[3] - first[3]
    return WindowStats(total, total / dt if dt > 0 else 0.0, total / calls if calls > 0 else 0.0)


def _minute(item: StatsItem, which: int, now: _Sample) -> WindowStats:
    """From the manager's own (one-second) samples: the oldest within 60 s of the last."""
    samples = item.samples
    if not samples:
        return _window(now, now, which)
    last = samples[-1]
    first = last
    for sample in reversed(samples):
        if sample[0] < last[0] - MINUTE_SECONDS:
            break
        first = sample
    return _window(first, last, which)


class StatsHistory:
    """Hour and day rings over a :class:`BrokerStatsManager`'s counters."""

    def __init__(
        self,
        stats: BrokerStatsManager,
        cluster_name: Callable[[], str],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stats = stats
        self.cluster_name = cluster_name
        self._clock = clock
        self._rings: dict[str, dict[tuple[str, str], deque[_Sample]]] = {"hour": {}, "day": {}}
        self._sampled_at: dict[str, float] = {}
        self.sample_hour_ring()
        self.sample_day_ring()

    def _items(self) -> dict[tuple[str, str], StatsItem]:
        out = {("topic", k): v for k, v in list(self.stats.topic_put.items())}
        out.update({("group", k): v for k, v in list(self.stats.group_get.items())})
        out[("broker-put", "")] = self.stats.put_total
        out[("broker-get", "")] = self.stats.get_total
        return out

    def _sample(self, window: str, size: int) -> None:
        now = self._clock()
        rings = self._rings[window]
        self._sampled_at[window] = now
        items = self._items()
        for gone in rings.keys() - items.keys():  # deleted topics and groups
            del rings[gone]
        for key, item in items.items():
            ring = rings.get(key)
            if ring is None:
                # a key born since the last sample started from zero
                ring = rings[key] = deque([(now, 0, 0, 0)] if rings else [], maxlen=size)
            ring.append((now, item.msgs, item.bytes, item.calls))

    def sample_hour_ring(self) -> None:
        self._sample("hour", _HOUR_SAMPLES)

    def sample_day_ring(self) -> None:
        self._sample("day", _DAY_SAMPLES)

    def lookup(self, name: str, key: str) -> tuple[WindowStats, WindowStats, WindowStats] | None:
        """(minute, hour, day) of statistic ``name`` for ``key``; None when there is no
        such statistic (an unknown name, a key never counted, another cluster name)."""
        spec = STATS_NAMES.get(name)
        if spec is None:
            return None
        family, which = spec
        if family.startswith("broker-"):
            if key != self.cluster_name():
                return None
            key = ""
        item = self._items().get((family, key))
        if item is None:
            return None
        now: _Sample = (self._clock(), item.msgs, item.bytes, item.calls)
        out = [_minute(item, which, now)]
        for window in ("hour", "day"):
            ring = self._rings[window].get((family, key))
            # a key born since the ring's last sample counted from zero
            first = ring[0] if ring else (self._sampled_at[window], 0, 0, 0)
            out.append(_window(first, now, which))
        return out[0], out[1], out[2]

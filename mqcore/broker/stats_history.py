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
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from mqcore.broker.stats import BrokerStatsManager, StatsItem
from mqcore.common.aio import run_all, run_in_slices

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
_FAMILIES = ("topic", "group", "broker-put", "broker-get")
_KEYS_PER_STEP = 256
"""Keys sampled between two chances to give the loop back."""


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
    """Hour and day rings over a :class:`BrokerStatsManager`'s counters.

    A ring sample touches every topic and ``topic@group`` (20,000 keys at 10,000 topics
    and groups, ~15 ms and the garbage collections it sets off): the broker takes it a
    slice at a time (:meth:`sample_hour_ring_in_slices`), tests at once."""

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
        self._rings: dict[str, dict[str, dict[str, deque[_Sample]]]] = {
            window: {family: {} for family in _FAMILIES} for window in ("hour", "day")
        }
        """window -> counter family -> key -> samples (no tuple key is built per sample)."""
        self._sampled_at: dict[str, float] = {}
        self.sample_hour_ring()
        self.sample_day_ring()

    def _family(self, family: str) -> dict[str, StatsItem]:
        """The live counters of one family by key (the broker-wide ones under "")."""
        if family == "topic":
            return self.stats.topic_put
        if family == "group":
            return self.stats.group_get
        return {"": self.stats.put_total if family == "broker-put" else self.stats.get_total}

    def _sample_steps(self, window: str, size: int) -> Iterator[None]:
        now = self._clock()
        first = window not in self._sampled_at
        self._sampled_at[window] = now
        for family, rings in self._rings[window].items():
            items = self._family(family)
            for gone in rings.keys() - items.keys():  # deleted topics and groups
                del rings[gone]
            yield
            # keys, not (key, item) pairs: 20,000 pairs alive for the whole sample would
            # outlive garbage collections and set off a full one (~100 ms at this size)
            for n, key in enumerate(list(items), 1):
                item = items.get(key)
                if item is None:
                    continue  # deleted meanwhile
                ring = rings.get(key)
                if ring is None:
                    # a key born since the last sample started from zero
                    ring = rings[key] = deque([] if first else [(now, 0, 0, 0)], maxlen=size)
                ring.append((now, item.msgs, item.bytes, item.calls))
                if n % _KEYS_PER_STEP == 0:
                    yield
                    now = self._clock()

    def sample_hour_ring(self) -> None:
        run_all(self._sample_steps("hour", _HOUR_SAMPLES))

    def sample_day_ring(self) -> None:
        run_all(self._sample_steps("day", _DAY_SAMPLES))

    async def sample_hour_ring_in_slices(self) -> None:
        await run_in_slices(self._sample_steps("hour", _HOUR_SAMPLES))

    async def sample_day_ring_in_slices(self) -> None:
        await run_in_slices(self._sample_steps("day", _DAY_SAMPLES))

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
        item = self._family(family).get(key)
        if item is None:
            return None
        now: _Sample = (self._clock(), item.msgs, item.bytes, item.calls)
        out = [_minute(item, which, now)]
        for window in ("hour", "day"):
            ring = self._rings[window][family].get(key)
            # a key born since the ring's last sample counted from zero
            first = ring[0] if ring else (self._sampled_at[window], 0, 0, 0)
            out.append(_window(first, now, which))
        return out[0], out[1], out[2]

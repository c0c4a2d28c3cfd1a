"""Latency-based fault avoidance for producers (RocketMQ's ``MQFaultStrategy``).

Every send records how long the broker took; a slow answer, or a failure (counted as
30 s), makes the broker "not available" for a while, and queue selection skips it until
then. The table maps a latency to a penalty exactly as RocketMQ 4.x does::

    latency >= 15000 ms -> 600 s      latency >= 1000 ms -> 60 s
    latency >=  3000 ms -> 180 s      latency >=  550 ms -> 30 s
    latency >=  2000 ms -> 120 s      below 550 ms       -> 0

When every broker is penalised the least bad one is still used (``pickOneAtLeast``), so
a topic on a single slow broker keeps working.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from mqcore.client.route import TopicPublishInfo
from mqcore.protocol.bodies import MessageQueue

__all__ = [
    "LATENCY_MAX",
    "NOT_AVAILABLE_DURATION",
    "FaultItem",
    "LatencyFaultTolerance",
    "MQFaultStrategy",
]

LATENCY_MAX = (50, 100, 550, 1000, 2000, 3000, 15000)
"""Latency levels, ms (``MQFaultStrategy.latencyMax``)."""
NOT_AVAILABLE_DURATION = (0, 0, 30000, 60000, 120000, 180000, 600000)
"""Penalty per level, ms (``MQFaultStrategy.notAvailableDuration``)."""
ISOLATION_LATENCY = 30000
"""A failed send counts as this latency (ms)."""


@dataclass(slots=True)
class FaultItem:
    name: str
    current_latency: int
    available_at: float
    """Clock time (seconds) from which the broker may be chosen again."""

    def available(self, now: float) -> bool:
        return now >= self.available_at


class LatencyFaultTolerance:
    """Per-broker penalties (``LatencyFaultToleranceImpl``); ``clock`` is injectable."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.items: dict[str, FaultItem] = {}
        self._worst = 0

    def update(self, name: str, latency_ms: int, not_available_ms: int) -> None:
        self.items[name] = FaultItem(name, latency_ms, self.clock() + not_available_ms / 1000)

    def is_available(self, name: str) -> bool:
        item = self.items.get(name)
        return item is None or item.available(self.clock())

    def remove(self, name: str) -> None:
        self.items.pop(name, None)

    def pick_one_at_least(self) -> str | None:
        """The least bad penalised broker, rotating among the better half."""
        if not self.items:
            return None
        now = self.clock()
        ranked = sorted(
            self.items.values(),
            key=lambda i: (not i.available(now), i.current_latency, i.available_at),
        )
        half = len(ranked) // 2
        if half <= 0:
            return ranked[0].name
        self._worst += 1
        return ranked[self._worst % half].name


class MQFaultStrategy:
    """Queue selection for sends, avoiding slow or failing brokers when ``enabled``.

    With ``enabled`` False it behaves like RocketMQ's default: plain round robin that only
    avoids the broker of the previous attempt on a retry.
    """

    def __init__(self, enabled: bool = True, clock: Callable[[], float] = time.monotonic):
        self.enabled = enabled
        self.tolerance = LatencyFaultTolerance(clock)

    @staticmethod
    def not_available_duration(latency_ms: int) -> int:
        for level, duration in zip(
            reversed(LATENCY_MAX), reversed(NOT_AVAILABLE_DURATION), strict=True
        ):
            if latency_ms >= level:
                return duration
        return 0

    def update_fault_item(self, broker_name: str, latency_ms: int, isolation: bool) -> None:
        """Record a send's outcome; ``isolation`` for a failure (counted as 30 s)."""
        if not self.enabled:
            return
        latency = ISOLATION_LATENCY if isolation else latency_ms
        self.tolerance.update(broker_name, latency_ms, self.not_available_duration(latency))

    def select_queue(self, info: TopicPublishInfo, last_broker: str | None = None) -> MessageQueue:
        if not self.enabled:
            return info.select_queue(last_broker)
        queues = info.queues
        n = len(queues)
        index = info.next_index()
        fallback: MessageQueue | None = None
        for i in range(n):
            mq = queues[(index + i) % n]
            if self.tolerance.is_available(mq.broker_name):
                if mq.broker_name != last_broker:
                    return mq
                fallback = fallback or mq
        if fallback is not None:
            return fallback
        broker = self.tolerance.pick_one_at_least()
        mine = [mq for mq in queues if mq.broker_name == broker]
        if mine:
            return mine[index % len(mine)]
        if broker is not None:
            self.tolerance.remove(broker)
        return info.select_queue(last_broker)

"""Per-topic pull and consume figures of one consumer (RocketMQ's ConsumerStatsManager).

What GET_CONSUMER_RUNNING_INFO reports as each topic's ConsumeStatus: pull round trips
(long polls included, as the Java client counts them) and messages pulled per second,
listener round trips and messages consumed or failed per second over the last minute, and
the messages that failed in the last hour. The consumers record once per pull and once
per listener call, never per message: one bucket per second and topic, the last hour of
them kept.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from mqcore.protocol.bodies.running_info import ConsumeStatus

__all__ = ["ConsumerStats"]

MINUTE = 60
HOUR = 3600


class _Bucket:
    """One second of one topic."""

    __slots__ = (
        "consume_rt",
        "consumed",
        "failed",
        "listener_calls",
        "pull_rt",
        "pulled",
        "pulls",
        "second",
    )

    def __init__(self, second: int) -> None:
        self.second = second
        self.pulls = 0
        self.pull_rt = 0.0
        self.pulled = 0
        self.listener_calls = 0
        self.consume_rt = 0.0
        self.consumed = 0
        self.failed = 0


class ConsumerStats:
    """The figures of one consumer, by topic; ``clock`` is seconds (monotonic)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()
        self._topics: dict[str, deque[_Bucket]] = {}

    def _bucket(self, topic: str) -> _Bucket:
        second = int(self._clock())
        buckets = self._topics.get(topic)
        if buckets is None:
            buckets = self._topics[topic] = deque()
        if not buckets or buckets[-1].second != second:
            buckets.append(_Bucket(second))
            while buckets[0].second <= second - HOUR:
                buckets.popleft()
        return buckets[-1]

    def pulled(self, topic: str, rt_ms: float, messages: int) -> None:
        """One pull of ``topic`` answered in ``rt_ms`` with ``messages``."""
        bucket = self._bucket(topic)
        bucket.pulls += 1
        bucket.pull_rt += rt_ms
        bucket.pulled += messages

    def consumed(self, topic: str, rt_ms: float, ok: int, failed: int) -> None:
        """One listener call on ``topic``: ``rt_ms`` long, ``ok`` and ``failed`` messages."""
        bucket = self._bucket(topic)
        bucket.listener_calls += 1
        bucket.consume_rt += rt_ms
        bucket.consumed += ok
        bucket.failed += failed

    def status(self, topic: str) -> ConsumeStatus:
        """``topic``'s ConsumeStatus now: rates over the last minute (or since the start,
        when that is shorter), failures over the last hour."""
        now = self._clock()
        minute_start, hour_start = int(now) - MINUTE, int(now) - HOUR
        window = max(1.0, min(float(MINUTE), now - self._started))
        pulls = pull_rt = pulled = calls = consume_rt = consumed = failed = failed_hour = 0.0
        for b in self._topics.get(topic, ()):
            if b.second <= hour_start:
                continue
            failed_hour += b.failed
            if b.second <= minute_start:
                continue
            pulls += b.pulls
            pull_rt += b.pull_rt
            pulled += b.pulled
            calls += b.listener_calls
            consume_rt += b.consume_rt
            consumed += b.consumed
            failed += b.failed
        return ConsumeStatus(
            pull_rt=pull_rt / pulls if pulls else 0.0,
            pull_tps=pulled / window,
            consume_rt=consume_rt / calls if calls else 0.0,
            consume_ok_tps=consumed / window,
            consume_failed_tps=failed / window,
            consume_failed_msgs=int(failed_hour),
        )

    def table(self, topics: list[str]) -> dict[str, ConsumeStatus]:
        """The status of each of ``topics`` (those subscribed, figures or not)."""
        return {topic: self.status(topic) for topic in topics}

"""`ClusterExporter`: the metrics of a whole cluster, mq or RocketMQ 4.x, read through
admin requests as rocketmq-exporter reads them, under the names and labels an mq (or
RocketMQ 5) broker serves itself (`mq exporter`).

Each poll asks the name server for the brokers, then every master at once: its runtime
info, config, topic and group tables, the consume stats of every group (one request),
each counted topic's queue ends and the store time of each lagging queue's next message
(a one-message peek as TOOLS_CONSUMER, which commits nothing), and each slave's commit
log end. What a broker did not answer is left out of that poll and counted in
``rocketmq_exporter_poll_errors_total``. Scrapes are served the last complete poll, so
a scrape never waits for the cluster. What the figures mean is in
:mod:`mqcore.client.exporter_figures`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from prometheus_client.core import Metric

from mqcore.client.exporter_figures import BrokerFigures, GroupLag, counted, render
from mqcore.errors import MQError
from mqcore.message.const import RETRY_GROUP_TOPIC_PREFIX
from mqcore.metrics import names as n
from mqcore.metrics.families import MetricSet
from mqcore.protocol.bodies import BrokerData, ConsumeStats, MessageQueue

if TYPE_CHECKING:
    from mqcore.client.admin import Admin

__all__ = ["ClusterExporter"]

log = logging.getLogger("mq.exporter")

T = TypeVar("T")
_CONCURRENT_REQUESTS = 16
"""Requests in flight per poll: a cluster of 10,000 topics is not asked all at once."""
_FAILED = (MQError, OSError, TimeoutError)


class ClusterExporter:
    """Polls the cluster ``admin`` reaches (:meth:`poll`, :meth:`run`); :meth:`collect`
    is a prometheus_client collector of the last poll, safe to call from any thread."""

    def __init__(self, admin: Admin, labels: Mapping[str, str] | None = None) -> None:
        self.admin = admin
        self.labels = dict(labels or {})
        """Labels added to every sample (``--label``, as ``metricsLabel``)."""
        self.families: list[Metric] = []
        """The last complete poll's families (replaced whole, never changed)."""
        self.polls = 0
        self.errors = 0
        self.last_poll_ms = 0.0
        self._limit = asyncio.Semaphore(_CONCURRENT_REQUESTS)

    # -- serving ----------------------------------------------------------------------------
    def collect(self) -> list[Metric]:
        own = MetricSet({n.NODE_TYPE: n.NODE_TYPE_EXPORTER, **self.labels})
        own.gauge(n.EXPORTER_POLL_LATENCY, "How long the last poll of the cluster took (ms)").add(
            self.last_poll_ms
        )
        own.counter(
            n.EXPORTER_POLL_ERRORS_TOTAL, "Requests of the polls that failed (left out)"
        ).add(self.errors)
        return [*self.families, *own]

    async def run(self, interval: float) -> None:
        """Poll every ``interval`` seconds until cancelled (the first poll is the
        caller's: :meth:`poll`)."""
        while True:
            await asyncio.sleep(interval)
            await self.poll()

    # -- polling ----------------------------------------------------------------------------
    async def poll(self) -> None:
        """Read the whole cluster once and make it the figures scrapes see."""
        started = time.monotonic()
        try:
            info = await self.admin.cluster_info()
        except _FAILED as exc:
            self.errors += 1
            log.warning("cluster info not read: %s", exc)
            return
        brokers = [
            (cluster, info.broker_addr_table[name])
            for cluster, names in sorted(info.cluster_addr_table.items())
            for name in sorted(names)
            if name in info.broker_addr_table
        ]
        figures = await asyncio.gather(*(self._broker(c, data) for c, data in brokers))
        metrics = MetricSet({n.NODE_TYPE: n.NODE_TYPE_BROKER, **self.labels})
        render([f for f in figures if f is not None], metrics, int(time.time() * 1000))
        self.families = list(metrics)
        self.polls += 1
        self.last_poll_ms = (time.monotonic() - started) * 1000

    async def _ask(self, what: str, call: Callable[[], Awaitable[T]]) -> T | None:
        """One request under the poll's concurrency limit; None (counted, logged) when it
        fails."""
        async with self._limit:
            try:
                return await call()
            except _FAILED as exc:
                self.errors += 1
                log.info("%s: %s", what, exc)
                return None

    async def _broker(self, cluster: str, data: BrokerData) -> BrokerFigures | None:
        master = data.master_addr()
        if master is None:
            return None
        a = self.admin
        figures = BrokerFigures(cluster, data.broker_name)
        runtime, config, topics, groups, consume = await asyncio.gather(
            self._ask(f"{master} runtime info", lambda: a.broker_runtime_info(master)),
            self._ask(f"{master} config", lambda: a.broker_config(master)),
            self._ask(f"{master} topics", lambda: a.broker_topic_configs(master)),
            self._ask(f"{master} groups", lambda: a.broker_subscription_groups(master)),
            self._ask(f"{master} consume stats", lambda: a.broker_consume_stats(master)),
        )
        figures.runtime, figures.config, figures.topics = runtime, config, topics
        figures.group_count = len(groups) if groups is not None else None
        ends, lags, slaves = await asyncio.gather(
            self._topic_ends(master, counted(topics or {})),
            self._lags(master, consume.consume_stats_list if consume is not None else []),
            self._slave_ends(data),
        )
        figures.topic_ends, figures.lags, figures.slave_ends = ends, lags, slaves
        return figures

    async def _topic_ends(self, addr: str, topics: list[str]) -> dict[str, int]:
        async def end(topic: str) -> int | None:
            table = await self._ask(
                f"{addr} stats of {topic}", lambda: self.admin.broker_topic_stats(addr, topic)
            )
            return sum(o.max_offset for o in table.values()) if table is not None else None

        found = await asyncio.gather(*(end(t) for t in topics))
        return {t: e for t, e in zip(topics, found, strict=True) if e is not None}

    async def _lags(
        self, addr: str, stats_list: list[dict[str, list[ConsumeStats]]]
    ) -> list[GroupLag]:
        """Per group and topic (retry topics left out): the lag summed over queues, the
        earliest store time of a lagging queue's next message, and what a POP group has
        in flight (mq brokers count it; RocketMQ 4.x ones say nothing: 0)."""
        rows: list[tuple[str, str, list[tuple[MessageQueue, int]], int, int]] = []
        for entry in stats_list:
            for group, per_topic in entry.items():
                by_topic: dict[str, list[tuple[MessageQueue, int]]] = {}
                totals: dict[str, int] = {}
                popped: dict[str, int] = {}
                for stats in per_topic:
                    for mq, wrapper in stats.offset_table.items():
                        if mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                            continue
                        behind = max(0, wrapper.broker_offset - wrapper.consumer_offset)
                        totals[mq.topic] = totals.get(mq.topic, 0) + behind
                        popped[mq.topic] = popped.get(mq.topic, 0) + (wrapper.pop_in_flight or 0)
                        if behind:
                            by_topic.setdefault(mq.topic, []).append((mq, wrapper.consumer_offset))
                rows += [
                    (group, t, by_topic.get(t, []), total, popped[t]) for t, total in totals.items()
                ]
        earliest = await asyncio.gather(
            *(self._earliest(addr, queues) for _, _, queues, _, _ in rows)
        )
        return [
            GroupLag(group, topic, total, first, inflight)
            for (group, topic, _, total, inflight), first in zip(rows, earliest, strict=True)
        ]

    async def _earliest(self, addr: str, queues: list[tuple[MessageQueue, int]]) -> int:
        """The earliest store time of the messages at ``queues``' offsets (0: none)."""

        async def stored(mq: MessageQueue, offset: int) -> int:
            found = await self._ask(
                f"{addr} peek {mq.topic}:{mq.queue_id}@{offset}",
                lambda: self.admin.peek(addr, mq.topic, mq.queue_id, offset, 1),
            )
            return found[0].store_timestamp if found else 0

        times = await asyncio.gather(*(stored(mq, offset) for mq, offset in queues))
        return min((t for t in times if t > 0), default=0)

    async def _slave_ends(self, data: BrokerData) -> dict[str, int]:
        slaves = {addr for broker_id, addr in data.broker_addrs.items() if broker_id != 0}

        async def end(addr: str) -> int | None:
            info = await self._ask(
                f"{addr} runtime info", lambda: self.admin.broker_runtime_info(addr)
            )
            try:
                return int(info["commitLogMaxOffset"]) if info is not None else None
            except (KeyError, ValueError):
                return None

        ordered = sorted(slaves)
        found = await asyncio.gather(*(end(a) for a in ordered))
        return {a: e for a, e in zip(ordered, found, strict=True) if e is not None}

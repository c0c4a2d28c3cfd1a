"""The broker's Prometheus metrics (``metricsExporterType=PROM``): :class:`BrokerMetrics`
reads them from the parts of a broker at each scrape, :func:`metrics_endpoint` builds
the HTTP endpoint the controller runs.

Every figure is one the broker keeps anyway, read when Prometheus asks: the put/get
counters of :class:`~mqcore.broker.stats.BrokerStatsManager` (RocketMQ 5 counts the same
events on its own counters), the topic and group tables, the client tables, committed
offsets against queue ends (:mod:`mqcore.broker.metrics_lag`), the store's offsets, the
schedule service's per-level progress, HA connections and the event loop's lag. The only
work added to the request path is the request latency histogram (one bisection per
answered request, :mod:`mqcore.metrics.rpc`) and a size bucket per put.

RocketMQ 5's ``enable*Metrics`` switches turn groups of families off, as there.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from mqcore.broker.metrics_lag import ConsumerLag, ConsumerLagCalculator
from mqcore.message.const import DLQ_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC
from mqcore.metrics import names as n
from mqcore.metrics.families import MetricSet, event_loop_families, schedule_families
from mqcore.metrics.http import LoopCollector, MetricsHttpServer
from mqcore.metrics.names import (
    MetricsExporterType,
    bool_label,
    counted_topic,
    delay_text,
    is_system_group,
    message_type,
    node_labels,
)
from mqcore.metrics.rpc import RpcLatency
from mqcore.store.cleanup import disk_used_ratio
from mqcore.store.metadata.topic import is_system_topic
from mqcore.store.store_config import BrokerRole

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext
    from mqcore.remoting import RemotingServer

__all__ = ["BrokerMetrics", "metrics_endpoint"]

_KEYS_PER_STEP = 64
"""Topics, groups or lag rows read between two chances to give the loop back (each
adds a few samples: ~1 ms)."""
_CONSUME_MODES = {"CONSUME_ACTIVELY": "pull", "CONSUME_PASSIVELY": "push", "CONSUME_POP": "pop"}
"""``ConsumeType.getTypeCN()`` in lower case, RocketMQ 5's ``consume_mode`` values."""


class BrokerMetrics:
    """The families of the broker ``ctx``; :meth:`steps` is one scrape."""

    def __init__(self, ctx: BrokerContext, rpc: RpcLatency | None = None) -> None:
        self.ctx = ctx
        self.rpc = rpc
        self.lag = ConsumerLagCalculator(ctx)
        config = ctx.config
        self.labels = node_labels(
            config.broker_cluster_name, n.NODE_TYPE_BROKER, config.broker_name, config.metrics_label
        )

    def steps(self, metrics: MetricSet) -> Iterator[None]:
        config = self.ctx.config
        if config.enable_stats_metrics:
            self._stats(metrics)
        if config.enable_request_metrics:
            yield from self._requests(metrics)
        if config.enable_connection_metrics:
            yield from self._connections(metrics)
        if config.enable_lag_and_dlq_metrics:
            yield from self._lag(metrics)
            yield
            self._dead_letters(metrics)
        yield
        if config.enable_remoting_metrics and self.rpc is not None:
            self.rpc.collect(metrics)
        yield
        if config.enable_message_store_metrics:
            self._storage(metrics)
            yield
            self._schedule(metrics)
            self._timer(metrics)
        self._ha(metrics)
        self._event_loop(metrics)

    # -- broker statistics --------------------------------------------------------------
    def _stats(self, metrics: MetricSet) -> None:
        ctx = self.ctx
        metrics.gauge(n.BROKER_PERMISSION, "Broker permission").add(ctx.config.broker_permission)
        metrics.gauge(n.TOPIC_NUMBER, "Active topic number").add(len(ctx.topic_configs.table))
        metrics.gauge(n.CONSUMER_GROUP_NUMBER, "Active subscription group number").add(
            len(ctx.groups.table)
        )

    def _requests(self, metrics: MetricSet) -> Iterator[None]:
        stats = self.ctx.stats
        topics = self.ctx.topic_configs.table
        in_labels = (n.TOPIC, n.MESSAGE_TYPE, n.IS_SYSTEM)
        messages_in = metrics.counter(
            n.MESSAGES_IN_TOTAL, "Total number of incoming messages", in_labels
        )
        bytes_in = metrics.counter(
            n.THROUGHPUT_IN_TOTAL, "Total traffic of incoming messages (bytes)", in_labels
        )
        sizes = metrics.histogram(
            n.MESSAGE_SIZE, "Incoming messages size (bytes)", n.MESSAGE_SIZE_BUCKETS, in_labels
        )
        for count, (topic, item) in enumerate(list(stats.topic_put.items()), 1):
            if counted_topic(topic):
                config = topics.get(topic)
                labels = (
                    topic,
                    message_type(topic, config is not None and config.order),
                    bool_label(is_system_topic(topic)),
                )
                messages_in.add(item.msgs, *labels)
                bytes_in.add(item.bytes, *labels)
                buckets = stats.put_sizes.get(topic)
                if buckets is not None:
                    sizes.add(buckets[:-1], buckets[-1], *labels)
            if count % _KEYS_PER_STEP == 0:
                yield
        out_labels = (n.TOPIC, n.CONSUMER_GROUP, n.IS_SYSTEM)
        messages_out = metrics.counter(
            n.MESSAGES_OUT_TOTAL, "Total number of outgoing messages", out_labels
        )
        bytes_out = metrics.counter(
            n.THROUGHPUT_OUT_TOTAL, "Total traffic of outgoing messages (bytes)", out_labels
        )
        for count, (key, item) in enumerate(list(stats.group_get.items()), 1):
            topic, _, group = key.partition("@")
            if counted_topic(topic):
                system = bool_label(is_system_topic(topic) or is_system_group(group))
                messages_out.add(item.msgs, topic, group, system)
                bytes_out.add(item.bytes, topic, group, system)
            if count % _KEYS_PER_STEP == 0:
                yield

    # -- clients ----------------------------------------------------------------------------
    def _connections(self, metrics: MetricSet) -> Iterator[None]:
        producers: Counter[tuple[str, str]] = Counter()
        for count, channels in enumerate(list(self.ctx.producers.groups.values()), 1):
            for info in list(channels.values()):
                producers[(info.language.lower(), n.version_desc(info.version))] += 1
            if count % _KEYS_PER_STEP == 0:
                yield
        family = metrics.gauge(
            n.PRODUCER_CONNECTIONS,
            "Producer connections",
            (n.LANGUAGE, n.VERSION, n.PROTOCOL_TYPE),
        )
        for (language, version), count in sorted(producers.items()):
            family.add(count, language, version, n.PROTOCOL_TYPE_REMOTING)
        consumers: Counter[tuple[str, str, str, str]] = Counter()
        groups = list(self.ctx.consumers.groups.items())
        for count, (group, group_info) in enumerate(groups, 1):
            mode = _CONSUME_MODES.get(group_info.consume_type, group_info.consume_type.lower())
            for info in list(group_info.channels.values()):
                consumers[(group, info.language.lower(), n.version_desc(info.version), mode)] += 1
            if count % _KEYS_PER_STEP == 0:
                yield
        family = metrics.gauge(
            n.CONSUMER_CONNECTIONS,
            "Consumer connections",
            (n.CONSUMER_GROUP, n.LANGUAGE, n.VERSION, n.CONSUME_MODE, n.PROTOCOL_TYPE, n.IS_SYSTEM),
        )
        for done, ((group, language, version, mode), count) in enumerate(
            sorted(consumers.items()), 1
        ):
            if done % _KEYS_PER_STEP == 0:
                yield
            family.add(
                count,
                group,
                language,
                version,
                mode,
                n.PROTOCOL_TYPE_REMOTING,
                bool_label(is_system_group(group)),
            )

    def _lag(self, metrics: MetricSet) -> Iterator[None]:
        """The ``rocketmq_consumer_*`` families. A slave's offsets are a copy of its
        master's: it reports no lag, so a sum over brokers counts each group once."""
        rows: list[ConsumerLag] = []
        if self.ctx.store_config.broker_role is not BrokerRole.SLAVE:
            yield from self.lag.calculate(rows)
        now = int(time.time() * 1000)
        labels = (n.CONSUMER_GROUP, n.TOPIC, n.IS_RETRY, n.IS_SYSTEM)
        lag = metrics.gauge(n.CONSUMER_LAG_MESSAGES, "Consumer lag messages", labels)
        latency = metrics.gauge(n.CONSUMER_LAG_LATENCY, "Consumer lag time (milliseconds)", labels)
        inflight = metrics.gauge(n.CONSUMER_INFLIGHT_MESSAGES, "Consumer inflight messages", labels)
        queueing = metrics.gauge(
            n.CONSUMER_QUEUEING_LATENCY, "Consumer queueing time (milliseconds)", labels
        )
        ready = metrics.gauge(n.CONSUMER_READY_MESSAGES, "Consumer ready messages", labels)
        for count, row in enumerate(rows, 1):
            if count % _KEYS_PER_STEP == 0:
                yield
            system = bool_label(is_system_topic(row.topic) or is_system_group(row.group))
            values = (row.group, row.topic, "false", system)
            waited = row.latency_ms(now)
            lag.add(row.lag + row.inflight, *values)
            latency.add(waited, *values)
            inflight.add(row.inflight, *values)  # POP only: a pull is committed (metrics_lag)
            queueing.add(waited, *values)
            ready.add(row.lag, *values)

    def _dead_letters(self, metrics: MetricSet) -> None:
        """By group: what the broker stored in each %DLQ% topic (RocketMQ 5 also labels
        the original topic, which the DLQ topic's counter does not keep)."""
        dlq = metrics.counter(
            n.SEND_TO_DLQ_MESSAGES_TOTAL,
            "Consumer send to DLQ messages",
            (n.CONSUMER_GROUP, n.IS_SYSTEM),
        )
        for topic, item in list(self.ctx.stats.topic_put.items()):
            if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
                group = topic[len(DLQ_GROUP_TOPIC_PREFIX) :]
                dlq.add(item.msgs, group, bool_label(is_system_group(group)))

    # -- the store --------------------------------------------------------------------------
    def _storage(self, metrics: MetricSet) -> None:
        ctx = self.ctx
        store, store_config = ctx.store, ctx.store_config
        local = tuple(n.STORAGE_LOCAL)
        where = tuple(n.STORAGE_LOCAL.values())
        try:
            usage = shutil.disk_usage(store_config.root)
        except OSError:
            usage = None
        if usage is not None and usage.total > 0:
            metrics.gauge(n.STORAGE_SIZE, "Broker storage size (bytes)", local).add(
                usage.total - usage.free, *where
            )
        commit_log = store.commit_log
        metrics.gauge(n.STORAGE_FLUSH_BEHIND_BYTES, "Broker flush behind bytes", local).add(
            max(0, commit_log.max_offset - commit_log.flushed_where), *where
        )
        metrics.gauge(n.STORAGE_DISPATCH_BEHIND_BYTES, "Broker dispatch behind bytes", local).add(
            store.dispatch_behind_bytes(), *where
        )
        earliest = self._earliest_message_ms()
        if earliest > 0:
            metrics.gauge(
                n.STORAGE_MESSAGE_RESERVE_TIME,
                "Broker message reserve time (milliseconds)",
                local,
            ).add(max(0, int(time.time() * 1000) - earliest), *where)
        ratio = metrics.gauge(
            n.STORAGE_DISK_RATIO,
            "Used share of the disk holding the store path (0..1; -1 unknown)",
            (*local, n.STORE_PATH),
        )
        ratio.add(disk_used_ratio(store_config.commit_log_path), *where, "commitlog")
        ratio.add(disk_used_ratio(store_config.consume_queue_path), *where, "consumequeue")

    def _earliest_message_ms(self) -> int:
        store = self.ctx.store
        if store.max_phy_offset <= store.min_phy_offset:
            return 0
        try:
            stored = store.get_store_time(store.min_phy_offset)
        except Exception:  # a file being deleted under us: no figure rather than an error
            return 0
        return stored or 0

    def _schedule(self, metrics: MetricSet) -> None:
        service = self.ctx.schedule_service
        labels = (n.DELAY_LEVEL, n.DELAY)
        waiting, overdue, delivered = schedule_families(metrics, labels)
        now = int(time.time() * 1000)
        for level, delay_ms in sorted(service.delay_table.items()):
            values = (str(level), delay_text(delay_ms))
            cq = self.ctx.store.consume_queue(SCHEDULE_TOPIC, level - 1)
            done = service.offsets.get(level)
            end = cq.max_offset if cq is not None else 0
            late = 0
            if cq is not None and done < end:
                entry = cq.entry(max(done, cq.min_offset))
                if entry is not None:  # the tags code of a delayed message is its due time
                    late = max(0, now - entry[2])
            waiting.add(max(0, end - done), *values)
            overdue.add(late, *values)
            delivered.add(done, *values)

    def _timer(self, metrics: MetricSet) -> None:
        """RocketMQ 5's timer gauges and counters (without their per-topic split)."""
        service = self.ctx.timer_service
        if service is None or not service.running:
            return
        for name, kind, doc, value in service.metric_values():
            family = metrics.counter if kind == "counter" else metrics.gauge
            family(name, doc).add(value)

    # -- replication and the loop --------------------------------------------------------
    def _ha(self, metrics: MetricSet) -> None:
        ctx = self.ctx
        if ctx.store_config.broker_role is BrokerRole.SLAVE:
            metrics.gauge(
                n.HA_MASTER_CONNECTED, "1 while this slave is connected to its master"
            ).add(1 if ctx.ha_client.connected else 0)
            return
        metrics.gauge(n.HA_SLAVE_CONNECTIONS, "Slaves connected to this master").add(
            ctx.ha.connection_count
        )
        behind = metrics.gauge(
            n.HA_SLAVE_BEHIND_BYTES,
            "Commit log bytes the slave has not acknowledged",
            (n.SLAVE,),
        )
        end = ctx.store.max_phy_offset
        for conn in sorted(ctx.ha.connections, key=lambda c: c.peer):
            if conn.ack_offset >= 0:
                behind.add(max(0, end - conn.ack_offset), conn.peer)

    def _event_loop(self, metrics: MetricSet) -> None:
        figures = self.ctx.loop_lag.figures()
        last, worst, stalls = event_loop_families(metrics)
        last.add(figures.last_ms)
        worst.add(figures.max_ms_last_minute)
        stalls.add(figures.stalls)


def metrics_endpoint(
    ctx: BrokerContext, servers: Sequence[RemotingServer]
) -> MetricsHttpServer | None:
    """The Prometheus endpoint of the broker ``ctx`` when ``metricsExporterType=PROM``
    (None otherwise), with its request latencies observed on ``servers``. Not bound
    yet. Raises ConfigError for a bad ``metricsLabel``."""
    config = ctx.config
    if config.metrics_exporter_type != MetricsExporterType.PROM:
        return None
    rpc = None
    if config.enable_remoting_metrics:
        rpc = RpcLatency()
        for server in servers:
            server.dispatcher.observer = rpc
    metrics = BrokerMetrics(ctx, rpc)
    host = config.metrics_prom_exporter_host or config.broker_ip1
    return MetricsHttpServer(
        host, config.metrics_prom_exporter_port, LoopCollector(metrics.steps, metrics.labels)
    )

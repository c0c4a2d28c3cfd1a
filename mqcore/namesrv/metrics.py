"""The name server's Prometheus metrics (``metricsExporterType=PROM`` in its config).

RocketMQ 5's name server exports none; mq's serves a small set under the broker's names
and labels, ``node_type="namesrv"`` and ``node_id`` its listen address: the brokers
alive per cluster (``rocketmq_broker_number``), the topics it routes
(``rocketmq_topic_number``), its request latencies (``rocketmq_rpc_latency``) and how
late its event loop runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mqcore.metrics import names as n
from mqcore.metrics.families import MetricSet, event_loop_families
from mqcore.metrics.http import LoopCollector, MetricsHttpServer
from mqcore.metrics.names import MetricsExporterType, parse_metrics_label
from mqcore.metrics.rpc import RpcLatency

if TYPE_CHECKING:
    from mqcore.common.loop_lag import LoopLagMonitor
    from mqcore.namesrv.config import NamesrvConfig
    from mqcore.namesrv.routeinfo import RouteInfoManager
    from mqcore.remoting import RemotingServer

__all__ = ["NamesrvMetrics", "metrics_endpoint"]


class NamesrvMetrics:
    """The families of one name server; :meth:`steps` is one scrape."""

    def __init__(
        self,
        routes: RouteInfoManager,
        loop_lag: LoopLagMonitor,
        rpc: RpcLatency | None,
    ) -> None:
        self.routes = routes
        self.loop_lag = loop_lag
        self.rpc = rpc

    def steps(self, metrics: MetricSet) -> Iterator[None]:
        info = self.routes.get_all_cluster_info()
        live = set(self.routes.live_broker_addrs())
        brokers = metrics.gauge(
            n.BROKER_NUMBER, "Brokers registered and alive, per cluster", (n.CLUSTER,)
        )
        for cluster, broker_names in sorted(info.cluster_addr_table.items()):
            alive = sum(
                1
                for name in broker_names
                if name in info.broker_addr_table
                for addr in info.broker_addr_table[name].broker_addrs.values()
                if addr in live
            )
            brokers.add(alive, cluster)
        yield
        metrics.gauge(n.TOPIC_NUMBER, "Topics with a route").add(
            len(self.routes.get_all_topic_list().topic_list)
        )
        if self.rpc is not None:
            self.rpc.collect(metrics)
        figures = self.loop_lag.figures()
        last, worst, stalls = event_loop_families(metrics)
        last.add(figures.last_ms)
        worst.add(figures.max_ms_last_minute)
        stalls.add(figures.stalls)


def metrics_endpoint(
    config: NamesrvConfig,
    routes: RouteInfoManager,
    loop_lag: LoopLagMonitor,
    server: RemotingServer,
) -> MetricsHttpServer | None:
    """The name server's Prometheus endpoint when ``metricsExporterType=PROM`` (None
    otherwise), timing the requests of ``server``; not bound yet. ``node_id`` is
    ``server``'s listen address (known once it listens)."""
    if config.metrics_exporter_type != MetricsExporterType.PROM:
        return None
    rpc = RpcLatency()
    server.dispatcher.observer = rpc
    metrics = NamesrvMetrics(routes, loop_lag, rpc)
    extra = parse_metrics_label(config.metrics_label)

    def labels() -> dict[str, str]:
        return {n.NODE_TYPE: n.NODE_TYPE_NAMESRV, n.NODE_ID: server.listen_address, **extra}

    host = config.metrics_prom_exporter_host or config.bind_address
    return MetricsHttpServer(
        host, config.metrics_prom_exporter_port, LoopCollector(metrics.steps, labels)
    )

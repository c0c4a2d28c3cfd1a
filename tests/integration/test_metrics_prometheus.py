"""A real Prometheus server scrapes a running `mq broker` process: the series it stores
say what the traffic did (messages in, out, lag), under RocketMQ 5's names."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqcore.client import Admin
from tests.support.cluster import Cluster, running
from tests.support.dashboard import load, queries, runnable
from tests.support.polling import until_sync
from tests.support.prometheus import prometheus_binary, query, running_prometheus

pytestmark = pytest.mark.timeout(120)

_METRICS_URL = re.compile(r"metrics=http://(\S+?)/metrics")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    prometheus_binary()  # before starting anything: skipped or failed here if missing
    with running(tmp_path, metricsExporterType="PROM", metricsPromExporterPort="0") as started:
        yield started


def metrics_target(cluster: Cluster) -> str:
    """The broker's metrics ``host:port``, as its listen line says."""
    line = cluster.broker_processes[0].stdout_lines[-1]
    found = _METRICS_URL.search(line)
    assert found, line
    return found.group(1)


async def commit(cluster: Cluster, group: str, topic: str, offset: int) -> None:
    async with Admin(cluster.namesrv) as admin:
        for mq in await admin.instance.subscribe_queues(topic, refresh=True):
            await admin.instance.api.update_consumer_offset(group, mq, offset, oneway=False)


def test_prometheus_stores_what_the_broker_did(cluster: Cluster, tmp_path: Path) -> None:
    cluster.ok("topic", "create", "PromT", "--queues", "1")
    asyncio.run(cluster.produce("PromT", 7))
    assert asyncio.run(cluster.consume("PromT", "prom-all", 7)) == 7
    asyncio.run(commit(cluster, "prom-part", "PromT", 3))  # an offline group, 4 behind

    with running_prometheus(tmp_path / "prometheus", [metrics_target(cluster)]) as prom:
        expected = {
            'up{job="mq"}': 1,
            'rocketmq_messages_in_total{topic="PromT",node_type="broker"}': 7,
            'rocketmq_messages_out_total{topic="PromT",consumer_group="prom-all"}': 7,
            'rocketmq_consumer_lag_messages{topic="PromT",consumer_group="prom-all"}': 0,
            'rocketmq_consumer_lag_messages{topic="PromT",consumer_group="prom-part"}': 4,
            'rocketmq_message_size_count{topic="PromT"}': 7,
        }
        seen: dict[str, object] = {}

        def stored() -> bool:
            for promql, want in expected.items():
                seen[promql] = got = query(prom, promql)
                if len(got) != 1 or got[0][1] != want:
                    return False
            return True

        until_sync(stored, 60, lambda: f"series as expected; last seen {seen}")
        labels = query(prom, 'rocketmq_messages_in_total{topic="PromT"}')[0][0]
        assert labels["cluster"] == "DefaultCluster" and labels["node_id"] == "broker-a"
        assert labels["message_type"] == "normal" and labels["is_system"] == "false"
        # stored in the same scrape: the sends' latencies, summed as a dashboard does
        sends = 'sum(rocketmq_rpc_latency_count{request_code="send_message_v2"})'
        assert query(prom, sends)[0][1] >= 7

        # every query of the Grafana dashboard is PromQL Prometheus runs; the panels of
        # what happened here show it once a rate has two scrapes to go on
        panels = queries(load())
        shown = {
            "Messages in / s by topic",
            "Lag (messages) by group",
            "Waiting per delay level",
            "Disk used",
            "Topics",
        }
        answers: dict[str, object] = {}

        def dashboard_shows() -> bool:
            for title, expr in panels:
                answers[title] = query(prom, runnable(expr))  # raises on a bad query
            return all(answers[title] for title in shown)

        until_sync(dashboard_shows, 60, lambda: f"dashboard panels: {answers}")

"""`ClusterExporter` against an in-process cluster of two brokers: the figures it polls
with admin requests carry the names and labels the brokers serve themselves."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from mqcore.broker.metrics import BrokerMetrics
from mqcore.client import Admin
from mqcore.client.exporter import ClusterExporter
from mqcore.client.producer import Producer, make_message
from mqcore.metrics.http import LoopCollector
from tests.support.inproc import LiveCluster
from tests.support.metrics import find, samples_of, value

pytestmark = [pytest.mark.timeout(60), pytest.mark.cluster(brokers=("broker-a", "broker-b"))]


@pytest.fixture
async def admin(cluster: LiveCluster) -> AsyncIterator[Admin]:
    async with Admin(cluster.addr) as a:
        yield a


async def test_a_poll_reads_both_brokers(cluster: LiveCluster, admin: Admin) -> None:
    await cluster.create_topic("ET", queues=2)
    async with Producer("exporter-producer", namesrv=cluster.addr) as producer:
        for i in range(12):
            await producer.send(make_message("ET", f"m{i}"))
    await admin.create_subscription_group("eg")
    behind = 0
    for broker in cluster.brokers.values():  # the group consumed one message per queue
        for queue_id in (0, 1):
            end = broker.store.get_max_offset_in_queue("ET", queue_id)
            if end:
                broker.offsets.commit("eg", "ET", queue_id, 1)
                behind += end - 1
    sent_at = int(time.time() * 1000)

    exporter = ClusterExporter(admin, {"env": "test"})
    await exporter.poll()
    assert exporter.polls == 1 and exporter.errors == 0
    samples = samples_of(exporter.collect())

    ins = find(samples, "rocketmq_messages_in_total", topic="ET", node_type="broker", env="test")
    assert sorted(s.labels["node_id"] for s in ins) == ["broker-a", "broker-b"]
    assert sum(s.value for s in ins) == 12
    assert {s.labels["cluster"] for s in ins} == {"DefaultCluster"}
    lags = find(samples, "rocketmq_consumer_lag_messages", consumer_group="eg", topic="ET")
    assert sum(s.value for s in lags) == behind > 0
    for row in find(samples, "rocketmq_consumer_lag_latency", consumer_group="eg", topic="ET"):
        assert 0 <= row.value <= int(time.time() * 1000) - sent_at + 60_000
    assert value(samples, "rocketmq_topic_number", node_id="broker-a") == len(
        cluster.brokers["broker-a"].topic_configs.table
    )
    assert value(samples, "rocketmq_storage_dispatch_behind_bytes", node_id="broker-b") == 0
    assert value(samples, "rocketmq_ha_slave_connections", node_id="broker-a") == 0
    assert value(samples, "rocketmq_exporter_poll_errors_total", node_type="exporter") == 0
    assert find(samples, "rocketmq_schedule_lag_messages", node_id="broker-a", delay="10s")

    # every name the exporter serves is one a broker serves itself
    own = samples_of(
        LoopCollector(BrokerMetrics(cluster.brokers["broker-a"].context).steps, {}).collect_now()
    )
    served = {s.name for s in own}
    polled = {s.name for s in samples if not s.name.startswith("rocketmq_exporter_")}
    assert polled <= served, polled - served


async def test_an_unreachable_name_server_is_an_error_not_a_crash() -> None:
    async with Admin("127.0.0.1:1", timeout=0.5) as admin:
        exporter = ClusterExporter(admin)
        await exporter.poll()
    assert exporter.polls == 0 and exporter.errors == 1
    names = {s.name for s in samples_of(exporter.collect())}
    assert names == {"rocketmq_exporter_poll_latency", "rocketmq_exporter_poll_errors_total"}

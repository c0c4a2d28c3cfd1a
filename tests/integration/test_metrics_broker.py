"""The broker's and the name server's Prometheus metrics, scraped over HTTP from
in-process servers: figures as the traffic made them, RocketMQ 5's names and labels."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prometheus_client.samples import Sample

from mqcore.broker.metrics import BrokerMetrics
from mqcore.client.lite_pull_consumer import LitePullConsumer
from mqcore.client.producer import Producer, make_message
from mqcore.client.rebalance import ConsumeFromWhere
from mqcore.errors import ConfigError
from mqcore.metrics.http import LoopCollector
from tests.support import poll_messages, until
from tests.support.inproc import LIVE_STORE, LiveCluster, broker_controller, running_ha_pair
from tests.support.metrics import find, parse, samples_of, scrape_text, value

METRICS = {
    "metrics_exporter_type": "PROM",
    "metrics_prom_exporter_port": 0,
    "metrics_label": "env:test",
}
pytestmark = [pytest.mark.timeout(60), pytest.mark.cluster(**METRICS)]


async def scrape(cluster: LiveCluster) -> list[Sample]:
    endpoint = cluster.broker.metrics
    assert endpoint is not None and endpoint.running
    return parse(await asyncio.to_thread(scrape_text, endpoint.url))


async def send(cluster: LiveCluster, topic: str, count: int, **kwargs: int) -> None:
    async with Producer("metrics-producer", namesrv=cluster.addr) as producer:
        for i in range(count):
            await producer.send(make_message(topic, f"m{i}" * 100, **kwargs))


async def test_traffic_and_lag_as_scraped(cluster: LiveCluster) -> None:
    await cluster.create_topic("MT", queues=2)
    await send(cluster, "MT", 10)
    consumer = LitePullConsumer(
        "g-all", namesrv=cluster.addr, consume_from_where=ConsumeFromWhere.FIRST, auto_commit=False
    )
    consumer.subscribe("MT")
    cluster.track(consumer)
    await consumer.start()
    assert len(await poll_messages(consumer, 10)) == 10
    await consumer.commit_sync()
    broker = cluster.broker
    for queue_id in (0, 1):  # a group that consumed all but 2 messages of each queue
        end = broker.store.get_max_offset_in_queue("MT", queue_id)
        broker.offsets.commit("g-half", "MT", queue_id, end - 2)

    samples = await scrape(cluster)
    common = {"cluster": "DefaultCluster", "node_type": "broker", "node_id": "broker-a"}
    topic = {"topic": "MT", "message_type": "normal", "is_system": "false", "env": "test"}
    assert value(samples, "rocketmq_messages_in_total", **common, **topic) == 10
    assert value(samples, "rocketmq_throughput_in_total", **topic) > 10 * 200
    assert value(samples, "rocketmq_message_size_count", **topic) == 10
    assert value(samples, "rocketmq_message_size_bucket", le="1024.0", **topic) == 10
    out = {"topic": "MT", "consumer_group": "g-all"}
    assert value(samples, "rocketmq_messages_out_total", **out) == 10
    assert value(samples, "rocketmq_consumer_lag_messages", **out, is_retry="false") == 0
    assert value(samples, "rocketmq_consumer_lag_latency", **out) == 0
    half = {"topic": "MT", "consumer_group": "g-half", "is_system": "false"}
    assert value(samples, "rocketmq_consumer_lag_messages", **half) == 4
    assert value(samples, "rocketmq_consumer_ready_messages", **half) == 4
    assert value(samples, "rocketmq_consumer_inflight_messages", **half) == 0
    assert value(samples, "rocketmq_consumer_lag_latency", **half) >= 0
    assert value(samples, "rocketmq_consumer_connections", consumer_group="g-all") == 1
    assert find(samples, "rocketmq_consumer_connections", consume_mode="pull", language="python")
    assert value(samples, "rocketmq_topic_number") == len(broker.topic_configs.table)
    assert value(samples, "rocketmq_consumer_group_number") == len(broker.groups.table)
    assert value(samples, "rocketmq_broker_permission") == 6
    sends = find(samples, "rocketmq_rpc_latency_count", request_code="send_message_v2")
    assert sum(s.value for s in sends) >= 10
    assert value(samples, "rocketmq_storage_dispatch_behind_bytes") == 0
    assert value(samples, "rocketmq_storage_message_reserve_time") >= 0
    assert value(samples, "rocketmq_ha_slave_connections") == 0
    assert value(samples, "rocketmq_event_loop_stalls_total") is not None


async def test_delayed_messages_wait_in_their_level(cluster: LiveCluster) -> None:
    await cluster.create_topic("Later", queues=1)
    await send(cluster, "Later", 3, delay_level=18)  # 2 h: still waiting when scraped
    samples = await scrape(cluster)
    level = {"delay_level": "18", "delay": "2h"}
    assert value(samples, "rocketmq_schedule_lag_messages", **level) == 3
    assert value(samples, "rocketmq_schedule_lag_latency", **level) == 0  # not due yet
    assert value(samples, "rocketmq_schedule_delivered_messages_total", **level) == 0
    delayed = {"topic": "SCHEDULE_TOPIC_XXXX", "message_type": "delay", "is_system": "true"}
    assert value(samples, "rocketmq_messages_in_total", **delayed) == 3
    assert value(samples, "rocketmq_messages_in_total", topic="Later") is None


async def test_an_offline_group_keeps_its_lag(cluster: LiveCluster) -> None:
    """RocketMQ 5 reports online groups only; a group whose consumers are gone is the
    one an alert is for, so committed offsets count too."""
    await cluster.create_topic("Off", queues=1)
    await send(cluster, "Off", 5)
    cluster.broker.offsets.commit("g-gone", "Off", 0, 1)
    collector = LoopCollector(BrokerMetrics(cluster.broker.context).steps, {})
    samples = samples_of(collector.collect_now())
    assert value(samples, "rocketmq_consumer_lag_messages", consumer_group="g-gone") == 4
    assert value(samples, "rocketmq_consumer_lag_latency", consumer_group="g-gone") >= 0


@pytest.mark.cluster(enable_lag_and_dlq_metrics=False, enable_remoting_metrics=False)
async def test_switches_leave_families_out(cluster: LiveCluster) -> None:
    samples = await scrape(cluster)
    assert not find(samples, "rocketmq_consumer_lag_messages")
    assert not find(samples, "rocketmq_rpc_latency_count")
    assert find(samples, "rocketmq_topic_number")


async def test_a_taken_metrics_port_fails_the_start_cleanly(
    cluster: LiveCluster, tmp_path: Path
) -> None:
    endpoint = cluster.broker.metrics
    assert endpoint is not None
    other = broker_controller(
        tmp_path / "other",
        cluster.addr,
        name="broker-z",
        store=LIVE_STORE,
        **{**METRICS, "metrics_prom_exporter_port": endpoint.port},
    )
    with pytest.raises(ConfigError, match=f"cannot serve metrics on 127.0.0.1:{endpoint.port}"):
        await other.start()
    assert not other.running
    assert await scrape(cluster)  # the first one still answers


async def test_the_name_server_counts_brokers_and_topics(tmp_path: Path) -> None:
    live = LiveCluster(tmp_path)
    from tests.support.inproc import namesrv_controller

    namesrv = namesrv_controller(
        tmp_path / "kv.json", metrics_exporter_type="PROM", metrics_prom_exporter_port=0
    )
    live.namesrv = namesrv
    await namesrv.start()
    try:
        await live.add_broker("broker-a")
        await live.create_topic("NT")
        assert namesrv.metrics is not None
        samples = parse(await asyncio.to_thread(scrape_text, namesrv.metrics.url))
        node = {"node_type": "namesrv", "node_id": namesrv.listen_address}
        assert value(samples, "rocketmq_broker_number", cluster="DefaultCluster", **node) == 1
        assert value(samples, "rocketmq_topic_number", **node) >= 2
        registers = find(samples, "rocketmq_rpc_latency_count", request_code="register_broker")
        assert sum(s.value for s in registers) >= 1
    finally:
        await live.stop()


async def test_ha_figures_of_a_master_and_its_slave(tmp_path: Path) -> None:
    async with running_ha_pair(tmp_path, **METRICS) as (_namesrv, master, slave):
        assert master.metrics is not None and slave.metrics is not None
        await until(lambda: master.ha.connection_count == 1, 15.0, "slave connected")

        async def slave_side() -> list[Sample]:
            assert slave.metrics is not None
            return parse(await asyncio.to_thread(scrape_text, slave.metrics.url))

        await until(
            lambda: any(c.ack_offset >= 0 for c in master.ha.connections), 15.0, "slave acked"
        )
        samples = parse(await asyncio.to_thread(scrape_text, master.metrics.url))
        assert value(samples, "rocketmq_ha_slave_connections") == 1
        behind = find(samples, "rocketmq_ha_slave_behind_bytes")
        assert len(behind) == 1 and behind[0].value >= 0
        on_slave = await slave_side()
        assert value(on_slave, "rocketmq_ha_master_connected") == 1
        assert not find(on_slave, "rocketmq_consumer_lag_messages")  # the master's to say

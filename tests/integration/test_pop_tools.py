"""The tools' side of POP against an in-process cluster: `mq consume --pop` against a
broker that does not serve POP (as RocketMQ 4.x) says to drop --pop, and the exporter
reports what a POP group has in flight."""

from __future__ import annotations

import asyncio

import pytest

from mqcli.commands.consume_pop import PopSpec, auto_decider, pop_consume
from mqcli.commands.consume_sink import Sink
from mqcore.client import Admin, Producer, SimpleConsumer, make_message
from mqcore.client.exporter import ClusterExporter
from mqcore.errors import MQBrokerError
from mqcore.protocol import RequestCode, ResponseCode
from mqcore.protocol.headers.pop import ConsumeInitMode
from tests.support.inproc import LiveCluster
from tests.support.metrics import samples_of, value

pytestmark = pytest.mark.cluster(topics={"Old": 1, "PX": 1})


async def test_a_broker_without_pop_gets_a_hint(cluster: LiveCluster) -> None:
    for server in cluster.broker.servers:  # what a 4.x broker answers to POP_MESSAGE
        server.dispatcher._processors.pop(RequestCode.POP_MESSAGE)
    sink = Sink("json", None, "utf-8", 1, show_result=False, quiet=True)
    spec = PopSpec("Old", "g-old", follow=False)
    with pytest.raises(MQBrokerError) as raised:
        await pop_consume(cluster.addr, spec, sink, asyncio.Event(), auto_decider(0.0))
    assert raised.value.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert raised.value.hint is not None and "drop --pop" in raised.value.hint


async def test_the_exporter_reports_a_pop_groups_messages_in_flight(cluster: LiveCluster) -> None:
    async with Producer("px-producer", namesrv=cluster.addr) as producer:
        for i in range(3):
            await producer.send(make_message("PX", f"m{i}"))
    consumer = SimpleConsumer("gx", cluster.addr, init_mode=ConsumeInitMode.MIN)
    consumer.subscribe("PX")
    cluster.track(consumer)
    await consumer.start()
    got = await consumer.receive(2, invisible_duration=3600, await_duration=0)
    assert len(got) == 2  # handed out, never acked
    async with Admin(cluster.addr) as admin:
        exporter = ClusterExporter(admin)
        await exporter.poll()
    samples = samples_of(exporter.collect())
    labels = {"consumer_group": "gx", "topic": "PX"}
    assert value(samples, "rocketmq_consumer_inflight_messages", **labels) == 2
    assert value(samples, "rocketmq_consumer_ready_messages", **labels) == 1
    assert value(samples, "rocketmq_consumer_lag_messages", **labels) == 3

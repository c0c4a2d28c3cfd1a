"""`mq exporter`'s poll against a RocketMQ 4.9.8 broker (the build at ~/rmq-real, or
$RMQ_HOME) registered at an mq name server: every admin request it makes is one 4.9.8
answers, and the figures are what was sent and consumed. Skipped where the Java build is
absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqcore.client import Admin, Producer, make_message
from mqcore.client.exporter import ClusterExporter
from mqcore.errors import MQBrokerError
from mqcore.protocol.bodies import MessageQueue
from tests.interop import test_java_registration as registration
from tests.support.inproc import running_namesrv
from tests.support.metrics import samples_of, value
from tests.support.polling import until
from tests.support.processes import restartable_broker_port

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(240)]

java_cp = registration.java_cp


async def runtime_info_ready(admin: Admin, addr: str) -> bool:
    try:
        await admin.broker_runtime_info(addr)
    except MQBrokerError:
        return False
    return True


async def test_the_exporter_reads_a_498_broker(tmp_path: Path, java_cp: str) -> None:
    port = restartable_broker_port()
    async with running_namesrv(tmp_path) as ns, Admin(ns.listen_address) as admin:
        conf = {
            "brokerName": "broker-j",
            "brokerIP1": "127.0.0.1",
            "listenPort": str(port),
            "namesrvAddr": ns.listen_address,
            "storePathRootDir": str(tmp_path / "jstore"),
            "storePathCommitLog": str(tmp_path / "jstore" / "commitlog"),
            "mappedFileSizeCommitLog": str(16 * 1024 * 1024),
        }
        main = "org.apache.rocketmq.broker.BrokerStartup"
        async with registration.java_server(
            java_cp, tmp_path / "jhome", main, conf, "boot success"
        ):
            await until(lambda: registration.routed(admin, "TBW102"), 30, "the broker's table")
            await admin.create_topic("JExp", queues=1)
            await until(lambda: registration.routed(admin, "JExp"), 30, "JExp routed")
            async with Producer("jexp-producer", namesrv=ns.listen_address) as producer:
                for i in range(6):
                    await producer.send(make_message("JExp", f"m{i}"))
            await admin.create_subscription_group("jexp-group")
            queue = MessageQueue("JExp", "broker-j", 0)
            await admin.instance.api.update_consumer_offset("jexp-group", queue, 2, oneway=False)

            broker = f"127.0.0.1:{port}"
            # 4.9.8 answers GET_BROKER_RUNTIME_INFO with an error until its statistics
            # took their first sample (LinkedList.getLast of an empty list)
            await until(lambda: runtime_info_ready(admin, broker), 30, "the runtime info")
            exporter = ClusterExporter(admin)
            await exporter.poll()
            samples = samples_of(exporter.collect())
    assert exporter.errors == 0
    node = {"cluster": "DefaultCluster", "node_id": "broker-j"}
    assert value(samples, "rocketmq_messages_in_total", topic="JExp", **node) == 6
    lag = {"consumer_group": "jexp-group", "topic": "JExp"}
    assert value(samples, "rocketmq_consumer_lag_messages", **lag) == 4
    assert value(samples, "rocketmq_consumer_lag_latency", **lag) >= 0
    assert value(samples, "rocketmq_storage_dispatch_behind_bytes", **node) is not None
    assert value(samples, "rocketmq_storage_disk_ratio", store_path="commitlog", **node) > 0
    assert value(samples, "rocketmq_broker_permission", **node) == 6
    assert value(samples, "rocketmq_event_loop_lag_latency") is None  # mq's own key only

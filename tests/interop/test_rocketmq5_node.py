"""The official RocketMQ 5 Node.js SDK (``rocketmq-client-nodejs``, gRPC by @grpc/grpc-js
rather than grpc's C core) runs its producer examples against mq's gRPC access point,
endpoint changed only (``rmq5_node.cjs``); mq's own consumer finds what it sent."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from interop_support import run_json_lines

from mqcore.client import ConsumeFromWhere, LitePullConsumer
from mqcore.common.javahash import java_string_hash
from mqcore.message import MessageExt
from mqcore.proxy.local import LocalAccessPoint
from mqcore.proxy.queue_select import consistent_hash
from tests.support import poll_messages
from tests.support.inproc import BROKER_NAME, LiveCluster

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

NODE_SCRIPT = Path(__file__).with_name("rmq5_node.cjs")
QUEUES = 4


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[LiveCluster, LocalAccessPoint]]:
    cluster = LiveCluster(tmp_path)
    async with cluster.running(BROKER_NAME):
        access_point = LocalAccessPoint(cluster.broker, 0)
        await access_point.start()
        try:
            yield cluster, access_point
        finally:
            await access_point.stop()


async def node(sdk_dir: Path, home: Path, *args: str) -> list[dict[str, str]]:
    home.mkdir(exist_ok=True)  # the SDK logs under ~/logs
    env = {"RMQ5_NODE_DIR": str(sdk_dir), "HOME": str(home)}
    return await run_json_lines(["node", str(NODE_SCRIPT)], *args, env=env, timeout=60)


async def read(cluster: LiveCluster, topic: str, count: int) -> dict[str, MessageExt]:
    consumer = LitePullConsumer(
        f"judge-{topic}", namesrv=cluster.addr, consume_from_where=ConsumeFromWhere.FIRST
    )
    consumer.subscribe(topic, "*")
    async with consumer:
        messages = await poll_messages(consumer, count, 20)
    return {m.properties["UNIQ_KEY"]: m for m in messages}


async def test_node_producer_example(
    served: tuple[LiveCluster, LocalAccessPoint], rmq5_node_dir: Path, tmp_path: Path
) -> None:
    cluster, access_point = served
    await cluster.create_topic("TopicTest", QUEUES)
    (receipt,) = await node(
        rmq5_node_dir, tmp_path / "home", "normal", access_point.address, "TopicTest"
    )
    stored = await read(cluster, "TopicTest", 1)
    msg = stored[receipt["messageId"]]
    assert msg.tags == "nodejs-demo" and str(msg.queue_offset) == receipt["offset"]
    assert json.loads(msg.body)["hello"] == "rocketmq-client-nodejs world 😄"
    assert msg.properties["PGROUP"] == "TopicTest"


async def test_node_fifo_producer_example(
    served: tuple[LiveCluster, LocalAccessPoint], rmq5_node_dir: Path, tmp_path: Path
) -> None:
    cluster, access_point = served
    await cluster.create_topic("FifoTopic", QUEUES)
    receipts = await node(
        rmq5_node_dir, tmp_path / "home", "fifo", access_point.address, "FifoTopic"
    )
    assert len(receipts) == 10
    stored = await read(cluster, "FifoTopic", 10)
    for group in ("Order-001", "Order-002", "Account-Alice"):
        sent = [r for r in receipts if r["messageGroup"] == group]
        in_store = [stored[r["messageId"]] for r in sent]
        assert [json.loads(m.body)["sequence"] for m in in_store] == [r["sequence"] for r in sent]
        assert {m.properties["__SHARDINGKEY"] for m in in_store} == {group}
        assert {m.queue_id for m in in_store} == {consistent_hash(java_string_hash(group), QUEUES)}
        offsets = [m.queue_offset for m in in_store]
        assert offsets == sorted(offsets)

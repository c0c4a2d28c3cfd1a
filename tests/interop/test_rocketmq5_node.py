"""The official RocketMQ 5 Node.js SDK (``rocketmq-client-nodejs``, gRPC by @grpc/grpc-js
rather than grpc's C core) runs its producer examples against mq's gRPC access point,
endpoint changed only (``rmq5_node.cjs``); mq's own consumer finds what it sent, and the
SDK's simple and push consumer examples receive and acknowledge it."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from interop_support import json_lines_process, run_json_lines

from mqcore.client import Admin, ConsumeFromWhere, LitePullConsumer
from mqcore.common.javahash import java_string_hash
from mqcore.common.metadata import SubscriptionGroupConfig
from mqcore.message import MessageExt
from mqcore.proxy.consumer import ReceiveLimits
from mqcore.proxy.local import LocalAccessPoint
from mqcore.proxy.queue_select import consistent_hash
from tests.support import poll_messages, until
from tests.support.inproc import BROKER_NAME, LiveCluster

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

NODE_SCRIPT = Path(__file__).with_name("rmq5_node.cjs")
QUEUES = 4


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[LiveCluster, LocalAccessPoint]]:
    """broker-a and its access point; receives are held at most 2 s (RocketMQ 5: 20 s), as
    the Node.js push consumer's shutdown waits for the receive it has in flight."""
    cluster = LiveCluster(tmp_path)
    async with cluster.running(BROKER_NAME):
        limits = ReceiveLimits(min_long_polling_ms=500, max_long_polling_ms=2000)
        access_point = LocalAccessPoint(cluster.broker, 0, receive_limits=limits)
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


async def test_node_producer_recalls_a_delay_message(
    served: tuple[LiveCluster, LocalAccessPoint], rmq5_node_dir: Path, tmp_path: Path
) -> None:
    """Producer.recallMessage with the send receipt's recall handle: answered with the
    message's id, and the message never delivered."""
    cluster, access_point = served
    cluster.broker.config.recall_message_enable = True  # RocketMQ 5's default is off
    await cluster.create_topic("RecallTopic", QUEUES)
    sent, recalled = await node(
        rmq5_node_dir, tmp_path / "home", "recall", access_point.address, "RecallTopic"
    )
    assert recalled["recalled"] == sent["messageId"]
    store = cluster.broker.store
    await until(lambda: time.time() * 1000 > sent["due"] + 1500, 10, "its time and more")
    assert [store.get_max_offset_in_queue("RecallTopic", q) for q in range(QUEUES)] == [0] * 4


async def test_node_simple_consumer_example(
    served: tuple[LiveCluster, LocalAccessPoint], rmq5_node_dir: Path, tmp_path: Path
) -> None:
    """SimpleConsumer.cjs: one receive gets what Producer.cjs sent (two runs), each acked;
    the broker then holds no checkpoint waiting for an ack."""
    cluster, access_point = served
    await cluster.create_topic("TopicTest", QUEUES)
    sent = [
        (await node(rmq5_node_dir, tmp_path / "home", "normal", access_point.address, "TopicTest"))[
            0
        ]["messageId"]
        for _ in range(2)
    ]
    lines = await node(
        rmq5_node_dir, tmp_path / "home", "simple", access_point.address, "TopicTest", "g-node"
    )
    assert sorted(line["acked"] for line in lines) == sorted(sent)
    assert {(line["tag"], line["deliveryAttempt"]) for line in lines} == {("nodejs-demo", 1)}
    revive = cluster.broker.pop.revive

    def settled() -> bool:
        revive.revive_once()
        return revive.pending_count == 0

    await until(settled, 10, "every checkpoint acknowledged")


async def asks_the_running_consumer(cluster: LiveCluster, group: str) -> None:
    """What an admin asks of a running consumer, through the broker, as the SDK answers
    it: its thread stacks (the Node.js SDK reports a placeholder, ``mock stack``); a
    message to consume directly (the SDK says NOT_IMPLEMENTED: a consume that threw)."""
    info = cluster.broker.consumers.get_group(group)
    assert info is not None
    (client_id,) = info.all_client_ids()
    async with Admin(namesrv=cluster.addr) as admin:
        running = await admin.consumer_running_info(group, client_id, jstack=True)
        assert running.jstack == "mock stack"
        store = cluster.broker.store
        msg_id = ""
        for queue_id in range(QUEUES):
            if store.get_max_offset_in_queue("FifoTopic", queue_id):
                offset = store.get_commit_log_offset_in_queue("FifoTopic", queue_id, 0)
                msg_id = store.look_message(offset).msg_id
                break
        result = await admin.consume_message_directly(
            cluster.broker.broker_addr, group, client_id, msg_id
        )
        assert result["consumeResult"] == "CR_THROW_EXCEPTION"
        assert "NOT_IMPLEMENTED" in result["remark"]


async def test_node_push_consumer_of_a_fifo_group(
    served: tuple[LiveCluster, LocalAccessPoint], rmq5_node_dir: Path, tmp_path: Path
) -> None:
    """PushConsumerQuickStart.ts in a FIFO group: the FIFO producer example's three
    message groups each consumed in sequence, every message acknowledged (the group's
    offsets moved past them)."""
    cluster, access_point = served
    await cluster.create_topic("FifoTopic", QUEUES)
    cluster.broker.groups.update(SubscriptionGroupConfig("g-fifo", consume_message_orderly=True))
    home = tmp_path / "home"
    home.mkdir()
    receipts = await node(rmq5_node_dir, home, "fifo", access_point.address, "FifoTopic")
    offsets = cluster.broker.offsets

    def committed() -> int:
        return sum(offsets.query("g-fifo", "FifoTopic", q) or 0 for q in range(QUEUES))

    env = {"RMQ5_NODE_DIR": str(rmq5_node_dir), "HOME": str(home)}
    async with json_lines_process(
        ["node", str(NODE_SCRIPT)], "push", access_point.address, "FifoTopic", "g-fifo", env=env
    ) as lines:
        await until(lambda: sum("consumed" in line for line in lines) >= 10, 30, lambda: lines)
        await until(lambda: committed() == 10, 10, committed)
        consumed = [line for line in lines if "consumed" in line]
        await asks_the_running_consumer(cluster, "g-fifo")
    assert len(consumed) == 10, consumed
    for group in ("Order-001", "Order-002", "Account-Alice"):
        sent = [r["messageId"] for r in receipts if r["messageGroup"] == group]
        assert [line["consumed"] for line in consumed if line["messageGroup"] == group] == sent

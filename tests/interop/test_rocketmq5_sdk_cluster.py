"""The judge of cluster mode: the official RocketMQ 5 Python SDK (``rmq5_clients.py``, in
its own virtualenv) runs the producer and simple consumer examples of
apache/rocketmq-clients against `mq proxy`'s access point in front of a name server and
two brokers, endpoint changed only. Each broker's store is read directly: every message is
accounted for, on both brokers, each FIFO group in the one queue RocketMQ 5's proxy hashes
it to among all the brokers' queues, in send order; transactions end at the broker holding
the half message, by the producer or by its checker when that broker's check-back asked.
The simple consumer example receives from both brokers and acknowledges every message
where it was popped. The Node.js SDK's FIFO example (gRPC by @grpc/grpc-js, not grpc's C
core) goes through the proxy too.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from interop_support import json_lines_process, no_check_backs, run_json_lines

from mqcore.common.javahash import java_string_hash
from mqcore.message import MessageExt
from mqcore.proxy.cluster import ClusterAccessPoint
from mqcore.proxy.config import ProxyConfig
from mqcore.proxy.consumer import ReceiveLimits
from mqcore.proxy.queue_select import consistent_hash
from tests.support import until
from tests.support.inproc import LiveCluster

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

SDK_SCRIPT = Path(__file__).with_name("rmq5_clients.py")
NODE_SCRIPT = Path(__file__).with_name("rmq5_node.cjs")
BROKERS = ("broker-a", "broker-b")
BODY = b"hello, rocketmq."
LIMITS = ReceiveLimits(min_long_polling_ms=1000, max_long_polling_ms=2000)


@dataclass
class Proxied:
    """The SDK against a ClusterAccessPoint in front of broker-a and broker-b."""

    cluster: LiveCluster
    proxy: ClusterAccessPoint
    python: Path
    home: Path

    async def run(self, *args: str) -> list[dict[str, Any]]:
        return await run_json_lines(
            [str(self.python), str(SDK_SCRIPT), args[0], self.proxy.address, *args[1:]],
            env={"HOME": str(self.home)},  # the SDK logs under ~/logs
            timeout=60,
        )

    def stored(self, topic: str, queues: int) -> dict[str, tuple[str, MessageExt]]:
        """Unique key -> (broker, message) of every message of ``topic`` in the stores."""
        out: dict[str, tuple[str, MessageExt]] = {}
        for name in BROKERS:
            store = self.cluster.brokers[name].store
            for queue_id in range(queues):
                for offset in range(store.get_max_offset_in_queue(topic, queue_id)):
                    phy = store.get_commit_log_offset_in_queue(topic, queue_id, offset)
                    msg = store.look_message(phy)
                    out[msg.properties["UNIQ_KEY"]] = (name, msg)
        return out

    async def wait_stored(
        self, topic: str, queues: int, ids: list[str]
    ) -> dict[str, tuple[str, MessageExt]]:
        await until(lambda: set(ids) <= set(self.stored(topic, queues)), 10, f"{topic} stored")
        return self.stored(topic, queues)


@pytest.fixture
async def proxied(tmp_path: Path, rmq5_python: Path) -> AsyncIterator[Proxied]:
    """A name server, broker-a and broker-b in process (check-backs every 300 ms for half
    messages older than 300 ms), the cluster proxy on a free port. Its receives poll at
    most 2 s: the SDK's simple consumer takes the route's queues in turn (four of each
    broker) while a receive pops the whole broker, so most receives find their broker
    emptied and wait out the long polling (20 s unless narrowed)."""
    cluster = LiveCluster(
        tmp_path, settings={"transaction_time_out": 300, "transaction_check_interval": 300}
    )
    home = tmp_path / "home"
    home.mkdir()
    async with cluster.running(*BROKERS):
        config = ProxyConfig(
            namesrv_addr=cluster.addr, grpc_server_port=0, bind_address="127.0.0.1"
        )
        proxy = ClusterAccessPoint(config, receive_limits=LIMITS)
        await proxy.start()
        try:
            yield Proxied(cluster, proxy, rmq5_python, home)
        finally:
            await proxy.stop()


async def test_normal_producer_example_lands_on_both_brokers(proxied: Proxied) -> None:
    await proxied.cluster.create_topic("topic", 4)
    receipts = await proxied.run("normal", "topic")
    ids = [r["message_id"] for r in receipts]
    assert len(set(ids)) == 10
    stored = await proxied.wait_stored("topic", 4, ids)
    assert set(stored) == set(ids), "every message accounted for, none twice"
    assert {broker for broker, _ in stored.values()} == set(BROKERS)
    for receipt in receipts:
        _, msg = stored[receipt["message_id"]]
        assert msg.body == BODY and msg.tags == "tag" and msg.keys == ["keys"]
        assert msg.properties["key"] == "value" and msg.properties["PGROUP"] == "topic"
        assert msg.queue_offset == receipt["offset"]  # the receipt names its own broker's


async def test_fifo_producer_example_keeps_each_group_in_one_queue_in_order(
    proxied: Proxied,
) -> None:
    """Six queues a broker: the groups "1" and "2" hash to queues 3 and 10 of the twelve,
    broker-a's 3 and broker-b's 4."""
    await proxied.cluster.create_topic("fifo-test-topic", 6)
    receipts = await proxied.run("fifo", "fifo-test-topic")
    assert len(receipts) == 9
    stored = await proxied.wait_stored("fifo-test-topic", 6, [r["message_id"] for r in receipts])
    assert len(stored) == 9
    every_queue = [(b, q) for b in BROKERS for q in range(6)]
    places = set()
    for group in ("1", "2"):
        sent = [r["message_id"] for i, r in enumerate(receipts, 1) if str(2 - i % 2) == group]
        in_store = [stored[message_id] for message_id in sent]
        (place,) = {(broker, msg.queue_id) for broker, msg in in_store}
        assert place == every_queue[consistent_hash(java_string_hash(group), 12)]
        assert {msg.properties["__SHARDINGKEY"] for _, msg in in_store} == {group}
        offsets = [msg.queue_offset for _, msg in in_store]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
        places.add(place)
    assert {broker for broker, _ in places} == set(BROKERS)


async def test_simple_consumer_example_receives_and_acks_on_both_brokers(
    proxied: Proxied,
) -> None:
    """simple_consumer_example.py as it is: its receives go to each route queue's broker in
    turn, its acks to the broker each receipt handle names; every message sent to either
    broker is received once and acknowledged there (no checkpoint left on either)."""
    await proxied.cluster.create_topic("topic", 4)
    sent = [r["message_id"] for r in await proxied.run("normal", "topic")]
    stored = await proxied.wait_stored("topic", 4, sent)
    assert {broker for broker, _ in stored.values()} == set(BROKERS)
    lines = await proxied.run("simple", "topic", "consumer-group", "10")
    received = [line["received"] for line in lines if "received" in line]
    acked = [line["acked"] for line in lines if "acked" in line]
    assert sorted(received) == sorted(sent), "each message received once"
    assert sorted(acked) == sorted(sent), "and acknowledged"

    def settled() -> bool:
        """Neither broker's revive service holds a checkpoint: every pop was acked."""
        pending = 0
        for name in BROKERS:
            revive = proxied.cluster.brokers[name].pop.revive
            revive.revive_once()
            pending += revive.pending_count
        return pending == 0

    await until(settled, 10, "every checkpoint acknowledged on both brokers")


async def test_transaction_producer_example_commit(proxied: Proxied) -> None:
    no_check_backs(proxied.cluster)  # the producer commits itself, however slowly
    await proxied.cluster.create_topic("tx-commit", 4)
    (receipt,) = await proxied.run("transaction", "tx-commit", "commit")
    stored = await proxied.wait_stored("tx-commit", 4, [receipt["message_id"]])
    _, msg = stored[receipt["message_id"]]
    assert msg.tags == "rocketmq-send-transaction-message" and msg.body == BODY


async def test_a_check_back_reaches_the_sdk_s_checker_through_the_proxy(proxied: Proxied) -> None:
    """The producer leaves its half message open; the check-back of the broker holding it
    arrives on the proxy's connection and reaches the SDK's checker, which commits (both
    brokers' check-backs: tests/integration/test_grpc_cluster_proxy.py)."""
    await proxied.cluster.create_topic("tx-check", 4)
    command = [str(proxied.python), str(SDK_SCRIPT)]
    async with json_lines_process(
        command,
        *("transaction", proxied.proxy.address, "tx-check", "check"),
        env={"HOME": str(proxied.home)},
        stop_timeout=20,
    ) as lines:
        await until(lambda: any("checked" in line for line in lines), 30, lambda: lines)
        receipt = next(line for line in lines if "message_id" in line)
        checked = next(line for line in lines if "checked" in line)
        assert checked["checked"] == receipt["message_id"]
        await proxied.wait_stored("tx-check", 4, [receipt["message_id"]])


async def test_node_fifo_producer_example_through_the_proxy(
    proxied: Proxied, rmq5_node_dir: Path
) -> None:
    await proxied.cluster.create_topic("FifoTopic", 4)
    env = {"RMQ5_NODE_DIR": str(rmq5_node_dir), "HOME": str(proxied.home)}
    receipts = await run_json_lines(
        ["node", str(NODE_SCRIPT)], "fifo", proxied.proxy.address, "FifoTopic", env=env, timeout=60
    )
    assert len(receipts) == 10
    stored = await proxied.wait_stored("FifoTopic", 4, [r["messageId"] for r in receipts])
    every_queue = [(b, q) for b in BROKERS for q in range(4)]
    for group in ("Order-001", "Order-002", "Account-Alice"):
        sent = [r for r in receipts if r["messageGroup"] == group]
        in_store = [stored[r["messageId"]] for r in sent]
        (place,) = {(broker, msg.queue_id) for broker, msg in in_store}
        assert place == every_queue[consistent_hash(java_string_hash(group), 8)]
        assert [json.loads(m.body)["sequence"] for _, m in in_store] == [
            r["sequence"] for r in sent
        ]
        offsets = [m.queue_offset for _, m in in_store]
        assert offsets == sorted(offsets)

"""The judge of the gRPC access point: the official RocketMQ 5 Python SDK
(``rocketmq-python-client``, in its own virtualenv) runs the producer examples of
apache/rocketmq-clients against mq, endpoint and credentials changed only
(``rmq5_clients.py``), and mq's own consumer checks what the store holds: topic, tag,
keys, properties, ids and queue offsets as the SDK was told, FIFO groups in one queue each
in send order, a delayed message's delivery time, a transaction's message once committed
by the producer or by its checker when the broker's check-back asked.

Then the SDK's consumer examples receive what its producers sent: the simple consumer
and the push consumer get every message and acknowledge it (the broker's revive service
then holds no checkpoint), a message not acknowledged comes again after its invisible
time, and a FIFO group's push consumer gets each message group in send order.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from interop_support import json_lines_process, no_check_backs, run_json_lines

from mqcore.client import Admin, ConsumeFromWhere, LitePullConsumer
from mqcore.common.javahash import java_string_hash
from mqcore.common.metadata import SubscriptionGroupConfig
from mqcore.message import MessageExt
from mqcore.proxy.consumer import ReceiveLimits
from mqcore.proxy.local import LocalAccessPoint
from mqcore.proxy.queue_select import consistent_hash
from tests.support import poll_messages, until
from tests.support.acl import USER, AclCluster, max_offset
from tests.support.inproc import BROKER_NAME, LiveCluster
from tests.support.processes import start_broker, start_namesrv

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

SDK_SCRIPT = Path(__file__).with_name("rmq5_clients.py")
QUEUES = 4
BODY = b"hello, rocketmq."


@dataclass
class Rmq5:
    """The SDK (its venv's ``python``) against an in-process broker-a's access point."""

    cluster: LiveCluster
    access_point: LocalAccessPoint
    python: Path
    home: Path

    @property
    def endpoint(self) -> str:
        return self.access_point.address

    @property
    def env(self) -> dict[str, str]:
        return {"HOME": str(self.home)}  # the SDK logs under ~/logs

    async def run(self, *args: str) -> list[dict[str, Any]]:
        return await run_json_lines(
            [str(self.python), str(SDK_SCRIPT)], *args, env=self.env, timeout=60
        )

    async def read(self, topic: str, count: int) -> list[MessageExt]:
        """``count`` messages of ``topic`` from its first offset, by mq's own consumer."""
        consumer = LitePullConsumer(
            f"judge-{topic}",
            namesrv=self.cluster.addr,
            consume_from_where=ConsumeFromWhere.FIRST,
        )
        consumer.subscribe(topic, "*")
        async with consumer:
            return await poll_messages(consumer, count, 20)


@pytest.fixture
async def rmq5(tmp_path: Path, rmq5_python: Path) -> AsyncIterator[Rmq5]:
    """A name server and broker-a in process, its gRPC access point on a free port; the
    transaction check-back every 300 ms for half messages older than 300 ms, the revive
    service every 100 ms, receives allowed invisible times from 1 s (RocketMQ 5: 10 s)."""
    settings = {
        "transaction_time_out": 300,
        "transaction_check_interval": 300,
        "revive_interval": 100,
    }
    cluster = LiveCluster(tmp_path, settings=settings)
    home = tmp_path / "home"
    home.mkdir()
    async with cluster.running(BROKER_NAME):
        limits = ReceiveLimits(min_invisible_ms=1000)
        access_point = LocalAccessPoint(cluster.broker, 0, receive_limits=limits)
        await access_point.start()
        try:
            yield Rmq5(cluster, access_point, rmq5_python, home)
        finally:
            await access_point.stop()


def by_offset(messages: list[MessageExt]) -> dict[str, MessageExt]:
    return {m.properties["UNIQ_KEY"]: m for m in messages}


async def test_normal_producer_example(rmq5: Rmq5) -> None:
    await rmq5.cluster.create_topic("topic", QUEUES)
    receipts = await rmq5.run("normal", rmq5.endpoint, "topic")
    assert len(receipts) == 10
    ids = [r["message_id"] for r in receipts]
    assert len(set(ids)) == 10, "every send is a message of its own id"
    stored = by_offset(await rmq5.read("topic", 10))
    assert set(stored) == set(ids)
    for receipt in receipts:
        msg = stored[receipt["message_id"]]
        assert msg.topic == "topic" and msg.body == BODY
        assert msg.tags == "tag" and msg.keys == ["keys"]
        assert msg.properties["key"] == "value"
        assert msg.properties["PGROUP"] == "topic"  # a 5.x producer's group is its topic
        assert msg.queue_offset == receipt["offset"]
        assert "__SHARDINGKEY" not in msg.properties and "TRAN_MSG" not in msg.properties
    queues = {m.queue_id for m in stored.values()}
    assert len(queues) > 1, "normal messages are spread over the queues"


async def test_fifo_producer_example(rmq5: Rmq5) -> None:
    await rmq5.cluster.create_topic("fifo-test-topic", QUEUES)
    receipts = await rmq5.run("fifo", rmq5.endpoint, "fifo-test-topic")
    assert len(receipts) == 9
    stored = by_offset(await rmq5.read("fifo-test-topic", 9))
    assert set(stored) == {r["message_id"] for r in receipts}
    for group in ("1", "2"):
        sent = [r["message_id"] for i, r in enumerate(receipts, 1) if str(2 - i % 2) == group]
        in_store = [stored[message_id] for message_id in sent]
        assert {m.properties["__SHARDINGKEY"] for m in in_store} == {group}
        assert {m.tags for m in in_store} == {"rocketmq-send-fifo-message"}
        # one queue per group, the one RocketMQ 5's proxy hashes it to; in send order
        expected_queue = consistent_hash(java_string_hash(group), QUEUES)
        assert {m.queue_id for m in in_store} == {expected_queue}
        offsets = [m.queue_offset for m in in_store]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)


async def test_delay_producer_example(rmq5: Rmq5) -> None:
    """The delivery time travels as TIMER_DELIVER_MS (the timer store holds the message
    until then; without one it is delivered at once)."""
    await rmq5.cluster.create_topic("delay-topic", QUEUES)
    receipt, due = await rmq5.run("delay", rmq5.endpoint, "delay-topic", "1")
    (msg,) = await rmq5.read("delay-topic", 1)
    assert msg.properties["UNIQ_KEY"] == receipt["message_id"]
    assert msg.properties["TIMER_DELIVER_MS"] == str(due["delivery_timestamp"] * 1000)
    assert msg.tags == "rocketmq-send-delay-message" and msg.body == BODY


async def test_a_delay_message_recalled_by_the_sdk_never_arrives(rmq5: Rmq5) -> None:
    """Producer.recall_message with the receipt's recall handle (RocketMQ 5's
    RecallMessage): answered with the message's id, and the message is not delivered."""
    for broker in rmq5.cluster.brokers.values():
        broker.config.recall_message_enable = True  # RocketMQ 5's default is off
    await rmq5.cluster.create_topic("recall-topic", QUEUES)
    receipt, due, recalled = await rmq5.run("delay", rmq5.endpoint, "recall-topic", "2", "recall")
    assert recalled["recalled"] == receipt["message_id"]
    store = rmq5.cluster.broker.store
    deliver_ms = due["delivery_timestamp"] * 1000
    await until(lambda: time.time() * 1000 > deliver_ms + 1500, 10, "its time and more")
    assert [store.get_max_offset_in_queue("recall-topic", q) for q in range(QUEUES)] == [0] * 4


async def test_transaction_producer_example_commit(rmq5: Rmq5) -> None:
    no_check_backs(rmq5.cluster)
    await rmq5.cluster.create_topic("tx-commit", QUEUES)
    (receipt,) = await rmq5.run("transaction", rmq5.endpoint, "tx-commit", "commit")
    assert receipt["transaction_id"] == receipt["message_id"]
    (msg,) = await rmq5.read("tx-commit", 1)
    assert msg.properties["UNIQ_KEY"] == receipt["message_id"]
    assert msg.tags == "rocketmq-send-transaction-message" and msg.body == BODY
    assert msg.properties["TRAN_MSG"] == "true"  # kept, as a 4.x broker keeps it


async def test_transaction_producer_example_rollback(rmq5: Rmq5) -> None:
    """A rolled-back half message never reaches its topic (the op queue records it)."""
    no_check_backs(rmq5.cluster)
    await rmq5.cluster.create_topic("tx-rollback", QUEUES)
    (receipt,) = await rmq5.run("transaction", rmq5.endpoint, "tx-rollback", "rollback")
    broker = rmq5.cluster.broker

    def ended() -> bool:
        return broker.store.get_max_offset_in_queue("RMQ_SYS_TRANS_OP_HALF_TOPIC", 0) > 0

    await until(ended, 10, "the rollback recorded in the op queue")
    topic_offsets = [broker.store.get_max_offset_in_queue("tx-rollback", q) for q in range(QUEUES)]
    assert topic_offsets == [0] * QUEUES, receipt


async def test_transaction_check_from_server(rmq5: Rmq5) -> None:
    """check_from_server: the producer leaves the half message open; the broker's
    check-back reaches its checker through the Telemetry stream, the checker commits."""
    await rmq5.cluster.create_topic("tx-check", QUEUES)
    command = [str(rmq5.python), str(SDK_SCRIPT)]
    async with json_lines_process(
        command, "transaction", rmq5.endpoint, "tx-check", "check", env=rmq5.env, stop_timeout=20
    ) as lines:
        await until(lambda: any("checked" in line for line in lines), 30, lambda: lines)
        receipt = next(line for line in lines if "message_id" in line)
        checked = next(line for line in lines if "checked" in line)
        assert checked["checked"] == receipt["message_id"]
        assert checked["tag"] == "rocketmq-send-transaction-message"
        assert checked["topic"] == "tx-check"
        (msg,) = await rmq5.read("tx-check", 1)
        assert msg.properties["UNIQ_KEY"] == receipt["message_id"] and msg.body == BODY


GRPC_LINE = re.compile(r"grpc=(\S+):(\d+)")


async def test_normal_producer_against_mq_broker(tmp_path: Path, rmq5_python: Path) -> None:
    """`mq broker` with grpcServerPort in its broker.conf serves the SDK as `mq up` does:
    the producer example's messages reach the store, the simple consumer example gets
    and acknowledges them (RocketMQ 5's receive limits, the broker's own revive)."""
    namesrv = start_namesrv(tmp_path / "ns")
    try:
        broker = start_broker(tmp_path / "broker", namesrv.addr, grpcServerPort="0")
        try:
            match = GRPC_LINE.search("".join(broker.stdout_lines))
            assert match, broker.stdout_lines
            endpoint = f"{match.group(1)}:{match.group(2)}"
            async with Admin(namesrv=namesrv.addr) as admin:
                await until(admin.master_addrs, 15, "broker-a registered")
                await admin.create_topic("topic", queues=QUEUES)
            home = tmp_path / "home"
            home.mkdir()
            receipts = await run_json_lines(
                [str(rmq5_python), str(SDK_SCRIPT)], "normal", endpoint, "topic",
                env={"HOME": str(home)}, timeout=60,
            )  # fmt: skip
            consumer = LitePullConsumer(
                "judge-process",
                namesrv=namesrv.addr,
                consume_from_where=ConsumeFromWhere.FIRST,
            )
            consumer.subscribe("topic", "tag")
            async with consumer:
                stored = by_offset(await poll_messages(consumer, 10, 20))
            assert set(stored) == {r["message_id"] for r in receipts} and len(stored) == 10
            # and simple_consumer_example.py, as it is, receives and acks every one
            lines = await run_json_lines(
                [str(rmq5_python), str(SDK_SCRIPT)], "simple", endpoint, "topic",
                "consumer-group", "10", env={"HOME": str(home)}, timeout=60,
            )  # fmt: skip
            acked = sorted(line["acked"] for line in lines if "acked" in line)
            assert acked == sorted(r["message_id"] for r in receipts)
        finally:
            assert broker.stop() == 0
    finally:
        namesrv.stop()


async def run_sdk(python: Path, home: Path, *args: str, **env: str) -> tuple[int, str]:
    """The SDK script's exit code and what it said: its output, then its log (where the
    SDK writes the status a call was refused with), whatever the outcome."""
    home.mkdir()
    proc = await asyncio.create_subprocess_exec(
        str(python), str(SDK_SCRIPT), *args,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, env={**os.environ, "HOME": str(home), **env},
    )  # fmt: skip
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    log = home / "logs" / "rocketmq_python" / "rocketmq_client.log"
    said = out.decode(errors="replace") + (log.read_text(errors="replace") if log.exists() else "")
    return proc.returncode, said


async def test_credentials_are_checked_against_plain_acl(
    tmp_path: Path, rmq5_python: Path, acl_cluster: AclCluster
) -> None:
    """With aclEnable, the SDK's signed calls pass by the account's rights in
    plain_acl.yml: PUB on topic ``both`` sends; a topic denied, a topic without PUB, no
    signature and a wrong secret are refused UNAUTHORIZED (40100)."""
    access_point = LocalAccessPoint(acl_cluster.broker, 0)
    await access_point.start()
    keys = {"MQ_ACCESS_KEY": USER.access_key, "MQ_SECRET_KEY": USER.secret_key}
    runs = iter(range(10))

    async def sdk(topic: str, **env: str) -> tuple[int, str]:
        home = tmp_path / f"home{next(runs)}"
        return await run_sdk(rmq5_python, home, "normal", access_point.address, topic, **env)

    try:
        code, said = await sdk("both", **keys)
        assert code == 0, said
        assert max_offset(acl_cluster.broker, "both") == 10
        code, said = await sdk("denied", **keys)
        assert code != 0 and "40100, no ANY permission on topic=denied" in said, said
        code, said = await sdk("subOnly", **keys)  # routed (SUB will do), not sent
        assert code != 0 and "no PUB permission on topic=subOnly" in said, said
        code, said = await sdk("both", MQ_ACCESS_KEY="")
        assert code != 0 and "40100, no AccessKey in the request" in said, said
        code, said = await sdk("both", **{**keys, "MQ_SECRET_KEY": "not-the-secret"})
        assert code != 0 and "signature check failed for accessKey=userKey1" in said, said
        assert max_offset(acl_cluster.broker, "both") == 10
        assert max_offset(acl_cluster.broker, "subOnly") == 0
    finally:
        await access_point.stop()


# -- the consumer examples ------------------------------------------------------------------


@dataclass
class SdkLines:
    """What a running SDK script has printed so far, one dict a JSON line."""

    lines: list[dict[str, Any]]

    def said(self, key: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if key in line]


@asynccontextmanager
async def sdk_process(rmq5: Rmq5, *args: str) -> AsyncIterator[SdkLines]:
    """The SDK script running on while the block runs (a push consumer runs until its
    stdin closes, as the example runs until Enter)."""
    command = [str(rmq5.python), str(SDK_SCRIPT)]
    async with json_lines_process(command, *args, env=rmq5.env) as lines:
        yield SdkLines(lines)


def settled(rmq5: Rmq5) -> bool:
    """Every message popped has been acknowledged: the revive service holds no
    checkpoint (a message not acknowledged keeps its checkpoint until it is revived)."""
    revive = rmq5.cluster.broker.pop.revive
    revive.revive_once()
    return revive.pending_count == 0


async def test_simple_consumer_example_receives_and_acks_every_message(rmq5: Rmq5) -> None:
    """simple_consumer_example.py as it is (receive 32, invisible 15 s, ack each)."""
    await rmq5.cluster.create_topic("topic", QUEUES)
    sent = [r["message_id"] for r in await rmq5.run("normal", rmq5.endpoint, "topic")]
    lines = await rmq5.run("simple", rmq5.endpoint, "topic", "consumer-group", "10")
    received = [line for line in lines if "received" in line]
    acked = [line["acked"] for line in lines if "acked" in line]
    assert sorted(acked) == sorted(sent), "every message received once and acknowledged"
    for line in received:
        assert line["topic"] == "topic" and line["tag"] == "tag" and line["delivery_attempt"] == 1
        assert line["body"] == BODY.decode()
    await until(lambda: settled(rmq5), 10, "every checkpoint acknowledged")


async def test_a_message_not_acked_comes_back_to_the_simple_consumer(rmq5: Rmq5) -> None:
    """Invisible for 1 s and not acknowledged the first time: each message is received
    again (delivery attempt 2) and acknowledged then; none is lost."""
    await rmq5.cluster.create_topic("retried", QUEUES)
    sent = [r["message_id"] for r in await rmq5.run("normal", rmq5.endpoint, "retried")]
    lines = await rmq5.run(
        "simple", rmq5.endpoint, "retried", "retry-group", "10", "1", "skip-first"
    )
    received = [line for line in lines if "received" in line]
    firsts = [line["received"] for line in received if line["delivery_attempt"] == 1]
    seconds = [line["received"] for line in received if line["delivery_attempt"] == 2]
    trace = " ".join(f"{r['received'][-2:]}:{r['delivery_attempt']}" for r in received)
    assert sorted(firsts) == sorted(sent) and sorted(seconds) == sorted(sent), trace
    assert sorted(line["acked"] for line in lines if "acked" in line) == sorted(sent)
    await until(lambda: settled(rmq5), 10, "every checkpoint acknowledged")


async def test_push_consumer_example_consumes_every_message(rmq5: Rmq5) -> None:
    """push_consumer_example.py: the listener gets each message once and the SDK acks."""
    await rmq5.cluster.create_topic("topic", QUEUES)
    async with sdk_process(rmq5, "push", rmq5.endpoint, "topic", "consumer-group") as push:
        await until(lambda: push.said("started"), 30, lambda: push.lines)
        sent = [r["message_id"] for r in await rmq5.run("normal", rmq5.endpoint, "topic")]
        await until(lambda: len(push.said("consumed")) >= 10, 30, lambda: push.lines)
        await until(lambda: settled(rmq5), 10, "every checkpoint acknowledged")
    consumed = [line["consumed"] for line in push.said("consumed")]
    assert sorted(consumed) == sorted(sent), "each message consumed exactly once"


async def test_a_failed_push_consumption_is_delivered_again(rmq5: Rmq5) -> None:
    """The listener fails each message once: the SDK makes it visible again after its
    retry policy's delay (ChangeInvisibleDuration) and it comes back, attempt 2."""
    await rmq5.cluster.create_topic("nacked", QUEUES)
    args = ("push", rmq5.endpoint, "nacked", "nack-group", "fail-first")
    async with sdk_process(rmq5, *args) as push:
        await until(lambda: push.said("started"), 30, lambda: push.lines)
        sent = [r["message_id"] for r in await rmq5.run("normal", rmq5.endpoint, "nacked")]
        await until(lambda: len(push.said("consumed")) >= 10, 30, lambda: push.lines)
        await until(lambda: settled(rmq5), 10, "every checkpoint acknowledged")
    assert sorted(line["failed"] for line in push.said("failed")) == sorted(sent)
    consumed = push.said("consumed")
    assert sorted(line["consumed"] for line in consumed) == sorted(sent)
    assert {line["delivery_attempt"] for line in consumed} == {2}


async def test_fifo_push_consumer_gets_each_message_group_in_order(rmq5: Rmq5) -> None:
    """A FIFO group (consumeMessageOrderly): the push consumer is told so, and gets the
    FIFO producer example's groups "1" and "2" each in send order, even though its
    listener fails the first message once (the SDK retries it before the next of its
    group; a non-FIFO group would see the next ones first)."""
    await rmq5.cluster.create_topic("fifo-test-topic", QUEUES)
    rmq5.cluster.broker.groups.update(
        SubscriptionGroupConfig("fifo-group", consume_message_orderly=True)
    )
    receipts = await rmq5.run("fifo", rmq5.endpoint, "fifo-test-topic")
    args = ("push", rmq5.endpoint, "fifo-test-topic", "fifo-group", "fail-once")
    offsets = rmq5.cluster.broker.offsets

    def committed() -> int:
        return sum(offsets.query("fifo-group", "fifo-test-topic", q) or 0 for q in range(QUEUES))

    async with sdk_process(rmq5, *args) as push:
        await until(lambda: len(push.said("consumed")) >= 9, 30, lambda: push.lines)
        # every FIFO message acknowledged: the group's offsets moved past them
        await until(lambda: committed() == 9, 10, committed)
    consumed = push.said("consumed")
    assert len(consumed) == 9, consumed
    for group in ("1", "2"):
        sent = [r["message_id"] for i, r in enumerate(receipts, 1) if str(2 - i % 2) == group]
        got = [line["consumed"] for line in consumed if line["message_group"] == group]
        assert got == sent, f"message group {group} in send order"


async def test_a_consumer_s_credentials_are_checked_against_plain_acl(
    tmp_path: Path, rmq5_python: Path, acl_cluster: AclCluster
) -> None:
    """The simple consumer example with credentials: SUB on topic ``both`` and on its
    group lets it receive and ack; a group the account is denied is UNAUTHORIZED."""
    access_point = LocalAccessPoint(acl_cluster.broker, 0)
    await access_point.start()
    keys = {"MQ_ACCESS_KEY": USER.access_key, "MQ_SECRET_KEY": USER.secret_key}
    address = access_point.address
    try:
        code, said = await run_sdk(rmq5_python, tmp_path / "p", "normal", address, "both", **keys)
        assert code == 0, said
        code, said = await run_sdk(
            rmq5_python, tmp_path / "c", "simple", address, "both", "consumer-group", "10", **keys
        )
        assert code == 0, said
        assert said.count('"acked"') == 10, said
        code, said = await run_sdk(
            rmq5_python, tmp_path / "d", "simple", address, "both", "deniedGroup", "1", **keys
        )
        assert code != 0 and "40100" in said and "deniedGroup" in said, said[-3000:]
    finally:
        await access_point.stop()


async def test_a_fifo_message_failing_every_attempt_goes_to_the_dead_letter_queue(
    rmq5: Rmq5,
) -> None:
    """A FIFO group retrying once (retryMaxTimes 1: 2 attempts): the push consumer retries
    the message itself, then forwards it to ``%DLQ%<group>``
    (ForwardMessageToDeadLetterQueue) and goes on with the next one."""
    await rmq5.cluster.create_topic("fifo-dlq", QUEUES)
    rmq5.cluster.broker.groups.update(
        SubscriptionGroupConfig("dlq-group", retry_max_times=1, consume_message_orderly=True)
    )
    receipts = await rmq5.run("fifo", rmq5.endpoint, "fifo-dlq")
    store = rmq5.cluster.broker.store

    def dead() -> int:
        return store.get_max_offset_in_queue("%DLQ%dlq-group", 0)

    args = ("push", rmq5.endpoint, "fifo-dlq", "dlq-group", "fail-always")
    async with sdk_process(rmq5, *args) as push:
        await until(lambda: dead() == 9, 60, lambda: (dead(), push.lines[-3:]))
    in_dlq = []
    for offset in range(9):
        msg = store.look_message(store.get_commit_log_offset_in_queue("%DLQ%dlq-group", 0, offset))
        in_dlq.append(msg.properties["UNIQ_KEY"])
    assert sorted(in_dlq) == sorted(r["message_id"] for r in receipts)
    attempts = {}
    for line in push.said("failed"):
        attempts[line["failed"]] = attempts.get(line["failed"], 0) + 1
    assert set(attempts.values()) == {2}, attempts

"""The judge of the gRPC access point: the official RocketMQ 5 Python SDK
(``rocketmq-python-client``, in its own virtualenv) runs the producer examples of
apache/rocketmq-clients against mq, endpoint and credentials changed only
(``rmq5_clients.py``), and mq's own consumer checks what the store holds: topic, tag,
keys, properties, ids and queue offsets as the SDK was told, FIFO groups in one queue each
in send order, a delayed message's delivery time, a transaction's message once committed
by the producer or by its checker when the broker's check-back asked.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from interop_support import run_json_lines

from mqcore.client import Admin, ConsumeFromWhere, LitePullConsumer
from mqcore.common.javahash import java_string_hash
from mqcore.message import MessageExt
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
    transaction check-back every 300 ms for half messages older than 300 ms."""
    cluster = LiveCluster(
        tmp_path, settings={"transaction_time_out": 300, "transaction_check_interval": 300}
    )
    home = tmp_path / "home"
    home.mkdir()
    async with cluster.running(BROKER_NAME):
        access_point = LocalAccessPoint(cluster.broker, 0)
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


async def test_transaction_producer_example_commit(rmq5: Rmq5) -> None:
    await rmq5.cluster.create_topic("tx-commit", QUEUES)
    (receipt,) = await rmq5.run("transaction", rmq5.endpoint, "tx-commit", "commit")
    assert receipt["transaction_id"] == receipt["message_id"]
    (msg,) = await rmq5.read("tx-commit", 1)
    assert msg.properties["UNIQ_KEY"] == receipt["message_id"]
    assert msg.tags == "rocketmq-send-transaction-message" and msg.body == BODY
    assert msg.properties["TRAN_MSG"] == "true"  # kept, as a 4.x broker keeps it


async def test_transaction_producer_example_rollback(rmq5: Rmq5) -> None:
    """A rolled-back half message never reaches its topic (the op queue records it)."""
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
    proc = await asyncio.create_subprocess_exec(
        str(rmq5.python), str(SDK_SCRIPT), "transaction", rmq5.endpoint, "tx-check", "check",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env={**os.environ, **rmq5.env},
    )  # fmt: skip
    lines: list[dict[str, Any]] = []

    async def read_lines() -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            if raw.startswith(b"{"):
                lines.append(json.loads(raw))

    reader = asyncio.create_task(read_lines())
    try:
        await until(lambda: any("checked" in line for line in lines), 30, lambda: lines)
        receipt = next(line for line in lines if "message_id" in line)
        checked = next(line for line in lines if "checked" in line)
        assert checked["checked"] == receipt["message_id"]
        assert checked["tag"] == "rocketmq-send-transaction-message"
        assert checked["topic"] == "tx-check"
        (msg,) = await rmq5.read("tx-check", 1)
        assert msg.properties["UNIQ_KEY"] == receipt["message_id"] and msg.body == BODY
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 20)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            await reader
    assert proc.returncode == 0, (await proc.stderr.read()).decode()[-2000:] if proc.stderr else ""


GRPC_LINE = re.compile(r"grpc=(\S+):(\d+)")


async def test_normal_producer_against_mq_broker(tmp_path: Path, rmq5_python: Path) -> None:
    """`mq broker` with grpcServerPort in its broker.conf serves the SDK as `mq up` does."""
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

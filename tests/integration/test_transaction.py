"""Transactions end to end: TransactionProducer -> in-process broker -> PushConsumer.

The broker checks back every 100 ms after a 500 ms ``transactionTimeOut``, so every
check-back path runs in about a second. Counts of check-backs are lower bounds where a
loaded machine could delay an answer past the timeout (a second question is legal; a
second delivery is not, and that is what the marker checks). "Never delivered" is shown
with a marker: the topic has one queue, a plain message is sent after the transaction is
decided, and consumption stops when the marker arrives. Every wait is a poll with a deadline.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.client.consume_service import ConsumeContext, ConsumeStatus
from mqcore.client.instance import ClientConfig
from mqcore.client.producer import make_message
from mqcore.client.push_consumer import PushConsumer
from mqcore.client.rebalance import ConsumeFromWhere
from mqcore.client.transaction import LocalTransactionState, TransactionProducer
from mqcore.common.metadata import TopicConfig
from mqcore.errors import MQBrokerError, MQClientError
from mqcore.message import Message, MessageExt
from mqcore.message.const import (
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
    SysFlag,
)
from mqcore.message.ids import decode_offset_msg_id
from mqcore.namesrv.controller import NamesrvController
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import EndTransactionRequestHeader
from mqcore.remoting import RemotingClient, RequestDispatcher
from tests.support import until
from tests.support.inproc import broker_controller, namesrv_controller
from tests.support.processes import mq, restartable_broker_port

pytestmark = pytest.mark.timeout(60)

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOWN = LocalTransactionState.UNKNOWN
_names = itertools.count()
FAST_CHECKS = {"transaction_time_out": 500, "transaction_check_interval": 100}


@dataclass
class TxCluster:
    tmp: Path
    namesrv: NamesrvController
    broker: BrokerController
    port: int = field(default_factory=restartable_broker_port)
    """Kept across restarts; below the ephemeral range so nothing takes it meanwhile."""
    producers: list[TransactionProducer] = field(default_factory=list)

    @property
    def addr(self) -> str:
        return self.namesrv.listen_address

    @property
    def store(self) -> Path:
        return self.tmp / "store"

    async def start_broker(self, **overrides: Any) -> None:
        self.broker = _broker(self.tmp, self.addr, self.port, **overrides)
        await self.broker.start()
        self.port = self.broker.server.port
        await until(
            lambda: self.broker.broker_addr in self.namesrv.routes.live_broker_addrs(),
            what="broker registration",
        )

    async def restart(self, **overrides: Any) -> None:
        """A clean stop and a new broker on the same store and port."""
        await self.broker.shutdown()
        await self.start_broker(**overrides)

    async def create_topic(self, topic: str) -> None:
        self.broker.topics.update(TopicConfig(topic, 1, 1))
        await until(
            lambda: self.namesrv.routes.pick_topic_route_data(topic) is not None,
            what=f"route of {topic}",
        )

    async def producer(
        self,
        execute: Callable[[Message, Any], LocalTransactionState],
        check: Callable[[MessageExt], LocalTransactionState] | None = None,
    ) -> TransactionProducer:
        producer = TransactionProducer(
            f"tx-pg{next(_names)}",
            namesrv=self.addr,
            instance_name=f"tx{next(_names)}",
            client_config=ClientConfig(heartbeat_broker_interval=0.2),
            execute_local_transaction=execute,
            check_local_transaction=check,
        )
        await producer.start()
        self.producers.append(producer)
        return producer

    def max_offset(self, topic: str) -> int:
        return self.broker.store.get_max_offset_in_queue(topic, 0)

    def half_progress(self) -> int | None:
        return self.broker.offsets.query("CID_RMQ_SYS_TRANS", RMQ_SYS_TRANS_HALF_TOPIC, 0)

    async def checks_settled(self) -> None:
        """Every half message decided or checked: the check progress is at the end."""
        await until(
            lambda: self.half_progress() == self.max_offset(RMQ_SYS_TRANS_HALF_TOPIC),
            what="the check service caught up with the half queue",
        )

    async def consume_until_marker(self, topic: str, marker: str = "marker") -> list[str]:
        """Bodies a new push consumer group receives from the start, up to the marker."""
        async with Producer_(self.addr) as plain:
            await plain.send(make_message(topic, marker))
        got: list[MessageExt] = []

        def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
            got.extend(msgs)
            return ConsumeStatus.CONSUME_SUCCESS

        consumer = PushConsumer(
            f"tx-cg{next(_names)}",
            namesrv=self.addr,
            consume_from_where=ConsumeFromWhere.FIRST,
            offset_store_dir=str(self.tmp / "offsets"),
            instance_name=f"c{next(_names)}",
        )
        consumer.subscribe(topic, "*")
        consumer.register_listener(listener)
        async with consumer:
            await until(lambda: any(m.body == marker.encode() for m in got), what="the marker")
        self.consumed = got
        return [m.body.decode() for m in got]


def Producer_(namesrv: str) -> Any:
    from mqcore.client.producer import Producer

    return Producer(f"plain{next(_names)}", namesrv=namesrv, instance_name=f"p{next(_names)}")


def _broker(tmp: Path, namesrv: str, port: int, **overrides: Any) -> BrokerController:
    settings: dict[str, Any] = {**FAST_CHECKS, **overrides}
    return broker_controller(
        tmp / "store", namesrv, listen_port=port, log_dir=str(tmp / "logs"), **settings
    )


async def _cluster(tmp_path: Path, **overrides: Any) -> TxCluster:
    namesrv = namesrv_controller(tmp_path / "kv.json")
    await namesrv.start()
    cluster = TxCluster(tmp_path, namesrv, None)  # type: ignore[arg-type]
    await cluster.start_broker(**overrides)
    return cluster


async def _stop(cluster: TxCluster) -> None:
    for producer in cluster.producers:
        await producer.shutdown()
    await cluster.broker.shutdown()
    await cluster.namesrv.shutdown()


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[TxCluster]:
    running = await _cluster(tmp_path)
    try:
        yield running
    finally:
        await _stop(running)


def by_body(table: dict[str, LocalTransactionState]) -> Callable[..., LocalTransactionState]:
    """A callback answering from the message body."""

    def answer(msg: Message, *arg: Any) -> LocalTransactionState:
        return table[msg.body.decode()]

    return answer


# -- commit and rollback ----------------------------------------------------------------


async def test_commit_is_consumed_and_rollback_never(cluster: TxCluster) -> None:
    await cluster.create_topic("TxA")
    executed: list[tuple[str, object]] = []

    async def execute(msg: Message, arg: Any) -> LocalTransactionState:
        executed.append((msg.body.decode(), arg))
        return COMMIT if arg == "yes" else ROLLBACK

    producer = await cluster.producer(execute)
    committed = await producer.send_message_in_transaction(make_message("TxA", "c1"), "yes")
    rolled = await producer.send_message_in_transaction(make_message("TxA", "r1"), "no")
    assert committed.local_transaction_state is COMMIT
    assert rolled.local_transaction_state is ROLLBACK
    assert executed == [("c1", "yes"), ("r1", "no")]
    # The half messages were stored in the half topic, not the real one.
    assert committed.message_queue.topic == "TxA"
    assert cluster.max_offset(RMQ_SYS_TRANS_HALF_TOPIC) == 2
    await until(lambda: cluster.max_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC) == 2, what="2 op msgs")

    assert await cluster.consume_until_marker("TxA") == ["c1", "marker"]
    msg = cluster.consumed[0]
    assert msg.properties["TRAN_MSG"] == "true"
    assert msg.properties["PGROUP"] == producer.group
    assert msg.properties["REAL_TOPIC"] == "TxA"  # RocketMQ keeps the half's properties
    assert msg.unique_key == committed.msg_id
    stored = cluster.broker.store.look_message(decode_offset_msg_id(msg.msg_id)[2])
    assert stored.transaction_type == SysFlag.TRANSACTION_COMMIT_TYPE
    assert stored.prepared_transaction_offset == decode_offset_msg_id(committed.offset_msg_id)[2]
    await cluster.checks_settled()


async def test_a_failing_local_transaction_is_unknown_and_then_checked(
    cluster: TxCluster,
) -> None:
    await cluster.create_topic("TxF")

    def execute(msg: Message, arg: Any) -> LocalTransactionState:
        raise RuntimeError("database down")

    producer = await cluster.producer(execute, lambda msg: ROLLBACK)
    result = await producer.send_message_in_transaction(make_message("TxF", "f1"))
    assert result.local_transaction_state is UNKNOWN
    await until(lambda: producer.checks_answered >= 1, what="a check-back")
    await cluster.checks_settled()
    assert await cluster.consume_until_marker("TxF") == ["marker"]


# -- check-back -------------------------------------------------------------------------


async def test_unknown_is_resolved_by_check_back_to_commit_and_rollback(
    cluster: TxCluster,
) -> None:
    await cluster.create_topic("TxU")
    asked: list[MessageExt] = []

    async def check(msg: MessageExt) -> LocalTransactionState:
        asked.append(msg)
        return {"u-commit": COMMIT, "u-rollback": ROLLBACK}[msg.body.decode()]

    producer = await cluster.producer(lambda msg, arg: UNKNOWN, check)
    first = await producer.send_message_in_transaction(make_message("TxU", "u-commit", keys="k1"))
    await producer.send_message_in_transaction(make_message("TxU", "u-rollback"))
    await until(lambda: producer.checks_answered >= 2, what="two check-backs")
    await until(lambda: cluster.max_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC) == 2, what="2 op msgs")
    await cluster.checks_settled()
    # The producer was asked about the message under its real topic.
    assert {m.body for m in asked} == {b"u-commit", b"u-rollback"}
    one = next(m for m in asked if m.body == b"u-commit")
    assert one.topic == "TxU" and one.queue_id == 0 and one.keys == ["k1"]
    assert one.unique_key == first.msg_id
    assert one.properties["TRANSACTION_CHECK_TIMES"] == "1"
    assert await cluster.consume_until_marker("TxU") == ["u-commit", "marker"]


async def test_after_transaction_check_max_it_moves_to_the_check_max_topic(
    tmp_path: Path,
) -> None:
    cluster = await _cluster(tmp_path, transaction_check_max=3)
    try:
        await cluster.create_topic("TxM")
        producer = await cluster.producer(lambda msg, arg: UNKNOWN, lambda msg: UNKNOWN)
        await producer.send_message_in_transaction(make_message("TxM", "forever"))
        await until(
            lambda: cluster.max_offset(TRANS_CHECK_MAX_TIME_TOPIC) == 1,
            what="the half message moved to TRANS_CHECK_MAX_TIME_TOPIC",
        )
        # The last check is sent in the round that gives up (as RocketMQ's loop does).
        await until(lambda: producer.checks_answered == 3, what="the third answer")
        moved = cluster.broker.store.look_message(
            cluster.broker.store.get_commit_log_offset_in_queue(TRANS_CHECK_MAX_TIME_TOPIC, 0, 0)
        )
        assert moved.body == b"forever" and moved.properties["TRANSACTION_CHECK_TIMES"] == "3"
        await cluster.checks_settled()
        rounds = cluster.broker.transaction_service.check_service.rounds  # type: ignore[union-attr]
        await until(
            lambda: cluster.broker.transaction_service.check_service.rounds > rounds + 3,  # type: ignore[union-attr]
            what="more check rounds",
        )
        assert producer.checks_answered == 3  # never asked again
        assert await cluster.consume_until_marker("TxM") == ["marker"]
    finally:
        await _stop(cluster)


# -- restarts ---------------------------------------------------------------------------


async def test_a_pending_half_message_is_checked_back_after_a_restart(tmp_path: Path) -> None:
    # No check-back before the restart: the interval is a minute.
    cluster = await _cluster(tmp_path, transaction_check_interval=60_000)
    try:
        await cluster.create_topic("TxR")
        producer = await cluster.producer(
            by_body({"before": COMMIT, "pending": UNKNOWN, "gone": ROLLBACK}),
            by_body({"pending": COMMIT}),
        )
        for body in ("before", "pending", "gone"):
            await producer.send_message_in_transaction(make_message("TxR", body))
        await until(lambda: cluster.max_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC) == 2, what="2 ops")
        assert producer.checks_answered == 0
        await cluster.restart(**FAST_CHECKS)
        await until(lambda: producer.checks_answered >= 1, what="the check-back after restart")
        await until(lambda: cluster.max_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC) == 3, what="3rd op")
        await cluster.checks_settled()
        assert await cluster.consume_until_marker("TxR") == ["before", "pending", "marker"]
        # The progress is stored, and survives another restart without re-checking.
        answered = producer.checks_answered
        await cluster.restart()
        await cluster.checks_settled()
        rounds = cluster.broker.transaction_service.check_service.rounds  # type: ignore[union-attr]
        await until(
            lambda: cluster.broker.transaction_service.check_service.rounds > rounds + 2,  # type: ignore[union-attr]
            what="check rounds after the second restart",
        )
        assert producer.checks_answered == answered
        offsets = json.loads(
            (cluster.store / "config" / "consumerOffset.json").read_text().replace("{0:", '{"0":')
        )["offsetTable"]
        assert f"{RMQ_SYS_TRANS_HALF_TOPIC}@CID_RMQ_SYS_TRANS" in offsets
        assert f"{RMQ_SYS_TRANS_OP_HALF_TOPIC}@CID_RMQ_SYS_TRANS" in offsets
    finally:
        await _stop(cluster)


async def test_check_progress_reaches_the_disk_without_waiting_for_a_shutdown(
    tmp_path: Path,
) -> None:
    """A kill -9 must not send the check service back to the start: its progress is
    written soon after a pass moves it, not at the next (here: minute-long) offsets
    flush or a clean shutdown."""
    cluster = await _cluster(tmp_path, flush_consumer_offset_interval=60_000)
    try:
        await cluster.create_topic("TxP")
        producer = await cluster.producer(by_body({"a": UNKNOWN}), by_body({"a": COMMIT}))
        await producer.send_message_in_transaction(make_message("TxP", "a"))
        await cluster.checks_settled()
        stored = cluster.store / "config" / "consumerOffset.json"
        key = f"{RMQ_SYS_TRANS_HALF_TOPIC}@CID_RMQ_SYS_TRANS"

        def on_disk() -> int | None:
            if not stored.exists():
                return None
            table = json.loads(stored.read_text().replace("{0:", '{"0":'))["offsetTable"]
            return table.get(key, {}).get("0")

        await until(lambda: on_disk() == cluster.half_progress(), what="progress on disk")
        assert on_disk() is not None and on_disk() > 0  # type: ignore[operator]
    finally:
        await _stop(cluster)


# -- refusals ---------------------------------------------------------------------------


async def test_end_transaction_with_a_wrong_group_or_offset_is_refused(
    cluster: TxCluster,
) -> None:
    await cluster.create_topic("TxE")
    producer = await cluster.producer(lambda msg, arg: UNKNOWN, lambda msg: UNKNOWN)
    # Slow the check-back down so only our requests touch the half message.
    cluster.broker.config.transaction_time_out = 60_000
    half = await producer.send_message_in_transaction(make_message("TxE", "h"))
    plain = cluster.broker.store.put_message(
        MessageExt(topic="TxE", body=b"p", properties={"PGROUP": producer.group}, queue_id=0)
    )
    half_offset = decode_offset_msg_id(half.offset_msg_id)[2]
    good = {
        "producerGroup": producer.group,
        "tranStateTableOffset": str(half.queue_offset),
        "commitLogOffset": str(half_offset),
        "commitOrRollback": "8",
        "msgId": half.msg_id,
    }
    bad_cases = [
        ({"producerGroup": "someone-else"}, "The producer group wrong"),
        ({"tranStateTableOffset": str(half.queue_offset + 1)}, "offset wrong"),
        ({"commitLogOffset": str(plain.wrote_offset)}, "not a half message"),
        ({"commitLogOffset": str(10**12)}, "Find prepared transaction message failed"),
        ({"commitLogOffset": "-5"}, "Find prepared transaction message failed"),
        ({"commitOrRollback": "5"}, "none of 0"),
        ({"commitLogOffset": "not-a-number"}, "commitLogOffset"),
    ]
    client = RemotingClient(RequestDispatcher())
    try:
        for change, remark in bad_cases:
            request = RemotingCommand.request(RequestCode.END_TRANSACTION, {**good, **change})
            response = await client.invoke(cluster.broker.broker_addr, request, timeout=5)
            assert response.code == ResponseCode.SYSTEM_ERROR, change
            assert remark in (response.remark or ""), (change, response.remark)
            oneway = RemotingCommand.request(
                RequestCode.END_TRANSACTION, {**good, **change}, oneway=True
            )
            await client.invoke_oneway(cluster.broker.broker_addr, oneway)
        assert cluster.max_offset("TxE") == 1  # only the plain message
        assert cluster.max_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC) == 0
        # The right request commits, once: a repeat (e.g. a late answer) changes nothing.
        for _ in range(2):
            request = RemotingCommand.request(RequestCode.END_TRANSACTION, good)
            response = await client.invoke(cluster.broker.broker_addr, request, timeout=5)
            assert response.code == ResponseCode.SUCCESS, response.remark
        assert cluster.max_offset("TxE") == 2
        assert cluster.max_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC) == 1
    finally:
        await client.close()


async def test_a_broker_that_rejects_transactions_refuses_half_messages(tmp_path: Path) -> None:
    cluster = await _cluster(tmp_path, reject_transaction_message=True)
    try:
        await cluster.create_topic("TxN")
        producer = await cluster.producer(lambda msg, arg: COMMIT)
        with pytest.raises(MQClientError) as info:
            await producer.send_message_in_transaction(make_message("TxN", "x"))
        cause = info.value.__cause__
        assert isinstance(cause, MQBrokerError) and cause.code == ResponseCode.NO_PERMISSION
        assert "transaction message is forbidden" in str(info.value)
        assert cluster.max_offset(RMQ_SYS_TRANS_HALF_TOPIC) == 0
    finally:
        await _stop(cluster)


async def test_end_transaction_header_mirrors_the_send_result(cluster: TxCluster) -> None:
    """What the producer sends on the wire, seen by a second processor on the broker."""
    await cluster.create_topic("TxW")
    seen: list[EndTransactionRequestHeader] = []
    original = cluster.broker.server.dispatcher.processor_for(RequestCode.END_TRANSACTION)
    assert original is not None

    def spy(channel: Any, request: RemotingCommand) -> Any:
        seen.append(EndTransactionRequestHeader.from_command(request))
        assert request.is_oneway
        return original(channel, request)

    cluster.broker.server.register(RequestCode.END_TRANSACTION, spy)
    cluster.broker.fast_server.register(RequestCode.END_TRANSACTION, spy)
    producer = await cluster.producer(lambda msg, arg: COMMIT)
    result = await producer.send_message_in_transaction(make_message("TxW", "w"))
    await until(lambda: len(seen) == 1, what="END_TRANSACTION")
    header = seen[0]
    assert header.producer_group == producer.group
    assert header.commit_or_rollback == 8 and not header.from_transaction_check
    assert header.tran_state_table_offset == result.queue_offset
    assert header.commit_log_offset == decode_offset_msg_id(result.offset_msg_id)[2]
    assert header.msg_id == result.msg_id == result.transaction_id


# -- store tools ------------------------------------------------------------------------


async def test_store_tools_show_the_half_and_op_topics(tmp_path: Path) -> None:
    cluster = await _cluster(tmp_path)
    try:
        await cluster.create_topic("TxS")
        producer = await cluster.producer(by_body({"s-commit": COMMIT, "s-rollback": ROLLBACK}))
        for body in ("s-commit", "s-rollback"):
            await producer.send_message_in_transaction(make_message("TxS", body))
        await until(lambda: cluster.max_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC) == 2, what="2 ops")
        await cluster.checks_settled()
    finally:
        await _stop(cluster)
    inspect = await asyncio.to_thread(mq, "store", "inspect", str(cluster.store), "--json")
    assert inspect.returncode == 0, inspect.stdout + inspect.stderr
    queues = {(q["topic"], q["max_offset"]) for q in json.loads(inspect.stdout)["queues"]}
    assert (RMQ_SYS_TRANS_HALF_TOPIC, 2) in queues
    assert (RMQ_SYS_TRANS_OP_HALF_TOPIC, 2) in queues
    assert ("TxS", 1) in queues
    dump = await asyncio.to_thread(
        mq,
        "store",
        "dump",
        "commitlog",
        "00000000000000000000",
        "--store",
        str(cluster.store),
        "--topic",
        RMQ_SYS_TRANS_HALF_TOPIC,
        "--json",
    )
    assert dump.returncode == 0, dump.stdout + dump.stderr
    halves = [json.loads(line) for line in dump.stdout.splitlines() if line.strip()]
    assert len(halves) == 2
    assert "s-commit" in dump.stdout and "REAL_TOPIC" in dump.stdout

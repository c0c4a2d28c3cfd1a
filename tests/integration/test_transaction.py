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
from collections.abc import Callable
from typing import Any

import pytest

from mqcore.client.consume_service import ConsumeContext, ConsumeStatus
from mqcore.client.instance import ClientConfig
from mqcore.client.producer import make_message
from mqcore.client.push_consumer import PushConsumer
from mqcore.client.rebalance import ConsumeFromWhere
from mqcore.client.transaction import LocalTransactionState, TransactionProducer
from mqcore.errors import MQBrokerError, MQClientError
from mqcore.message import Message, MessageExt
from mqcore.message.const import (
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
    SysFlag,
)
from mqcore.message.ids import decode_offset_msg_id
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import EndTransactionRequestHeader
from mqcore.remoting import RemotingClient, RequestDispatcher
from tests.support import until
from tests.support.inproc import LiveCluster
from tests.support.processes import mq

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOWN = LocalTransactionState.UNKNOWN
_names = itertools.count()
FAST_CHECKS = {"transaction_time_out": 500, "transaction_check_interval": 100}
# brokers restart on their port, below the ephemeral range so nothing takes it meanwhile
pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.cluster(store={}, restartable=True, **FAST_CHECKS),
]


async def tx_producer(
    cluster: LiveCluster,
    execute: Callable[[Message, Any], LocalTransactionState],
    check: Callable[[MessageExt], LocalTransactionState] | None = None,
) -> TransactionProducer:
    """A started transaction producer, shut down with the cluster."""
    producer = TransactionProducer(
        f"tx-pg{next(_names)}",
        namesrv=cluster.addr,
        instance_name=f"tx{next(_names)}",
        client_config=ClientConfig(heartbeat_broker_interval=0.2),
        execute_local_transaction=execute,
        check_local_transaction=check,
    )
    await producer.start()
    return cluster.track(producer)


def max_offset(cluster: LiveCluster, topic: str) -> int:
    return cluster.broker.store.get_max_offset_in_queue(topic, 0)


def half_progress(cluster: LiveCluster) -> int | None:
    return cluster.broker.offsets.query("CID_RMQ_SYS_TRANS", RMQ_SYS_TRANS_HALF_TOPIC, 0)


async def checks_settled(cluster: LiveCluster) -> None:
    """Every half message decided or checked: the check progress is at the end."""
    await until(
        lambda: half_progress(cluster) == max_offset(cluster, RMQ_SYS_TRANS_HALF_TOPIC),
        what="the check service caught up with the half queue",
    )


async def consume_until_marker(
    cluster: LiveCluster,
    topic: str,
    marker: str = "marker",
    *,
    got: list[MessageExt] | None = None,
) -> list[str]:
    """Bodies a new push consumer group receives from the start, up to the marker (the
    messages themselves go to ``got``)."""
    async with Producer_(cluster.addr) as plain:
        await plain.send(make_message(topic, marker))
    got = [] if got is None else got

    def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        got.extend(msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        f"tx-cg{next(_names)}",
        namesrv=cluster.addr,
        consume_from_where=ConsumeFromWhere.FIRST,
        offset_store_dir=str(cluster.tmp / "offsets"),
        instance_name=f"c{next(_names)}",
    )
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    async with consumer:
        await until(lambda: any(m.body == marker.encode() for m in got), what="the marker")
    return [m.body.decode() for m in got]


def Producer_(namesrv: str) -> Any:
    from mqcore.client.producer import Producer

    return Producer(f"plain{next(_names)}", namesrv=namesrv, instance_name=f"p{next(_names)}")


def by_body(table: dict[str, LocalTransactionState]) -> Callable[..., LocalTransactionState]:
    """A callback answering from the message body."""

    def answer(msg: Message, *arg: Any) -> LocalTransactionState:
        return table[msg.body.decode()]

    return answer


# -- commit and rollback ----------------------------------------------------------------


async def test_commit_is_consumed_and_rollback_never(cluster: LiveCluster) -> None:
    await cluster.create_topic("TxA", 1)
    executed: list[tuple[str, object]] = []

    async def execute(msg: Message, arg: Any) -> LocalTransactionState:
        executed.append((msg.body.decode(), arg))
        return COMMIT if arg == "yes" else ROLLBACK

    producer = await tx_producer(cluster, execute)
    committed = await producer.send_message_in_transaction(make_message("TxA", "c1"), "yes")
    rolled = await producer.send_message_in_transaction(make_message("TxA", "r1"), "no")
    assert committed.local_transaction_state is COMMIT
    assert rolled.local_transaction_state is ROLLBACK
    assert executed == [("c1", "yes"), ("r1", "no")]
    # The half messages were stored in the half topic, not the real one.
    assert committed.message_queue.topic == "TxA"
    assert max_offset(cluster, RMQ_SYS_TRANS_HALF_TOPIC) == 2
    await until(lambda: max_offset(cluster, RMQ_SYS_TRANS_OP_HALF_TOPIC) == 2, what="2 op msgs")

    consumed: list[MessageExt] = []
    assert await consume_until_marker(cluster, "TxA", got=consumed) == ["c1", "marker"]
    msg = consumed[0]
    assert msg.properties["TRAN_MSG"] == "true"
    assert msg.properties["PGROUP"] == producer.group
    assert msg.properties["REAL_TOPIC"] == "TxA"  # RocketMQ keeps the half's properties
    assert msg.unique_key == committed.msg_id
    stored = cluster.broker.store.look_message(decode_offset_msg_id(msg.msg_id)[2])
    assert stored.transaction_type == SysFlag.TRANSACTION_COMMIT_TYPE
    assert stored.prepared_transaction_offset == decode_offset_msg_id(committed.offset_msg_id)[2]
    await checks_settled(cluster)


async def test_a_failing_local_transaction_is_unknown_and_then_checked(
    cluster: LiveCluster,
) -> None:
    await cluster.create_topic("TxF", 1)

    def execute(msg: Message, arg: Any) -> LocalTransactionState:
        raise RuntimeError("database down")

    producer = await tx_producer(cluster, execute, lambda msg: ROLLBACK)
    result = await producer.send_message_in_transaction(make_message("TxF", "f1"))
    assert result.local_transaction_state is UNKNOWN
    await until(lambda: producer.checks_answered >= 1, what="a check-back")
    await checks_settled(cluster)
    assert await consume_until_marker(cluster, "TxF") == ["marker"]


# -- check-back -------------------------------------------------------------------------


async def test_unknown_is_resolved_by_check_back_to_commit_and_rollback(
    cluster: LiveCluster,
) -> None:
    await cluster.create_topic("TxU", 1)
    asked: list[MessageExt] = []

    async def check(msg: MessageExt) -> LocalTransactionState:
        asked.append(msg)
        return {"u-commit": COMMIT, "u-rollback": ROLLBACK}[msg.body.decode()]

    producer = await tx_producer(cluster, lambda msg, arg: UNKNOWN, check)
    first = await producer.send_message_in_transaction(make_message("TxU", "u-commit", keys="k1"))
    await producer.send_message_in_transaction(make_message("TxU", "u-rollback"))
    await until(lambda: producer.checks_answered >= 2, what="two check-backs")
    await until(lambda: max_offset(cluster, RMQ_SYS_TRANS_OP_HALF_TOPIC) == 2, what="2 op msgs")
    await checks_settled(cluster)
    # The producer was asked about the message under its real topic.
    assert {m.body for m in asked} == {b"u-commit", b"u-rollback"}
    one = next(m for m in asked if m.body == b"u-commit")
    assert one.topic == "TxU" and one.queue_id == 0 and one.keys == ["k1"]
    assert one.unique_key == first.msg_id
    assert one.properties["TRANSACTION_CHECK_TIMES"] == "1"
    assert await consume_until_marker(cluster, "TxU") == ["u-commit", "marker"]


@pytest.mark.cluster(transaction_check_max=3)
async def test_after_transaction_check_max_it_moves_to_the_check_max_topic(
    cluster: LiveCluster,
) -> None:
    await cluster.create_topic("TxM", 1)
    producer = await tx_producer(cluster, lambda msg, arg: UNKNOWN, lambda msg: UNKNOWN)
    await producer.send_message_in_transaction(make_message("TxM", "forever"))
    await until(
        lambda: max_offset(cluster, TRANS_CHECK_MAX_TIME_TOPIC) == 1,
        what="the half message moved to TRANS_CHECK_MAX_TIME_TOPIC",
    )
    # The last check is sent in the round that gives up (as RocketMQ's loop does).
    await until(lambda: producer.checks_answered == 3, what="the third answer")
    moved = cluster.broker.store.look_message(
        cluster.broker.store.get_commit_log_offset_in_queue(TRANS_CHECK_MAX_TIME_TOPIC, 0, 0)
    )
    assert moved.body == b"forever" and moved.properties["TRANSACTION_CHECK_TIMES"] == "3"
    await checks_settled(cluster)
    rounds = cluster.broker.transaction_check.rounds
    await until(
        lambda: cluster.broker.transaction_check.rounds > rounds + 3,
        what="more check rounds",
    )
    assert producer.checks_answered == 3  # never asked again
    assert await consume_until_marker(cluster, "TxM") == ["marker"]


# -- restarts ---------------------------------------------------------------------------


@pytest.mark.cluster(transaction_check_interval=60_000)
async def test_a_pending_half_message_is_checked_back_after_a_restart(cluster: LiveCluster) -> None:
    # No check-back before the restart: the interval is a minute.
    await cluster.create_topic("TxR", 1)
    producer = await tx_producer(
        cluster,
        by_body({"before": COMMIT, "pending": UNKNOWN, "gone": ROLLBACK}),
        by_body({"pending": COMMIT}),
    )
    for body in ("before", "pending", "gone"):
        await producer.send_message_in_transaction(make_message("TxR", body))
    await until(lambda: max_offset(cluster, RMQ_SYS_TRANS_OP_HALF_TOPIC) == 2, what="2 ops")
    assert producer.checks_answered == 0
    await cluster.restart_broker(**FAST_CHECKS)
    await until(lambda: producer.checks_answered >= 1, what="the check-back after restart")
    await until(lambda: max_offset(cluster, RMQ_SYS_TRANS_OP_HALF_TOPIC) == 3, what="3rd op")
    await checks_settled(cluster)
    assert await consume_until_marker(cluster, "TxR") == ["before", "pending", "marker"]
    # The progress is stored, and survives another restart without re-checking.
    answered = producer.checks_answered
    await cluster.restart_broker(**FAST_CHECKS)
    await checks_settled(cluster)
    rounds = cluster.broker.transaction_check.rounds
    await until(
        lambda: cluster.broker.transaction_check.rounds > rounds + 2,
        what="check rounds after the second restart",
    )
    assert producer.checks_answered == answered
    offsets = json.loads(
        (cluster.store_dir() / "config" / "consumerOffset.json").read_text().replace("{0:", '{"0":')
    )["offsetTable"]
    assert f"{RMQ_SYS_TRANS_HALF_TOPIC}@CID_RMQ_SYS_TRANS" in offsets
    assert f"{RMQ_SYS_TRANS_OP_HALF_TOPIC}@CID_RMQ_SYS_TRANS" in offsets


@pytest.mark.cluster(flush_consumer_offset_interval=60_000)
async def test_check_progress_reaches_the_disk_without_waiting_for_a_shutdown(
    cluster: LiveCluster,
) -> None:
    """A kill -9 must not send the check service back to the start: its progress is
    written soon after a pass moves it, not at the next (here: minute-long) offsets
    flush or a clean shutdown."""
    await cluster.create_topic("TxP", 1)
    producer = await tx_producer(cluster, by_body({"a": UNKNOWN}), by_body({"a": COMMIT}))
    await producer.send_message_in_transaction(make_message("TxP", "a"))
    await checks_settled(cluster)
    stored = cluster.store_dir() / "config" / "consumerOffset.json"
    key = f"{RMQ_SYS_TRANS_HALF_TOPIC}@CID_RMQ_SYS_TRANS"

    def on_disk() -> int | None:
        if not stored.exists():
            return None
        table = json.loads(stored.read_text().replace("{0:", '{"0":'))["offsetTable"]
        return table.get(key, {}).get("0")

    await until(lambda: on_disk() == half_progress(cluster), what="progress on disk")
    assert on_disk() is not None and on_disk() > 0  # type: ignore[operator]


# -- refusals ---------------------------------------------------------------------------


async def test_end_transaction_with_a_wrong_group_or_offset_is_refused(
    cluster: LiveCluster,
) -> None:
    await cluster.create_topic("TxE", 1)
    producer = await tx_producer(cluster, lambda msg, arg: UNKNOWN, lambda msg: UNKNOWN)
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
        assert max_offset(cluster, "TxE") == 1  # only the plain message
        assert max_offset(cluster, RMQ_SYS_TRANS_OP_HALF_TOPIC) == 0
        # The right request commits, once: a repeat (e.g. a late answer) changes nothing.
        for _ in range(2):
            request = RemotingCommand.request(RequestCode.END_TRANSACTION, good)
            response = await client.invoke(cluster.broker.broker_addr, request, timeout=5)
            assert response.code == ResponseCode.SUCCESS, response.remark
        assert max_offset(cluster, "TxE") == 2
        assert max_offset(cluster, RMQ_SYS_TRANS_OP_HALF_TOPIC) == 1
    finally:
        await client.close()


@pytest.mark.cluster(reject_transaction_message=True)
async def test_a_broker_that_rejects_transactions_refuses_half_messages(
    cluster: LiveCluster,
) -> None:
    await cluster.create_topic("TxN", 1)
    producer = await tx_producer(cluster, lambda msg, arg: COMMIT)
    with pytest.raises(MQClientError) as info:
        await producer.send_message_in_transaction(make_message("TxN", "x"))
    cause = info.value.__cause__
    assert isinstance(cause, MQBrokerError) and cause.code == ResponseCode.NO_PERMISSION
    assert "transaction message is forbidden" in str(info.value)
    assert max_offset(cluster, RMQ_SYS_TRANS_HALF_TOPIC) == 0


async def test_end_transaction_header_mirrors_the_send_result(cluster: LiveCluster) -> None:
    """What the producer sends on the wire, seen by a second processor on the broker."""
    await cluster.create_topic("TxW", 1)
    seen: list[EndTransactionRequestHeader] = []
    original = cluster.broker.server.dispatcher.processor_for(RequestCode.END_TRANSACTION)
    assert original is not None

    def spy(channel: Any, request: RemotingCommand) -> Any:
        seen.append(EndTransactionRequestHeader.from_command(request))
        assert request.is_oneway
        return original(channel, request)

    cluster.broker.server.register(RequestCode.END_TRANSACTION, spy)
    cluster.broker.fast_server.register(RequestCode.END_TRANSACTION, spy)
    producer = await tx_producer(cluster, lambda msg, arg: COMMIT)
    result = await producer.send_message_in_transaction(make_message("TxW", "w"))
    await until(lambda: len(seen) == 1, what="END_TRANSACTION")
    header = seen[0]
    assert header.producer_group == producer.group
    assert header.commit_or_rollback == 8 and not header.from_transaction_check
    assert header.tran_state_table_offset == result.queue_offset
    assert header.commit_log_offset == decode_offset_msg_id(result.offset_msg_id)[2]
    assert header.msg_id == result.msg_id == result.transaction_id


# -- store tools ------------------------------------------------------------------------


async def test_store_tools_show_the_half_and_op_topics(cluster: LiveCluster) -> None:
    await cluster.create_topic("TxS", 1)
    producer = await tx_producer(cluster, by_body({"s-commit": COMMIT, "s-rollback": ROLLBACK}))
    for body in ("s-commit", "s-rollback"):
        await producer.send_message_in_transaction(make_message("TxS", body))
    await until(lambda: max_offset(cluster, RMQ_SYS_TRANS_OP_HALF_TOPIC) == 2, what="2 ops")
    await checks_settled(cluster)
    await cluster.stop()
    inspect = await asyncio.to_thread(mq, "store", "inspect", str(cluster.store_dir()), "--json")
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
        str(cluster.store_dir()),
        "--topic",
        RMQ_SYS_TRANS_HALF_TOPIC,
        "--json",
    )
    assert dump.returncode == 0, dump.stdout + dump.stderr
    halves = [json.loads(line) for line in dump.stdout.splitlines() if line.strip()]
    assert len(halves) == 2
    assert "s-commit" in dump.stdout and "REAL_TOPIC" in dump.stdout

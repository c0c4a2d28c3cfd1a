"""TransactionProducer against a fake broker in memory: the half message it sends, the
END_TRANSACTION it reports, and its answer to CHECK_TRANSACTION_STATE."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from client_fakes import NAMESRV, FakeBroker, InMemoryCluster

from mqcore.client import LocalTransactionState, TransactionProducer, TransactionSendResult
from mqcore.client.errors import ClientStateError
from mqcore.client.producer import make_message
from mqcore.errors import MQClientError
from mqcore.message import Message, MessageExt, encode_record
from mqcore.message.properties import decode_properties
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from mqcore.remoting import Channel
from tests.support import until

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOWN = LocalTransactionState.UNKNOWN
ADDR = "127.0.0.1:10911"


class TxBroker(FakeBroker):
    """A fake broker that also records END_TRANSACTION."""

    ends: list[RemotingCommand]

    def dispatcher(self) -> Any:
        self.ends = []
        d = super().dispatcher()
        d.register(RequestCode.END_TRANSACTION, self.on_end)
        return d

    def on_end(self, channel: Channel, request: RemotingCommand) -> None:
        self.ends.append(request)

    def headers(self) -> list[EndTransactionRequestHeader]:
        return [EndTransactionRequestHeader.from_command(r) for r in self.ends]


pytestmark = pytest.mark.cluster(
    brokers={"broker-a": (ADDR, {"T": 1, "TBW102": 8})}, broker_class=TxBroker
)


def broker_of(cluster: InMemoryCluster) -> TxBroker:
    broker = cluster.brokers["broker-a"]
    assert isinstance(broker, TxBroker)
    return broker


def tx_producer(cluster: InMemoryCluster, **kw: Any) -> TransactionProducer:
    return TransactionProducer("tpg", namesrv=NAMESRV, client_config=cluster.config(), **kw)


def test_states_and_the_unknow_alias() -> None:
    assert LocalTransactionState.UNKNOW is UNKNOWN
    assert LocalTransactionState("UNKNOW") is UNKNOWN
    assert LocalTransactionState.coerce("commit") is COMMIT
    assert LocalTransactionState.coerce("ROLLBACK_MESSAGE") is ROLLBACK
    assert LocalTransactionState.coerce("unknow") is UNKNOWN
    assert LocalTransactionState.coerce(None) is UNKNOWN
    with pytest.raises(TypeError):
        LocalTransactionState.coerce(True)


async def test_half_message_then_end_transaction_with_the_send_result(
    cluster: InMemoryCluster,
) -> None:
    seen: list[tuple[bytes, object]] = []

    def execute(msg: Message, arg: Any) -> LocalTransactionState:
        seen.append((msg.body, arg))
        return COMMIT

    async with tx_producer(cluster, execute_local_transaction=execute) as producer:
        msg = make_message("T", "pay", tags="A", delay_level=3)
        result = await producer.send_message_in_transaction(msg, arg={"order": 7})
        broker = broker_of(cluster)
        await until(lambda: len(broker.ends) == 1)
    assert isinstance(result, TransactionSendResult)
    assert result.local_transaction_state is COMMIT and result.transaction_id == result.msg_id
    assert seen == [(b"pay", {"order": 7})]
    stored = broker.queues[("T", 0)][0]
    assert stored.sys_flag & 0xC == 0x4  # PREPARED
    props = decode_properties(stored.properties.encode())
    assert props["TRAN_MSG"] == "true" and props["PGROUP"] == "tpg"
    assert "DELAY" not in props
    end = broker.ends[0]
    assert end.is_oneway
    header = broker.headers()[0]
    assert header.producer_group == "tpg"
    assert header.commit_or_rollback == 8 and header.from_transaction_check is False
    assert header.tran_state_table_offset == stored.queue_offset
    assert header.commit_log_offset == stored.commit_log_offset
    assert header.msg_id == result.msg_id == props["UNIQ_KEY"]


@pytest.mark.parametrize(
    ("outcome", "code"),
    [(ROLLBACK, 12), (UNKNOWN, 0), ("commit", 8), (None, 0)],
)
async def test_each_outcome_is_reported_and_async_callbacks_work(
    cluster: InMemoryCluster, outcome: object, code: int
) -> None:
    async def execute(msg: Message, arg: Any) -> Any:
        await asyncio.sleep(0)
        return outcome

    async with tx_producer(cluster, execute_local_transaction=execute) as producer:
        await producer.send_message_in_transaction(make_message("T", "x"))
        await until(lambda: len(broker_of(cluster).ends) == 1)
    assert broker_of(cluster).headers()[0].commit_or_rollback == code


async def test_a_failing_local_transaction_reports_unknown_with_the_error(
    cluster: InMemoryCluster,
) -> None:
    def execute(msg: Message, arg: Any) -> LocalTransactionState:
        raise ValueError("db down")

    async with tx_producer(cluster, execute_local_transaction=execute) as producer:
        result = await producer.send_message_in_transaction(make_message("T", "x"))
        await until(lambda: len(broker_of(cluster).ends) == 1)
    assert result.local_transaction_state is UNKNOWN
    end = broker_of(cluster).ends[0]
    assert EndTransactionRequestHeader.from_command(end).commit_or_rollback == 0
    assert "db down" in (end.remark or "")


async def test_a_refused_half_message_raises_and_runs_nothing(cluster: InMemoryCluster) -> None:
    ran: list[Message] = []
    broker_of(cluster).fail_code = ResponseCode.NO_PERMISSION
    async with tx_producer(
        cluster, execute_local_transaction=lambda m, a: ran.append(m) or COMMIT
    ) as producer:
        with pytest.raises(MQClientError, match="half message"):
            await producer.send_message_in_transaction(make_message("T", "x"))
    assert ran == [] and broker_of(cluster).ends == []


async def test_a_producer_needs_a_local_transaction(cluster: InMemoryCluster) -> None:
    async with tx_producer(cluster) as producer:
        with pytest.raises(ClientStateError, match="execute_local_transaction"):
            await producer.send_message_in_transaction(make_message("T", "x"))

    class Mine(TransactionProducer):
        async def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
            return ROLLBACK

    async with Mine("tpg2", namesrv=NAMESRV, client_config=cluster.config()) as mine:
        result = await mine.send_message_in_transaction(make_message("T", "y"))
    assert result.local_transaction_state is ROLLBACK


async def test_check_transaction_state_is_answered_from_check_local_transaction(
    cluster: InMemoryCluster,
) -> None:
    asked: list[MessageExt] = []

    def check(msg: MessageExt) -> LocalTransactionState:
        asked.append(msg)
        return COMMIT

    broker = broker_of(cluster)
    async with tx_producer(
        cluster, execute_local_transaction=lambda m, a: UNKNOWN, check_local_transaction=check
    ) as producer:
        assert not await producer.wait_checks_answered(1, timeout=0.01)
        result = await producer.send_message_in_transaction(make_message("T", "later"))
        stored = broker.queues[("T", 0)][0]
        props = decode_properties(stored.properties.encode())
        # What a broker sends: the half copy re-encoded under its real topic.
        body = encode_record(
            topic="T",
            body=b"later",
            properties={**props, "TRANSACTION_CHECK_TIMES": "1"},
            queue_offset=9,
            physical_offset=4242,
        )
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=9,
            commit_log_offset=4242,
            msg_id=result.msg_id,
            transaction_id=result.msg_id,
            offset_msg_id="7F00000100002A9F0000000000001092",
        )
        request = RemotingCommand.request(
            RequestCode.CHECK_TRANSACTION_STATE, header.to_ext_fields(), bytes(body), oneway=True
        )
        broker.channels[-1].send(request)
        assert await producer.wait_checks_answered(1, timeout=5)
        await until(lambda: len(broker.ends) == 2)
    assert [m.body for m in asked] == [b"later"] and asked[0].topic == "T"
    answer = broker.headers()[1]
    assert answer.from_transaction_check is True and answer.commit_or_rollback == 8
    assert (answer.tran_state_table_offset, answer.commit_log_offset) == (9, 4242)
    assert answer.producer_group == "tpg"
    assert answer.msg_id == result.msg_id == answer.transaction_id


async def test_answering_builds_a_demo_producer(cluster: InMemoryCluster) -> None:
    producer = TransactionProducer.answering(
        "unknown", "commit", "tpg3", NAMESRV, client_config=cluster.config()
    )
    async with producer:
        result = await producer.send_message_in_transaction(make_message("T", "d"))
        msg = MessageExt(topic="T", body=b"d")
        assert await producer.check_local_transaction(msg) is COMMIT
    assert result.local_transaction_state is UNKNOWN
    same = TransactionProducer.answering(ROLLBACK)
    assert await same.check_local_transaction(MessageExt(topic="T")) is ROLLBACK

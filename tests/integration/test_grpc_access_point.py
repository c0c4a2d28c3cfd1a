"""The gRPC access point of a broker in this process, called through grpc.aio: each call's
answer and status code as RocketMQ 5's proxy gives them, and what reaches the broker."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc import aio

from mqcore.broker.controller import BrokerController
from mqcore.message import MessageExt
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.proxy.grpc_v2.service_pb2_grpc import MessagingServiceStub
from mqcore.proxy.local import LocalAccessPoint
from mqcore.remoting.tls import TlsMode
from mqcore.store.metadata import PERM_READ, TopicConfig
from tests.support import until
from tests.support.inproc import running_broker
from tests.support.tls_certs import make_pki

CLIENT = (("x-mq-client-id", "test-client@1"), ("x-mq-language", "PYTHON"))


@dataclass
class Grpc:
    broker: BrokerController
    access_point: LocalAccessPoint
    stub: Any
    channel: Any

    async def settings(self, settings: pb.Settings, metadata: Any = CLIENT) -> Any:
        """Open a Telemetry stream, send ``settings``; the stream and the server's answer."""
        stream = self.stub.Telemetry(metadata=metadata)
        await stream.write(spb.TelemetryCommand(settings=settings))
        return stream, await stream.read()

    async def producer(self, *topics: str) -> Any:
        publishing = pb.Publishing(topics=[pb.Resource(name=t) for t in topics])
        stream, answer = await self.settings(
            pb.Settings(client_type=pb.ClientType.PRODUCER, publishing=publishing)
        )
        assert answer.status.code == pb.Code.OK, answer
        return stream


@pytest.fixture
async def rpc(tmp_path: Path) -> AsyncIterator[Grpc]:
    async with running_broker(tmp_path) as broker:
        broker.topics.update(TopicConfig("Orders", 4, 4))
        access_point = LocalAccessPoint(broker, 0)
        await access_point.start()
        try:
            async with aio.insecure_channel(access_point.address) as channel:
                yield Grpc(broker, access_point, MessagingServiceStub(channel), channel)
        finally:
            await access_point.stop()


def message(topic: str = "Orders", body: bytes = b"hello", **system: Any) -> pb.Message:
    sp = pb.SystemProperties(message_id=uuid.uuid4().hex.upper(), **system)
    return pb.Message(topic=pb.Resource(name=topic), body=body, system_properties=sp)


def stored(broker: BrokerController, topic: str, queues: int = 4) -> dict[str, MessageExt]:
    """Every message of ``topic`` in the store, by unique key."""
    store, out = broker.store, {}
    for queue_id in range(queues):
        for offset in range(store.get_max_offset_in_queue(topic, queue_id)):
            phy = store.get_commit_log_offset_in_queue(topic, queue_id, offset)
            msg = store.look_message(phy)
            out[msg.properties["UNIQ_KEY"]] = msg
    return out


def route(topic: str) -> spb.QueryRouteRequest:
    return spb.QueryRouteRequest(topic=pb.Resource(name=topic))


async def test_a_route_names_the_access_point(rpc: Grpc) -> None:
    answer = await rpc.stub.QueryRoute(route("Orders"), metadata=CLIENT)
    assert (answer.status.code, answer.status.message) == (pb.Code.OK, "OK")
    assert [q.id for q in answer.message_queues] == [0, 1, 2, 3]
    queue = answer.message_queues[0]
    assert queue.permission == pb.Permission.READ_WRITE
    assert queue.broker.name == rpc.broker.config.broker_name and queue.broker.id == 0
    address = queue.broker.endpoints.addresses[0]
    assert (address.host, address.port) == ("127.0.0.1", rpc.access_point.port)
    assert queue.broker.endpoints.scheme == pb.AddressScheme.IPv4
    assert set(queue.accept_message_types) == {
        pb.MessageType.NORMAL,
        pb.MessageType.FIFO,
        pb.MessageType.DELAY,
        pb.MessageType.TRANSACTION,
    }


async def test_a_route_of_read_and_write_queues_in_rocketmq_5_s_order(rpc: Grpc) -> None:
    rpc.broker.topics.update(TopicConfig("Uneven", 3, 5))
    answer = await rpc.stub.QueryRoute(route("Uneven"), metadata=CLIENT)
    kinds = [q.permission for q in answer.message_queues]
    assert kinds == [pb.Permission.WRITE] * 2 + [pb.Permission.READ_WRITE] * 3
    rpc.broker.topics.update(TopicConfig("ReadOnly", 2, 2, perm=PERM_READ))
    answer = await rpc.stub.QueryRoute(route("ReadOnly"), metadata=CLIENT)
    assert [q.permission for q in answer.message_queues] == [pb.Permission.READ] * 2


@pytest.mark.parametrize(
    ("topic", "metadata", "code", "text"),
    [
        ("Orders", (), pb.Code.CLIENT_ID_REQUIRED, "client id cannot be empty"),
        ("Missing", CLIENT, pb.Code.TOPIC_NOT_FOUND, "Missing"),
        ("RMQ_SYS_TRANS_HALF_TOPIC", CLIENT, pb.Code.ILLEGAL_TOPIC, "system topic"),
        ("bad topic!", CLIENT, pb.Code.ILLEGAL_TOPIC, "illegal characters"),
    ],
)
async def test_route_refusals(rpc: Grpc, topic: str, metadata: Any, code: int, text: str) -> None:
    answer = await rpc.stub.QueryRoute(route(topic), metadata=metadata)
    assert answer.status.code == code and text in answer.status.message
    assert not answer.message_queues


async def test_settings_handshake_and_heartbeat_register_a_producer(rpc: Grpc) -> None:
    heartbeat = spb.HeartbeatRequest(client_type=pb.ClientType.PRODUCER)
    before = await rpc.stub.Heartbeat(heartbeat, metadata=CLIENT)
    assert before.status.code == pb.Code.UNRECOGNIZED_CLIENT_TYPE
    assert before.status.message == "cannot find client settings for this client"
    publishing = pb.Publishing(topics=[pb.Resource(name="Orders")], max_body_size=1 << 27)
    client = pb.Settings(client_type=pb.ClientType.PRODUCER, publishing=publishing)
    client.request_timeout.FromSeconds(3)
    stream, answer = await rpc.settings(client)
    assert answer.status.code == pb.Code.OK
    server = answer.settings
    assert server.publishing.max_body_size == 4 * 1024 * 1024  # the broker's limit, not 128 MiB
    assert server.publishing.validate_message_type
    assert server.backoff_policy.max_attempts == 3
    assert server.backoff_policy.exponential_backoff.initial.ToMilliseconds() == 10
    assert server.backoff_policy.exponential_backoff.max.ToMilliseconds() == 1000
    assert server.backoff_policy.exponential_backoff.multiplier == 2
    assert server.request_timeout.seconds == 3 and not server.metric.on
    assert "Orders" in rpc.broker.producers.groups  # a 5.x producer's group is its topic
    after = await rpc.stub.Heartbeat(heartbeat, metadata=CLIENT)
    assert after.status.code == pb.Code.OK
    bye = await rpc.stub.NotifyClientTermination(
        spb.NotifyClientTerminationRequest(), metadata=CLIENT
    )
    assert bye.status.code == pb.Code.OK
    assert "Orders" not in rpc.broker.producers.groups
    await until(lambda: stream.done(), 5, "the telemetry stream ended with the client")
    again = await rpc.stub.NotifyClientTermination(
        spb.NotifyClientTerminationRequest(), metadata=CLIENT
    )
    assert again.status.code == pb.Code.UNRECOGNIZED_CLIENT_TYPE


async def test_consumer_settings_and_assignment(rpc: Grpc) -> None:
    subscription = pb.Subscription(
        group=pb.Resource(name="billing"),
        subscriptions=[
            pb.SubscriptionEntry(
                topic=pb.Resource(name="Orders"),
                expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="paid||new"),
            )
        ],
    )
    settings = pb.Settings(client_type=pb.ClientType.SIMPLE_CONSUMER, subscription=subscription)
    stream, answer = await rpc.settings(settings)
    assert answer.status.code == pb.Code.OK
    assert answer.settings.subscription.receive_batch_size == 32
    assert answer.settings.subscription.long_polling_timeout.seconds == 20
    assert answer.settings.backoff_policy.max_attempts == 17  # retryMaxTimes 16 + 1
    delays = [d.ToMilliseconds() for d in answer.settings.backoff_policy.customized_backoff.next]
    assert delays[:5] == [1000, 5000, 10_000, 30_000, 60_000] and delays[-1] == 7_200_000
    assert not answer.settings.subscription.fifo
    group = rpc.broker.consumers.get_group("billing")
    assert group is not None and group.subscriptions["Orders"].tags_set == {"paid", "new"}
    assignment = await rpc.stub.QueryAssignment(
        spb.QueryAssignmentRequest(
            topic=pb.Resource(name="Orders"), group=pb.Resource(name="billing")
        ),
        metadata=CLIENT,
    )
    assert assignment.status.code == pb.Code.OK
    (one,) = assignment.assignments
    assert one.message_queue.id == -1 and one.message_queue.permission == pb.Permission.READ_WRITE
    stream.cancel()


async def test_settings_without_publishing_or_subscription_abort_the_stream(rpc: Grpc) -> None:
    stream = rpc.stub.Telemetry(metadata=CLIENT)
    await stream.write(spb.TelemetryCommand(settings=pb.Settings()))
    with pytest.raises(aio.AioRpcError) as caught:
        await stream.read()
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "there is no publishing or subscription data in settings" in str(caught.value.details())


async def test_sends_reach_the_store(rpc: Grpc) -> None:
    await rpc.producer("Orders")
    fifo = [message(tag="t", keys=["k"], message_group="g7") for _ in range(3)]
    answers = [
        await rpc.stub.SendMessage(spb.SendMessageRequest(messages=[m]), metadata=CLIENT)
        for m in fifo
    ]
    assert all(a.status.code == pb.Code.OK and a.status.message == "OK" for a in answers)
    ids = [m.system_properties.message_id for m in fifo]
    await until(lambda: len(stored(rpc.broker, "Orders")) == 3, 5, "the sends dispatched")
    in_store = [stored(rpc.broker, "Orders")[i] for i in ids]
    assert len({m.queue_id for m in in_store}) == 1  # one message group, one queue
    assert [a.entries[0].offset for a in answers] == [m.queue_offset for m in in_store]
    for msg in in_store:
        assert msg.tags == "t" and msg.keys == ["k"] and msg.properties["__SHARDINGKEY"] == "g7"
        assert msg.born_host[0] == "127.0.0.1"  # the peer's address, as for remoting


async def test_a_batch_send_answers_an_entry_a_message(rpc: Grpc) -> None:
    batch = [message(body=f"m{n}".encode()) for n in range(3)]
    answer = await rpc.stub.SendMessage(spb.SendMessageRequest(messages=batch), metadata=CLIENT)
    assert answer.status.code == pb.Code.OK, answer
    assert [e.message_id for e in answer.entries] == [m.system_properties.message_id for m in batch]
    first = answer.entries[0].offset
    assert [e.offset for e in answer.entries] == [first, first + 1, first + 2]


@pytest.mark.parametrize(
    ("messages", "code", "text"),
    [
        ([], pb.Code.MESSAGE_CORRUPTED, "no message to send"),
        ([message(), message(topic="Other")], pb.Code.MESSAGE_CORRUPTED, "not same"),
        ([message(topic="SCHEDULE_TOPIC_XXXX")], pb.Code.ILLEGAL_TOPIC, "system topic"),
        ([message(body=b"")], pb.Code.MESSAGE_BODY_EMPTY, "empty"),
    ],
)
async def test_send_refusals(rpc: Grpc, messages: list[pb.Message], code: int, text: str) -> None:
    answer = await rpc.stub.SendMessage(spb.SendMessageRequest(messages=messages), metadata=CLIENT)
    assert answer.status.code == code and text in answer.status.message
    assert not answer.entries


async def test_a_refusal_of_the_broker_is_the_send_s_status(rpc: Grpc) -> None:
    rpc.broker.topics.update(TopicConfig("NoWrite", 4, 4, perm=PERM_READ))
    answer = await rpc.stub.SendMessage(
        spb.SendMessageRequest(messages=[message(topic="NoWrite")]), metadata=CLIENT
    )
    assert answer.status.code == pb.Code.FORBIDDEN and answer.status.message == "no writable queue"
    rpc.broker.config.auto_create_topic_enable = False
    answer = await rpc.stub.SendMessage(
        spb.SendMessageRequest(messages=[message(topic="NotThere")]), metadata=CLIENT
    )
    assert answer.status.code == pb.Code.TOPIC_NOT_FOUND, answer
    assert "NotThere" in answer.status.message


async def test_a_transaction_is_ended_by_its_id(rpc: Grpc) -> None:
    half = message(message_type=pb.MessageType.TRANSACTION, tag="tx")
    answer = await rpc.stub.SendMessage(spb.SendMessageRequest(messages=[half]), metadata=CLIENT)
    entry = answer.entries[0]
    assert answer.status.code == pb.Code.OK
    assert entry.transaction_id == entry.message_id == half.system_properties.message_id
    half_topic = "RMQ_SYS_TRANS_HALF_TOPIC"
    await until(lambda: entry.message_id in stored(rpc.broker, half_topic, 1), 5, "the half")
    end = spb.EndTransactionRequest(
        topic=pb.Resource(name="Orders"),
        message_id=entry.message_id,
        transaction_id=entry.transaction_id,
        resolution=pb.TransactionResolution.COMMIT,
        source=pb.TransactionSource.SOURCE_CLIENT,
    )
    ended = await rpc.stub.EndTransaction(end, metadata=CLIENT)
    assert ended.status.code == pb.Code.OK

    def committed() -> bool:
        return sum(rpc.broker.store.get_max_offset_in_queue("Orders", q) for q in range(4)) == 1

    await until(committed, 5, "the committed message in Orders")
    again = await rpc.stub.EndTransaction(end, metadata=CLIENT)
    assert again.status.code == pb.Code.INTERNAL_SERVER_ERROR
    assert again.status.message == "cannot found transaction data"
    end.transaction_id = " "
    blank = await rpc.stub.EndTransaction(end, metadata=CLIENT)
    assert blank.status.code == pb.Code.INVALID_TRANSACTION_ID


@pytest.mark.parametrize("name", ["PullMessage", "UpdateOffset", "GetOffset", "QueryOffset"])
async def test_calls_by_queue_offset_are_not_implemented(rpc: Grpc, name: str) -> None:
    request = getattr(spb, f"{name}Request")()
    answer = getattr(rpc.stub, name)(request, metadata=CLIENT)
    if name == "PullMessage":
        answers = [a async for a in answer]
        assert len(answers) == 1
        answer = answers[0]
    else:
        answer = await answer
    assert answer.status.code == pb.Code.NOT_IMPLEMENTED
    assert name in answer.status.message


async def test_a_client_the_broker_expires_is_forgotten_with_its_settings(rpc: Grpc) -> None:
    stream = await rpc.producer("Orders")
    heartbeat = spb.HeartbeatRequest(client_type=pb.ClientType.PRODUCER)
    assert (await rpc.stub.Heartbeat(heartbeat, metadata=CLIENT)).status.code == pb.Code.OK
    (expired,) = rpc.broker.producers.scan_not_active(-1)  # silent for longer than -1 s
    assert expired.client_id == "test-client@1"
    await until(lambda: stream.done(), 5, "its telemetry stream ended")
    answer = await rpc.stub.Heartbeat(heartbeat, metadata=CLIENT)
    assert answer.status.code == pb.Code.UNRECOGNIZED_CLIENT_TYPE
    assert "Orders" not in rpc.broker.producers.groups


async def test_the_grpc_port_serves_tls_when_the_broker_does(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    tls = {
        "tls_server_mode": TlsMode.ENFORCING,
        "tls_server_cert_path": str(pki.server_cert),
        "tls_server_key_path": str(pki.server_key),
    }
    async with running_broker(tmp_path, **tls) as broker:
        broker.topics.update(TopicConfig("Orders", 4, 4))
        access_point = LocalAccessPoint(broker, 0)
        await access_point.start()
        try:
            trust = grpc.ssl_channel_credentials(root_certificates=pki.ca.read_bytes())
            async with aio.secure_channel(access_point.address, trust) as channel:
                answer = await MessagingServiceStub(channel).QueryRoute(
                    route("Orders"), metadata=CLIENT
                )
                assert answer.status.code == pb.Code.OK
            async with aio.insecure_channel(access_point.address) as channel:
                with pytest.raises(aio.AioRpcError) as caught:
                    await MessagingServiceStub(channel).QueryRoute(
                        route("Orders"), metadata=CLIENT, timeout=5
                    )
                assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        finally:
            await access_point.stop()

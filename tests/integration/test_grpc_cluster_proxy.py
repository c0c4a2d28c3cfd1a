"""The gRPC access point in cluster mode (`mq proxy`): a name server and two brokers in
this process, the proxy in front, called through grpc.aio. Routes name the proxy for every
queue of both brokers; each request reaches the broker that owns its queue."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc import aio

from mqcore.broker.controller import BrokerController
from mqcore.common.metadata import SubscriptionGroupConfig
from mqcore.message import MessageExt
from mqcore.proxy.cluster import ClusterAccessPoint
from mqcore.proxy.config import ProxyConfig
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.proxy.grpc_v2.service_pb2_grpc import MessagingServiceStub
from mqcore.remoting.tls import TlsMode
from tests.support import until
from tests.support.inproc import LiveCluster
from tests.support.tls_certs import make_pki

pytestmark = pytest.mark.cluster(brokers=("broker-a", "broker-b"), topics={"Orders": 4})

CLIENT = (("x-mq-client-id", "proxy-test@1"), ("x-mq-language", "PYTHON"))
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"


@dataclass
class Proxied:
    cluster: LiveCluster
    proxy: ClusterAccessPoint
    stub: Any

    def broker(self, name: str) -> BrokerController:
        return self.cluster.brokers[name]

    async def producer(self, *topics: str) -> Any:
        """A Telemetry stream whose settings say: a producer of ``topics``."""
        publishing = pb.Publishing(topics=[pb.Resource(name=t) for t in topics])
        stream = self.stub.Telemetry(metadata=CLIENT)
        settings = pb.Settings(client_type=pb.ClientType.PRODUCER, publishing=publishing)
        await stream.write(spb.TelemetryCommand(settings=settings))
        answer = await stream.read()
        assert answer.status.code == pb.Code.OK, answer
        return stream

    async def send(self, msg: pb.Message) -> spb.SendResultEntry:
        answer = await self.stub.SendMessage(
            spb.SendMessageRequest(messages=[msg]), metadata=CLIENT
        )
        assert answer.status.code == pb.Code.OK, answer
        return answer.entries[0]


@pytest.fixture
async def rpc(cluster: LiveCluster) -> AsyncIterator[Proxied]:
    config = ProxyConfig(namesrv_addr=cluster.addr, grpc_server_port=0, bind_address="127.0.0.1")
    proxy = ClusterAccessPoint(config)
    await proxy.start()
    try:
        async with aio.insecure_channel(proxy.address) as channel:
            yield Proxied(cluster, proxy, MessagingServiceStub(channel))
    finally:
        await proxy.stop()


def message(topic: str = "Orders", body: bytes = b"hello", **system: Any) -> pb.Message:
    sp = pb.SystemProperties(message_id=uuid.uuid4().hex.upper(), **system)
    return pb.Message(topic=pb.Resource(name=topic), body=body, system_properties=sp)


def stored(broker: BrokerController, topic: str, queues: int = 4) -> list[MessageExt]:
    """Every message of ``topic`` in the broker's store, queue by queue, in order."""
    store, out = broker.store, []
    for queue_id in range(queues):
        for offset in range(store.get_max_offset_in_queue(topic, queue_id)):
            out.append(
                store.look_message(store.get_commit_log_offset_in_queue(topic, queue_id, offset))
            )
    return out


def where(rpc: Proxied, topic: str = "Orders") -> dict[str, tuple[str, int]]:
    """Unique key -> (broker, queue id) of every stored message of ``topic``."""
    return {
        m.properties["UNIQ_KEY"]: (name, m.queue_id)
        for name in ("broker-a", "broker-b")
        for m in stored(rpc.broker(name), topic)
    }


async def test_a_route_names_the_proxy_for_every_queue_of_every_broker(rpc: Proxied) -> None:
    asked = pb.Endpoints(
        scheme=pb.AddressScheme.DOMAIN_NAME, addresses=[pb.Address(host="mq.example", port=80)]
    )
    request = spb.QueryRouteRequest(topic=pb.Resource(name="Orders"), endpoints=asked)
    answer = await rpc.stub.QueryRoute(request, metadata=CLIENT)
    assert answer.status.code == pb.Code.OK, answer
    queues = [(q.broker.name, q.id) for q in answer.message_queues]
    assert queues == [(b, i) for b in ("broker-a", "broker-b") for i in range(4)]
    for queue in answer.message_queues:  # the address the client used, at the proxy's port
        (address,) = queue.broker.endpoints.addresses
        assert (address.host, address.port) == ("mq.example", rpc.proxy.port)
        assert queue.broker.endpoints.scheme == pb.AddressScheme.DOMAIN_NAME
        assert queue.permission == pb.Permission.READ_WRITE and queue.broker.id == 0
    bare = await rpc.stub.QueryRoute(spb.QueryRouteRequest(topic=request.topic), metadata=CLIENT)
    (address,) = bare.message_queues[0].broker.endpoints.addresses
    assert (address.host, address.port) == ("127.0.0.1", rpc.proxy.port)
    missing = spb.QueryRouteRequest(topic=pb.Resource(name="Nowhere"))
    refused = await rpc.stub.QueryRoute(missing, metadata=CLIENT)
    assert refused.status.code == pb.Code.TOPIC_NOT_FOUND and "Nowhere" in refused.status.message


async def test_sends_reach_both_brokers_and_a_message_group_keeps_one_queue(rpc: Proxied) -> None:
    await rpc.producer("Orders")
    plain = [await rpc.send(message(body=f"n{i}".encode())) for i in range(8)]
    group = [await rpc.send(message(body=f"g{i}".encode(), message_group="g1")) for i in range(5)]
    ids = [e.message_id for e in plain + group]
    await until(lambda: set(ids) <= set(where(rpc)), 5, "every send stored")
    placed = where(rpc)
    assert {placed[e.message_id][0] for e in plain} == {"broker-a", "broker-b"}
    (queue,) = {placed[e.message_id] for e in group}
    in_queue = [m for m in stored(rpc.broker(queue[0]), "Orders") if m.queue_id == queue[1]]
    assert [m.body for m in in_queue if m.properties.get("__SHARDINGKEY") == "g1"] == [
        f"g{i}".encode() for i in range(5)
    ]
    offsets = {m.properties["UNIQ_KEY"]: m.queue_offset for m in in_queue}
    assert [e.offset for e in group] == [offsets[e.message_id] for e in group]


async def test_a_topic_without_a_route_is_not_found_for_a_send(rpc: Proxied) -> None:
    answer = await rpc.stub.SendMessage(
        spb.SendMessageRequest(messages=[message(topic="Nowhere")]), metadata=CLIENT
    )
    assert answer.status.code == pb.Code.TOPIC_NOT_FOUND and "Nowhere" in answer.status.message


async def test_a_producer_is_registered_with_every_broker_and_leaves_them_all(
    rpc: Proxied,
) -> None:
    stream = await rpc.producer("Orders")
    for name in ("broker-a", "broker-b"):
        (info,) = rpc.broker(name).producers.group_channels("Orders")
        assert info.client_id == "proxy-test@1"  # the SDK's id, on the proxy's connection
    heartbeat = spb.HeartbeatRequest(client_type=pb.ClientType.PRODUCER)
    assert (await rpc.stub.Heartbeat(heartbeat, metadata=CLIENT)).status.code == pb.Code.OK
    bye = await rpc.stub.NotifyClientTermination(
        spb.NotifyClientTerminationRequest(), metadata=CLIENT
    )
    assert bye.status.code == pb.Code.OK

    def forgotten() -> bool:
        return not any(
            rpc.broker(n).producers.group_channels("Orders") for n in rpc.cluster.brokers
        )

    await until(forgotten, 5, "both brokers forgot the producer")
    await until(lambda: stream.done(), 5, "the telemetry stream ended")


async def test_consumer_settings_reach_both_brokers_and_each_is_an_assignment(
    rpc: Proxied,
) -> None:
    entry = pb.SubscriptionEntry(
        topic=pb.Resource(name="Orders"),
        expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="*"),
    )
    subscription = pb.Subscription(group=pb.Resource(name="billing"), subscriptions=[entry])
    for broker in rpc.cluster.brokers.values():  # the group's config, read by the proxy
        broker.groups.update(SubscriptionGroupConfig("billing", retry_max_times=5))
    stream = rpc.stub.Telemetry(metadata=CLIENT)
    settings = pb.Settings(client_type=pb.ClientType.SIMPLE_CONSUMER, subscription=subscription)
    await stream.write(spb.TelemetryCommand(settings=settings))
    answer = await stream.read()
    assert answer.status.code == pb.Code.OK
    assert answer.settings.backoff_policy.max_attempts == 6  # retryMaxTimes 5 + 1
    for name in ("broker-a", "broker-b"):
        assert rpc.broker(name).consumers.get_group("billing") is not None
    request = spb.QueryAssignmentRequest(topic=entry.topic, group=subscription.group)
    answer = await rpc.stub.QueryAssignment(request, metadata=CLIENT)
    assert answer.status.code == pb.Code.OK
    assert [(a.message_queue.broker.name, a.message_queue.id) for a in answer.assignments] == [
        ("broker-a", -1),
        ("broker-b", -1),
    ]
    stream.cancel()


async def test_a_fifo_group_gets_an_assignment_a_queue_of_every_broker(rpc: Proxied) -> None:
    for broker in rpc.cluster.brokers.values():
        broker.groups.update(SubscriptionGroupConfig("ordered", consume_message_orderly=True))
    request = spb.QueryAssignmentRequest(
        topic=pb.Resource(name="Orders"), group=pb.Resource(name="ordered")
    )
    answer = await rpc.stub.QueryAssignment(request, metadata=CLIENT)
    assert answer.status.code == pb.Code.OK, answer
    assert [(a.message_queue.broker.name, a.message_queue.id) for a in answer.assignments] == [
        (b, i) for b in ("broker-a", "broker-b") for i in range(4)
    ]


def in_flight(rpc: Proxied, group: str) -> dict[str, int]:
    """Broker -> the group's messages of Orders popped and not acknowledged there."""
    now = int(time.time() * 1000)
    out = {}
    for name, broker in rpc.cluster.brokers.items():
        counts = [broker.pop.inflight.count("Orders", group, q, now) for q in range(4)]
        out[name] = sum(c.in_flight for c in counts if c is not None)
    return out


async def test_a_consumer_receives_at_each_assignment_s_broker_and_acks_where_it_popped(
    rpc: Proxied,
) -> None:
    """The SDK's way: a receive names an assignment's broker; the ack goes to the broker
    its receipt handle names, with no route of its own (the proxy finds the broker by the
    topic named after it when no cached route names it)."""
    await rpc.producer("Orders")
    sent = [(await rpc.send(message(body=f"r{i}".encode()))).message_id for i in range(8)]
    await until(lambda: set(sent) <= set(where(rpc)), 5, "every send stored")
    placed = where(rpc)
    assert {placed[i][0] for i in sent} == {"broker-a", "broker-b"}
    group = pb.Resource(name="receivers")
    request = spb.QueryAssignmentRequest(topic=pb.Resource(name="Orders"), group=group)
    assignments = (await rpc.stub.QueryAssignment(request, metadata=CLIENT)).assignments
    got: dict[str, pb.Message] = {}
    asked: dict[str, set[str]] = {}

    async def receive_each() -> bool:
        for assignment in assignments:
            receive = spb.ReceiveMessageRequest(
                group=group,
                message_queue=assignment.message_queue,
                filter_expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="*"),
                batch_size=32,
            )
            receive.invisible_duration.FromSeconds(30)
            receive.long_polling_timeout.FromSeconds(5)
            stream = rpc.stub.ReceiveMessage(receive, metadata=CLIENT, timeout=10)
            async for answer in stream:
                if answer.HasField("message"):
                    got[answer.message.system_properties.message_id] = answer.message
                    broker = assignment.message_queue.broker.name
                    asked.setdefault(broker, set()).add(answer.message.system_properties.message_id)
        return len(got) >= len(sent)

    await until(receive_each, 20, lambda: f"{len(got)} of {len(sent)} received")
    assert sorted(got) == sorted(sent)
    for broker, ids in asked.items():  # each popped at the broker its assignment names
        assert {placed[i][0] for i in ids} == {broker}
    for message_id, msg in got.items():
        assert msg.system_properties.receipt_handle.split(" ")[5] == placed[message_id][0]
    assert in_flight(rpc, "receivers") == {"broker-a": 4, "broker-b": 4}
    routes = rpc.proxy.brokers.routes
    for topic in list(routes.routes):  # as after a restart: the handles name the brokers
        routes.forget(topic)
    entries = [
        spb.AckMessageEntry(message_id=i, receipt_handle=m.system_properties.receipt_handle)
        for i, m in got.items()
    ]
    ack = spb.AckMessageRequest(group=group, topic=pb.Resource(name="Orders"), entries=entries)
    answer = await rpc.stub.AckMessage(ack, metadata=CLIENT)
    assert answer.status.code == pb.Code.OK, answer
    assert [e.status.code for e in answer.entries] == [pb.Code.OK] * len(sent)
    assert in_flight(rpc, "receivers") == {"broker-a": 0, "broker-b": 0}
    held = spb.ReceiveMessageRequest(
        group=group,
        message_queue=assignments[0].message_queue,
        filter_expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="*"),
        batch_size=32,
    )
    held.invisible_duration.FromSeconds(30)
    held.long_polling_timeout.FromSeconds(4)  # longer than a remoting request's 3 s
    started = time.monotonic()
    stream = rpc.stub.ReceiveMessage(held, metadata=CLIENT, timeout=10)
    (first, *_) = [answer async for answer in stream]
    assert first.status.code == pb.Code.MESSAGE_NOT_FOUND, first  # not PROXY_TIMEOUT
    assert time.monotonic() - started >= 3.5, "the broker held the poll"


async def test_a_group_s_config_is_read_again_once_its_refresh_is_over(rpc: Proxied) -> None:
    """Receives read it, so the proxy keeps what the brokers answered for 20 s."""
    brokers = rpc.proxy.brokers
    await brokers.queues("Orders")  # the route brings both masters

    def configure(retry_max_times: int) -> None:
        for broker in rpc.cluster.brokers.values():
            broker.groups.update(SubscriptionGroupConfig("cached", retry_max_times=retry_max_times))

    configure(5)
    first = await brokers.group_config("cached")
    assert first is not None and first.retry_max_times == 5
    configure(7)
    kept = await brokers.group_config("cached")
    assert kept is not None and kept.retry_max_times == 5, "within the refresh"
    brokers.group_config_refresh = 0
    again = await brokers.group_config("cached")
    assert again is not None and again.retry_max_times == 7


async def test_a_transaction_ends_at_the_broker_that_holds_its_half_message(rpc: Proxied) -> None:
    await rpc.producer("Orders")
    halves = [await rpc.send(message(message_type=pb.MessageType.TRANSACTION)) for _ in range(4)]
    holders = {}
    for entry in halves:  # round robin: both brokers hold one
        key = entry.message_id
        await until(lambda key=key: key in where(rpc, HALF_TOPIC), 5, "the half message")
        holders[entry.message_id] = where(rpc, HALF_TOPIC)[entry.message_id][0]
    assert set(holders.values()) == {"broker-a", "broker-b"}
    for entry in halves:
        end = spb.EndTransactionRequest(
            topic=pb.Resource(name="Orders"),
            message_id=entry.message_id,
            transaction_id=entry.transaction_id,
            resolution=pb.TransactionResolution.COMMIT,
            source=pb.TransactionSource.SOURCE_CLIENT,
        )
        assert (await rpc.stub.EndTransaction(end, metadata=CLIENT)).status.code == pb.Code.OK

    def committed() -> bool:
        placed = where(rpc)
        return all(placed.get(k, ("",))[0] == holder for k, holder in holders.items())

    await until(committed, 5, "each committed message on its half message's broker")
    assert len(where(rpc)) == len(holders)  # nothing else committed


@pytest.mark.cluster(transaction_time_out=300, transaction_check_interval=100)
async def test_a_check_back_of_either_broker_reaches_the_producer_s_stream(rpc: Proxied) -> None:
    stream = await rpc.producer("Orders")
    # round robin over the 8 queues, a's first: the 4th and 5th land on broker-b
    halves = [await rpc.send(message(message_type=pb.MessageType.TRANSACTION)) for _ in range(5)]
    pending = {e.message_id for e in halves}
    seen: set[str] = set()
    while pending - seen:  # each is asked of the producer until it answers
        command = await stream.read()
        check = command.recover_orphaned_transaction_command
        transaction_id = check.transaction_id
        if transaction_id not in pending or transaction_id in seen:
            continue
        seen.add(transaction_id)
        end = spb.EndTransactionRequest(
            topic=pb.Resource(name="Orders"),
            message_id=check.message.system_properties.message_id,
            transaction_id=transaction_id,
            resolution=pb.TransactionResolution.COMMIT,
            source=pb.TransactionSource.SOURCE_SERVER_CHECK,
        )
        assert (await rpc.stub.EndTransaction(end, metadata=CLIENT)).status.code == pb.Code.OK
    holders = {k: where(rpc, HALF_TOPIC)[k][0] for k in pending}
    assert set(holders.values()) == {"broker-a", "broker-b"}

    def committed() -> bool:
        placed = where(rpc)
        return all(placed.get(k, ("",))[0] == holder for k, holder in holders.items())

    await until(committed, 5, "each committed, after its check, on its half message's broker")
    assert len(where(rpc)) == len(pending)  # nothing else committed
    stream.cancel()


async def test_a_silent_client_is_forgotten_by_the_proxy_and_the_brokers(
    cluster: LiveCluster,
) -> None:
    config = ProxyConfig(namesrv_addr=cluster.addr, grpc_server_port=0, bind_address="127.0.0.1")
    proxy = ClusterAccessPoint(config, client_idle=0.3, client_scan_interval=0.05)
    await proxy.start()
    try:
        async with aio.insecure_channel(proxy.address) as channel:
            rpc = Proxied(cluster, proxy, MessagingServiceStub(channel))
            stream = await rpc.producer("Orders")
            assert all(b.producers.group_channels("Orders") for b in cluster.brokers.values())

            def forgotten() -> bool:
                brokers = cluster.brokers.values()
                return not any(b.producers.group_channels("Orders") for b in brokers)

            await until(forgotten, 5, "the silent producer unregistered at both brokers")
            assert len(proxy.service.clients) == 0
            await until(lambda: stream.done(), 5, "its telemetry stream ended")
    finally:
        await proxy.stop()


async def test_the_proxy_serves_tls_when_its_keys_say_so(
    cluster: LiveCluster, tmp_path: Path
) -> None:
    pki = make_pki(tmp_path / "pki")
    config = ProxyConfig(
        namesrv_addr=cluster.addr,
        grpc_server_port=0,
        bind_address="127.0.0.1",
        tls_server_mode=TlsMode.ENFORCING,
        tls_server_cert_path=str(pki.server_cert),
        tls_server_key_path=str(pki.server_key),
    )
    proxy = ClusterAccessPoint(config)
    await proxy.start()
    request = spb.QueryRouteRequest(topic=pb.Resource(name="Orders"))
    try:
        trust = grpc.ssl_channel_credentials(root_certificates=pki.ca.read_bytes())
        async with aio.secure_channel(proxy.address, trust) as channel:
            answer = await MessagingServiceStub(channel).QueryRoute(request, metadata=CLIENT)
            assert answer.status.code == pb.Code.OK and len(answer.message_queues) == 8
        async with aio.insecure_channel(proxy.address) as channel:
            with pytest.raises(aio.AioRpcError) as caught:
                await MessagingServiceStub(channel).QueryRoute(request, metadata=CLIENT, timeout=5)
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await proxy.stop()


async def test_a_name_server_that_does_not_answer_is_the_call_s_status(tmp_path: Path) -> None:
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        nowhere = f"127.0.0.1:{closed.getsockname()[1]}"
    config = ProxyConfig(namesrv_addr=nowhere, grpc_server_port=0, bind_address="127.0.0.1")
    proxy = ClusterAccessPoint(config)
    await proxy.start()
    try:
        async with aio.insecure_channel(proxy.address) as channel:
            stub = MessagingServiceStub(channel)
            route = await stub.QueryRoute(
                spb.QueryRouteRequest(topic=pb.Resource(name="Orders")), metadata=CLIENT
            )
            send = await stub.SendMessage(
                spb.SendMessageRequest(messages=[message()]), metadata=CLIENT
            )
        for answer in (route, send):
            assert answer.status.code == pb.Code.INTERNAL_SERVER_ERROR, answer
            assert nowhere in answer.status.message
    finally:
        await proxy.stop()

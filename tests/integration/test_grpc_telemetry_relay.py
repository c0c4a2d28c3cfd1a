"""What an admin asks of a consumer (mqadmin consumeMessage, consumerStatus -s) reaching a
gRPC client over its Telemetry stream, as RocketMQ 5's proxy asks it: the broker's
CONSUME_MESSAGE_DIRECTLY is a VerifyMessageCommand, GET_CONSUMER_RUNNING_INFO with the
stacks a PrintThreadStackTraceCommand, each answered by nonce. The same through the
broker's own access point (local mode) and through `mq proxy` (cluster mode), where the
broker sends the request to the proxy's connection."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from grpc import aio

from mqcore.broker.controller import BrokerController
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers.admin import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
)
from mqcore.proxy.cluster import ClusterAccessPoint
from mqcore.proxy.config import ProxyConfig
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.proxy.grpc_v2.service_pb2_grpc import MessagingServiceStub
from mqcore.store.metadata import TopicConfig
from tests.support import until
from tests.support.clients import TestClient
from tests.support.grpc_access import access_point_stub
from tests.support.inproc import LIVE_STORE, LiveCluster, running_broker

pytestmark = pytest.mark.timeout(60)

CLIENT_ID = "relay-client@1"
GROUP = "relay-cg"
META = (("x-mq-client-id", CLIENT_ID), ("x-mq-language", "PYTHON"))

Answerer = Callable[[spb.TelemetryCommand], spb.TelemetryCommand | None]


class Consumer:
    """A simple consumer's Telemetry stream that answers the server's commands with
    ``answer`` (None: no answer) and notes each command it got."""

    def __init__(self, stub: Any, answer: Answerer) -> None:
        self.stream = stub.Telemetry(metadata=META)
        self.answer = answer
        self.got: list[spb.TelemetryCommand] = []
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        subscription = pb.Subscription(
            group=pb.Resource(name=GROUP),
            subscriptions=[
                pb.SubscriptionEntry(
                    topic=pb.Resource(name="Orders"),
                    expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="*"),
                )
            ],
        )
        settings = pb.Settings(client_type=pb.ClientType.SIMPLE_CONSUMER, subscription=subscription)
        await self.stream.write(spb.TelemetryCommand(settings=settings))
        first = await self.stream.read()
        assert first.status.code == pb.Code.OK, first
        self._reader = asyncio.create_task(self._serve())

    async def _serve(self) -> None:
        while True:  # read(), not iteration: grpc.aio does not allow mixing the two
            command = await self.stream.read()
            if command is aio.EOF:
                return
            self.got.append(command)
            reply = self.answer(command)
            if reply is not None:
                await self.stream.write(reply)

    async def close(self) -> None:
        await self.stream.done_writing()
        if self._reader is not None:
            self._reader.cancel()


def answering(command: spb.TelemetryCommand) -> spb.TelemetryCommand | None:
    """A client that consumes what it is given and reports its stacks, as the Python
    SDK's would; a message with body ``bad`` is a failed consume."""
    kind = command.WhichOneof("command")
    if kind == "verify_message_command":
        verify = command.verify_message_command
        code = pb.Code.FAILED_TO_CONSUME_MESSAGE if verify.message.body == b"bad" else pb.Code.OK
        return spb.TelemetryCommand(
            status=pb.Status(code=code),
            verify_message_result=spb.VerifyMessageResult(nonce=verify.nonce),
        )
    if kind == "print_thread_stack_trace_command":
        nonce = command.print_thread_stack_trace_command.nonce
        trace = spb.ThreadStackTrace(nonce=nonce, thread_stack_trace="main: waiting")
        return spb.TelemetryCommand(status=pb.Status(code=pb.Code.OK), thread_stack_trace=trace)
    return None


def like_the_node_sdk(command: spb.TelemetryCommand) -> spb.TelemetryCommand | None:
    """The Node.js SDK's answer to a verify: the command back, NOT_IMPLEMENTED."""
    if command.WhichOneof("command") == "verify_message_command":
        nonce = command.verify_message_command.nonce
        return spb.TelemetryCommand(
            status=pb.Status(code=pb.Code.NOT_IMPLEMENTED),
            verify_message_command=spb.VerifyMessageCommand(nonce=nonce),
        )
    return None


async def send(stub: Any, body: bytes) -> None:
    sp = pb.SystemProperties(message_id=uuid.uuid4().hex.upper())
    msg = pb.Message(topic=pb.Resource(name="Orders"), body=body, system_properties=sp)
    answer = await stub.SendMessage(spb.SendMessageRequest(messages=[msg]), metadata=META)
    assert answer.status.code == pb.Code.OK, answer


def offset_ids(broker: BrokerController) -> list[str]:
    store = broker.store
    return [
        store.look_message(store.get_commit_log_offset_in_queue("Orders", 0, i)).msg_id
        for i in range(store.get_max_offset_in_queue("Orders", 0))
    ]


async def consume_directly(admin: TestClient, msg_id: str) -> RemotingCommand:
    header = ConsumeMessageDirectlyResultRequestHeader(GROUP, CLIENT_ID, msg_id)
    return await admin.invoke(RequestCode.CONSUME_MESSAGE_DIRECTLY, header.to_ext_fields())


async def running_info(admin: TestClient, jstack: bool) -> RemotingCommand:
    header = GetConsumerRunningInfoRequestHeader(GROUP, CLIENT_ID, jstack)
    return await admin.invoke(RequestCode.GET_CONSUMER_RUNNING_INFO, header.to_ext_fields())


async def check_the_relays(broker: BrokerController, stub: Any) -> None:
    """Both requests through ``broker``, to a client answering as the Python SDK's."""
    consumer = Consumer(stub, answering)
    await consumer.start()
    admin = TestClient(broker.broker_addr, "admin")
    try:
        await until(
            lambda: broker.consumers.find_channel(GROUP, CLIENT_ID) is not None, 10, "registered"
        )
        await send(stub, b"good")
        await send(stub, b"bad")
        good, bad = offset_ids(broker)

        answer = await consume_directly(admin, good)
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        result = json.loads(bytes(answer.body))
        assert (result["consumeResult"], result["remark"]) == ("CR_SUCCESS", "from gRPC client")
        (verify,) = [c for c in consumer.got if c.HasField("verify_message_command")]
        assert verify.verify_message_command.message.body == b"good"
        assert verify.verify_message_command.message.topic.name == "Orders"
        answer = await consume_directly(admin, bad)
        assert json.loads(bytes(answer.body))["consumeResult"] == "CR_LATER"

        stacks = await running_info(admin, jstack=True)
        assert stacks.code == ResponseCode.SUCCESS, stacks.remark
        assert json.loads(bytes(stacks.body))["jstack"] == "main: waiting"
        plain = await running_info(admin, jstack=False)
        assert plain.code == ResponseCode.SYSTEM_ERROR and "jstack" in (plain.remark or "")
    finally:
        await consumer.close()
        await admin.close()


async def test_local_mode_asks_the_client_over_its_stream(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        broker.topics.update(TopicConfig("Orders", 1, 1))
        async with access_point_stub(broker) as (_, stub):
            await check_the_relays(broker, stub)


async def test_cluster_mode_relays_what_the_broker_sends_the_proxy(tmp_path: Path) -> None:
    live = LiveCluster(tmp_path, store=dict(LIVE_STORE))
    async with live.running("broker-a") as cluster:
        await cluster.create_topic("Orders", 1)
        config = ProxyConfig(
            namesrv_addr=cluster.addr, grpc_server_port=0, bind_address="127.0.0.1"
        )
        proxy = ClusterAccessPoint(config)
        await proxy.start()
        try:
            async with aio.insecure_channel(proxy.address) as channel:
                await check_the_relays(cluster.brokers["broker-a"], MessagingServiceStub(channel))
        finally:
            await proxy.stop()


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[tuple[BrokerController, Any]]:
    async with running_broker(tmp_path) as broker:
        broker.topics.update(TopicConfig("Orders", 1, 1))
        async with access_point_stub(broker) as (_, stub):
            yield broker, stub


async def test_the_node_sdk_s_answer_and_a_client_gone_meanwhile(
    local: tuple[BrokerController, Any],
) -> None:
    """The Node.js SDK answers a verify with the command itself (NOT_IMPLEMENTED): a
    consume that threw, named so. A client that ends its stream while a request waits
    fails that request at once, not at the broker's timeout."""
    broker, stub = local
    admin = TestClient(broker.broker_addr, "admin")
    node = Consumer(stub, like_the_node_sdk)
    await node.start()
    try:
        await until(
            lambda: broker.consumers.find_channel(GROUP, CLIENT_ID) is not None, 10, "registered"
        )
        await send(stub, b"x")
        (msg_id,) = offset_ids(broker)
        answer = await consume_directly(admin, msg_id)
        result = json.loads(bytes(answer.body))
        assert result["consumeResult"] == "CR_THROW_EXCEPTION"
        assert "NOT_IMPLEMENTED" in result["remark"]

        waiting = asyncio.ensure_future(running_info(admin, jstack=True))  # node: no answer
        await until(
            lambda: any(c.HasField("print_thread_stack_trace_command") for c in node.got),
            5,
            "asked",
        )
        termination = spb.NotifyClientTerminationRequest(group=pb.Resource(name=GROUP))
        await stub.NotifyClientTermination(termination, metadata=META)
        gone = await asyncio.wait_for(waiting, 5)
        assert gone.code == ResponseCode.SYSTEM_ERROR and "gone" in (gone.remark or ""), gone
    finally:
        await node.close()
        await admin.close()

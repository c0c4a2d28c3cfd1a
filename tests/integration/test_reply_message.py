"""SEND_REPLY_MESSAGE / _V2 at the frame level: the broker pushes a reply to the client
named by REPLY_TO_CLIENT (PUSH_REPLY_MESSAGE_TO_CLIENT with 4.9.8's header fields),
stores it in ``<cluster>_REPLY_TOPIC`` and answers with 4.9.8's codes and remarks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.message import encode_properties
from mqcore.message.ids import create_offset_msg_id
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import HeartbeatData, ProducerData
from mqcore.protocol.headers import SendMessageRequestHeader
from mqcore.protocol.headers.reply import ReplyMessageRequestHeader
from mqcore.remoting import Channel, RemotingClient, RequestDispatcher
from tests.support.inproc import running_broker
from tests.support.polling import until

REPLY_TOPIC = "DefaultCluster_REPLY_TOPIC"
REQUESTER = "127.0.0.1@requester"


class Requester:
    """A producer connection that takes pushed replies (answering ``answer_code``)."""

    def __init__(self, addr: str, answer_code: int = ResponseCode.SUCCESS) -> None:
        self.addr = addr
        self.answer_code = answer_code
        self.pushed: list[RemotingCommand] = []
        dispatcher = RequestDispatcher()
        dispatcher.register(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, self._take)
        self.remoting = RemotingClient(dispatcher)

    def _take(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        self.pushed.append(request)
        return RemotingCommand.response_to(request, self.answer_code, "not mine")

    async def heartbeat(self) -> None:
        data = HeartbeatData(REQUESTER, [ProducerData("requester-group")], [])
        request = RemotingCommand.request(RequestCode.HEART_BEAT, {}, data.encode())
        response = await self.remoting.invoke(self.addr, request, timeout=5.0)
        assert response.code == ResponseCode.SUCCESS


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[BrokerController]:
    async with running_broker(tmp_path) as broker:
        yield broker


def reply_request(
    code: int, props: dict[str, str], body: bytes = b"the answer", queue_id: int = 0
) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="replier-group",
        topic=REPLY_TOPIC,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=1_700_000_000_123,
        flag=7,
        properties=encode_properties(props).decode(),
        reconsume_times=0,
    )
    ext = (
        header.to_v2().to_ext_fields()
        if code == RequestCode.SEND_REPLY_MESSAGE_V2
        else header.to_ext_fields()
    )
    return RemotingCommand.request(code, ext, body)


def reply_props(client: str | None = REQUESTER) -> dict[str, str]:
    props = {"MSG_TYPE": "reply", "CORRELATION_ID": "corr-1", "TTL": "3000", "CLUSTER": "x"}
    if client is not None:
        props["REPLY_TO_CLIENT"] = client
    return props


async def invoke(broker: BrokerController, request: RemotingCommand) -> RemotingCommand:
    client = RemotingClient()
    try:
        return await client.invoke(broker.broker_addr, request, timeout=15.0)
    finally:
        await client.close()


def stored(broker: BrokerController, queue_offset: int) -> tuple[int, bytes, dict[str, str]]:
    cq = broker.store.consume_queue(REPLY_TOPIC, 0)
    assert cq is not None
    phy = broker.store.get_commit_log_offset_in_queue(REPLY_TOPIC, 0, queue_offset)
    msg = broker.store.look_message(phy)
    return phy, msg.body, msg.properties


async def test_reply_topic_exists_at_start(broker: BrokerController) -> None:
    config = broker.topics.select(REPLY_TOPIC)
    assert config is not None
    assert (config.read_queue_nums, config.write_queue_nums, config.perm) == (1, 1, 6)


@pytest.mark.parametrize(
    "code", [RequestCode.SEND_REPLY_MESSAGE_V2, RequestCode.SEND_REPLY_MESSAGE]
)
async def test_reply_is_pushed_to_the_requester_and_stored(
    broker: BrokerController, code: int
) -> None:
    requester = Requester(broker.broker_addr)
    try:
        await requester.heartbeat()
        before = broker.store.get_max_offset_in_queue(REPLY_TOPIC, 0)
        start = int(time.time() * 1000)
        response = await invoke(broker, reply_request(code, reply_props()))
        assert response.code == ResponseCode.SUCCESS, response.remark
        assert len(requester.pushed) == 1
        push = requester.pushed[0]
        assert push.code == 326 == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT
        assert push.body == b"the answer"
        ext = push.ext_fields
        # 4.9.8's ReplyMessageRequestHeader field names, long form even for a V2 send.
        assert {
            "producerGroup",
            "topic",
            "defaultTopic",
            "defaultTopicQueueNums",
            "queueId",
            "sysFlag",
            "bornTimestamp",
            "flag",
            "bornHost",
            "storeHost",
            "storeTimestamp",
            "properties",
        } <= set(ext)
        header = ReplyMessageRequestHeader.from_command(push)
        assert header.producer_group == "replier-group"
        assert header.topic == REPLY_TOPIC
        assert header.born_timestamp == 1_700_000_000_123
        assert header.flag == 7
        assert header.store_host == broker.broker_addr
        assert header.born_host.startswith("127.0.0.1:")
        assert header.store_timestamp >= start
        props = dict(kv.split("\x01", 1) for kv in (header.properties or "").split("\x02") if kv)
        assert props["CORRELATION_ID"] == "corr-1"
        assert props["REPLY_TO_CLIENT"] == REQUESTER
        assert int(props["PUSH_REPLY_TIME"]) >= start

        # Stored in the reply topic; the answer names the stored record.
        await until(lambda: broker.store.get_max_offset_in_queue(REPLY_TOPIC, 0) == before + 1)
        phy, body, stored_props = stored(broker, before)
        assert body == b"the answer"
        assert stored_props["CORRELATION_ID"] == "corr-1"
        assert "PUSH_REPLY_TIME" not in stored_props
        answer = response.ext_fields
        assert answer["msgId"] == create_offset_msg_id(("127.0.0.1", broker.server.port), phy)
        assert (answer["queueId"], answer["queueOffset"]) == ("0", str(before))
        assert "MSG_REGION" in answer and "TRACE_ON" in answer
    finally:
        await requester.remoting.close()


async def test_unknown_client_gets_system_error_and_the_reply_is_still_stored(
    broker: BrokerController,
) -> None:
    before = broker.store.get_max_offset_in_queue(REPLY_TOPIC, 0)
    response = await invoke(
        broker,
        reply_request(RequestCode.SEND_REPLY_MESSAGE_V2, reply_props("10.0.0.9@gone")),
    )
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == "push reply message fail, channel of <10.0.0.9@gone> not found."
    await until(lambda: broker.store.get_max_offset_in_queue(REPLY_TOPIC, 0) == before + 1)
    assert response.ext_fields["queueOffset"] == str(before)


async def test_missing_reply_to_client(broker: BrokerController) -> None:
    response = await invoke(
        broker, reply_request(RequestCode.SEND_REPLY_MESSAGE_V2, reply_props(None))
    )
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == "reply message properties[REPLY_TO_CLIENT] is null"


async def test_requester_refusing_the_push(broker: BrokerController) -> None:
    requester = Requester(broker.broker_addr, answer_code=ResponseCode.SYSTEM_ERROR)
    try:
        await requester.heartbeat()
        response = await invoke(
            broker, reply_request(RequestCode.SEND_REPLY_MESSAGE_V2, reply_props())
        )
        assert len(requester.pushed) == 1
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert response.remark == f"push reply message to {REQUESTER}fail."
    finally:
        await requester.remoting.close()


async def test_requester_gone_silent_times_out(broker: BrokerController) -> None:
    processor = broker.server.dispatcher.processor_for(RequestCode.SEND_REPLY_MESSAGE_V2)
    owner = getattr(processor, "__self__", None)
    assert owner is not None
    owner.push_timeout = 0.3
    gate = asyncio.Event()
    requester = Requester(broker.broker_addr)

    async def stall(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        await gate.wait()
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS)

    requester.remoting.dispatcher.register(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, stall)
    try:
        await requester.heartbeat()
        response = await invoke(
            broker, reply_request(RequestCode.SEND_REPLY_MESSAGE_V2, reply_props())
        )
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert response.remark == f"push reply message to {REQUESTER}fail."
    finally:
        gate.set()
        await requester.remoting.close()


async def test_reply_to_a_forbidden_topic_is_refused_like_a_send(
    broker: BrokerController,
) -> None:
    request = reply_request(RequestCode.SEND_REPLY_MESSAGE_V2, reply_props(), queue_id=5)
    response = await invoke(broker, request)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "queueId[5] is illegal" in (response.remark or "")


async def test_store_reply_message_enable_false_pushes_without_storing(tmp_path: Path) -> None:
    async with running_broker(tmp_path, store_reply_message_enable=False) as broker:
        before = broker.store.max_phy_offset
        response = await invoke(
            broker,
            reply_request(RequestCode.SEND_REPLY_MESSAGE_V2, reply_props("10.0.0.9@gone")),
        )
        assert response.code == ResponseCode.SYSTEM_ERROR  # no such requester: the push fails
        # the store happens before the answer when enabled: nothing was appended
        assert broker.store.max_phy_offset == before and "queueOffset" not in response.ext_fields

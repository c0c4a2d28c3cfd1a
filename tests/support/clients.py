"""Clients that speak the wire directly, for tests that need exact codes and requests.

:class:`RawBrokerClient` sends typed requests over one connection; :class:`TestClient`
also records the requests a broker sends its clients; :func:`register` registers a
broker at a name server as a broker would; :func:`put` writes straight into a store.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from mqcore.broker.controller import BrokerController
from mqcore.client.api import MQClientAPI
from mqcore.message import MessageExt, decode_records
from mqcore.message.properties import encode_properties
from mqcore.message.record import encode_batch_body
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    ConsumerData,
    DataVersion,
    HeartbeatData,
    MessageQueue,
    ProducerData,
    RegisterBrokerBody,
    SubscriptionData,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from mqcore.protocol.headers import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    PullSysFlag,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    RegisterBrokerRequestHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from mqcore.remoting import Channel, RemotingClient, RequestDispatcher


@dataclass
class PullResult:
    code: int
    remark: str | None
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt]
    raw: bytes


class RawBrokerClient:
    """Typed requests over one :class:`RemotingClient` connection to ``addr``."""

    def __init__(self, addr: str, *, group: str = "test-producer") -> None:
        self.addr = addr
        self.group = group
        self.client = RemotingClient()

    async def close(self) -> None:
        await self.client.close()

    async def __aenter__(self) -> RawBrokerClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def invoke(self, request: RemotingCommand, timeout: float = 5.0) -> RemotingCommand:
        return await self.client.invoke(self.addr, request, timeout)

    def send_request(
        self,
        topic: str,
        body: bytes,
        *,
        tags: str | None = None,
        keys: str | None = None,
        queue_id: int = 0,
        properties: dict[str, str] | None = None,
        code: int = RequestCode.SEND_MESSAGE_V2,
        queue_nums: int = 4,
    ) -> RemotingCommand:
        props = {"WAIT": "true", **(properties or {})}
        if tags:
            props["TAGS"] = tags
        if keys:
            props["KEYS"] = keys
        header = SendMessageRequestHeader(
            producer_group=self.group,
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=queue_nums,
            queue_id=queue_id,
            sys_flag=0,
            born_timestamp=int(time.time() * 1000),
            flag=0,
            properties=encode_properties(props).decode(),
        )
        ext = (
            header.to_v2().to_ext_fields()
            if code != RequestCode.SEND_MESSAGE
            else header.to_ext_fields()
        )
        return RemotingCommand.request(code, ext, body)

    async def send(self, topic: str, body: bytes, **kw: object) -> RemotingCommand:
        return await self.invoke(self.send_request(topic, body, **kw))  # type: ignore[arg-type]

    def batch_request(
        self,
        topic: str,
        bodies: list[bytes],
        *,
        tags: str | None = None,
        queue_id: int = 0,
        batch_properties: dict[str, str] | None = None,
    ) -> RemotingCommand:
        entries = [(0, b, {"TAGS": tags} if tags else {}) for b in bodies]
        header = SendMessageRequestHeader(
            producer_group=self.group,
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=queue_id,
            sys_flag=0,
            born_timestamp=int(time.time() * 1000),
            flag=0,
            properties=encode_properties({"WAIT": "true", **(batch_properties or {})}).decode(),
            batch=True,
        )
        return RemotingCommand.request(
            RequestCode.SEND_BATCH_MESSAGE,
            header.to_v2().to_ext_fields(),
            encode_batch_body(entries),
        )

    async def send_batch(self, topic: str, bodies: list[bytes], **kw: object) -> RemotingCommand:
        return await self.invoke(self.batch_request(topic, bodies, **kw))  # type: ignore[arg-type]

    async def pull(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        group: str = "test-consumer",
        max_nums: int = 32,
        subscription: str | None = "*",
        suspend_ms: int = 0,
        commit_offset: int | None = None,
        timeout: float = 10.0,
        expression_type: str = "TAG",
    ) -> PullResult:
        flags = 0
        if subscription is not None:
            flags |= PullSysFlag.SUBSCRIPTION
        if suspend_ms:
            flags |= PullSysFlag.SUSPEND
        if commit_offset is not None:
            flags |= PullSysFlag.COMMIT_OFFSET
        header = PullMessageRequestHeader(
            consumer_group=group,
            topic=topic,
            queue_id=queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=flags,
            commit_offset=commit_offset or 0,
            suspend_timeout_millis=suspend_ms,
            sub_version=0,
            subscription=subscription,
            expression_type=expression_type,
        )
        request = RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())
        response = await self.invoke(request, timeout)
        raw = bytes(response.body)
        if "nextBeginOffset" in response.ext_fields:
            h = PullMessageResponseHeader.from_command(response)
            nxt, lo, hi = h.next_begin_offset, h.min_offset, h.max_offset
        else:
            nxt = lo = hi = -1
        return PullResult(response.code, response.remark, nxt, lo, hi, decode_records(raw), raw)

    async def pull_all(
        self, topic: str, queue_id: int, *, group: str = "test-consumer"
    ) -> list[MessageExt]:
        out: list[MessageExt] = []
        offset = 0
        while True:
            r = await self.pull(topic, queue_id, offset, group=group)
            if r.code != ResponseCode.SUCCESS:
                return out
            out.extend(r.messages)
            offset = r.next_begin_offset

    async def query_offset(self, group: str, topic: str, queue_id: int) -> tuple[int, int | None]:
        header = QueryConsumerOffsetRequestHeader(group, topic, queue_id)
        response = await self.invoke(
            RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, header.to_ext_fields())
        )
        if response.code != ResponseCode.SUCCESS:
            return response.code, None
        return response.code, QueryConsumerOffsetResponseHeader.from_command(response).offset

    async def update_offset(self, group: str, topic: str, queue_id: int, offset: int) -> int:
        header = UpdateConsumerOffsetRequestHeader(group, topic, queue_id, offset)
        response = await self.invoke(
            RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, header.to_ext_fields())
        )
        return response.code

    async def max_offset(self, topic: str, queue_id: int) -> int:
        header = GetMaxOffsetRequestHeader(topic, queue_id)
        response = await self.invoke(
            RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header.to_ext_fields())
        )
        assert response.code == ResponseCode.SUCCESS, response
        return GetMaxOffsetResponseHeader.from_command(response).offset


def send_header(response: RemotingCommand) -> SendMessageResponseHeader:
    return SendMessageResponseHeader.from_command(response)


def put(
    broker: BrokerController,
    topic: str,
    queue_id: int = 0,
    *,
    keys: str | None = None,
    uniq: str | None = None,
    body: bytes = b"hello",
    tags: str = "TagA",
) -> MessageExt:
    """Append one message straight to the broker's store; returns it with its offsets."""
    props = {"TAGS": tags}
    if keys:
        props["KEYS"] = keys
    if uniq:
        props["UNIQ_KEY"] = uniq
    msg = MessageExt(
        topic=topic,
        body=body,
        properties=props,
        queue_id=queue_id,
        born_timestamp=1_700_000_000_000,
        born_host=("127.0.0.1", 50000),
        store_host=("127.0.0.1", broker.server.port),
    )
    result = broker.store.put_message(msg)
    assert result.ok, result
    return broker.store.look_message(result.wrote_offset)


class TestClient:
    """One connection to the broker; remembers broker-initiated requests by code."""

    __test__ = False  # not a pytest class

    def __init__(self, addr: str, client_id: str) -> None:
        self.addr = addr
        self.client_id = client_id
        self.received: dict[int, list[RemotingCommand]] = {}
        dispatcher = RequestDispatcher()
        for code in (
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
        ):
            dispatcher.register(code, self._record)
        self.remoting = RemotingClient(dispatcher)

    def _record(self, channel: Channel, request: RemotingCommand) -> None:
        self.received.setdefault(request.code, []).append(request)

    def count(self, code: int) -> int:
        return len(self.received.get(code, []))

    async def invoke(
        self, code: int, fields: dict[str, str] | None = None, body: bytes = b""
    ) -> RemotingCommand:
        return await self.remoting.invoke(
            self.addr, RemotingCommand.request(code, fields or {}, body), timeout=5.0
        )

    async def heartbeat(
        self,
        consumer_groups: Iterable[str] = (),
        producer_groups: Iterable[str] = (),
        topics: Iterable[str] = ("TopicTest",),
    ) -> RemotingCommand:
        subs = [SubscriptionData(t, "*", sub_version=1) for t in topics]
        data = HeartbeatData(
            self.client_id,
            [ProducerData(g) for g in producer_groups],
            [ConsumerData(g, subscription_data_set=list(subs)) for g in consumer_groups],
        )
        return await self.invoke(RequestCode.HEART_BEAT, body=data.encode())

    async def close(self) -> None:
        await self.remoting.close()


def topic_wrapper(counter: int, **topics: int) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        {name: TopicConfig(name, queues, queues) for name, queues in topics.items()},
        DataVersion(1_700_000_000_000, counter),
    )


async def register(
    client: RemotingClient,
    namesrv: str,
    *,
    cluster: str,
    name: str,
    broker_id: int,
    addr: str,
    wrapper: TopicConfigSerializeWrapper,
) -> RemotingCommand:
    header = RegisterBrokerRequestHeader(
        broker_name=name,
        broker_addr=addr,
        cluster_name=cluster,
        ha_server_addr=addr.replace(":109", ":119"),
        broker_id=broker_id,
    )
    body = RegisterBrokerBody(wrapper).encode()
    request = RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body)
    return await client.invoke(namesrv, request)


async def pull_all(api: MQClientAPI, mq: MessageQueue, group: str = "check") -> list[MessageExt]:
    """Every message of one queue, through the api layer (no long polling)."""
    out: list[MessageExt] = []
    offset = 0
    while True:
        result = await api.pull(mq, group=group, offset=offset, suspend=False, timeout=5)
        if not result.messages and result.next_begin_offset == offset:
            return out
        out.extend(result.messages)
        if result.next_begin_offset <= offset:
            return out
        offset = result.next_begin_offset


async def pull_topic(api: MQClientAPI, topic: str) -> list[MessageExt]:
    await api.routes.update(topic)
    out: list[MessageExt] = []
    for mq in await api.topic_queues(topic):
        out.extend(await pull_all(api, mq))
    return out

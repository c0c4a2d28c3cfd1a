"""Request/reply end to end: ``Producer.request`` against a replier built on our
PushConsumer (``create_reply_message`` + an ordinary ``Producer.send``), through an
in-process name server and broker."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from mqcore.client.api import SendResult, SendStatus
from mqcore.client.consume_service import ConsumeContext, ConsumeStatus
from mqcore.client.producer import Producer, make_message
from mqcore.client.push_consumer import PushConsumer
from mqcore.client.rebalance import ConsumeFromWhere
from mqcore.client.request_reply import (
    ReplyMessageError,
    RequestTimeoutError,
    create_reply_message,
)
from mqcore.client.sync import SyncProducer
from mqcore.message import Message, MessageExt
from mqcore.protocol import RequestCode
from tests.support.inproc import LiveCluster
from tests.support.polling import until

TOPIC = "RequestTopic"
REPLY_TOPIC = "DefaultCluster_REPLY_TOPIC"
pytestmark = [
    pytest.mark.timeout(60),
    # the request topic, and the routes of it and of the reply topic
    pytest.mark.cluster(store={}, topics={TOPIC: 2}, routes=(REPLY_TOPIC,)),
]
_names = itertools.count()


class Replier:
    """Answers each request with ``re:<body>`` (``skip`` bodies get no answer)."""

    def __init__(self, cluster: LiveCluster, skip: frozenset[bytes] = frozenset()) -> None:
        n = next(_names)
        self.producer = Producer(f"replier-pg{n}", namesrv=cluster.addr, instance_name=f"r{n}")
        self.consumer = PushConsumer(
            f"replier-cg{n}",
            namesrv=cluster.addr,
            instance_name=f"r{n}",
            consume_from_where=ConsumeFromWhere.FIRST,
            offset_store_dir=str(cluster.tmp / "offsets"),
        )
        self.consumer.subscribe(TOPIC, "*")
        self.consumer.register_listener(self.on_messages)
        self.skip = skip
        self.requests: list[MessageExt] = []
        self.results: list[SendResult] = []

    async def on_messages(self, msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        for msg in msgs:
            self.requests.append(msg)
            if msg.body in self.skip:
                continue
            reply = create_reply_message(msg, b"re:" + msg.body)
            self.results.append(await self.producer.send(reply))
        return ConsumeStatus.CONSUME_SUCCESS

    async def __aenter__(self) -> Replier:
        await self.producer.start()
        await self.consumer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.consumer.shutdown()
        await self.producer.shutdown()


def requester(cluster: LiveCluster) -> Producer:
    n = next(_names)
    return Producer(f"requester-pg{n}", namesrv=cluster.addr, instance_name=f"q{n}")


async def test_request_gets_the_reply(cluster: LiveCluster) -> None:
    async with Replier(cluster) as replier, requester(cluster) as producer:
        msg = make_message(TOPIC, "ping", tags="TagA")
        answer = await producer.request(msg, timeout=15.0)
        assert answer.body == b"re:ping"
        assert answer.topic == REPLY_TOPIC
        props = answer.properties
        assert props["MSG_TYPE"] == "reply"
        assert props["CORRELATION_ID"] == msg.properties["CORRELATION_ID"]
        assert props["REPLY_TO_CLIENT"] == producer.instance.client_id
        assert props["TTL"] == "15000"
        assert int(props["ARRIVE_TIME"]) >= int(props["PUSH_REPLY_TIME"]) > 0
        assert len(producer.instance.request_futures) == 0

        # What the replier saw: the request as 4.9.8 marks it, CLUSTER added by the broker.
        (request,) = replier.requests
        assert request.properties["REPLY_TO_CLIENT"] == producer.instance.client_id
        assert request.properties["CLUSTER"] == "DefaultCluster"
        assert "MSG_TYPE" not in request.properties

    # The reply is also kept in the reply topic.
    assert cluster.broker.store.get_max_offset_in_queue(REPLY_TOPIC, 0) >= 1


async def test_concurrent_requests_get_their_own_replies(cluster: LiveCluster) -> None:
    async with Replier(cluster), requester(cluster) as producer:
        bodies = [f"q{i}" for i in range(12)]
        answers = await asyncio.gather(
            *(producer.request(make_message(TOPIC, b), timeout=20.0) for b in bodies)
        )
        assert [a.body.decode() for a in answers] == [f"re:{b}" for b in bodies]


async def test_large_reply_body_is_inflated(cluster: LiveCluster) -> None:
    body = b"x" * 10_000  # over compress_msg_body_over_howmuch: sent zlib-compressed
    async with Replier(cluster), requester(cluster) as producer:
        answer = await producer.request(make_message(TOPIC, body), timeout=15.0)
        assert answer.body == b"re:" + body


async def test_request_without_reply_times_out(cluster: LiveCluster) -> None:
    async with (
        Replier(cluster, skip=frozenset({b"lonely"})) as replier,
        requester(cluster) as producer,
    ):
        with pytest.raises(RequestTimeoutError) as info:
            await producer.request(make_message(TOPIC, "lonely"), timeout=1.5)
        assert str(info.value) == (
            f"send request message to <{TOPIC}> OK, but wait reply message timeout, 1500 ms."
        )
        assert [m.body for m in replier.requests] == [b"lonely"]
        assert len(producer.instance.request_futures) == 0


async def test_reply_after_the_timeout_is_answered_and_dropped(cluster: LiveCluster) -> None:
    """A late reply must not break anything: the requester acknowledges and forgets it."""
    async with requester(cluster) as producer:
        with pytest.raises(RequestTimeoutError):
            await producer.request(make_message(TOPIC, "nobody listens"), timeout=0.5)
        async with Replier(cluster) as replier:
            await until(lambda: len(replier.results) == 1, 20.0, "the late request answered")
            # The broker pushed the late reply and the requester took it (SUCCESS), so the
            # replier's send succeeded; nothing was waiting for it any more.
            assert replier.results[0].status is SendStatus.SEND_OK
            answer = await producer.request(make_message(TOPIC, "now"), timeout=15.0)
            assert answer.body == b"re:now"


def test_create_reply_message_needs_a_request() -> None:
    with pytest.raises(ReplyMessageError, match=r"property\[CLUSTER\] is null"):
        create_reply_message(Message(TOPIC, b"x"), b"y")
    request = Message(
        TOPIC,
        b"x",
        properties={
            "CLUSTER": "c1",
            "CORRELATION_ID": "id-1",
            "REPLY_TO_CLIENT": "1.2.3.4@9",
            "TTL": "500",
            "KEYS": "not copied",
        },
    )
    reply = create_reply_message(request, "answer")
    assert reply.topic == "c1_REPLY_TOPIC"
    assert reply.body == b"answer"
    assert reply.properties == {
        "MSG_TYPE": "reply",
        "CORRELATION_ID": "id-1",
        "REPLY_TO_CLIENT": "1.2.3.4@9",
        "TTL": "500",
    }


async def test_replies_go_out_as_send_reply_message_v2(cluster: LiveCluster) -> None:
    seen: list[int] = []
    dispatcher = cluster.broker.server.dispatcher
    original = dispatcher.processor_for(RequestCode.SEND_REPLY_MESSAGE_V2)
    assert original is not None

    def spy(channel, request):  # type: ignore[no-untyped-def]
        seen.append(request.code)
        return original(channel, request)

    for server in (cluster.broker.server, cluster.broker.fast_server):
        server.register(RequestCode.SEND_REPLY_MESSAGE_V2, spy)
    async with Replier(cluster), requester(cluster) as producer:
        await producer.request(make_message(TOPIC, "v2?"), timeout=15.0)
    assert seen == [RequestCode.SEND_REPLY_MESSAGE_V2]


async def test_sync_producer_request(cluster: LiveCluster) -> None:
    """The blocking facade, from a worker thread (its own loop thread does the work)."""

    def blocking() -> MessageExt:
        with SyncProducer("sync-requester", namesrv=cluster.addr, instance_name="sync-q") as p:
            return p.request(make_message(TOPIC, "sync"), timeout=15.0)

    async with Replier(cluster):
        answer = await asyncio.to_thread(blocking)
    assert answer.body == b"re:sync"
    assert answer.properties["MSG_TYPE"] == "reply"

"""Receiving through the gRPC access point of an in-process broker, called with grpc.aio:
ReceiveMessage, AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue
answer as RocketMQ 5's proxy does, and what they do is the broker's POP.

The revive service runs every 50 ms and the receive limits are narrowed (invisible times
and polls from 100 ms, renewals every 50 ms), so messages come back within a second;
waits poll with deadlines.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from grpc import aio

from mqcore.broker.controller import BrokerController
from mqcore.common.metadata import SubscriptionGroupConfig
from mqcore.proxy.consumer import ReceiveLimits
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.proxy.grpc_v2.service_pb2_grpc import MessagingServiceStub
from mqcore.proxy.local import LocalAccessPoint
from mqcore.proxy.renewal import RenewTimings
from mqcore.store.metadata import TopicConfig
from tests.support import until
from tests.support.inproc import running_broker

pytestmark = pytest.mark.timeout(60)

CLIENT = (("x-mq-client-id", "receiver@1"), ("x-mq-language", "PYTHON"))
LIMITS = ReceiveLimits(
    min_invisible_ms=100,
    min_long_polling_ms=100,
    default_invisible_ms=1000,
    renew=RenewTimings(
        period_ms=50, ahead_ms=500, invisible_when_clear_ms=100, policy_ms=(30_000,)
    ),
)
"""Push consumers' messages popped for 1 s and renewed for 30 s once 0.5 s are left."""
_groups = count()


@dataclass
class Received:
    """One ReceiveMessage stream: every response in order, and its parts."""

    responses: list[spb.ReceiveMessageResponse]

    @property
    def status(self) -> pb.Status:
        (first,) = [r.status for r in self.responses if r.HasField("status")]
        return first

    @property
    def messages(self) -> list[pb.Message]:
        return [r.message for r in self.responses if r.HasField("message")]


@dataclass
class Rpc:
    broker: BrokerController
    stub: Any

    async def send(self, n: int, topic: str = "Orders", **system: Any) -> list[str]:
        ids = []
        for i in range(n):
            sp = pb.SystemProperties(message_id=uuid.uuid4().hex.upper(), **system)
            msg = pb.Message(
                topic=pb.Resource(name=topic), body=f"m{i}".encode(), system_properties=sp
            )
            answer = await self.stub.SendMessage(
                spb.SendMessageRequest(messages=[msg]), metadata=CLIENT
            )
            assert answer.status.code == pb.Code.OK, answer
            ids.append(sp.message_id)
        return ids

    async def receive(
        self,
        group: str,
        *,
        topic: str = "Orders",
        invisible_ms: int = 5000,
        polling_ms: int = 200,
        batch: int = 32,
        expression: str = "*",
        sql: bool = False,
        auto_renew: bool = False,
    ) -> Received:
        kind = pb.FilterType.SQL if sql else pb.FilterType.TAG
        request = spb.ReceiveMessageRequest(
            group=pb.Resource(name=group),
            message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
            filter_expression=pb.FilterExpression(type=kind, expression=expression),
            batch_size=batch,
            auto_renew=auto_renew,
        )
        request.invisible_duration.FromMilliseconds(invisible_ms)
        request.long_polling_timeout.FromMilliseconds(polling_ms)
        stream = self.stub.ReceiveMessage(request, metadata=CLIENT, timeout=polling_ms / 1000 + 5)
        return Received([r async for r in stream])

    async def receive_all(self, group: str, n: int, **kwargs: Any) -> list[pb.Message]:
        got: list[pb.Message] = []

        async def more() -> bool:
            got.extend((await self.receive(group, **kwargs)).messages)
            return len(got) >= n

        await until(more, 10, lambda: f"{len(got)} of {n} received")
        return got

    async def ack(self, group: str, *messages: pb.Message, topic: str = "Orders") -> Any:
        entries = [
            spb.AckMessageEntry(
                message_id=m.system_properties.message_id,
                receipt_handle=m.system_properties.receipt_handle,
            )
            for m in messages
        ]
        request = spb.AckMessageRequest(
            group=pb.Resource(name=group), topic=pb.Resource(name=topic), entries=entries
        )
        return await self.stub.AckMessage(request, metadata=CLIENT)

    async def change(self, group: str, message: pb.Message, invisible_ms: int) -> Any:
        request = spb.ChangeInvisibleDurationRequest(
            group=pb.Resource(name=group),
            topic=message.topic,
            receipt_handle=message.system_properties.receipt_handle,
            message_id=message.system_properties.message_id,
        )
        request.invisible_duration.FromMilliseconds(invisible_ms)
        return await self.stub.ChangeInvisibleDuration(request, metadata=CLIENT)


@pytest.fixture
async def rpc(tmp_path: Path) -> AsyncIterator[Rpc]:
    async with running_broker(
        tmp_path, revive_interval=50, revive_queue_num=2, enable_property_filter=True
    ) as broker:
        broker.topics.update(TopicConfig("Orders", 4, 4))
        access_point = LocalAccessPoint(broker, 0, receive_limits=LIMITS)
        await access_point.start()
        try:
            async with aio.insecure_channel(access_point.address) as channel:
                yield Rpc(broker, MessagingServiceStub(channel))
        finally:
            await access_point.stop()


def group_name() -> str:
    return f"grpc-g{next(_groups)}"


async def test_receive_then_ack_and_nothing_comes_again(rpc: Rpc) -> None:
    ids = await rpc.send(5, tag="paid", keys=["k1"])
    group = group_name()
    got = await rpc.receive_all(group, 5)
    assert sorted(m.system_properties.message_id for m in got) == sorted(ids)
    for msg in got:
        sp = msg.system_properties
        assert msg.topic.name == "Orders" and sp.tag == "paid" and list(sp.keys) == ["k1"]
        assert sp.delivery_attempt == 1
        fields = sp.receipt_handle.split(" ")
        assert len(fields) == 9, "the broker's receipt and the commit log offset"
        assert fields[5] == rpc.broker.config.broker_name and fields[7] == str(sp.queue_offset)
        assert int(fields[8]) >= 0
    answer = await rpc.ack(group, *got)
    assert (answer.status.code, answer.status.message) == (pb.Code.OK, "OK")
    assert [e.status.code for e in answer.entries] == [pb.Code.OK] * 5
    assert [e.message_id for e in answer.entries] == [m.system_properties.message_id for m in got]
    nothing = await rpc.receive(group, polling_ms=300)
    assert (nothing.status.code, nothing.status.message) == (
        pb.Code.MESSAGE_NOT_FOUND,
        "no new message",
    )
    assert not nothing.messages


async def test_the_stream_is_status_messages_then_delivery_timestamp(rpc: Rpc) -> None:
    await rpc.send(2)
    group = group_name()
    before = time.time()
    received = await rpc.receive(group, polling_ms=2000)
    kinds = [r.WhichOneof("content") for r in received.responses]
    assert kinds[0] == "status" and kinds[-1] == "delivery_timestamp"
    assert set(kinds[1:-1]) == {"message"} and len(kinds) >= 3
    stamp = received.responses[-1].delivery_timestamp
    assert stamp.seconds >= int(before)
    empty = await rpc.receive(group_name(), topic="Orders", polling_ms=100, expression="none")
    assert [r.WhichOneof("content") for r in empty.responses] == ["status", "delivery_timestamp"]


async def test_a_message_not_acked_comes_back_after_its_invisible_time(rpc: Rpc) -> None:
    (sent,) = await rpc.send(1)
    group = group_name()
    (first,) = await rpc.receive_all(group, 1, invisible_ms=300)
    start = time.monotonic()
    (again,) = await rpc.receive_all(group, 1, invisible_ms=5000, polling_ms=500)
    assert time.monotonic() - start >= 0.1
    assert again.system_properties.message_id == sent
    assert again.system_properties.delivery_attempt == 2
    assert again.system_properties.receipt_handle != first.system_properties.receipt_handle
    stale = await rpc.ack(group, first)
    assert stale.entries[0].status.code == pb.Code.INVALID_RECEIPT_HANDLE
    assert stale.entries[0].status.message == "receipt handle is expired"
    assert (await rpc.ack(group, again)).status.code == pb.Code.OK
    assert not (await rpc.receive(group, polling_ms=800)).messages


async def test_change_invisible_duration_gives_the_handle_to_ack_with(rpc: Rpc) -> None:
    await rpc.send(2)
    group = group_name()
    early, late = await rpc.receive_all(group, 2, invisible_ms=60_000)
    changed = await rpc.change(group, early, 200)
    assert changed.status.code == pb.Code.OK, changed
    new_handle = changed.receipt_handle
    assert new_handle != early.system_properties.receipt_handle
    assert new_handle.split(" ")[8] == early.system_properties.receipt_handle.split(" ")[8]
    (back,) = await rpc.receive_all(group, 1, invisible_ms=60_000, polling_ms=500)
    assert back.system_properties.message_id == early.system_properties.message_id
    kept = await rpc.change(group, late, 60_000)
    late.system_properties.receipt_handle = kept.receipt_handle
    assert (await rpc.ack(group, back, late)).status.code == pb.Code.OK
    assert not (await rpc.receive(group, polling_ms=500)).messages


async def test_receive_refusals(rpc: Rpc) -> None:
    short = await rpc.receive(group_name(), invisible_ms=50)
    assert short.status.code == pb.Code.ILLEGAL_INVISIBLE_TIME
    assert short.status.message == "the invisibleTime is too small. min is 100"
    long = await rpc.receive(group_name(), invisible_ms=13 * 3600 * 1000)
    assert long.status.code == pb.Code.ILLEGAL_INVISIBLE_TIME
    renewed = await rpc.receive(group_name(), invisible_ms=0, auto_renew=True)
    assert renewed.status.code == pb.Code.MESSAGE_NOT_FOUND  # auto renew takes the default
    missing = await rpc.receive(group_name(), topic="Missing")
    assert missing.status.code == pb.Code.TOPIC_NOT_FOUND, missing.status
    bad = await rpc.receive("bad group!")
    assert bad.status.code == pb.Code.ILLEGAL_CONSUMER_GROUP
    rpc.broker.config.pop_polling_size = 0  # no receive may wait on the topic
    full = await rpc.receive(group_name())
    assert (full.status.code, full.status.message) == (pb.Code.TOO_MANY_REQUESTS, "polling full")


async def test_ack_entries_answer_each_on_its_own(rpc: Rpc) -> None:
    await rpc.send(1)
    group = group_name()
    (msg,) = await rpc.receive_all(group, 1)
    broken = pb.Message()
    broken.CopyFrom(msg)
    broken.system_properties.receipt_handle = "not a handle"
    answer = await rpc.ack(group, msg, broken)
    assert answer.status.code == pb.Code.MULTIPLE_RESULTS
    assert answer.entries[0].status.code == pb.Code.OK
    assert answer.entries[1].status.code == pb.Code.INTERNAL_SERVER_ERROR
    assert answer.entries[1].receipt_handle == "not a handle"
    changed = await rpc.change(group, broken, 1000)
    assert changed.status.code == pb.Code.INTERNAL_SERVER_ERROR
    too_long = await rpc.change(group, msg, 13 * 3600 * 1000)
    assert too_long.status.code == pb.Code.ILLEGAL_INVISIBLE_TIME


async def test_a_long_poll_is_woken_by_a_message(rpc: Rpc) -> None:
    group = group_name()
    waiting = asyncio.ensure_future(rpc.receive(group, polling_ms=10_000))
    await until(lambda: rpc.broker.long_polling.topic_held_count("Orders") > 0, 5, "held")
    start = time.monotonic()
    (sent,) = await rpc.send(1)
    received = await asyncio.wait_for(waiting, 8)
    assert time.monotonic() - start < 5
    assert [m.system_properties.message_id for m in received.messages] == [sent]


async def test_a_tag_filter_and_the_dead_letter_queue(rpc: Rpc) -> None:
    await rpc.send(1, tag="other")
    (wanted,) = await rpc.send(1, tag="paid")
    group = group_name()
    (msg,) = await rpc.receive_all(group, 1, expression="paid")
    assert msg.system_properties.message_id == wanted
    request = spb.ForwardMessageToDeadLetterQueueRequest(
        group=pb.Resource(name=group),
        topic=pb.Resource(name="Orders"),
        receipt_handle=msg.system_properties.receipt_handle,
        message_id=wanted,
        delivery_attempt=1,
        max_delivery_attempts=1,
    )
    answer = await rpc.stub.ForwardMessageToDeadLetterQueue(request, metadata=CLIENT)
    assert answer.status.code == pb.Code.OK, answer
    dlq = f"%DLQ%{group}"
    store = rpc.broker.store
    await until(lambda: store.get_max_offset_in_queue(dlq, 0) == 1, 5, "the DLQ copy")
    phy = store.get_commit_log_offset_in_queue(dlq, 0, 0)
    assert store.look_message(phy).properties["UNIQ_KEY"] == wanted
    assert not (await rpc.receive(group, polling_ms=800, expression="paid")).messages


async def test_a_fifo_group_receives_each_message_group_in_order(rpc: Rpc) -> None:
    group = group_name()
    rpc.broker.groups.update(SubscriptionGroupConfig(group, consume_message_orderly=True))
    subscription = pb.Subscription(group=pb.Resource(name=group))
    settings = pb.Settings(client_type=pb.ClientType.PUSH_CONSUMER, subscription=subscription)
    telemetry = rpc.stub.Telemetry(metadata=CLIENT)
    await telemetry.write(spb.TelemetryCommand(settings=settings))
    answer = await telemetry.read()
    assert answer.settings.subscription.fifo, "a FIFO group's consumers are told so"
    telemetry.cancel()
    ids = await rpc.send(4, message_group="g1")
    assignment = await rpc.stub.QueryAssignment(
        spb.QueryAssignmentRequest(topic=pb.Resource(name="Orders"), group=pb.Resource(name=group)),
        metadata=CLIENT,
    )
    assert [a.message_queue.id for a in assignment.assignments] == [0, 1, 2, 3]
    (first,) = await rpc.receive_all(group, 1, invisible_ms=60_000, batch=1)
    assert first.system_properties.message_id == ids[0]
    assert first.system_properties.message_group == "g1"
    blocked = await rpc.receive(group, polling_ms=300)
    assert blocked.status.code == pb.Code.MESSAGE_NOT_FOUND, "the group waits for its first"
    assert (await rpc.ack(group, first)).status.code == pb.Code.OK
    rest = await rpc.receive_all(group, 3, invisible_ms=300)
    assert [m.system_properties.message_id for m in rest] == ids[1:]
    # not acknowledged: they come again, in order, once their invisible time is over
    again = await rpc.receive_all(group, 3, invisible_ms=60_000, polling_ms=1000)
    assert [m.system_properties.message_id for m in again] == ids[1:]
    assert all(m.system_properties.delivery_attempt == 2 for m in again)
    assert (await rpc.ack(group, *again)).status.code == pb.Code.OK
    assert not (await rpc.receive(group, polling_ms=300)).messages


async def push_consumer(rpc: Rpc, group: str) -> Any:
    """A push consumer's Telemetry stream with its settings sent: the client is there
    while it is open."""
    subscription = pb.Subscription(group=pb.Resource(name=group))
    settings = pb.Settings(client_type=pb.ClientType.PUSH_CONSUMER, subscription=subscription)
    telemetry = rpc.stub.Telemetry(metadata=CLIENT)
    await telemetry.write(spb.TelemetryCommand(settings=settings))
    assert (await telemetry.read()).status.code == pb.Code.OK
    return telemetry


async def test_a_push_consumer_s_message_stays_invisible_while_it_is_consumed(rpc: Rpc) -> None:
    """auto_renew: popped for the proxy's default time, renewed before it ends; the ack
    with the handle the client was given acknowledges the renewed one."""
    group = group_name()
    telemetry = await push_consumer(rpc, group)
    (sent,) = await rpc.send(1)
    (msg,) = await rpc.receive_all(group, 1, auto_renew=True)
    assert msg.system_properties.message_id == sent
    given = msg.system_properties.receipt_handle
    assert int(given.split(" ")[2]) == 1000, "the default invisible time, not the request's"
    held = await rpc.receive(group, polling_ms=2000)
    assert not held.messages, "renewed: not handed out again after its 1 s"
    answer = await rpc.ack(group, msg)
    assert answer.status.code == pb.Code.OK, answer
    assert answer.entries[0].receipt_handle == given
    assert not (await rpc.receive(group, polling_ms=1500)).messages
    telemetry.cancel()


async def test_a_gone_push_consumer_s_messages_come_back_at_once(rpc: Rpc) -> None:
    """The client terminates while its message is renewed for 30 s: the access point
    makes it visible again within a moment, and another receive gets it."""
    group = group_name()
    telemetry = await push_consumer(rpc, group)
    (sent,) = await rpc.send(1)
    await rpc.receive_all(group, 1, auto_renew=True)
    assert not (await rpc.receive(group, polling_ms=1500)).messages, "renewed past 1 s"
    bye = spb.NotifyClientTerminationRequest(group=pb.Resource(name=group))
    assert (await rpc.stub.NotifyClientTermination(bye, metadata=CLIENT)).status.code == pb.Code.OK
    telemetry.cancel()
    (again,) = await rpc.receive_all(group, 1, polling_ms=1000)
    assert again.system_properties.message_id == sent
    assert again.system_properties.delivery_attempt == 2


async def test_a_sql92_filter_selects_by_user_property(rpc: Rpc) -> None:
    ids = []
    for color in ("red", "blue", "red"):
        sp = pb.SystemProperties(message_id=uuid.uuid4().hex.upper())
        msg = pb.Message(
            topic=pb.Resource(name="Orders"),
            body=color.encode(),
            system_properties=sp,
            user_properties={"color": color},
        )
        answer = await rpc.stub.SendMessage(spb.SendMessageRequest(messages=[msg]), metadata=CLIENT)
        assert answer.status.code == pb.Code.OK
        ids.append((color, sp.message_id))
    group = group_name()
    got = await rpc.receive_all(group, 2, expression="color = 'red'", sql=True)
    assert sorted(m.system_properties.message_id for m in got) == sorted(
        i for color, i in ids if color == "red"
    )
    assert all(m.user_properties["color"] == "red" for m in got)
    bad = await rpc.receive(group, expression="color ===", sql=True)
    assert bad.status.code == pb.Code.INTERNAL_SERVER_ERROR, bad.status  # as 5.x local mode
    assert "parse" in bad.status.message and not bad.messages


async def test_the_broker_config_s_rocketmq_5_keys_bound_a_receive(tmp_path: Path) -> None:
    """minInvisibleTimeMillsForRecv, maxInvisibleTimeMills and the long polling keys in
    broker.conf bound the broker's own access point, as rmq-proxy.json bounds RocketMQ 5's."""
    async with running_broker(
        tmp_path,
        min_invisible_time_mills_for_recv=2000,
        max_invisible_time_mills=5000,
        grpc_client_consumer_min_long_polling_timeout_millis=100,
    ) as broker:
        broker.topics.update(TopicConfig("Orders", 4, 4))
        access_point = LocalAccessPoint(broker, 0)
        await access_point.start()
        try:
            async with aio.insecure_channel(access_point.address) as channel:
                rpc = Rpc(broker, MessagingServiceStub(channel))
                short = await rpc.receive(group_name(), invisible_ms=1500)
                assert short.status.message == "the invisibleTime is too small. min is 2000"
                long = await rpc.receive(group_name(), invisible_ms=6000)
                assert long.status.code == pb.Code.ILLEGAL_INVISIBLE_TIME, long.status
                fits = await rpc.receive(group_name(), invisible_ms=2000, polling_ms=100)
                assert fits.status.code == pb.Code.MESSAGE_NOT_FOUND, fits.status
        finally:
            await access_point.stop()

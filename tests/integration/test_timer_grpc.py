"""A 5.x SDK's delay message through the gRPC access point: its delivery timestamp becomes
TIMER_DELIVER_MS, the broker parks it in the timer wheel and delivers it at its time."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.store.metadata import TopicConfig
from tests.support import until
from tests.support.grpc_access import access_point_stub
from tests.support.inproc import running_broker

pytestmark = pytest.mark.timeout(60)

CLIENT = (("x-mq-client-id", "timer-client@1"), ("x-mq-language", "PYTHON"))


@pytest.fixture
async def access(tmp_path: Path) -> AsyncIterator[tuple[BrokerController, Any]]:
    async with running_broker(tmp_path, store={"timer_precision_ms": 200}) as broker:
        broker.topics.update(TopicConfig("Later", 1, 1))
        async with access_point_stub(broker) as (_, stub):
            yield broker, stub


async def test_a_delivery_timestamp_is_a_timer_message(
    access: tuple[BrokerController, Any],
) -> None:
    broker, stub = access
    deliver = int(time.time() * 1000) + 800
    sp = pb.SystemProperties(message_id=uuid.uuid4().hex.upper())
    sp.delivery_timestamp.FromMilliseconds(deliver)
    msg = pb.Message(topic=pb.Resource(name="Later"), body=b"at last", system_properties=sp)
    answer = await stub.SendMessage(spb.SendMessageRequest(messages=[msg]), metadata=CLIENT)
    assert answer.status.code == pb.Code.OK, answer
    store = broker.store
    assert store.get_max_offset_in_queue("rmq_sys_wheel_timer", 0) == 1  # parked
    assert store.get_max_offset_in_queue("Later", 0) == 0

    await until(lambda: store.get_max_offset_in_queue("Later", 0) == 1, 5, "the delivery")
    delivered = store.look_message(store.get_commit_log_offset_in_queue("Later", 0, 0))
    assert delivered.body == b"at last"
    assert delivered.properties["TIMER_DELIVER_MS"] == str(deliver)
    assert deliver <= delivered.store_timestamp < deliver + 1000


async def test_a_timer_message_is_recalled_with_its_send_s_handle(tmp_path: Path) -> None:
    """SendMessage answers a parked message's recall handle; RecallMessage with it takes
    the message back (never delivered) at the broker the handle names; a handle that
    does not parse, another topic, a broker that does not allow recalls are refused."""
    async with running_broker(
        tmp_path, store={"timer_precision_ms": 200}, recall_message_enable=True
    ) as broker:
        broker.topics.update(TopicConfig("Later", 1, 1))
        async with access_point_stub(broker) as (_, stub):
            deliver = int(time.time() * 1000) + 1500
            kept, taken = [
                await stub.SendMessage(
                    spb.SendMessageRequest(messages=[timer_message(body, deliver)]),
                    metadata=CLIENT,
                )
                for body in (b"kept", b"taken")
            ]
            handle = taken.entries[0].recall_handle
            assert handle and kept.entries[0].recall_handle not in ("", handle)

            def recall(topic: str, handle: str) -> Any:
                request = spb.RecallMessageRequest(
                    topic=pb.Resource(name=topic), recall_handle=handle
                )
                return stub.RecallMessage(request, metadata=CLIENT)

            bad = await recall("Later", "bm90IGEgaGFuZGxl")
            assert bad.status.code == pb.Code.INTERNAL_SERVER_ERROR, bad
            other = await recall("Other", handle)
            assert other.status.code == pb.Code.TOPIC_NOT_FOUND, other
            answer = await recall("Later", handle)
            assert answer.status.code == pb.Code.OK, answer
            assert answer.message_id == taken.entries[0].message_id

            store = broker.store
            await until(lambda: store.get_max_offset_in_queue("Later", 0) >= 1, 5, "kept")
            await until(lambda: time.time() * 1000 > deliver + 1000, 5, "a second more")
            assert store.get_max_offset_in_queue("Later", 0) == 1
            offset = store.get_commit_log_offset_in_queue("Later", 0, 0)
            assert store.look_message(offset).body == b"kept"

            broker.config.recall_message_enable = False
            refused = await recall("Later", kept.entries[0].recall_handle)
            assert refused.status.code == pb.Code.FORBIDDEN, refused


def timer_message(body: bytes, deliver_ms: int) -> pb.Message:
    sp = pb.SystemProperties(message_id=uuid.uuid4().hex.upper())
    sp.delivery_timestamp.FromMilliseconds(deliver_ms)
    return pb.Message(topic=pb.Resource(name="Later"), body=body, system_properties=sp)

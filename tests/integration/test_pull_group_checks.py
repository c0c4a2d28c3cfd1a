"""A pull that relies on the subscription the consumer registered (no subscription flag,
as ali-ons with ``postSubscriptionWhenPull: false``) is checked against the group's
registration, as 4.9.8's PullMessageProcessor checks it: no registration, or a
BROADCASTING consumer in a group with ``consumeBroadcastEnable=false``, is refused."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mqcore.protocol import RequestCode, ResponseCode
from mqcore.protocol.bodies.client import ConsumerData, HeartbeatData, SubscriptionData
from mqcore.protocol.headers import PullMessageRequestHeader, PullSysFlag
from tests.support.clients import TestClient
from tests.support.inproc import running_broker, running_namesrv

pytestmark = pytest.mark.timeout(60)


def pull_without_subscription(group: str) -> dict[str, str]:
    header = PullMessageRequestHeader(
        consumer_group=group, topic="Bcast", queue_id=0, queue_offset=0, max_msg_nums=32,
        sys_flag=0, commit_offset=0, suspend_timeout_millis=0, sub_version=1,
    )  # fmt: skip
    return header.to_ext_fields()


@pytest.mark.parametrize("broadcast_enable", [True, False])
async def test_broadcasting_group_needs_consume_broadcast_enable(
    tmp_path: Path, broadcast_enable: bool
) -> None:
    async with (
        running_namesrv(tmp_path) as ns,
        running_broker(tmp_path, f"127.0.0.1:{ns.port}") as broker,
    ):
        broker.topics.create_in_send("Bcast", "TBW102", 1)
        groups = broker.groups
        config = groups.find("bcast-cg", auto_create=True)
        assert config is not None
        groups.table["bcast-cg"] = dataclasses.replace(
            config, consume_broadcast_enable=broadcast_enable
        )
        client = TestClient(broker.broker_addr, "bcast@1")
        try:
            unregistered = await client.invoke(
                RequestCode.PULL_MESSAGE, pull_without_subscription("bcast-cg")
            )
            assert unregistered.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
            assert unregistered.remark == "the consumer's group info not exist"
            consumer = ConsumerData(
                "bcast-cg",
                message_model="BROADCASTING",
                subscription_data_set=[SubscriptionData("Bcast", "*", sub_version=1)],
            )
            beat = HeartbeatData("bcast@1", [], [consumer])
            assert (await client.invoke(RequestCode.HEART_BEAT, body=beat.encode())).code == 0
            pulled = await client.invoke(
                RequestCode.PULL_MESSAGE, pull_without_subscription("bcast-cg")
            )
        finally:
            await client.close()
    if broadcast_enable:
        assert pulled.code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_OFFSET_MOVED)
    else:
        assert pulled.code == ResponseCode.NO_PERMISSION
        assert pulled.remark == "the consumer group[bcast-cg] can not consume by broadcast way"


async def test_a_pulls_own_tag_expression_without_tags_is_refused(tmp_path: Path) -> None:
    async with (
        running_namesrv(tmp_path) as ns,
        running_broker(tmp_path, f"127.0.0.1:{ns.port}") as broker,
    ):
        broker.topics.create_in_send("Bcast", "TBW102", 1)
        client = TestClient(broker.broker_addr, "tags@1")
        try:
            header = PullMessageRequestHeader(
                consumer_group="tags-cg", topic="Bcast", queue_id=0, queue_offset=0,
                max_msg_nums=32, sys_flag=PullSysFlag.SUBSCRIPTION, commit_offset=0,
                suspend_timeout_millis=0, sub_version=1, subscription="||",
            )  # fmt: skip
            answer = await client.invoke(RequestCode.PULL_MESSAGE, header.to_ext_fields())
        finally:
            await client.close()
    assert answer.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED  # 4.9.8: "subString split error"

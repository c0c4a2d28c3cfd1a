"""The pull answer's ``suggestWhichBrokerId`` and a slave's pulls, as 4.9.8 answers them."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mqcore.broker.config import BrokerConfig
from mqcore.broker.controller import BrokerController
from mqcore.common.metadata import SubscriptionGroupConfig
from mqcore.message.model import MessageExt
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    PullSysFlag,
)
from mqcore.store.store_config import BrokerRole, MessageStoreConfig

from .broker_fakes import FakeChannel

TOPIC = "Suggest"


async def _start(tmp_path: Path, ratio: int) -> BrokerController:
    controller = BrokerController(
        BrokerConfig(
            broker_name="broker-a",
            broker_ip1="127.0.0.1",
            bind_address="127.0.0.1",
            listen_port=0,
            namesrv_addr=None,
        ),
        MessageStoreConfig(
            store_path_root_dir=str(tmp_path / f"store-{ratio}"),
            mapped_file_size_commit_log=1024 * 1024,
            mapped_file_size_consume_queue=20 * 1000,
            max_hash_slot_num=1000,
            max_index_num=4000,
            access_message_in_memory_max_ratio=ratio,
        ),
    )
    await controller.start()
    controller.topics.create_in_send(TOPIC, "TBW102", 1, 0)
    for i in range(3):
        msg = MessageExt(topic=TOPIC, body=b"m%d" % i, queue_id=0, properties={"TAGS": "A"})
        assert controller.store.put_message(msg).ok
    controller.reput.run()
    groups = controller.groups
    groups.update(SubscriptionGroupConfig("slowly-1", which_broker_when_consume_slowly=1))
    groups.update(SubscriptionGroupConfig("slowly-2", which_broker_when_consume_slowly=2))
    groups.update(SubscriptionGroupConfig("pinned-1", broker_id=1))
    return controller


@pytest.fixture
async def behind(tmp_path: Path) -> AsyncIterator[BrokerController]:
    """Every reader counts as further behind than memory holds (ratio 0)."""
    controller = await _start(tmp_path, 0)
    try:
        yield controller
    finally:
        await controller.shutdown()


@pytest.fixture
async def in_memory(tmp_path: Path) -> AsyncIterator[BrokerController]:
    """No reader is behind (the default 40 % of RAM is far more than a few bytes)."""
    controller = await _start(tmp_path, 40)
    try:
        yield controller
    finally:
        await controller.shutdown()


def _request(group: str, offset: int = 0, flags: int = 0, commit: int = 0) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=TOPIC,
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=1,
        sys_flag=PullSysFlag.SUBSCRIPTION | flags,
        commit_offset=commit,
        suspend_timeout_millis=20_000,
        sub_version=0,
        subscription="*",
    )
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())


async def _pull(broker: BrokerController, request: RemotingCommand) -> RemotingCommand:
    processor = broker.server.dispatcher.processor_for(RequestCode.PULL_MESSAGE)
    assert processor is not None
    answer = processor(FakeChannel("127.0.0.1:50002"), request)  # type: ignore[arg-type]
    if inspect.isawaitable(answer):
        answer = await asyncio.wait_for(answer, 5)
    assert isinstance(answer, RemotingCommand)
    return answer


def _suggest(response: RemotingCommand) -> int:
    return PullMessageResponseHeader.from_command(response).suggest_which_broker_id


@pytest.mark.parametrize("group", ["slowly-1", "slowly-2", "pinned-1"])
async def test_without_slave_read_the_master_is_always_suggested(
    behind: BrokerController, group: str
) -> None:
    assert not behind.config.slave_read_enable
    response = await _pull(behind, _request(group))
    assert response.code == ResponseCode.SUCCESS
    assert _suggest(response) == 0


@pytest.mark.parametrize(("group", "expected"), [("slowly-1", 1), ("slowly-2", 2)])
async def test_a_reader_behind_memory_is_sent_where_the_group_says(
    behind: BrokerController, group: str, expected: int
) -> None:
    behind.config.slave_read_enable = True
    response = await _pull(behind, _request(group))
    assert response.code == ResponseCode.SUCCESS
    assert _suggest(response) == expected


@pytest.mark.parametrize(("group", "expected"), [("slowly-1", 0), ("pinned-1", 1)])
async def test_a_reader_in_memory_is_sent_to_the_groups_broker_id(
    in_memory: BrokerController, group: str, expected: int
) -> None:
    in_memory.config.slave_read_enable = True
    response = await _pull(in_memory, _request(group))
    assert response.code == ResponseCode.SUCCESS
    assert _suggest(response) == expected


async def test_an_empty_answer_carries_the_groups_broker_id(in_memory: BrokerController) -> None:
    in_memory.config.slave_read_enable = True
    response = await _pull(in_memory, _request("pinned-1", offset=3))
    assert response.code == ResponseCode.PULL_NOT_FOUND
    assert _suggest(response) == 1


async def test_a_held_pull_answers_with_the_same_rule(behind: BrokerController) -> None:
    behind.config.slave_read_enable = True
    processor = behind.server.dispatcher.processor_for(RequestCode.PULL_MESSAGE)
    assert processor is not None
    channel: Any = FakeChannel("127.0.0.1:50002")
    held = processor(channel, _request("slowly-2", offset=3, flags=PullSysFlag.SUSPEND))
    assert inspect.isawaitable(held)
    msg = MessageExt(topic=TOPIC, body=b"late", queue_id=0, properties={"TAGS": "A"})
    assert behind.store.put_message(msg).ok
    behind.reput.run()
    response = await asyncio.wait_for(held, 5)
    assert response.code == ResponseCode.SUCCESS
    assert _suggest(response) == 2


async def test_a_slave_serves_pulls_and_ignores_the_commit_offset(
    in_memory: BrokerController,
) -> None:
    in_memory.store_config.broker_role = BrokerRole.SLAVE
    offsets = in_memory.offsets
    response = await _pull(
        in_memory, _request("slowly-1", flags=PullSysFlag.COMMIT_OFFSET, commit=2)
    )
    # 4.9.8's SLAVE branch without slaveReadEnable sets PULL_RETRY_IMMEDIATELY, but the
    # status mapping overwrites it: the slave answers with the messages.
    assert response.code == ResponseCode.SUCCESS
    assert response.body
    assert _suggest(response) == 0
    assert offsets.query("slowly-1", TOPIC, 0) is None

    in_memory.store_config.broker_role = BrokerRole.ASYNC_MASTER
    await _pull(in_memory, _request("slowly-1", flags=PullSysFlag.COMMIT_OFFSET, commit=2))
    assert offsets.query("slowly-1", TOPIC, 0) == 2


async def test_a_slave_with_slave_read_suggests_as_a_master_does(
    behind: BrokerController,
) -> None:
    behind.store_config.broker_role = BrokerRole.SLAVE
    behind.config.slave_read_enable = True
    response = await _pull(behind, _request("slowly-2"))
    assert response.code == ResponseCode.SUCCESS
    assert _suggest(response) == 2

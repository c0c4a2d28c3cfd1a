"""Long polling: a held pull is answered by the arrival it waits for, including one that
was dispatched between the pull finding nothing and the hold being registered."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from mqcore.broker.controller import BrokerController
from mqcore.broker.long_polling import LongPollingService
from mqcore.message.model import MessageExt
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import PullMessageRequestHeader, PullSysFlag

from .broker_fakes import FakeChannel


async def test_a_registered_hold_waits_for_news_past_its_offset() -> None:
    polling = LongPollingService()
    held = asyncio.create_task(polling.hold("T", 0, 5, 10.0, max_offset=lambda: 5))
    await asyncio.sleep(0)
    assert polling.has_waiters("T", 0) and not held.done()
    polling.notify_message_arriving("T", 0, 5)  # not past the offset: still waiting
    await asyncio.sleep(0)
    assert not held.done()
    polling.notify_message_arriving("T", 0, 6)
    assert await asyncio.wait_for(held, 1) is True
    assert not polling.has_waiters("T", 0)


async def test_entries_that_landed_before_registration_answer_at_once() -> None:
    polling = LongPollingService()
    woke = await asyncio.wait_for(polling.hold("T", 0, 5, 10.0, max_offset=lambda: 6), 1)
    assert woke is True and not polling.has_waiters("T", 0)


async def test_a_pull_racing_the_dispatch_of_its_message_is_not_left_hanging(
    broker: BrokerController,
) -> None:
    broker.topics.create_in_send("Race", "TBW102", 1, 0)
    first = MessageExt(topic="Race", body=b"m0", queue_id=0, properties={"TAGS": "A"})
    assert broker.store.put_message(first).ok
    broker.reput.run()
    header = PullMessageRequestHeader(
        consumer_group="race-cg",
        topic="Race",
        queue_id=0,
        queue_offset=1,
        max_msg_nums=32,
        sys_flag=PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION,
        commit_offset=0,
        suspend_timeout_millis=20_000,
        sub_version=0,
        subscription="*",
    )
    request = RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())
    channel: Any = FakeChannel("127.0.0.1:50001")
    processor = broker.server.dispatcher.processor_for(RequestCode.PULL_MESSAGE)
    assert processor is not None
    held = processor(channel, request)
    assert inspect.isawaitable(held)  # nothing at offset 1 yet: the pull will be held
    # The message lands and is dispatched before the held pull first runs.
    second = MessageExt(topic="Race", body=b"m1", queue_id=0, properties={"TAGS": "A"})
    assert broker.store.put_message(second).ok
    broker.reput.run()
    response = await asyncio.wait_for(held, 3)  # not the 20 s suspend timeout
    assert response.code == ResponseCode.SUCCESS

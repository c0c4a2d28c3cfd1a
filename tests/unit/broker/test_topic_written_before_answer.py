"""A send that creates its topic is answered only once ``topics.json`` holds the topic.

4.9.8 writes the topic table before it stores the message that created the topic. mq
writes it off the loop (a group commit), so the answer waits for that write instead: a
kill -9 right after an acknowledged send to a new topic must not leave the message under
a topic the restarted broker does not know (found as 1,551 acknowledged messages
"lost" after a kill -9 that followed another topic's write by under a second).
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.errors import ConfigError
from mqcore.protocol import ResponseCode
from tests.support.clients import RawBrokerClient
from tests.support.polling import until


def _on_disk(broker: BrokerController, topic: str) -> bool:
    path = Path(broker.store_config.store_path_root_dir) / "config" / "topics.json"
    if not path.exists():  # nothing written yet since the store was made
        return False
    return topic in json.loads(path.read_text())["topicConfigTable"]


@pytest.mark.parametrize("code", ["send", "batch"])
async def test_the_answer_waits_for_the_new_topic_on_disk(
    broker: BrokerController, monkeypatch: pytest.MonkeyPatch, code: str
) -> None:
    gate = threading.Event()
    manager = broker.topic_configs
    real_persist = manager.persist

    def held_persist(*args: Any, **kwargs: Any) -> Any:
        gate.wait(20)
        return real_persist(*args, **kwargs)

    monkeypatch.setattr(manager, "persist", held_persist)
    async with RawBrokerClient(broker.broker_addr) as client:
        if code == "send":
            sent = asyncio.ensure_future(client.send("BornTopic", b"x", queue_id=1))
        else:
            sent = asyncio.ensure_future(client.send_batch("BornTopic", [b"a", b"b"], queue_id=1))
        await until(
            lambda: broker.store.get_max_offset_in_queue("BornTopic", 1) > 0,
            what="the message stored",
        )
        for _ in range(20):  # loop passes enough for an answer that did not wait
            await asyncio.sleep(0)
        assert not sent.done(), "answered before topics.json held the new topic"
        assert not _on_disk(broker, "BornTopic")
        gate.set()
        answer = await asyncio.wait_for(sent, 10)
        assert answer.code == ResponseCode.SUCCESS
        assert _on_disk(broker, "BornTopic")
        # the topic is known now: the next send is answered at once, with no write
        gate.clear()
        again = await asyncio.wait_for(client.send("BornTopic", b"y", queue_id=1), 10)
        assert again.code == ResponseCode.SUCCESS
        gate.set()


async def test_a_topic_that_cannot_be_written_fails_its_sends_until_it_is(
    broker: BrokerController, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each send under the topic tries the write again (the client retries), and once a
    write succeeds the sends are answered as usual."""
    manager = broker.topic_configs
    real_persist = manager.persist
    room = threading.Event()

    def persist(*args: Any, **kwargs: Any) -> Any:
        if not room.is_set():
            raise ConfigError("cannot write topics.json: [Errno 28] No space left on device")
        return real_persist(*args, **kwargs)

    monkeypatch.setattr(manager, "persist", persist)
    async with RawBrokerClient(broker.broker_addr) as client:
        for _ in range(2):
            answer = await asyncio.wait_for(client.send("NoRoomTopic", b"x", queue_id=0), 10)
            assert answer.code == ResponseCode.SYSTEM_ERROR
            assert "could not be written to topics.json" in (answer.remark or "")
        room.set()
        answer = await asyncio.wait_for(client.send("NoRoomTopic", b"x", queue_id=0), 10)
        assert answer.code == ResponseCode.SUCCESS
        assert _on_disk(broker, "NoRoomTopic")
        answer = await asyncio.wait_for(client.send("NoRoomTopic", b"y", queue_id=0), 10)
        assert answer.code == ResponseCode.SUCCESS
    assert "NoRoomTopic" not in broker.topics.unwritten

"""Offset stores: the broker-backed one against a fake API, the local file one on tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mqcore.client.offset_store import (
    LocalFileOffsetStore,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
)
from mqcore.errors import MQClientError
from mqcore.protocol.bodies import MessageQueue

Q0 = MessageQueue("T", "broker-a", 0)
Q1 = MessageQueue("T", "broker-a", 1)
Q2 = MessageQueue("U", "broker-b", 0)


class FakeOffsetAPI:
    def __init__(self) -> None:
        self.broker: dict[tuple[str, MessageQueue], int] = {}
        self.updates: list[tuple[MessageQueue, int, bool]] = []
        self.down = False

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int | None:
        if self.down:
            raise MQClientError("broker down")
        return self.broker.get((group, mq))

    async def update_consumer_offset(
        self, group: str, mq: MessageQueue, offset: int, *, oneway: bool = True
    ) -> None:
        if self.down:
            raise MQClientError("broker down")
        self.updates.append((mq, offset, oneway))
        self.broker[(group, mq)] = offset


async def test_remote_read_update_persist() -> None:
    api = FakeOffsetAPI()
    api.broker[("g", Q0)] = 7
    store = RemoteBrokerOffsetStore("g", api)
    assert await store.read(Q0, ReadOffsetType.MEMORY) is None
    assert await store.read(Q0) == 7
    assert await store.read(Q1) is None
    store.update(Q0, 10, increase_only=True)
    store.update(Q0, 8, increase_only=True)
    assert await store.read(Q0, ReadOffsetType.MEMORY) == 10
    store.update(Q0, 9)
    assert await store.read(Q0, ReadOffsetType.MEMORY) == 9
    store.update(Q1, 3)
    store.update(Q2, 4)
    await store.persist_all([Q0, Q1])
    assert sorted(api.updates, key=str) == sorted([(Q0, 9, True), (Q1, 3, True)], key=str)
    assert store.offsets() == {Q0: 9, Q1: 3}  # Q2 no longer assigned: forgotten
    assert store.offsets("U") == {}
    await store.persist_all([Q0, Q1], sync=True)
    assert api.updates[-1][2] is False


async def test_remote_errors() -> None:
    api = FakeOffsetAPI()
    store = RemoteBrokerOffsetStore("g", api)
    store.update(Q0, 1)
    api.down = True
    with pytest.raises(MQClientError):
        await store.read(Q1, ReadOffsetType.STORE)
    await store.persist_all([Q0])  # logged, not raised: the 5 s timer tries again
    with pytest.raises(MQClientError):
        await store.persist(Q0)


async def test_negative_offsets_ignored() -> None:
    store = RemoteBrokerOffsetStore("g", FakeOffsetAPI())
    store.update(Q0, -1)
    assert store.offsets() == {}


async def test_local_file_round_trip(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("g", "10.0.0.1@123", tmp_path)
    await store.load()
    assert await store.read(Q0) is None
    store.update(Q0, 5)
    store.update(Q2, 6)
    await store.persist_all([Q0, Q2])
    assert store.path == tmp_path / "10.0.0.1@123" / "g" / "offsets.json"
    data = json.loads(store.path.read_text())
    assert sorted(data["offsetTable"].values()) == [5, 6]

    again = LocalFileOffsetStore("g", "10.0.0.1@123", tmp_path)
    await again.load()
    assert await again.read(Q0, ReadOffsetType.STORE) == 5
    assert await again.read(Q2) == 6
    again.update(Q0, 9)
    await again.persist(Q0)
    assert (store.path.with_name("offsets.json.bak")).exists()

    third = LocalFileOffsetStore("g", "10.0.0.1@123", tmp_path)
    await third.load()
    assert third.offsets() == {Q0: 9, Q2: 6}


async def test_local_file_falls_back_to_backup(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("g", "c", tmp_path)
    store.update(Q0, 1)
    await store.persist_all([Q0])
    store.update(Q0, 2)
    await store.persist_all([Q0])
    store.path.write_text("{not json")
    again = LocalFileOffsetStore("g", "c", tmp_path)
    await again.load()
    assert again.offsets() == {Q0: 1}


async def test_sync_persist_raises() -> None:
    api = FakeOffsetAPI()
    store = RemoteBrokerOffsetStore("g", api)
    store.update(Q0, 1)
    api.down = True
    with pytest.raises(MQClientError):
        await store.persist_all([Q0], sync=True)

"""``consumerFilter.json`` through the file, as RocketMQ 4.9's ConsumerFilterManager:
written when a SQL92 registration changes, a group gone is marked dead (not removed),
alive entries load as dead, a heartbeat revives them, long-dead ones are cleaned."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mqcore.protocol import RequestCode
from mqcore.protocol.bodies import ConsumerData, HeartbeatData, SubscriptionData
from mqcore.protocol.headers import UnregisterClientRequestHeader
from mqcore.store.metadata.consumer_filter import ConsumerFilterManager
from tests.support.clients import TestClient
from tests.support.inproc import running_broker
from tests.support.polling import until


def entry(tmp_path: Path, topic: str = "Scores", group: str = "g-sql") -> dict[str, Any] | None:
    """The group's entry as the file has it now (None: not in the file)."""
    path = tmp_path / "store" / "config" / "consumerFilter.json"
    if not path.exists():
        return None
    by_topic = json.loads(path.read_text())["filterDataByTopic"]
    found: dict[str, Any] | None = by_topic.get(topic, {}).get("groupFilterData", {}).get(group)
    return found


async def entry_when(
    tmp_path: Path, ready: Callable[[dict[str, Any]], bool], topic: str = "Scores"
) -> dict[str, Any]:
    """The entry once the file shows ``ready`` (the broker writes it off the event
    loop, soon after the change)."""
    found: dict[str, Any] | None = None

    def check() -> bool:
        nonlocal found
        found = entry(tmp_path, topic)
        return found is not None and ready(found)

    await until(check, what=f"consumerFilter.json entry of {topic}")
    assert found is not None
    return found


async def heartbeat(client: TestClient, *subs: SubscriptionData) -> None:
    data = HeartbeatData(
        client.client_id, [], [ConsumerData("g-sql", subscription_data_set=list(subs))]
    )
    assert (await client.invoke(RequestCode.HEART_BEAT, body=data.encode())).code == 0


def sql(topic: str, expr: str, version: int) -> SubscriptionData:
    return SubscriptionData(topic, expr, sub_version=version, expression_type="SQL92")


async def test_register_unregister_and_restart(tmp_path: Path) -> None:
    async with running_broker(tmp_path, enable_property_filter=True) as broker:
        client = TestClient(broker.broker_addr, "10.0.0.1@sql")
        try:
            await heartbeat(client, sql("Scores", "score > 98", 7), sql("Other", "a = 1", 7))
            # written soon, not only at shutdown
            first = await entry_when(tmp_path, lambda e: e["expression"] == "score > 98")
            assert first["dead"] is False and first["deadTime"] == 0
            assert first["clientVersion"] == 7

            # a topic left out of the subscriptions is marked dead, not removed
            await heartbeat(client, sql("Scores", "score > 98", 7))
            other = await entry_when(tmp_path, lambda e: e["dead"] is True, "Other")
            assert other["deadTime"] > 0

            # the group goes away: dead with a deadTime, still in the file
            before = time.time_ns() // 1_000_000
            fields = UnregisterClientRequestHeader("10.0.0.1@sql", consumer_group="g-sql")
            assert (
                await client.invoke(RequestCode.UNREGISTER_CLIENT, fields.to_ext_fields())
            ).code == 0
            gone = await entry_when(tmp_path, lambda e: e["dead"] is True)
            assert gone["deadTime"] >= before
            assert gone["expression"] == "score > 98"
        finally:
            await client.close()

    # across a restart: still there, still dead; the same heartbeat revives it
    async with running_broker(tmp_path, enable_property_filter=True) as broker:
        loaded = broker.filters.get("Scores", "g-sql")
        assert loaded is not None and loaded.dead and loaded.expression == "score > 98"
        client = TestClient(broker.broker_addr, "10.0.0.1@sql")
        try:
            await heartbeat(client, sql("Scores", "score > 98", 7))
            back = await entry_when(tmp_path, lambda e: e["dead"] is False)
            assert back["deadTime"] == 0
            # a new expression replaces the entry (new born time, new version)
            await heartbeat(client, sql("Scores", "score > 99", 8))
            changed = await entry_when(tmp_path, lambda e: e["expression"] == "score > 99")
            assert changed["clientVersion"] == 8
        finally:
            await client.close()


async def test_alive_entries_load_dead_and_long_dead_ones_are_cleaned(tmp_path: Path) -> None:
    now = time.time_ns() // 1_000_000
    day = 24 * 3600 * 1000
    root = tmp_path / "store"
    filters = ConsumerFilterManager(root)
    filters.load()
    filters.register_sql("T", "alive", "a > 1", "SQL92", 3, now - 60_000)
    filters.register_sql("T", "old", "a > 2", "SQL92", 3, now - 2 * day)
    filters.register_sql("U", "old", "b > 2", "SQL92", 3, now - 2 * day)
    assert not filters.register_sql("T", "tags", "TagA", "TAG", 3, now)  # tags are not kept
    assert filters.unregister("old", now - day - 1)
    filters.persist()
    text = (root / "config" / "consumerFilter.json").read_text()
    assert '"old"' not in text and '"U"' not in text  # dead for a day: cleaned when written
    loaded = ConsumerFilterManager(root)
    loaded.load()
    alive = loaded.get("T", "alive")
    # every consumer is taken as dead on load, as of 30 s ago
    assert alive is not None and alive.dead and now - 31_000 <= alive.dead_time <= now
    # an equal version revives it, an older one is ignored
    assert not loaded.register_sql("T", "alive", "a > 5", "SQL92", 2, now)
    assert loaded.register_sql("T", "alive", "a > 1", "SQL92", 3, now)
    revived = loaded.get("T", "alive")
    assert revived is not None and not revived.dead and revived.expression == "a > 1"

"""SlaveSynchronize against a real in-process master and against a fake one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from mqcore.broker import slave_sync
from mqcore.broker.controller import BrokerController
from mqcore.broker.slave_sync import SlaveSynchronize, vip_addr
from mqcore.common.metadata import DataVersion, SubscriptionGroupConfig, TopicConfig
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.remoting import Channel, RemotingClient, RemotingServer
from mqcore.store.metadata import (
    ConsumerOffsetManager,
    DelayOffsetManager,
    SubscriptionGroupManager,
    TopicConfigManager,
)
from mqcore.store.metadata.persister import ConfigPersister
from mqcore.store.store_config import BrokerRole
from tests.support import until
from tests.support.inproc import broker_controller


class SlaveTables:
    """The four managers of a slave's store root (loaded, as the broker does)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.topics = TopicConfigManager(root)
        self.offsets = ConsumerOffsetManager(root)
        self.delay = DelayOffsetManager(root)
        self.groups = SubscriptionGroupManager(root)
        for m in (self.topics, self.offsets, self.delay, self.groups):
            m.load()

    def reloaded(self) -> SlaveTables:
        """The same files read again: what a restarted slave would have."""
        return SlaveTables(self.root)


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    c = RemotingClient(connect_timeout=2.0)
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
def slave(tmp_path: Path) -> SlaveTables:
    return SlaveTables(tmp_path / "slave")


def synchronizer(
    client: RemotingClient,
    slave: SlaveTables,
    master: Callable[[], str | None],
    own: str | None = None,
) -> SlaveSynchronize:
    own_addr: Callable[[], str] | None = None
    if own is not None:
        own_text = own
        own_addr = lambda: own_text  # noqa: E731
    return SlaveSynchronize(
        client,
        master,
        slave.topics,
        slave.offsets,
        slave.delay,
        slave.groups,
        own_addr=own_addr,
        timeout=2.0,
    )


async def run(sync: SlaveSynchronize) -> dict[str, bool]:
    await sync.sync_all()
    return sync.last_results


async def synced(sync: SlaveSynchronize, step: str) -> bool:
    return (await run(sync))[step]


# -- against a real master -----------------------------------------------------------------


async def test_topics_are_replaced_wholesale_with_the_masters_version(
    broker: BrokerController, client: RemotingClient, slave: SlaveTables
) -> None:
    broker.topic_configs.update(TopicConfig("Orders", 8, 8))
    slave.topics.update(TopicConfig("OnlyOnSlave", 1, 1))
    slave.topics.data_version.counter += 10  # the same millisecond must not make them equal
    sync = synchronizer(client, slave, lambda: broker.broker_addr)

    assert await synced(sync, "topics")

    master = broker.topic_configs
    assert slave.topics.table.keys() == master.table.keys()
    assert "OnlyOnSlave" not in slave.topics.table
    assert slave.topics.table["Orders"].write_queue_nums == 8
    assert slave.topics.data_version == master.data_version
    again = slave.reloaded()
    assert again.topics.table.keys() == master.table.keys()
    assert again.topics.data_version == master.data_version


async def test_topics_with_the_same_data_version_are_left_alone(
    broker: BrokerController, client: RemotingClient, slave: SlaveTables
) -> None:
    sync = synchronizer(client, slave, lambda: broker.broker_addr)
    await sync.sync_all()
    # A local change that keeps the version (as ensure_topics does) survives a sync
    # while the master's version is unchanged: the version is what is compared.
    slave.topics.ensure_topics([TopicConfig("LocalOnly", 1, 1)])

    assert not await sync.sync_topic_config(broker.broker_addr)
    assert "LocalOnly" in slave.topics.table

    broker.topic_configs.update(TopicConfig("Later", 2, 2))
    assert await sync.sync_topic_config(broker.broker_addr)
    assert "Later" in slave.topics.table
    assert "LocalOnly" not in slave.topics.table


async def test_consumer_offsets_are_merged_master_first(
    broker: BrokerController, client: RemotingClient, slave: SlaveTables
) -> None:
    broker.offsets.commit("g", "T", 0, 5)
    slave.offsets.commit("g", "T", 0, 1)
    slave.offsets.commit("g", "T", 1, 7)
    slave.offsets.commit("other", "X", 0, 3)
    sync = synchronizer(client, slave, lambda: broker.broker_addr)

    assert await synced(sync, "offsets")

    # 4.9.8 puts the master's topic@group maps over ours: a whole map is replaced.
    assert slave.offsets.query_all("g", "T") == {0: 5}
    assert slave.offsets.query("other", "X", 0) == 3
    again = slave.reloaded()
    assert again.offsets.query_all("g", "T") == {0: 5}
    assert again.offsets.query("other", "X", 0) == 3


async def test_a_broker_slave_writes_the_merged_offsets_off_the_loop(
    broker: BrokerController, client: RemotingClient, slave: SlaveTables
) -> None:
    """With the broker's persister the file is written by its thread, soon after."""
    broker.offsets.commit("g", "T", 0, 9)
    persister = ConfigPersister()
    persister.start()
    sync = synchronizer(client, slave, lambda: broker.broker_addr)
    sync.persister = persister
    try:
        writes = slave.offsets.writes
        assert await synced(sync, "offsets")
        assert slave.offsets.query_all("g", "T") == {0: 9}  # in the table at once
        await until(lambda: slave.offsets.writes > writes, 10, "the offsets written")
    finally:
        persister.close()
    assert slave.reloaded().offsets.query_all("g", "T") == {0: 9}


async def test_delay_offsets_replace_the_slaves(
    broker: BrokerController, client: RemotingClient, slave: SlaveTables
) -> None:
    broker.delay_offsets.update(1, 10)
    broker.delay_offsets.update(3, 4)
    slave.delay.update(2, 9)
    sync = synchronizer(client, slave, lambda: broker.broker_addr)

    assert await synced(sync, "delay_offsets")

    assert slave.delay.table == {1: 10, 3: 4}
    assert slave.reloaded().delay.table == {1: 10, 3: 4}


async def test_subscription_groups_follow_the_data_version(
    broker: BrokerController, client: RemotingClient, slave: SlaveTables
) -> None:
    broker.groups.update(
        SubscriptionGroupConfig("billing", which_broker_when_consume_slowly=1, broker_id=0)
    )
    slave.groups.update(SubscriptionGroupConfig("slave-only"))
    slave.groups.data_version.counter += 10
    sync = synchronizer(client, slave, lambda: broker.broker_addr)

    assert await synced(sync, "groups")

    master = broker.groups
    assert slave.groups.table.keys() == master.table.keys()
    assert "slave-only" not in slave.groups.table
    assert slave.groups.data_version == master.data_version
    assert "billing" in slave.reloaded().groups.table

    slave.groups.ensure_system_groups()  # no bump
    slave.groups.table["kept"] = SubscriptionGroupConfig("kept")
    assert not await sync.sync_subscription_groups(broker.broker_addr)
    assert "kept" in slave.groups.table


async def test_one_failing_step_does_not_stop_the_others(
    broker: BrokerController, client: RemotingClient, slave: SlaveTables
) -> None:
    def refuse(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR, "no offsets")

    broker.server.register(RequestCode.GET_ALL_CONSUMER_OFFSET, refuse)
    broker.topic_configs.update(TopicConfig("Orders", 4, 4))
    broker.delay_offsets.update(2, 6)
    broker.groups.update(SubscriptionGroupConfig("billing"))
    sync = synchronizer(client, slave, lambda: broker.broker_addr)

    results = await run(sync)

    assert results == {"topics": True, "offsets": False, "delay_offsets": True, "groups": True}
    assert "Orders" in slave.topics.table
    assert slave.delay.table == {2: 6}
    assert "billing" in slave.groups.table


async def test_no_master_or_itself_as_master_asks_nothing(
    broker: BrokerController, client: RemotingClient, slave: SlaveTables
) -> None:
    broker.topic_configs.update(TopicConfig("Orders", 4, 4))
    for sync in (
        synchronizer(client, slave, lambda: None),
        synchronizer(client, slave, lambda: broker.broker_addr, own=broker.broker_addr),
    ):
        assert await run(sync) == dict.fromkeys(
            ("topics", "offsets", "delay_offsets", "groups"), False
        )
    assert "Orders" not in slave.topics.table
    assert not (slave.root / "config" / "topics.json").exists()


async def test_the_master_address_is_asked_before_every_run(
    broker: BrokerController, client: RemotingClient, slave: SlaveTables
) -> None:
    current: list[str | None] = [None]
    sync = synchronizer(client, slave, lambda: current[0])
    broker.delay_offsets.update(1, 3)
    assert not await synced(sync, "delay_offsets")
    current[0] = broker.broker_addr
    assert await synced(sync, "delay_offsets")
    assert slave.delay.table == {1: 3}


# -- against a fake master: a Java master's text, failures, an unreachable one ----------


@pytest.fixture
async def fake_master() -> AsyncIterator[RemotingServer]:
    """Answers GET_ALL_CONSUMER_OFFSET and GET_ALL_DELAY_OFFSET the way a 4.9.8 master
    does (fastjson text, bare integer keys); nothing on its VIP port, no groups code."""
    server = RemotingServer(host="127.0.0.1", port=0)

    def offsets(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        body = b'{"offsetTable":{"T@g":{0:12,1:30}}}'
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, None, None, body)

    def delay(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        body = b'{\n\t"offsetTable":{1:17,4:2\n\t}\n}'
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, None, None, body)

    server.register(RequestCode.GET_ALL_CONSUMER_OFFSET, offsets)
    server.register(RequestCode.GET_ALL_DELAY_OFFSET, delay)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


async def test_a_java_masters_fastjson_text_is_read(
    fake_master: RemotingServer, client: RemotingClient, slave: SlaveTables
) -> None:
    sync = synchronizer(client, slave, lambda: f"127.0.0.1:{fake_master.port}")

    results = await run(sync)

    # VIP port closed and 201 unsupported: those two fail, the other two still run.
    assert results == {"topics": False, "offsets": True, "delay_offsets": True, "groups": False}
    assert slave.offsets.query_all("g", "T") == {0: 12, 1: 30}
    assert slave.delay.table == {1: 17, 4: 2}
    text = (slave.root / "config" / "delayOffset.json").read_text()
    assert text.startswith("{") and "17" in text


async def test_an_unreachable_master_fails_every_step_without_raising(
    client: RemotingClient, slave: SlaveTables
) -> None:
    server = RemotingServer(host="127.0.0.1", port=0)
    await server.start()
    port = server.port
    await server.close()  # a port nobody listens on now
    slave.delay.update(1, 1)
    sync = synchronizer(client, slave, lambda: f"127.0.0.1:{port}")

    assert not any((await run(sync)).values())
    assert slave.delay.table == {1: 1}


async def test_a_garbled_answer_changes_nothing(client: RemotingClient, slave: SlaveTables) -> None:
    server = RemotingServer(host="127.0.0.1", port=0)

    def garbage(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, None, None, b"{nope")

    server.register_default(garbage)
    await server.start()
    try:
        slave.delay.update(5, 5)
        slave.offsets.commit("g", "T", 0, 9)
        sync = synchronizer(client, slave, lambda: f"127.0.0.1:{server.port}")
        assert not any((await run(sync)).values())
    finally:
        await server.close()
    assert slave.delay.table == {5: 5}
    assert slave.offsets.query("g", "T", 0) == 9


def test_vip_addr_is_two_ports_below() -> None:
    assert vip_addr("10.0.0.1:10911") == "10.0.0.1:10909"
    assert vip_addr("[::1]:10911") == "[::1]:10909"


# -- in a broker: only the slave role runs it, on 4.9.8's schedule --------------------------


def controller_of(root: Path, role: BrokerRole) -> BrokerController:
    broker_id = 0 if role is not BrokerRole.SLAVE else 1
    return broker_controller(root, broker_id=broker_id, store={"broker_role": role})


@pytest.mark.parametrize("role", [BrokerRole.ASYNC_MASTER, BrokerRole.SYNC_MASTER])
async def test_a_master_does_not_synchronize(tmp_path: Path, role: BrokerRole) -> None:
    broker = controller_of(tmp_path, role)
    await broker.start()
    try:
        assert "slave-sync" not in broker.running_services
        assert "slave-sync" not in broker.slave_services.timers.names
    finally:
        await broker.shutdown()


async def test_a_slave_synchronizes_every_10_s_from_3_s_after_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = controller_of(tmp_path, BrokerRole.SLAVE)
    assert broker.slave_services.timers.names == []  # nothing before the broker starts
    scheduled: list[tuple[int, Any, dict[str, Any]]] = []
    every = broker.slave_services.timers.every

    def record(interval_ms: int, fn: Any, **kw: Any) -> asyncio.Task[None]:
        scheduled.append((interval_ms, fn, kw))
        return every(interval_ms, fn, **kw)

    monkeypatch.setattr(broker.slave_services.timers, "every", record)
    await broker.start()
    try:
        by_name = {kw["name"]: (interval, fn, kw) for interval, fn, kw in scheduled}
        assert set(by_name) == {"slave-sync", "timer-checkpoint-sync"}
        interval, fn, kw = by_name["slave-sync"]
        assert interval == 10_000 and kw["initial_delay_ms"] == 3_000
        timer_sync = by_name["timer-checkpoint-sync"]  # RocketMQ 5's, on the same schedule
        assert timer_sync[:2] == (10_000, broker.timer_checkpoint_sync.sync)
        assert timer_sync[2]["initial_delay_ms"] == 3_000
        sync = broker.slave_sync
        assert fn == sync.sync_all
        assert "slave-sync" in broker.slave_services.timers.names
        assert sync.client is broker.outer_api.client and sync.topics is broker.topic_configs
        broker.master_addr = "10.0.0.9:10911"
        assert sync.master_addr() == "10.0.0.9:10911"
        broker.master_addr = None
        assert sync.master_addr() is None
        broker.master_addr = broker.broker_addr
        assert sync._target() is None  # its own address is never its master
    finally:
        await broker.shutdown()
    assert broker.slave_services.timers.names == []


async def test_concurrent_runs_do_not_corrupt_the_files(
    broker: BrokerController, client: RemotingClient, slave: SlaveTables
) -> None:
    broker.topic_configs.update(TopicConfig("Orders", 4, 4))
    broker.offsets.commit("g", "Orders", 0, 2)
    sync = synchronizer(client, slave, lambda: broker.broker_addr)
    await asyncio.gather(sync.sync_all(), sync.sync_all())
    again = slave.reloaded()
    assert "Orders" in again.topics.table
    assert again.offsets.query("g", "Orders", 0) == 2
    json.loads((slave.root / "config" / "topics.json").read_text())


def test_data_version_is_assigned_in_place() -> None:
    target, source = DataVersion(1, 2), DataVersion(5, 9)
    same = target
    slave_sync._assign(target, source)
    assert same == source and same is target

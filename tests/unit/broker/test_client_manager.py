"""ProducerManager / ConsumerManager: membership, expiry, notifications (no sockets)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

import pytest

from mqcore.broker.client_manager import (
    ClientChannelInfo,
    ConsumerGroupEvent,
    ConsumerManager,
    ProducerManager,
)
from mqcore.common.aio import run_in_slices
from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.bodies import SubscriptionData
from mqcore.protocol.headers import NotifyConsumerIdsChangedRequestHeader
from mqcore.remoting import Channel, InMemoryNetwork, RequestDispatcher
from tests.support import until

ADDR = "127.0.0.1:10911"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Peer:
    """A client connected over the in-memory network; records notifications."""

    def __init__(self, network: InMemoryNetwork, client_id: str) -> None:
        self.client_id = client_id
        self.notified: list[str] = []
        dispatcher = RequestDispatcher()
        dispatcher.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_notify)
        self.client_channel = Channel(dispatcher)
        self.server_channel = network.connect(ADDR, self.client_channel)

    def _on_notify(self, channel: Channel, request: RemotingCommand) -> None:
        assert request.is_oneway
        self.notified.append(
            NotifyConsumerIdsChangedRequestHeader.from_command(request).consumer_group
        )

    def info(self, clock: Callable[[], float]) -> ClientChannelInfo:
        return ClientChannelInfo(self.server_channel, self.client_id, "JAVA", 409, clock())


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.fixture
def network() -> InMemoryNetwork:
    net = InMemoryNetwork()
    net.serve(ADDR, RequestDispatcher())
    return net


def sub(topic: str, expr: str = "*", version: int = 1) -> SubscriptionData:
    return SubscriptionData(topic, expr, sub_version=version)


def register(
    manager: ConsumerManager, peer: Peer, clock: Clock, *subs: SubscriptionData, group: str = "g1"
) -> bool:
    return manager.register_consumer(
        group,
        peer.info(clock),
        "CONSUME_PASSIVELY",
        "CLUSTERING",
        "CONSUME_FROM_LAST_OFFSET",
        subs or (sub("T"),),
    )


async def test_second_member_notifies_both(network: InMemoryNetwork) -> None:
    clock = Clock()
    manager = ConsumerManager(clock)
    a, b = Peer(network, "10.0.0.1@a"), Peer(network, "10.0.0.2@b")
    assert register(manager, a, clock)
    await until(lambda: a.notified == ["g1"])
    assert not register(manager, a, clock)  # refresh only: no change, no notification
    assert register(manager, b, clock)
    await until(lambda: a.notified == ["g1", "g1"] and b.notified == ["g1"])
    assert sorted(manager.client_ids("g1")) == ["10.0.0.1@a", "10.0.0.2@b"]
    assert manager.find_subscription("g1", "T") == sub("T")
    assert manager.find_subscription("g1", "other") is None
    assert manager.find_subscription("nope", "T") is None
    assert manager.groups_by_topic("T") == {"g1"}


async def test_group_switch_disables_notification(network: InMemoryNetwork) -> None:
    clock = Clock()
    manager = ConsumerManager(clock)
    a = Peer(network, "a")
    manager.register_consumer("g", a.info(clock), "C", "CLUSTERING", "F", [sub("T")], notify=False)
    await settle()
    assert a.notified == []
    manager.notify_enabled = False
    b = Peer(network, "b")
    assert register(manager, b, clock, group="g")
    await settle()
    assert a.notified == [] and b.notified == []


async def test_subscription_versions_and_topic_changes(network: InMemoryNetwork) -> None:
    clock = Clock()
    manager = ConsumerManager(clock)
    a = Peer(network, "a")
    register(manager, a, clock, sub("T", "TagA", 5))
    # an older version does not replace the stored subscription, nor notify
    assert not register(manager, a, clock, sub("T", "TagB", 4))
    assert manager.find_subscription("g1", "T") == sub("T", "TagA", 5)
    assert not register(manager, a, clock, sub("T", "TagB", 6))
    assert manager.find_subscription("g1", "T") == sub("T", "TagB", 6)
    # adding or dropping a topic is a change
    assert register(manager, a, clock, sub("T", "TagB", 6), sub("U"))
    assert register(manager, a, clock, sub("U"))
    assert manager.find_subscription("g1", "T") is None


async def test_unregister_and_close_notify_the_rest(network: InMemoryNetwork) -> None:
    clock = Clock()
    manager = ConsumerManager(clock)
    events: list[tuple[ConsumerGroupEvent, str]] = []
    manager.listeners.append(lambda event, group, _: events.append((event, group)))
    a, b = Peer(network, "a"), Peer(network, "b")
    register(manager, a, clock)
    register(manager, b, clock)
    await until(lambda: len(a.notified) == 2)
    assert manager.unregister_consumer("g1", b.server_channel)
    assert not manager.unregister_consumer("g1", b.server_channel)
    await until(lambda: len(a.notified) == 3)
    assert manager.client_ids("g1") == ["a"]
    # the last member leaving removes the group
    assert manager.on_channel_closed(a.server_channel) == ["g1"]
    assert manager.get_group("g1") is None
    assert (ConsumerGroupEvent.UNREGISTER, "g1") in events
    assert manager.on_channel_closed(a.server_channel) == []


async def test_closed_connection_is_dropped(network: InMemoryNetwork) -> None:
    clock = Clock()
    manager = ConsumerManager(clock)
    producers = ProducerManager(clock)
    a, b = Peer(network, "a"), Peer(network, "b")
    register(manager, a, clock)
    register(manager, b, clock)
    producers.register("pg", b.info(clock))
    await until(lambda: len(a.notified) == 2)
    b.client_channel.close()
    await until(lambda: b.server_channel.closed)
    manager.on_channel_closed(b.server_channel)
    assert producers.on_channel_closed(b.server_channel) == ["pg"]
    await until(lambda: len(a.notified) == 3)
    assert manager.client_ids("g1") == ["a"]
    assert producers.group_channels("pg") == []


async def test_expiry(network: InMemoryNetwork) -> None:
    clock = Clock()
    manager = ConsumerManager(clock)
    producers = ProducerManager(clock)
    a, b = Peer(network, "a"), Peer(network, "b")
    register(manager, a, clock)
    register(manager, b, clock)
    producers.register("pg", a.info(clock))
    clock.now += 100
    register(manager, a, clock)  # a heartbeats, b stays silent
    producers.register("pg", a.info(clock))
    clock.now += 30
    assert manager.scan_not_active(120) == [manager_info_for(b)]
    assert producers.scan_not_active(120) == []
    assert manager.client_ids("g1") == ["a"]
    await until(lambda: b.client_channel.closed)
    clock.now += 121
    assert [i.client_id for i in producers.scan_not_active(120)] == ["a"]
    assert producers.groups == {}


async def test_the_periodic_scan_goes_a_slice_of_groups_at_a_time(
    network: InMemoryNetwork, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a zero budget the loop gets a turn between every step; the scan still
    expires exactly the silent members, and a group that leaves meanwhile is no error."""
    from mqcore.broker import client_manager

    yields: list[int] = []

    async def every_step(steps: Iterable[object]) -> int:
        yields.append(await run_in_slices(steps, 0.0))
        return yields[-1]

    monkeypatch.setattr(client_manager, "run_in_slices", every_step)
    clock = Clock()
    manager, producers = ConsumerManager(clock, notify_enabled=False), ProducerManager(clock)
    quiet, busy = Peer(network, "quiet"), Peer(network, "busy")
    for i in range(600):
        peer = quiet if i % 2 else busy
        subs = [SubscriptionData(f"T{i}")]
        manager.register_consumer(f"g{i}", peer.info(clock), "PULL", "CLUSTERING", "LAST", subs)
        producers.register(f"pg{i}", peer.info(clock))
    clock.now += 100
    for i in range(0, 600, 2):  # busy heartbeats, quiet stays silent
        subs = [SubscriptionData(f"T{i}")]
        manager.register_consumer(f"g{i}", busy.info(clock), "PULL", "CLUSTERING", "LAST", subs)
        producers.register(f"pg{i}", busy.info(clock))
    clock.now += 30

    async def leaves_meanwhile() -> None:
        await asyncio.sleep(0)
        manager.unregister_consumer("g2", busy.server_channel)

    leaving = asyncio.create_task(leaves_meanwhile())
    expired = await manager.scan_not_active_in_slices(120)
    await leaving
    assert len(expired) == 300 and {i.client_id for i in expired} == {"quiet"}
    assert len(manager.groups) == 299 and "g1" not in manager.groups
    assert len(await producers.scan_not_active_in_slices(120)) == 300
    assert len(producers.groups) == 300
    assert min(yields) >= 2
    await until(lambda: quiet.client_channel.closed)


def manager_info_for(peer: Peer) -> ClientChannelInfo:
    # ClientChannelInfo compares by identity; match on client id instead.
    class _Eq(ClientChannelInfo):
        def __eq__(self, other: object) -> bool:
            return isinstance(other, ClientChannelInfo) and other.client_id == peer.client_id

    return _Eq(peer.server_channel, peer.client_id)


async def test_connection_views(network: InMemoryNetwork) -> None:
    clock = Clock()
    manager = ConsumerManager(clock)
    producers = ProducerManager(clock)
    a = Peer(network, "10.0.0.1@1")
    register(manager, a, clock, sub("T", "TagA"))
    producers.register("pg", a.info(clock))
    group = manager.get_group("g1")
    assert group is not None
    conn = group.connection()
    assert conn.message_model == "CLUSTERING"
    assert conn.consume_from_where == "CONSUME_FROM_LAST_OFFSET"
    assert [c.client_id for c in conn.connection_set] == ["10.0.0.1@1"]
    assert conn.connection_set[0].version == 409
    assert conn.connection_set[0].client_addr == a.server_channel.remote_address
    assert set(conn.subscription_table) == {"T"}
    assert producers.available_channel("pg") is a.server_channel
    assert producers.find_channel("10.0.0.1@1") is a.server_channel
    assert producers.available_channel("nope") is None
    assert manager.find_channel("g1", "10.0.0.1@1") is not None

"""RouteTable on routes built by hand: no name server, no network."""

from __future__ import annotations

import pytest

from mqcore.client.errors import TopicRouteNotFoundError
from mqcore.client.route_table import RouteTable
from mqcore.errors import MQClientError
from mqcore.protocol.bodies import BrokerData, MessageQueue, PermName, QueueData, TopicRouteData

RW = PermName.READ | PermName.WRITE


def route(*brokers: tuple[str, dict[int, str], int], perm: int = RW) -> TopicRouteData:
    """One queue data (``nums`` read and write queues) and one broker data per broker."""
    return TopicRouteData(
        queue_datas=[QueueData(name, nums, nums, perm) for name, _, nums in brokers],
        broker_datas=[BrokerData("c", name, dict(addrs)) for name, addrs, _ in brokers],
    )


class Namesrv:
    """What the table's fetch asks: topic -> route, and how often each was asked."""

    def __init__(self, **routes: TopicRouteData) -> None:
        self.routes = routes
        self.asked: list[str] = []

    async def fetch(self, topic: str) -> TopicRouteData | None:
        self.asked.append(topic)
        found = self.routes.get(topic)
        return None if found is None else TopicRouteData.decode(found.encode())


A = ("broker-a", {0: "a:0", 1: "a:1"}, 4)
B = ("broker-b", {0: "b:0"}, 2)


async def test_update_derives_publish_info_and_the_broker_table() -> None:
    ns = Namesrv(T=route(A, B))
    table = RouteTable(ns.fetch)
    assert await table.update("T")
    assert table.broker_addrs == {"broker-a": {0: "a:0", 1: "a:1"}, "broker-b": {0: "b:0"}}
    info = await table.find_publish_info("T")
    assert [(q.broker_name, q.queue_id) for q in info.queues] == [
        *(("broker-a", i) for i in range(4)),
        *(("broker-b", i) for i in range(2)),
    ]
    assert await table.subscribe_queues("T") == sorted(info.queues)
    assert ns.asked == ["T"]  # both answered from the cache
    assert table.all_addrs() == {"a:0", "a:1", "b:0"}
    assert table.heartbeat_addrs(slaves=False) == ["a:0", "b:0"]
    assert table.heartbeat_addrs(slaves=True) == ["a:0", "a:1", "b:0"]


async def test_a_new_route_keeps_the_round_robin_and_forget_drops_the_brokers() -> None:
    ns = Namesrv(T=route(A))
    table = RouteTable(ns.fetch)
    await table.update("T")
    before = table.publish_info["T"].next_index()
    ns.routes["T"] = route(A, B)
    await table.update("T")
    assert table.publish_info["T"].next_index() == before + 1
    table.forget("T")
    assert table.routes == {} and table.publish_info == {} and table.broker_addrs == {}


async def test_only_a_broker_not_known_before_is_announced() -> None:
    ns = Namesrv(T=route(A), U=route(A), V=route(B))
    announced: list[set[str]] = []
    table = RouteTable(ns.fetch, lambda: announced.append(table.all_addrs()))
    await table.update("T")
    await table.update("U")  # the same brokers again
    await table.update("V")
    assert announced == [{"a:0", "a:1"}, {"a:0", "a:1", "b:0"}]


async def test_unknown_topic_uses_tbw102_capped_at_four_queues_then_errors() -> None:
    ns = Namesrv(TBW102=route(("broker-a", {0: "a:0"}, 8)))
    table = RouteTable(ns.fetch)
    info = await table.find_publish_info("New")
    assert [q.queue_id for q in info.queues] == [0, 1, 2, 3]
    assert all(q.topic == "New" for q in info.queues)
    assert ns.asked == ["New", "TBW102"]
    with pytest.raises(TopicRouteNotFoundError):
        await table.get("Other")
    ns.routes.clear()
    with pytest.raises(TopicRouteNotFoundError):
        await RouteTable(ns.fetch).find_publish_info("Other")


async def test_refresh_keeps_the_last_route_and_adds_the_given_topics() -> None:
    ns = Namesrv(T=route(A), S=route(B))
    table = RouteTable(ns.fetch)
    await table.update("T")
    del ns.routes["T"]
    await table.refresh(["S"])
    assert set(table.routes) == {"S", "T"}
    assert ns.asked == ["T", "S", "T"]


async def test_refresh_logs_a_failure_and_goes_on() -> None:
    async def failing(topic: str) -> TopicRouteData | None:
        if topic == "A":
            raise MQClientError("name servers down")
        return route(B)

    table = RouteTable(failing)
    await table.refresh(["A", "B"])
    assert set(table.routes) == {"B"}


@pytest.mark.parametrize(
    ("by_id", "broker_id", "only", "expected"),
    [
        ({0: "m", 1: "s1"}, 0, False, ("m", False)),
        ({0: "m", 1: "s1"}, 1, False, ("s1", True)),
        ({0: "m", 2: "s2"}, 1, False, ("s2", True)),  # a missing slave id: the next one
        ({0: "m", 2: "s2"}, 1, True, ("s2", True)),
        ({0: "m", 1: "s1"}, 5, False, ("m", False)),  # else the lowest id, the master
        ({0: "m", 1: "s1"}, 5, True, None),
        ({1: "s1"}, 0, False, ("s1", True)),  # no master: a slave
        ({1: "s1", 2: "s2"}, 0, False, ("s1", True)),
        ({1: "s1"}, 0, True, None),
    ],
)
def test_find_broker_addr_in_subscribe_as_the_java_client(
    by_id: dict[int, str], broker_id: int, only: bool, expected: tuple[str, bool] | None
) -> None:
    table = RouteTable(Namesrv().fetch)
    table.store("T", route(("b", by_id, 1)))
    assert table.find_broker_addr_in_subscribe("b", broker_id, only) == expected
    assert table.find_broker_addr_in_subscribe("unknown", broker_id, only) is None
    found = table.find_broker_addr_in_subscribe("b")
    assert found is not None and table.find_any_broker_addr("b") == found[0]


async def test_offset_broker_falls_back_to_a_slave_after_one_refresh() -> None:
    mq = MessageQueue("T", "broker-a", 0)
    ns = Namesrv(T=route(("broker-a", {1: "a:1"}, 1)))
    table = RouteTable(ns.fetch)
    assert await table.offset_broker_addr(mq) == "a:1"
    assert ns.asked == ["T"]
    with pytest.raises(MQClientError, match="no master"):
        await table.master_addr_or_refresh(mq)
    ns.routes["T"] = route(A)
    assert await table.master_addr_or_refresh(mq) == "a:0"
    assert await table.offset_broker_addr(mq) == "a:0"
    with pytest.raises(MQClientError, match="not in any route"):
        await table.offset_broker_addr(MessageQueue("T", "gone", 0))

"""Latency-based fault avoidance (MQFaultStrategy) with a fake clock."""

from __future__ import annotations

from mqcore.client.latency import MQFaultStrategy
from mqcore.client.route import TopicPublishInfo
from mqcore.protocol.bodies import BrokerData, MessageQueue, QueueData, TopicRouteData


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def info(*brokers: str, queues: int = 2) -> TopicPublishInfo:
    route = TopicRouteData(
        [QueueData(b, queues, queues, 6) for b in brokers],
        [BrokerData("c", b, {0: f"127.0.0.1:{10911 + i}"}) for i, b in enumerate(brokers)],
    )
    return TopicPublishInfo.from_route("T", route)


def test_latency_levels_map_to_rocketmq_penalties() -> None:
    d = MQFaultStrategy.not_available_duration
    assert [d(x) for x in (0, 49, 100, 549, 550, 999, 1000, 2000, 3000, 14999, 15000)] == [
        0, 0, 0, 0, 30000, 30000, 60000, 120000, 180000, 180000, 600000,
    ]  # fmt: skip


def test_failed_broker_is_avoided_until_its_penalty_ends() -> None:
    clock = Clock()
    strategy = MQFaultStrategy(clock=clock)
    tpi = info("a", "b")
    strategy.update_fault_item("a", 12, isolation=True)  # failure: 30 s latency -> 600 s
    picks = {strategy.select_queue(tpi).broker_name for _ in range(20)}
    assert picks == {"b"}
    clock.now += 599
    assert {strategy.select_queue(tpi).broker_name for _ in range(20)} == {"b"}
    clock.now += 2
    assert {strategy.select_queue(tpi).broker_name for _ in range(20)} == {"a", "b"}


def test_slow_broker_penalised_fast_one_not() -> None:
    clock = Clock()
    strategy = MQFaultStrategy(clock=clock)
    tpi = info("a", "b")
    strategy.update_fault_item("a", 40, isolation=False)  # fast: no penalty
    strategy.update_fault_item("b", 1200, isolation=False)  # slow: 60 s
    assert {strategy.select_queue(tpi).broker_name for _ in range(10)} == {"a"}
    clock.now += 61
    assert {strategy.select_queue(tpi).broker_name for _ in range(10)} == {"a", "b"}


def test_all_penalised_still_picks_the_least_bad() -> None:
    clock = Clock()
    strategy = MQFaultStrategy(clock=clock)
    tpi = info("a", "b", "c", "d")
    strategy.update_fault_item("a", 16000, isolation=False)
    strategy.update_fault_item("b", 600, isolation=False)
    strategy.update_fault_item("c", 2500, isolation=False)
    strategy.update_fault_item("d", 0, isolation=True)  # ranked by measured latency, as Java
    picks = [strategy.select_queue(tpi) for _ in range(8)]
    assert {p.broker_name for p in picks} == {"d", "b"}  # the better half, in turn
    assert all(isinstance(p, MessageQueue) and p.topic == "T" for p in picks)


def test_retry_avoids_last_broker_and_disabled_is_round_robin() -> None:
    strategy = MQFaultStrategy(enabled=False)
    tpi = info("a", "b")
    assert all(strategy.select_queue(tpi, "a").broker_name == "b" for _ in range(10))
    strategy.update_fault_item("a", 99999, isolation=True)  # ignored when disabled
    assert {strategy.select_queue(tpi).broker_name for _ in range(8)} == {"a", "b"}
    enabled = MQFaultStrategy(clock=Clock())
    assert all(enabled.select_queue(tpi, "b").broker_name == "a" for _ in range(10))
    single = info("a")
    assert enabled.select_queue(single, "a").broker_name == "a"  # nothing else to try

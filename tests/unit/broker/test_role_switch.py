"""A running broker changes role in-process: a slave becomes master and back again, and
its old master follows it. After each switch exactly the services of the new role run,
sends are refused or accepted as the role says, and nothing stored is lost: the queue
goes on at the offset where the previous master stopped, on both brokers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.common.metadata import TopicConfig
from mqcore.protocol import ResponseCode
from mqcore.store.store_config import BrokerRole
from tests.support.clients import RawBrokerClient, send_header
from tests.support.inproc import broker_controller
from tests.support.polling import until

TOPIC = "RoleSwitch"
MASTER_SERVICES = {"pop-revive", "ha-service", "schedule", "timer", "transaction-check"}
SLAVE_SERVICES = {"learn-stored-topics", "ha-client", "slave-sync", "timer-checkpoint-sync"}
BROKER_SERVICES = {
    "loop-lag-monitor",
    "name-server-registration",
    "persist-consumer-offsets",
    "persist-configs",
    "client-scan",
    "filter-clean",
    "stats-sample",
    "stats-hour",
    "stats-day",
}


def controller(root: Path, role: BrokerRole) -> BrokerController:
    broker_id = 0 if role is not BrokerRole.SLAVE else 1
    return broker_controller(root, broker_id=broker_id, store={"broker_role": role})


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[BrokerController, BrokerController]]:
    a = controller(tmp_path / "a", BrokerRole.ASYNC_MASTER)
    b = controller(tmp_path / "b", BrokerRole.SLAVE)
    await a.start()
    try:
        await b.start()
        try:
            for broker in (a, b):  # as `mq topic create -c` would on each broker
                broker.topic_configs.update(TopicConfig(TOPIC, 1, 1))
            await b.become_slave(1, a.broker_addr, a.ha_addr)
            yield a, b
        finally:
            await b.shutdown()
    finally:
        await a.shutdown()


def assert_master(broker: BrokerController, role: BrokerRole) -> None:
    running = set(broker.running_services)
    assert running == BROKER_SERVICES | MASTER_SERVICES, running
    assert broker.store_config.broker_role is role and broker.config.broker_id == 0
    assert broker.ha.listening and not broker.ha_client.running
    assert broker.schedule_service.running
    assert broker.slave_services.timers.names == []


def assert_slave(broker: BrokerController, broker_id: int) -> None:
    running = set(broker.running_services)
    assert running == BROKER_SERVICES | SLAVE_SERVICES, running
    assert broker.store_config.broker_role is BrokerRole.SLAVE
    assert broker.config.broker_id == broker_id
    assert broker.ha_client.running and not broker.ha.listening
    assert not broker.schedule_service.running
    assert broker.master_services.timers.names == []  # no delay or check-back timer left


async def send(broker: BrokerController, first: int, count: int) -> list[int]:
    """Send ``count`` messages; the queue offsets they were stored at."""
    async with RawBrokerClient(broker.broker_addr) as client:
        offsets = []
        for i in range(first, first + count):
            response = await client.send(TOPIC, b"m%d" % i)
            assert response.code == ResponseCode.SUCCESS, response.remark
            offsets.append(send_header(response).queue_offset)
        return offsets


async def refused(broker: BrokerController) -> None:
    async with RawBrokerClient(broker.broker_addr) as client:
        response = await client.send(TOPIC, b"refused")
    assert response.code == ResponseCode.SERVICE_NOT_AVAILABLE, response.remark


async def caught_up(follower: BrokerController, leader: BrokerController) -> None:
    """The follower holds and has dispatched everything the leader has."""

    def same() -> bool:
        end = leader.store.max_phy_offset
        return follower.store.max_phy_offset == end and follower.store.dispatch_behind_bytes() == 0

    await until(same, 10, lambda: (follower.store.max_phy_offset, leader.store.max_phy_offset))


async def bodies(broker: BrokerController) -> list[bytes]:
    async with RawBrokerClient(broker.broker_addr) as client:
        return [m.body for m in await client.pull_all(TOPIC, 0)]


async def test_a_slave_becomes_master_and_back(
    pair: tuple[BrokerController, BrokerController],
) -> None:
    a, b = pair
    assert_master(a, BrokerRole.ASYNC_MASTER)
    assert_slave(b, 1)
    assert await send(a, 0, 10) == list(range(10))
    await refused(b)
    await caught_up(b, a)

    # b takes over (the master "failed"), a follows it
    await b.become_master(BrokerRole.ASYNC_MASTER)
    await a.become_slave(1, b.broker_addr, b.ha_addr)
    assert_master(b, BrokerRole.ASYNC_MASTER)
    assert_slave(a, 1)
    await refused(a)
    assert await send(b, 10, 10) == list(range(10, 20))  # the queue goes on, no gap
    await caught_up(a, b)

    # and back: a leads again, b follows
    await a.become_master(BrokerRole.SYNC_MASTER)
    await b.become_slave(2, a.broker_addr, a.ha_addr)
    assert_master(a, BrokerRole.SYNC_MASTER)
    assert_slave(b, 2)
    await refused(b)
    await until(lambda: a.ha.connection_count == 1, 10, "b did not connect to a's HA port")
    assert await send(a, 20, 10) == list(range(20, 30))  # SYNC_MASTER: b has each one
    await caught_up(b, a)

    want = [b"m%d" % i for i in range(30)]
    assert await bodies(a) == want
    assert await bodies(b) == want
    assert a.store.commit_log.max_offset == b.store.commit_log.max_offset


async def test_switching_to_the_role_a_broker_has_changes_nothing(
    pair: tuple[BrokerController, BrokerController],
) -> None:
    a, b = pair
    await a.become_master(BrokerRole.ASYNC_MASTER)
    await b.become_slave(1, a.broker_addr, a.ha_addr)
    assert_master(a, BrokerRole.ASYNC_MASTER)
    assert_slave(b, 1)
    with pytest.raises(ValueError, match="master role"):
        await b.become_master(BrokerRole.SLAVE)
    with pytest.raises(ValueError, match="brokerId"):
        await a.become_slave(0)
    assert_master(a, BrokerRole.ASYNC_MASTER)


async def test_a_stopped_broker_stops_the_services_of_its_current_role(
    pair: tuple[BrokerController, BrokerController],
) -> None:
    _, b = pair
    await b.become_master(BrokerRole.ASYNC_MASTER)
    await b.shutdown()
    assert b.running_services == []
    assert not b.ha.listening and not b.ha_client.running

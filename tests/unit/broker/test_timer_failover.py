"""A slave that becomes master goes on with its old master's timer messages: it copies
the master's timer checkpoint (GET_TIMER_CHECK_POINT) while it follows it, and once
master it delivers what was still waiting, and nothing the old master had delivered."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.common.metadata import TopicConfig
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.store.store_config import BrokerRole
from mqcore.store.timer import TimerCheckpointValues
from tests.support.clients import RawBrokerClient
from tests.support.inproc import broker_controller
from tests.support.polling import until

pytestmark = pytest.mark.timeout(60)

TOPIC = "TimerFailover"
STORE = {"timer_precision_ms": 100}


def controller(root: Path, role: BrokerRole) -> BrokerController:
    broker_id = 0 if role is not BrokerRole.SLAVE else 1
    return broker_controller(root, broker_id=broker_id, store={**STORE, "broker_role": role})


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[BrokerController, BrokerController]]:
    a = controller(tmp_path / "a", BrokerRole.ASYNC_MASTER)
    b = controller(tmp_path / "b", BrokerRole.SLAVE)
    await a.start()
    try:
        await b.start()
        try:
            for broker in (a, b):
                broker.topic_configs.update(TopicConfig(TOPIC, 1, 1))
            await b.become_slave(1, a.broker_addr, a.ha_addr)
            yield a, b
        finally:
            await b.shutdown()
    finally:
        await a.shutdown()


async def bodies(broker: BrokerController) -> list[bytes]:
    async with RawBrokerClient(broker.broker_addr) as client:
        return [m.body for m in await client.pull_all(TOPIC, 0)]


async def test_a_promoted_slave_delivers_what_was_waiting_and_nothing_twice(
    pair: tuple[BrokerController, BrokerController],
) -> None:
    a, b = pair
    now = int(time.time() * 1000)
    async with RawBrokerClient(a.broker_addr) as client:
        for i in range(10):
            due = now + (500 if i < 5 else 2000)
            r = await client.send(
                TOPIC, b"t%d" % i, queue_nums=1, properties={"TIMER_DELIVER_MS": str(due)}
            )
            assert r.code == ResponseCode.SUCCESS, r.remark
        cp = await client.invoke(RemotingCommand.request(RequestCode.GET_TIMER_CHECK_POINT))
        assert cp.code == ResponseCode.SUCCESS and len(cp.body) == 56

    async def early_delivered() -> bool:
        return len(await bodies(a)) == 5

    await until(early_delivered, 10, "the master delivering the first five")
    await a.timer_service.flush()  # its checkpoint names them (it does so every second)

    def slave_has_all() -> bool:
        return b.store.max_phy_offset == a.store.max_phy_offset

    await until(slave_has_all, 10, "replication")
    await b.timer_checkpoint_sync.sync()
    copied = b.timer_checkpoint_sync.last
    assert copied is not None and copied.master_timer_queue_offset == 10
    on_disk = TimerCheckpointValues.decode((b.store_config.timer_check_path).read_bytes()[:56])
    assert on_disk.master_timer_queue_offset == 10
    assert on_disk.last_read_time_ms == copied.last_read_time_ms

    await a.shutdown()
    await b.become_master()
    assert b.timer_service.running

    async def all_delivered() -> bool:
        return len(await bodies(b)) >= 10

    await until(all_delivered, 15, "the new master delivering the other five")
    counts = Counter(await bodies(b))
    assert counts == Counter({b"t%d" % i: 1 for i in range(10)})
    assert int(time.time() * 1000) >= now + 2000

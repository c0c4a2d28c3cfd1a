"""A slave serves every record it holds, whatever its metadata sync has copied: the topic
of a replicated record is learnt when the record is dispatched (with as many queues as
hold records), again after the sync takes a master's table that predates it, and at start.
So a message acknowledged just before its master died is readable at the slave."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.message.model import MessageExt
from mqcore.protocol import ResponseCode
from mqcore.store.store_config import BrokerRole
from tests.support.clients import RawBrokerClient
from tests.support.inproc import broker_controller
from tests.support.polling import until

TOPIC = "FreshTopic"


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[BrokerController, BrokerController]]:
    """A master and a slave that replicates from it but has no master to copy metadata
    from (no name server, no master address): only replication reaches it."""
    master = broker_controller(tmp_path / "m", store={"broker_role": BrokerRole.SYNC_MASTER})
    slave = broker_controller(tmp_path / "s", broker_id=1, store={"broker_role": BrokerRole.SLAVE})
    await master.start()
    try:
        await slave.start()
        try:
            await slave.become_slave(1, master_ha_addr=master.ha_addr)
            await until(lambda: master.ha.connection_count == 1, 10, "the slave connected")
            yield master, slave
        finally:
            await slave.shutdown()
    finally:
        await master.shutdown()


async def test_a_new_topic_is_readable_at_the_slave_once_replicated(
    pair: tuple[BrokerController, BrokerController],
) -> None:
    master, slave = pair
    async with RawBrokerClient(master.broker_addr) as client:
        for i in range(10):  # auto-created at the master; SYNC_MASTER: the slave has each
            response = await client.send(TOPIC, b"m%d" % i, queue_id=2)
            assert response.code == ResponseCode.SUCCESS, response.remark
    await until(lambda: slave.store.dispatch_behind_bytes() == 0, 10, "dispatched")
    await until(lambda: TOPIC in slave.topic_configs.table, 10, "the topic learnt")
    assert slave.slave_sync.last_results == {}  # no sync ever ran
    assert slave.topic_configs.table[TOPIC].read_queue_nums == 3  # queues 0..2
    await master.shutdown()  # gone: only what the slave holds is left

    async with RawBrokerClient(slave.broker_addr) as client:
        got = await client.pull_all(TOPIC, 2, group="after-failover")
    assert [m.body for m in got] == [b"m%d" % i for i in range(10)]


async def test_a_synced_table_without_the_topic_does_not_hide_it(
    pair: tuple[BrokerController, BrokerController],
) -> None:
    master, slave = pair
    async with RawBrokerClient(master.broker_addr) as client:
        assert (await client.send(TOPIC, b"x", queue_id=1)).code == ResponseCode.SUCCESS
    await until(lambda: TOPIC in slave.topic_configs.table, 10, "the topic learnt")
    # the master's answer to a sync was made before it created the topic
    slave.topic_configs.table.clear()
    assert slave.slave_sync.on_topics_taken is not None
    slave.slave_sync.on_topics_taken()
    assert slave.topic_configs.table[TOPIC].read_queue_nums == 2


async def test_a_restarted_slave_learns_the_topics_of_its_store(tmp_path: Path) -> None:
    root = tmp_path / "s"
    slave = broker_controller(root, broker_id=1, store={"broker_role": BrokerRole.SLAVE})
    await slave.start()
    try:
        slave.store_config.broker_role = BrokerRole.ASYNC_MASTER  # write as a master would
        assert slave.appender.put([_message(queue_id=3)]).ok
        slave.reput.run()
        slave.store_config.broker_role = BrokerRole.SLAVE
        slave.topic_configs.table.pop(TOPIC, None)
        slave.topic_configs.persist()
    finally:
        await slave.shutdown()
    again = broker_controller(root, broker_id=1, store={"broker_role": BrokerRole.SLAVE})
    await again.start()
    try:
        assert again.topic_configs.table[TOPIC].read_queue_nums == 4
    finally:
        await again.shutdown()


async def test_a_master_learns_nothing(pair: tuple[BrokerController, BrokerController]) -> None:
    master, _ = pair
    master.reput.run()
    assert master.appender.put([_message(queue_id=0, topic="OnlyStored")]).ok
    master.reput.run()
    assert "OnlyStored" not in master.topic_configs.table


def _message(*, queue_id: int, topic: str = TOPIC) -> MessageExt:
    return MessageExt(topic=topic, body=b"b", queue_id=queue_id, properties={"TAGS": "T"})

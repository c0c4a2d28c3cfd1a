"""Which node of a broker name the client talks to: the pull's ``suggestWhichBrokerId``,
pulls and offsets at the slave while the master is gone, back to the master after."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from client_fakes import NAMESRV, FakeBroker, InMemoryCluster

from mqcore.client.instance import ClientInstance
from mqcore.errors import MQClientError
from mqcore.protocol.bodies import MessageQueue
from mqcore.protocol.headers import PullSysFlag

MASTER = "127.0.0.1:10911"
SLAVE = "127.0.0.1:10912"
MQ = MessageQueue("T", "broker-a", 0)


pytestmark = pytest.mark.cluster(
    brokers={"broker-a": (MASTER, {"T": 1})}, slaves={"broker-a": SLAVE}
)


@pytest.fixture
async def instance(cluster: InMemoryCluster) -> AsyncIterator[ClientInstance]:
    inst = ClientInstance(NAMESRV, config=cluster.config())
    try:
        await inst.update_route("T")
        yield inst
    finally:
        await inst.shutdown()


def master(cluster: InMemoryCluster) -> FakeBroker:
    return cluster.brokers["broker-a"]


def slave(cluster: InMemoryCluster) -> FakeBroker:
    return cluster.slaves["broker-a"]


async def pull(inst: ClientInstance, commit_offset: int = 0) -> None:
    await inst.api.pull(MQ, group="g", offset=0, suspend=False, commit_offset=commit_offset)


# -- following suggestWhichBrokerId ------------------------------------------------------


async def test_pulls_follow_the_suggested_broker_id(
    cluster: InMemoryCluster, instance: ClientInstance
) -> None:
    master(cluster).suggest = 1
    await pull(instance)
    assert len(master(cluster).pulls) == 1 and instance.api.pull_from_which_node[MQ] == 1

    await pull(instance, commit_offset=7)  # at the slave now: no piggybacked commit
    [at_slave] = slave(cluster).pulls
    assert not at_slave.sys_flag & PullSysFlag.COMMIT_OFFSET
    assert at_slave.commit_offset == 7

    # The slave says "master" (0): the next pull goes back, with its commit offset.
    await pull(instance, commit_offset=8)
    assert len(master(cluster).pulls) == 2
    assert master(cluster).pulls[-1].sys_flag & PullSysFlag.COMMIT_OFFSET


async def test_a_suggested_slave_that_is_gone_falls_to_the_next_or_the_master(
    cluster: InMemoryCluster, instance: ClientInstance
) -> None:
    master(cluster).suggest = 2  # no broker id 2 nor 3: the lowest id, the master
    await pull(instance)
    await pull(instance)
    assert len(master(cluster).pulls) == 2 and not slave(cluster).pulls


# -- master gone, master back ------------------------------------------------------------


async def test_without_a_master_pulls_and_offsets_go_to_the_slave_and_come_back(
    cluster: InMemoryCluster, instance: ClientInstance
) -> None:
    api = instance.api
    await api.update_consumer_offset("g", MQ, 1, oneway=False)
    assert master(cluster).offsets == {("g", "T", 0): 1}

    cluster.stop_broker("broker-a")
    cluster.unregister("broker-a", 0)
    await instance.update_route("T")
    assert instance.find_master_addr("broker-a") is None
    assert await instance.subscribe_queues("T") == [MQ]  # still readable from the slave

    await pull(instance, commit_offset=3)
    [at_slave] = slave(cluster).pulls
    assert not at_slave.sys_flag & PullSysFlag.COMMIT_OFFSET
    await api.update_consumer_offset("g", MQ, 4, oneway=False)
    await api.update_consumer_offset("g", MQ, 5)  # oneway too
    # The query travels behind the oneway update on the same connection.
    assert await api.query_consumer_offset("g", MQ) == 5
    assert slave(cluster).offsets == {("g", "T", 0): 5}
    assert master(cluster).offsets == {("g", "T", 0): 1}

    # The master is back and registered: the next route refresh sends everything there.
    cluster.network.serve(MASTER, master(cluster).dispatcher())
    cluster.register("broker-a", {"T": 1})
    await instance.update_route("T")
    await api.update_consumer_offset("g", MQ, 6, oneway=False)
    assert master(cluster).offsets == {("g", "T", 0): 6}
    assert await api.query_consumer_offset("g", MQ) == 6
    await pull(instance)
    assert len(master(cluster).pulls) == 1 and len(slave(cluster).pulls) == 1


async def test_offsets_refresh_the_route_before_falling_back_to_a_slave(
    cluster: InMemoryCluster, instance: ClientInstance
) -> None:
    cluster.unregister("broker-a", 0)
    await instance.update_route("T")
    assert instance.find_master_addr("broker-a") is None
    cluster.register("broker-a", {"T": 1})  # the master is back; our cache does not know

    await instance.api.update_consumer_offset("g", MQ, 9, oneway=False)

    assert master(cluster).offsets == {("g", "T", 0): 9}
    assert slave(cluster).offsets == {}
    assert instance.find_master_addr("broker-a") == MASTER


async def test_offsets_of_an_unknown_broker_raise(instance: ClientInstance) -> None:
    gone = MessageQueue("T", "broker-z", 0)
    with pytest.raises(MQClientError, match="broker-z"):
        await instance.api.update_consumer_offset("g", gone, 1, oneway=False)
    with pytest.raises(MQClientError, match="broker-z"):
        await instance.api.query_consumer_offset("g", gone)

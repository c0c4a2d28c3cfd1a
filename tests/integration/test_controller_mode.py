"""Controller mode end to end, in one process: a name server hosting the controller and
two brokers of one broker name that the controller, not their config, makes master and
slave. The master goes away: within the heartbeat timeout the in-sync slave is master,
the producer is acknowledged again without any command, and nothing acknowledged is
lost; the old master comes back as a slave of the new one and catches up."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.client import Admin, Producer, make_message
from mqcore.client.api import SendStatus
from mqcore.errors import MQError
from mqcore.namesrv import NamesrvController
from mqcore.protocol import ResponseCode
from mqcore.store.store_config import BrokerRole
from tests.support.clients import RawBrokerClient
from tests.support.inproc import controller_replica, namesrv_hosting_controller
from tests.support.polling import until

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings(
        r"ignore:Exception ignored in. <_io.FileIO name='[^']*raft\.journal\.meta'"
        ":pytest.PytestUnraisableExceptionWarning"
    ),
]

TOPIC = "CtlTopic"
TIMEOUT_MS = 1500
"""controllerHeartBeatTimeoutMills: how long a silent master keeps its role."""


@pytest.fixture
async def namesrv(tmp_path: Path) -> AsyncIterator[NamesrvController]:
    ns = namesrv_hosting_controller(tmp_path)
    await ns.start()
    try:
        assert ns.controller is not None
        await until(lambda: ns.controller is not None and ns.controller.raft.is_leader, 10)
        yield ns
    finally:
        await ns.shutdown()


def replica(root: Path, namesrv: str) -> BrokerController:
    return controller_replica(
        root,
        namesrv,
        heartbeat_timeout_ms=TIMEOUT_MS,
        store={"broker_role": BrokerRole.SYNC_MASTER},  # not what decides
    )


def is_master(broker: BrokerController) -> bool:
    return (
        broker.replicas is not None
        and broker.replicas.is_master
        and broker.store_config.broker_role is not BrokerRole.SLAVE
    )


async def send(producer: Producer, first: int, count: int) -> None:
    for i in range(first, first + count):
        result = await producer.send(make_message(TOPIC, f"m{i}"))
        assert result.status is SendStatus.SEND_OK, result


async def bodies(broker: BrokerController) -> list[str]:
    """The numbered messages the broker holds, in number order (the probes left out)."""
    out: list[str] = []
    async with RawBrokerClient(broker.broker_addr) as client:
        for queue in range(8):
            out += [m.body.decode() for m in await client.pull_all(TOPIC, queue)]
    return sorted((x for x in out if x != "probe"), key=lambda x: int(x[1:]))


async def test_the_in_sync_slave_takes_over_and_the_old_master_follows_it(
    tmp_path: Path, namesrv: NamesrvController
) -> None:
    ns = namesrv.listen_address
    a = replica(tmp_path / "a", ns)
    await a.start()
    b: BrokerController | None = None
    try:
        await until(lambda: is_master(a), 10, "a elected (the only replica)")
        b = replica(tmp_path / "b", ns)
        await b.start()
        assert a.replicas is not None and b.replicas is not None
        id_a, id_b = a.replicas.broker_id, b.replicas.broker_id
        await until(lambda: b is not None and b.master_addr == a.broker_addr, 10, "b follows a")
        await until(
            lambda: a.replicas is not None and a.replicas.sync_state_set == {id_a, id_b},
            15,
            lambda: f"b in sync: {a.replicas.sync_state_set if a.replicas else None}",
        )

        async with Producer("ctl-pg", namesrv=ns, retry_times_when_send_failed=4) as producer:
            await send(producer, 0, 20)  # SYNC_MASTER: each one on b too
            await a.shutdown()  # the master is gone
            await until(lambda: b is not None and is_master(b), TIMEOUT_MS / 1000 + 8, "b")
            assert b.replicas.master_epoch == a.replicas.master_epoch + 1
            assert b.config.broker_id == 0  # the route names it as brokerId 0

            async def acknowledged() -> bool:
                try:
                    result = await producer.send(make_message(TOPIC, "probe"))
                except MQError:  # the old master's address, until the route is new
                    return False
                return result.status is SendStatus.SEND_OK

            await until(acknowledged, 15, "the producer acknowledged by b")
            await send(producer, 20, 10)
        assert await bodies(b) == [f"m{i}" for i in range(30)]
        async with Admin(ns) as admin:  # what an operator sees of it (runtime info)
            info = await admin.broker_runtime_info(b.broker_addr)
        assert info["masterEpoch"] == str(b.replicas.master_epoch)
        assert info["masterBrokerId"] == info["controllerBrokerId"] == str(id_b)
        assert info["syncStateSet"] == str(id_b)

        # a comes back on its store: a slave of b now, and it catches up
        a = replica(tmp_path / "a", ns)
        await a.start()
        assert a.replicas is not None
        await until(lambda: a.master_addr == b.broker_addr, 10, "a follows b")
        assert a.replicas.broker_id == id_a  # its id, kept in brokerIdentity
        await until(
            lambda: b is not None and a.store.max_phy_offset == b.store.max_phy_offset,
            15,
            "a caught up",
        )
        await until(lambda: a.store.dispatch_behind_bytes() == 0, 10)
        assert await bodies(a) == [f"m{i}" for i in range(30)]
    finally:
        await a.shutdown()
        if b is not None:
            await b.shutdown()


async def test_a_master_short_of_min_in_sync_replicas_refuses_sends_up_front(
    tmp_path: Path, namesrv: NamesrvController
) -> None:
    """``minInSyncReplicas`` 2 and a master alone in its in-sync set: a send is answered
    SYSTEM_ERROR "in-sync replicas not enough" (as RocketMQ 5) and nothing is stored;
    once a slave is in sync, sends are acknowledged."""
    ns = namesrv.listen_address

    def strict(root: Path) -> BrokerController:
        return controller_replica(
            root,
            ns,
            heartbeat_timeout_ms=TIMEOUT_MS,
            store={"broker_role": BrokerRole.SYNC_MASTER, "min_in_sync_replicas": 2},
        )

    a = strict(tmp_path / "a")
    await a.start()
    b: BrokerController | None = None
    try:
        await until(lambda: is_master(a), 10, "a elected (the only replica)")
        async with Admin(ns) as admin:
            await admin.create_topic(TOPIC, queues=1)
        end = a.store.max_phy_offset
        async with RawBrokerClient(a.broker_addr) as client:
            answer = await client.send(TOPIC, b"alone")
        assert (answer.code, answer.remark) == (
            ResponseCode.SYSTEM_ERROR, "in-sync replicas not enough",
        )  # fmt: skip
        assert a.store.max_phy_offset == end
        b = strict(tmp_path / "b")
        await b.start()
        await until(lambda: a.replicas is not None and len(a.replicas.sync_state_set) == 2, 15)
        async with Producer("ctl-min-pg", namesrv=ns) as producer:
            await send(producer, 0, 3)
    finally:
        await a.shutdown()
        if b is not None:
            await b.shutdown()

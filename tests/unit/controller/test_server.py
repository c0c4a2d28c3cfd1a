"""A controller node over remoting, as brokers in controller mode use it: RocketMQ 5's
register flow (next id, apply id, register, elect), heartbeats, the in-sync set, and a
master that goes silent replaced from the in-sync set by the node's own scan, with the
replicas told (NOTIFY_BROKER_ROLE_CHANGED)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mqcore.controller.heartbeats import BrokerHeartbeatManager
from mqcore.controller.server import ControllerConfig, ControllerManager
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.controller import SyncStateSet
from mqcore.protocol.headers.controller import (
    AlterSyncStateSetRequestHeader,
    AlterSyncStateSetResponseHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    ElectMasterRequestHeader,
    ElectMasterResponseHeader,
    GetMetaDataResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoRequestHeader,
    GetReplicaInfoResponseHeader,
    NotifyBrokerRoleChangedRequestHeader,
    RegisterBrokerToControllerRequestHeader,
    RegisterBrokerToControllerResponseHeader,
)
from mqcore.remoting import Channel, RemotingClient, RemotingServer
from tests.support.inproc import free_port
from tests.support.polling import until

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Exception ignored in. <_io.FileIO name='[^']*raft\.journal\.meta'"
    ":pytest.PytestUnraisableExceptionWarning"
)

CLUSTER, NAME = "DefaultCluster", "broker-a"


class FakeBroker:
    """A broker's remoting port: records what the controller tells it."""

    def __init__(self) -> None:
        self.server = RemotingServer(host="127.0.0.1", port=0)
        self.told: list[NotifyBrokerRoleChangedRequestHeader] = []
        self.server.register(RequestCode.NOTIFY_BROKER_ROLE_CHANGED, self._told)

    def _told(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        self.told.append(NotifyBrokerRoleChangedRequestHeader.from_command(request))
        return RemotingCommand.response_to(request)

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.server.port}"


@pytest.fixture
async def controller(tmp_path: Path) -> AsyncIterator[ControllerManager]:
    config = ControllerConfig(
        controller_d_leger_peers=f"n0-127.0.0.1:{free_port()}",
        controller_d_leger_self_id="n0",
        controller_store_path=str(tmp_path / "controller"),
        listen_port=0,
        bind_address="127.0.0.1",
        scan_not_active_broker_interval=60_000,  # the test calls scan() itself
    )
    manager = ControllerManager(config)
    await manager.start()
    try:
        await until(lambda: manager.raft.is_leader, 10, "a one-node group electing itself")
        yield manager
    finally:
        await manager.shutdown()


@pytest.fixture
async def brokers() -> AsyncIterator[tuple[FakeBroker, FakeBroker]]:
    a, b = FakeBroker(), FakeBroker()
    await a.server.start()
    await b.server.start()
    try:
        yield a, b
    finally:
        await a.server.close()
        await b.server.close()


async def call(
    client: RemotingClient, addr: str, code: int, header: object = None, body: bytes = b""
) -> RemotingCommand:
    ext = header.to_ext_fields() if header is not None else {}  # type: ignore[attr-defined]
    return await client.invoke(addr, RemotingCommand.request(code, ext, body), 5)


async def join(client: RemotingClient, controller: str, broker: FakeBroker) -> int:
    """RocketMQ 5's broker start in controller mode: next id, apply it, register."""
    r = await call(
        client,
        controller,
        RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
        GetNextBrokerIdRequestHeader(CLUSTER, NAME),
    )
    assert r.code == ResponseCode.SUCCESS, r.remark
    broker_id = GetNextBrokerIdResponseHeader.from_command(r).next_broker_id
    assert broker_id is not None
    r = await call(
        client,
        controller,
        RequestCode.CONTROLLER_APPLY_BROKER_ID,
        ApplyBrokerIdRequestHeader(CLUSTER, NAME, broker_id, f"{broker.addr};token"),
    )
    assert r.code == ResponseCode.SUCCESS, r.remark
    r = await call(
        client,
        controller,
        RequestCode.CONTROLLER_REGISTER_BROKER,
        RegisterBrokerToControllerRequestHeader(CLUSTER, NAME, broker_id, broker.addr),
    )
    assert r.code == ResponseCode.SUCCESS, r.remark
    return broker_id


async def heartbeat(
    client: RemotingClient, controller: str, broker: FakeBroker, broker_id: int, epoch: int
) -> None:
    header = BrokerHeartbeatRequestHeader(
        CLUSTER, broker.addr, NAME, broker_id, epoch, 1000, 1000, heartbeat_timeout_mills=300
    )
    await client.invoke_oneway(
        controller,
        RemotingCommand.request(RequestCode.BROKER_HEARTBEAT, header.to_ext_fields(), oneway=True),
    )


async def test_a_silent_master_is_replaced_from_the_in_sync_set(
    controller: ControllerManager, brokers: tuple[FakeBroker, FakeBroker]
) -> None:
    a, b = brokers
    addr = controller.addr
    client = RemotingClient()
    try:
        r = await call(client, addr, RequestCode.CONTROLLER_GET_METADATA_INFO)
        assert GetMetaDataResponseHeader.from_command(r).is_leader

        id_a = await join(client, addr, a)
        await heartbeat(client, addr, a, id_a, 0)
        await until(lambda: controller.heartbeats.live(), 5, "a's heartbeat")
        r = await call(
            client,
            addr,
            RequestCode.CONTROLLER_ELECT_MASTER,
            ElectMasterRequestHeader(CLUSTER, NAME, id_a, designate_elect=False),
        )
        assert r.code == ResponseCode.SUCCESS, r.remark
        elected = ElectMasterResponseHeader.from_command(r)
        assert (elected.master_broker_id, elected.master_address) == (id_a, a.addr)
        epoch = elected.master_epoch
        assert epoch == 1

        id_b = await join(client, addr, b)
        r = await call(
            client,
            addr,
            RequestCode.CONTROLLER_REGISTER_BROKER,
            RegisterBrokerToControllerRequestHeader(CLUSTER, NAME, id_b, b.addr),
        )
        registered = RegisterBrokerToControllerResponseHeader.from_command(r)
        assert registered.master_address == a.addr  # b learns its master
        await heartbeat(client, addr, a, id_a, epoch)
        await heartbeat(client, addr, b, id_b, epoch)
        await until(lambda: len(controller.heartbeats.live()) == 2, 5, "both heartbeats")

        # the master takes b into the in-sync set
        r = await call(
            client,
            addr,
            RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET,
            AlterSyncStateSetRequestHeader(NAME, id_a, epoch),
            SyncStateSet({id_a, id_b}, 1).encode(),
        )
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert AlterSyncStateSetResponseHeader.from_command(r).new_sync_state_set_epoch == 2

        # a goes silent; b keeps beating; the controller's scan elects b and tells both
        async def only_b_alive() -> bool:
            await heartbeat(client, addr, b, id_b, epoch)
            return [i.broker_id for i in controller.heartbeats.live()] == [id_b]

        await until(only_b_alive, 5, "a's heartbeat timing out", interval=0.05)
        assert await controller.scan() == [NAME]
        r = await call(
            client,
            addr,
            RequestCode.CONTROLLER_GET_REPLICA_INFO,
            GetReplicaInfoRequestHeader(NAME),
        )
        info = GetReplicaInfoResponseHeader.from_command(r)
        assert (info.master_broker_id, info.master_address) == (id_b, b.addr)
        assert info.master_epoch == epoch + 1
        assert SyncStateSet.decode(r.body).sync_state_set == {id_b}
        await until(lambda: b.told and a.told, 5, "both replicas told of the new master")
        assert b.told[-1].master_broker_id == id_b and b.told[-1].master_epoch == epoch + 1
    finally:
        await client.close()


async def test_a_replica_outside_the_in_sync_set_is_not_elected(
    controller: ControllerManager, brokers: tuple[FakeBroker, FakeBroker]
) -> None:
    a, b = brokers
    addr = controller.addr
    client = RemotingClient()
    try:
        id_a = await join(client, addr, a)
        await heartbeat(client, addr, a, id_a, 0)
        await until(lambda: controller.heartbeats.live(), 5, "a's heartbeat")
        r = await call(
            client,
            addr,
            RequestCode.CONTROLLER_ELECT_MASTER,
            ElectMasterRequestHeader(CLUSTER, NAME, id_a, designate_elect=False),
        )
        assert r.code == ResponseCode.SUCCESS, r.remark
        id_b = await join(client, addr, b)  # never taken into the in-sync set

        async def only_b_alive() -> bool:
            await heartbeat(client, addr, b, id_b, 1)
            return [i.broker_id for i in controller.heartbeats.live()] == [id_b]

        await until(only_b_alive, 5, "a's heartbeat timing out", interval=0.05)
        assert await controller.scan() == []  # nobody may be elected
        r = await call(
            client,
            addr,
            RequestCode.CONTROLLER_GET_REPLICA_INFO,
            GetReplicaInfoRequestHeader(NAME),
        )
        assert GetReplicaInfoResponseHeader.from_command(r).master_broker_id != id_b
    finally:
        await client.close()


def test_the_grace_starts_when_the_node_leads() -> None:
    """Heartbeats go to the leader only: a node that starts leading has heard nobody, and
    its grace (the longest timeout any replica asked for) starts then, not at boot."""
    now = [0]
    beats = BrokerHeartbeatManager(clock_ms=lambda: now[0])
    assert not beats.liveness(leading=False).presumed_alive("c", "b", 1)
    now[0] = 50_000
    beats.on_heartbeat(
        BrokerHeartbeatRequestHeader(
            cluster_name="c", broker_addr="a:1", broker_name="b", broker_id=2,
            heartbeat_timeout_mills=3000,
        )
    )  # fmt: skip
    assert beats.liveness(leading=True).presumed_alive("c", "b", 1)
    now[0] = 52_999
    assert beats.liveness(leading=True).presumed_alive("c", "b", 1)
    now[0] = 53_000
    assert not beats.liveness(leading=True).presumed_alive("c", "b", 1)
    beats.liveness(leading=False)  # it follows for a while, then leads again
    now[0] = 60_000
    assert beats.liveness(leading=True).presumed_alive("c", "b", 1)

"""ReplicasManager's periodic replica-info sync, against a scripted controller."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from mqcore.broker.config import BrokerConfig
from mqcore.broker.replicas import ReplicasManager
from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.headers.controller import GetReplicaInfoResponseHeader
from mqcore.store.epoch_file import EpochFileCache
from mqcore.store.store_config import BrokerRole, MessageStoreConfig


class Calls:
    def __init__(self) -> None:
        self.slave: list[tuple[int, str | None]] = []
        self.master: list[BrokerRole] = []

    async def become_slave(self, broker_id: int, master: str | None) -> None:
        self.slave.append((broker_id, master))

    async def become_master(self, role: BrokerRole) -> None:
        self.master.append(role)


def manager(tmp_path: Path, calls: Calls, *, serves: bool) -> ReplicasManager:
    m = ReplicasManager(
        BrokerConfig(broker_name="broker-a", controller_addr="127.0.0.1:1"),
        MessageStoreConfig(store_path_root_dir=str(tmp_path), broker_role=BrokerRole.SLAVE),
        client=Any,  # type: ignore[arg-type]  # never used: _invoke is scripted
        ha=Any,  # type: ignore[arg-type]
        epochs=EpochFileCache(),
        broker_addr=lambda: "127.0.0.1:20911",
        max_offset=lambda: 0,
        become_master=calls.become_master,
        become_slave=calls.become_slave,
    )
    m.broker_id, m.master_broker_id, m.master_address, m.master_epoch = 2, 1, "m:1", 3

    async def invoke(code: int, header: Any = None, body: bytes = b"") -> RemotingCommand:
        assert code == RequestCode.CONTROLLER_GET_REPLICA_INFO
        info = GetReplicaInfoResponseHeader(
            master_broker_id=1, master_address="m:1", master_epoch=3
        )
        request = RemotingCommand.request(code)
        return RemotingCommand.response_to(request, ext_fields=info.to_ext_fields())

    async def serves_replication(address: str) -> bool:
        return serves

    m._invoke = invoke  # type: ignore[method-assign]
    m._serves_replication = serves_replication  # type: ignore[method-assign]
    m._unserved_master = "m:1"  # followed before it served replication
    return m


async def test_a_slave_follows_its_master_again_once_it_serves(tmp_path: Path) -> None:
    calls = Calls()
    m = manager(tmp_path, calls, serves=True)
    await m.sync_broker_metadata()
    assert calls.slave == [(2, "m:1")]  # the same master, its HA address looked up again
    await m.sync_broker_metadata()
    assert calls.slave == [(2, "m:1")]  # once


async def test_nothing_changes_while_the_master_does_not_serve_yet(tmp_path: Path) -> None:
    calls = Calls()
    await manager(tmp_path, calls, serves=False).sync_broker_metadata()
    assert calls.slave == [] and calls.master == []


async def test_a_registering_replica_beats_before_it_asks_to_be_elected(tmp_path: Path) -> None:
    """After a restart of everything, the controller elects only replicas it has heard a
    heartbeat from: an old master that asked to be elected right after registering, with
    its first periodic beat still to come, was refused, and the next scan elected
    another replica at a new epoch."""
    calls = Calls()
    m = manager(tmp_path, calls, serves=True)
    m.leader = "127.0.0.1:1"
    order: list[int] = []

    async def invoke(code: int, header: Any = None, body: bytes = b"") -> RemotingCommand:
        order.append(code)
        return RemotingCommand.response_to(RemotingCommand.request(code))  # no master named

    class Client:
        async def invoke_oneway(self, addr: str, request: RemotingCommand) -> None:
            order.append(request.code)

    m._invoke = invoke  # type: ignore[method-assign]
    m.client = Client()  # type: ignore[assignment]
    await m.register()
    assert order == [
        RequestCode.CONTROLLER_REGISTER_BROKER,
        RequestCode.BROKER_HEARTBEAT,
        RequestCode.CONTROLLER_ELECT_MASTER,
    ]


async def test_a_role_change_stamps_the_epoch_into_the_topic_version(tmp_path: Path) -> None:
    """RocketMQ 5's nextVersion(masterEpoch): what name servers compare when two brokers
    claim to be master of one name."""
    calls = Calls()
    m = manager(tmp_path, calls, serves=True)
    stamps: list[int] = []
    m._stamp_epoch = stamps.append
    m.ha = SimpleNamespace(fence=lambda: None, in_sync_ids=None, end_join=lambda: None)  # type: ignore[assignment]
    await m.change_to_slave("m2:1", 4, 7)
    assert stamps == [4]

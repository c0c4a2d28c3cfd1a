"""The controller's state through Raft: three nodes on loopback in this process.

A decision taken on the leader is applied on all three; with the leader stopped the
other two elect a new Raft leader, take a new decision and agree on the state; all three
restarted on their journals come back with that state. One node alone is a group too.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from mqcore.controller.config import RaftConfig
from mqcore.controller.elect import LiveBrokers
from mqcore.controller.events import ElectMaster
from mqcore.controller.raft import ControllerRaft, ReplicationError
from mqcore.controller.replicas import ReplicasInfoManager
from mqcore.controller.results import ControllerResult
from mqcore.controller.state import ReplicasState
from mqcore.protocol.codes import ResponseCode
from tests.support.polling import until

# PySyncObj reads its journal's meta file without closing it (its MetaStorer.getMeta);
# that one leak, and no other, is let through
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Exception ignored in. <_io.FileIO name='[^']*raft\.journal\.meta'"
    ":pytest.PytestUnraisableExceptionWarning"
)

CLUSTER = "cluster-a"
NAME = "broker-a"
FAST = {"election_timeout": (0.3, 0.8), "heartbeat_period": 0.05, "connection_retry": 0.2}


def free_ports(count: int) -> list[int]:
    """Ports free a moment ago; a node that cannot bind one says so and the group is
    started again on others."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def configs(tmp_path: Path, count: int, **options: object) -> list[RaftConfig]:
    addresses = [f"127.0.0.1:{port}" for port in free_ports(count)]
    return [
        RaftConfig(
            self_address=address,
            peer_addresses=tuple(addresses),
            store_path=tmp_path / f"n{i}",
            **FAST,
            **options,
        )
        for i, address in enumerate(addresses)
    ]


class Group:
    """The nodes of one test, all stopped at its end whatever happened."""

    def __init__(self) -> None:
        self.nodes: list[ControllerRaft] = []

    def start(self, group_configs: list[RaftConfig]) -> list[ControllerRaft]:
        started = []
        for config in group_configs:
            node = ControllerRaft(config)
            node.start()
            self.nodes.append(node)
            started.append(node)
        return started

    async def stop(self, node: ControllerRaft) -> None:
        await node.stop()

    async def stop_all(self) -> None:
        for node in self.nodes:
            await node.stop()


@pytest.fixture
async def group() -> AsyncIterator[Group]:
    nodes = Group()
    try:
        yield nodes
    finally:
        await nodes.stop_all()


async def start_group(
    group: Group, tmp_path: Path, count: int, **options: object
) -> list[ControllerRaft]:
    for _attempt in range(5):
        cfgs = configs(tmp_path, count, **options)
        try:
            return group.start(cfgs)
        except ReplicationError:
            await group.stop_all()
            group.nodes.clear()
    raise AssertionError("no free ports for the Raft group")


async def leader_of(nodes: list[ControllerRaft]) -> ControllerRaft:
    """The one node that leads and that every other node names as leader."""
    found: list[ControllerRaft] = []

    def settled() -> bool:
        leaders = [n for n in nodes if n.is_leader]
        if len(leaders) != 1:
            return False
        address = leaders[0].self_address
        if any(n.leader_address != address for n in nodes):
            return False
        found[:] = leaders
        return True

    await until(settled, 15, lambda: [(n.self_address, n.leader_address) for n in nodes])
    return found[0]


def everyone(*ids: int) -> LiveBrokers:
    return LiveBrokers.everyone({NAME: ids}, CLUSTER)


async def ok(
    node: ControllerRaft, decide: Callable[[ReplicasInfoManager], ControllerResult[object]]
) -> ControllerResult[object]:
    result = await node.execute(decide)
    assert result.ok, (result.code, result.remark)
    return result


async def register_three_and_elect_the_first(leader: ControllerRaft) -> None:
    for broker_id in (1, 2, 3):
        code = f"127.0.0.1:{10910 + broker_id};token"
        nxt = await ok(leader, lambda m: m.get_next_broker_id(CLUSTER, NAME))
        assert nxt.response.next_broker_id == broker_id
        await ok(leader, lambda m, b=broker_id, c=code: m.apply_broker_id(CLUSTER, NAME, b, c))
    await ok(leader, lambda m: m.elect_master(NAME, 1, everyone(1, 2, 3)))
    await ok(leader, lambda m: m.alter_sync_state_set(NAME, 1, 1, {1, 2, 3}, 1, everyone(1, 2, 3)))


def same_state(nodes: list[ControllerRaft], expected: ReplicasState) -> Callable[[], bool]:
    return lambda: all(n.state == expected for n in nodes)


async def test_three_nodes_agree_survive_the_leader_and_a_full_restart(
    group: Group, tmp_path: Path
) -> None:
    nodes = await start_group(group, tmp_path, 3)
    leader = await leader_of(nodes)
    await register_three_and_elect_the_first(leader)
    expected = leader.state
    broker_set = expected.get(NAME)
    assert broker_set is not None
    assert (broker_set.master_id, broker_set.master_epoch, broker_set.sync_state_set_epoch) == (
        1,
        1,
        2,
    )
    await until(same_state(nodes, expected), 10, lambda: [n.state.snapshot() for n in nodes])

    follower = next(n for n in nodes if n is not leader)
    refused = await follower.execute(lambda m: m.elect_master(NAME, None, everyone(2)))
    assert refused.code == ResponseCode.CONTROLLER_NOT_LEADER

    # the leader goes; the other two carry on and elect a new broker master
    await group.stop(leader)
    rest = [n for n in nodes if n is not leader]
    new_leader = await leader_of(rest)
    elected = await ok(new_leader, lambda m: m.elect_master(NAME, None, everyone(2, 3)))
    assert elected.events and isinstance(elected.events[0], ElectMaster)
    after = new_leader.state
    moved = after.get(NAME)
    assert moved is not None
    assert moved.master_id in (2, 3) and moved.master_epoch == 2
    await until(same_state(rest, after), 10, lambda: [n.state.snapshot() for n in rest])

    # every node stops; all three come back on their journals with that state
    for node in rest:
        await group.stop(node)
    again = group.start([n.config for n in nodes])
    await leader_of(again)
    await until(same_state(again, after), 15, lambda: [n.state.snapshot() for n in again])


async def test_one_node_alone_is_a_group(group: Group, tmp_path: Path) -> None:
    nodes = await start_group(group, tmp_path, 1)
    node = await leader_of(nodes)
    assert node.leader_address == node.self_address
    await ok(node, lambda m: m.apply_broker_id(CLUSTER, NAME, 1, "127.0.0.1:10911;t"))
    elected = await ok(node, lambda m: m.elect_master(NAME, 1, everyone(1)))
    assert elected.response.master_epoch == 1
    assert await node.submit([]) == []
    info = node.read(lambda m: m.get_replica_info(NAME))
    assert (info.response.master_broker_id, info.response.master_address) == (1, "127.0.0.1:10911")


def test_rocketmq_peer_lists() -> None:
    config = RaftConfig.from_rocketmq(
        "n0-127.0.0.1:9877;n1-127.0.0.1:9878;n2-127.0.0.1:9879", "n1", "/tmp/c"
    )
    assert config.self_address == "127.0.0.1:9878"
    assert config.others == ("127.0.0.1:9877", "127.0.0.1:9879")
    assert config.store_path == Path("/tmp/c")


async def test_a_node_restarts_from_its_snapshot(group: Group, tmp_path: Path) -> None:
    (node,) = await start_group(group, tmp_path, 1, snapshot_min_entries=4)
    await leader_of([node])
    await register_three_and_elect_the_first(node)
    snapshot = tmp_path / "n0" / "raft.snapshot"
    await until(snapshot.exists, 10, "no snapshot written")
    expected = node.state
    await group.stop(node)
    (again,) = group.start([node.config])
    await leader_of([again])
    await until(same_state([again], expected), 10, lambda: again.state.snapshot())

"""The controller's decisions, after RocketMQ 5's ReplicasInfoManagerTest: three replicas
of one broker set register, the first is elected, the set grows to all three; then
elections by epoch, offset and priority, forced and unclean ones, and clean-ups."""

from __future__ import annotations

import pytest

from mqcore.controller.elect import BrokerLiveInfo, LiveBrokers
from mqcore.controller.events import ElectMaster
from mqcore.controller.replicas import ReplicasInfoManager
from mqcore.controller.results import ControllerResult
from mqcore.protocol.bodies.controller import BrokerReplicasInfo, SyncStateSet
from mqcore.protocol.codes import ResponseCode

CLUSTER = "cluster-a"
NAME = "broker-set-a"
ADDRESSES = {1: "127.0.0.1:9000", 2: "127.0.0.1:9001", 3: "127.0.0.1:9002"}


def alive(*ids: int) -> LiveBrokers:
    return LiveBrokers.everyone({NAME: ids}, CLUSTER)


EVERYONE = alive(1, 2, 3)


def run(manager: ReplicasInfoManager, result: ControllerResult[object]) -> ControllerResult[object]:
    assert all(manager.apply_all(result.events))
    return result


def register(manager: ReplicasInfoManager, address: str, expect_id: int) -> None:
    next_id = manager.get_next_broker_id(CLUSTER, NAME).response.next_broker_id
    assert next_id == expect_id
    applied = manager.apply_broker_id(CLUSTER, NAME, next_id, f"{address};token-{next_id}")
    assert applied.ok
    run(manager, applied)
    registered = manager.register_broker(CLUSTER, NAME, next_id, address, EVERYONE)
    assert registered.ok
    run(manager, registered)


def three_in_sync(unclean: bool = False) -> ReplicasInfoManager:
    manager = ReplicasInfoManager(enable_elect_unclean_master=unclean)
    for broker_id, address in ADDRESSES.items():
        register(manager, address, broker_id)
    first = run(manager, manager.elect_master(NAME, 1, EVERYONE))
    assert first.ok and first.response.master_broker_id == 1
    for other in (2, 3):
        again = manager.elect_master(NAME, other, EVERYONE)
        assert again.code == ResponseCode.CONTROLLER_MASTER_STILL_EXIST
        assert not again.events
    altered = run(manager, manager.alter_sync_state_set(NAME, 1, 1, {1, 2, 3}, 1, EVERYONE))
    assert altered.ok
    return manager


def sync_state(manager: ReplicasInfoManager) -> SyncStateSet:
    body = manager.get_replica_info(NAME).body
    assert isinstance(body, SyncStateSet)
    return body


def heartbeats(*figures: tuple[int, int, int, int]) -> LiveBrokers:
    """(broker id, epoch, max offset, priority) of replicas that are alive at 1000."""
    return LiveBrokers(
        [
            BrokerLiveInfo(CLUSTER, NAME, b, ADDRESSES[b], 1000, 10_000, epoch, offset, 0, prio)
            for b, epoch, offset, prio in figures
        ],
        now_ms=1000,
    )


def test_three_replicas_register_and_the_first_is_elected() -> None:
    manager = three_in_sync()
    data = manager.get_sync_state_data([NAME, "absent"], EVERYONE).body
    assert isinstance(data, BrokerReplicasInfo)
    info = data.replicas_info_table[NAME]
    assert (info.master_broker_id, info.master_address) == (1, ADDRESSES[1])
    assert (info.master_epoch, info.sync_state_set_epoch) == (1, 2)
    assert [r.broker_id for r in info.in_sync_replicas] == [1, 2, 3]
    assert info.not_in_sync_replicas == []
    assert list(data.replicas_info_table) == [NAME]


def test_a_replica_registering_later_is_told_the_master() -> None:
    manager = ReplicasInfoManager()
    register(manager, ADDRESSES[1], 1)
    run(manager, manager.elect_master(NAME, 1, EVERYONE))
    register(manager, ADDRESSES[2], 2)
    told = manager.register_broker(CLUSTER, NAME, 2, ADDRESSES[2], EVERYONE).response
    assert (told.master_broker_id, told.master_address, told.master_epoch) == (1, ADDRESSES[1], 1)
    dead_master = manager.register_broker(CLUSTER, NAME, 2, ADDRESSES[2], alive(2)).response
    assert dead_master.master_broker_id is None


def test_register_needs_an_id_and_records_a_new_address() -> None:
    manager = ReplicasInfoManager()
    unknown = manager.register_broker(CLUSTER, NAME, 1, ADDRESSES[1], EVERYONE)
    assert unknown.code == ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
    register(manager, ADDRESSES[1], 1)
    no_id = manager.register_broker(CLUSTER, NAME, 7, ADDRESSES[1], EVERYONE)
    assert no_id.code == ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
    run(manager, manager.register_broker(CLUSTER, NAME, 1, "10.0.0.9:9000", EVERYONE))
    broker_set = manager.state.get(NAME)
    assert broker_set is not None and broker_set.address_of(1) == "10.0.0.9:9000"


def test_broker_ids_are_given_once() -> None:
    manager = ReplicasInfoManager()
    wrong_first = manager.apply_broker_id(CLUSTER, NAME, 2, "a:1;x")
    assert wrong_first.code == ResponseCode.CONTROLLER_BROKER_ID_INVALID
    run(manager, manager.apply_broker_id(CLUSTER, NAME, 1, "a:1;x"))
    assert run(manager, manager.apply_broker_id(CLUSTER, NAME, 1, "a:1;x")).ok  # the same again
    taken = manager.apply_broker_id(CLUSTER, NAME, 1, "b:1;y")
    assert taken.code == ResponseCode.CONTROLLER_BROKER_ID_INVALID
    assert manager.get_next_broker_id(CLUSTER, NAME).response.next_broker_id == 2


def test_two_replicas_racing_for_one_id_only_one_gets_it() -> None:
    manager = ReplicasInfoManager()
    first = manager.apply_broker_id(CLUSTER, NAME, 1, "a:1;x")
    second = manager.apply_broker_id(CLUSTER, NAME, 1, "b:1;y")
    assert manager.apply_all(first.events + second.events) == [True, False]
    broker_set = manager.state.get(NAME)
    assert broker_set is not None and broker_set.address_of(1) == "a:1"


def test_the_master_dies_and_an_alive_in_sync_replica_takes_over() -> None:
    manager = three_in_sync()
    result = run(manager, manager.elect_master(NAME, 3, alive(3)))
    assert result.ok
    info = manager.get_replica_info(NAME).response
    assert (info.master_broker_id, info.master_address, info.master_epoch) == (3, ADDRESSES[3], 2)
    assert sync_state(manager) == SyncStateSet({3}, 3)


@pytest.mark.parametrize(
    ("figures", "winner"),
    [
        # a higher epoch wins over a higher offset
        (((2, 1, 2, 0), (3, 0, 3, 0)), 2),
        # equal epochs: the higher offset
        (((2, 1, 2, 0), (3, 1, 3, 0)), 3),
        # equal epochs and offsets: the smaller priority number
        (((2, 1, 3, 2), (3, 1, 3, 1)), 3),
        # all equal: the lowest id, so every node would choose alike
        (((3, 1, 3, 1), (2, 1, 3, 1)), 2),
    ],
)
def test_the_controller_elects_by_epoch_then_offset_then_priority(
    figures: tuple[tuple[int, int, int, int], ...], winner: int
) -> None:
    manager = three_in_sync()
    result = manager.elect_master(NAME, None, heartbeats(*figures))
    assert result.ok
    assert (result.response.master_broker_id, result.response.master_epoch) == (winner, 2)


def test_an_alive_master_is_kept() -> None:
    manager = three_in_sync()
    result = manager.elect_master(NAME, None, heartbeats((1, 1, 1, 9), (2, 1, 5, 0)))
    assert result.code == ResponseCode.CONTROLLER_MASTER_STILL_EXIST
    assert (result.response.master_broker_id, result.response.master_epoch) == (1, 1)
    assert not result.events


def test_an_administrator_designates_the_master() -> None:
    manager = three_in_sync()
    moved = run(manager, manager.elect_master(NAME, None, alive(2, 3)))
    new_master = moved.response.master_broker_id
    assert new_master in (2, 3)
    run(manager, manager.alter_sync_state_set(NAME, new_master, 2, {1, 2, 3}, 3, EVERYONE))
    dead = manager.elect_master(NAME, 1, alive(2, 3), designate_elect=True)
    assert dead.code == ResponseCode.CONTROLLER_ELECT_MASTER_FAILED
    same = manager.elect_master(NAME, new_master, EVERYONE, designate_elect=True)
    assert same.code == ResponseCode.CONTROLLER_MASTER_STILL_EXIST
    others = alive(*({1, 2, 3} - {new_master}))
    forced = run(manager, manager.elect_master(NAME, 1, others, designate_elect=True))
    assert forced.ok
    assert (forced.response.master_broker_id, forced.response.master_epoch) == (1, 3)


def test_nobody_in_sync_alive_records_the_master_as_gone() -> None:
    manager = three_in_sync()
    run(manager, manager.alter_sync_state_set(NAME, 1, 1, {1}, 2, EVERYONE))
    result = manager.elect_master(NAME, None, alive(2, 3))
    assert result.code == ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE
    assert result.events == (ElectMaster(NAME, None, 1),)
    run(manager, result)
    info = manager.get_replica_info(NAME).response
    assert (info.master_broker_id, info.master_address, info.master_epoch) == (None, None, 2)
    assert sync_state(manager) == SyncStateSet({1}, 3)
    # a replica's own request that elects nobody changes nothing
    refused = manager.elect_master(NAME, 2, alive(2, 3))
    assert refused.code == ResponseCode.CONTROLLER_ELECT_MASTER_FAILED
    assert not refused.events


def test_an_out_of_sync_replica_is_elected_only_when_unclean_election_is_on() -> None:
    for unclean, expected in ((False, None), (True, 2)):
        manager = three_in_sync(unclean)
        run(manager, manager.alter_sync_state_set(NAME, 1, 1, {1}, 2, EVERYONE))
        result = manager.elect_master(NAME, 2, alive(2))
        assert result.response.master_broker_id == expected


@pytest.mark.parametrize(
    ("master", "master_epoch", "members", "set_epoch", "liveness", "code"),
    [
        (2, 1, {1, 2}, 2, EVERYONE, ResponseCode.CONTROLLER_INVALID_MASTER),
        (1, 0, {1, 2}, 2, EVERYONE, ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH),
        (1, 1, {1, 2}, 1, EVERYONE, ResponseCode.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH),
        (1, 1, {1, 4}, 2, EVERYONE, ResponseCode.CONTROLLER_INVALID_REPLICAS),
        (1, 1, {1, 2}, 2, alive(1), ResponseCode.CONTROLLER_BROKER_NOT_ALIVE),
        (1, 1, {2, 3}, 2, EVERYONE, ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED),
        (1, 1, {1, 2, 3}, 2, EVERYONE, ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED),
    ],
)
def test_alter_sync_state_set_is_refused_unless_the_current_master_asks(
    master: int,
    master_epoch: int,
    members: set[int],
    set_epoch: int,
    liveness: LiveBrokers,
    code: int,
) -> None:
    manager = three_in_sync()
    result = manager.alter_sync_state_set(NAME, master, master_epoch, members, set_epoch, liveness)
    assert (result.code, result.events) == (code, ())


def test_a_stale_decision_is_fenced_when_applied() -> None:
    manager = three_in_sync()
    first = manager.elect_master(NAME, None, alive(2))
    second = manager.elect_master(NAME, None, alive(3))
    shrink = manager.alter_sync_state_set(NAME, 1, 1, {1, 2}, 2, EVERYONE)
    assert manager.apply_all(first.events + second.events + shrink.events) == [True, False, False]
    info = manager.get_replica_info(NAME).response
    assert (info.master_broker_id, info.master_epoch) == (2, 2)


def test_clean_broker_data() -> None:
    manager = three_in_sync()
    living = manager.clean_broker_data(CLUSTER, NAME, "1", EVERYONE)
    assert living.code == ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    has_master = manager.clean_broker_data(CLUSTER, NAME, None, EVERYONE)
    assert has_master.code == ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    garbled = manager.clean_broker_data(CLUSTER, NAME, "1;x", alive())
    assert garbled.code == ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    run(manager, manager.clean_broker_data(CLUSTER, NAME, "3", alive()))
    broker_set = manager.state.get(NAME)
    assert broker_set is not None
    assert set(broker_set.replicas) == {1, 2} and broker_set.sync_state_set == {1, 2}
    # forgetting the master leaves no master, one epoch on
    run(manager, manager.clean_broker_data(CLUSTER, NAME, "1", alive()))
    assert (broker_set.master_id, broker_set.master_epoch) == (None, 2)
    run(manager, manager.clean_broker_data(CLUSTER, NAME, "2", alive()))
    assert manager.state.get(NAME) is None
    absent = manager.clean_broker_data(CLUSTER, NAME, "1", alive(), clean_living_broker=True)
    assert absent.code == ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA


def test_reads_of_an_unknown_broker_set() -> None:
    manager = ReplicasInfoManager()
    assert manager.get_replica_info(NAME).code == ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST
    assert manager.elect_master(NAME, 1, EVERYONE).code == (
        ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
    )
    assert manager.get_next_broker_id(CLUSTER, NAME).response.next_broker_id == 1
    assert manager.get_next_broker_id(CLUSTER, NAME).code == ResponseCode.SUCCESS


def test_a_dead_master_with_living_replicas_is_found_for_reelection() -> None:
    manager = three_in_sync()
    assert manager.scan_need_reelect_broker_sets(EVERYONE) == []
    assert manager.scan_need_reelect_broker_sets(alive(2)) == [NAME]
    assert manager.scan_need_reelect_broker_sets(alive()) == []


def test_bodies_speak_rocketmq_json() -> None:
    manager = three_in_sync()
    assert sync_state(manager).to_json() == {"syncStateSet": [1, 2, 3], "syncStateSetEpoch": 2}
    elected = manager.elect_master(NAME, None, alive(2))
    assert elected.body is not None
    wire = elected.body.to_json()
    assert wire["syncStateSet"] == [2]
    assert wire["brokerMemberGroup"]["brokerAddrs"] == {str(k): v for k, v in ADDRESSES.items()}


def fresh_leader(*heard: int, now_ms: int = 1000, grace_until_ms: int = 5000) -> LiveBrokers:
    """A controller that became leader lately: it heard ``heard`` only (alive), and
    presumes the others alive until ``grace_until_ms``."""
    return LiveBrokers(
        [BrokerLiveInfo(CLUSTER, NAME, b, ADDRESSES[b], now_ms, 10_000) for b in heard],
        now_ms=now_ms,
        grace_until_ms=grace_until_ms,
    )


def test_a_new_leader_keeps_an_unheard_master_for_one_heartbeat_timeout() -> None:
    """Everything restarted at once: the journal names master 1, replica 3 registers and
    beats first. Until a timeout has passed since the controller began leading, 1's
    silence proves nothing: 3 is told 1 is master, 3's election keeps 1, and the scan
    does not elect. Once the grace is over, 1's silence counts."""
    manager = three_in_sync()
    liveness = fresh_leader(3)
    told = manager.register_broker(CLUSTER, NAME, 3, ADDRESSES[3], liveness).response
    assert (told.master_broker_id, told.master_epoch) == (1, 1)
    kept = manager.elect_master(NAME, 3, liveness)
    assert kept.code == ResponseCode.CONTROLLER_MASTER_STILL_EXIST
    assert (kept.response.master_broker_id, kept.response.master_epoch) == (1, 1)
    assert not kept.events
    assert manager.scan_need_reelect_broker_sets(liveness) == []
    later = fresh_leader(3, now_ms=6000)
    assert manager.scan_need_reelect_broker_sets(later) == [NAME]
    elected = manager.elect_master(NAME, 3, later)
    assert (elected.response.master_broker_id, elected.response.master_epoch) == (3, 2)


def test_a_master_heard_dead_is_not_presumed_alive_in_the_grace() -> None:
    """Presumed alive means never heard: a master whose heartbeats stopped is dead."""
    manager = three_in_sync()
    stale = BrokerLiveInfo(CLUSTER, NAME, 1, ADDRESSES[1], 0, 500)
    liveness = LiveBrokers(
        [stale, BrokerLiveInfo(CLUSTER, NAME, 2, ADDRESSES[2], 1000, 10_000)],
        now_ms=1000,
        grace_until_ms=5000,
    )
    assert not liveness.presumed_alive(CLUSTER, NAME, 1)
    assert manager.scan_need_reelect_broker_sets(liveness) == [NAME]
    assert manager.elect_master(NAME, None, liveness).response.master_broker_id == 2

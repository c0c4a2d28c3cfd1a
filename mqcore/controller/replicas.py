"""The controller's decisions: RocketMQ 5's ``ReplicasInfoManager`` as a pure state machine.

Each request method reads the :class:`~mqcore.controller.state.ReplicasState` (and, where
it matters, the :class:`~mqcore.controller.elect.Liveness` it is given), validates the
request and returns a :class:`~mqcore.controller.results.ControllerResult`: the answer
and the events that make it so. It changes nothing itself: the events go through the
Raft log and come back to :meth:`ReplicasInfoManager.apply` on every controller node.
A decision and its events are computed one request at a time on the Raft leader (the
caller serialises them, as RocketMQ's event scheduler does).

No I/O, no event loop, no clock: time enters only through the liveness the caller built.
"""

from __future__ import annotations

from collections.abc import Iterable, Set

from mqcore.controller.elect import Liveness, elect
from mqcore.controller.events import (
    AlterSyncStateSet,
    ApplyBrokerId,
    CleanBrokerData,
    ElectMaster,
    Event,
    UpdateBrokerAddress,
)
from mqcore.controller.results import ControllerResult
from mqcore.controller.state import FIRST_BROKER_CONTROLLER_ID, BrokerSet, ReplicasState
from mqcore.protocol.bodies.controller import (
    BrokerMemberGroup,
    BrokerReplicasInfo,
    ElectMasterResponseBody,
    ReplicaIdentity,
    ReplicasInfo,
    SyncStateSet,
)
from mqcore.protocol.codes import ResponseCode
from mqcore.protocol.headers.controller import (
    AlterSyncStateSetResponseHeader,
    ApplyBrokerIdResponseHeader,
    ElectMasterResponseHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoResponseHeader,
    RegisterBrokerToControllerResponseHeader,
)

__all__ = ["NO_BROKER_ID", "ReplicasInfoManager"]

NO_BROKER_ID = -1
"""The broker id of an election the controller itself asks for (no replica asked)."""


class ReplicasInfoManager:
    """Decisions over a :class:`ReplicasState`, and the one way to change it (:meth:`apply`).

    ``enable_elect_unclean_master`` is RocketMQ's ``enableElectUncleanMaster``: whether
    a replica outside the sync state set may be elected when no in-sync one is alive
    (it may lack acknowledged messages)."""

    def __init__(
        self, state: ReplicasState | None = None, *, enable_elect_unclean_master: bool = False
    ) -> None:
        self.state = state if state is not None else ReplicasState()
        self.enable_elect_unclean_master = enable_elect_unclean_master

    # -- changes -------------------------------------------------------------------------

    def apply(self, event: Event) -> bool:
        """Apply one replicated event; ``False`` if it was fenced off (see
        :meth:`ReplicasState.apply`)."""
        return self.state.apply(event)

    def apply_all(self, events: Iterable[Event]) -> list[bool]:
        return [self.state.apply(event) for event in events]

    # -- broker ids ----------------------------------------------------------------------

    def get_next_broker_id(
        self, cluster_name: str, broker_name: str
    ) -> ControllerResult[GetNextBrokerIdResponseHeader]:
        """GET_NEXT_BROKER_ID: the id a new replica should apply for."""
        broker_set = self.state.get(broker_name)
        next_id = broker_set.next_broker_id if broker_set else FIRST_BROKER_CONTROLLER_ID
        return ControllerResult(GetNextBrokerIdResponseHeader(cluster_name, broker_name, next_id))

    def apply_broker_id(
        self, cluster_name: str, broker_name: str, broker_id: int, register_check_code: str
    ) -> ControllerResult[ApplyBrokerIdResponseHeader]:
        """APPLY_BROKER_ID: take ``broker_id`` for the replica whose check code
        (``address;token``) is given; a replica applying again for its own id succeeds.
        A new broker set starts with id 1 only."""
        result = ControllerResult(ApplyBrokerIdResponseHeader(cluster_name, broker_name))
        address = register_check_code.split(";", 1)[0]
        event = ApplyBrokerId(cluster_name, broker_name, broker_id, address, register_check_code)
        broker_set = self.state.get(broker_name)
        if broker_set is None:
            if broker_id != FIRST_BROKER_CONTROLLER_ID:
                return result.refused(
                    ResponseCode.CONTROLLER_BROKER_ID_INVALID,
                    f"broker set {broker_name} is not registered, so its first id is "
                    f"{FIRST_BROKER_CONTROLLER_ID}, not {broker_id}",
                )
            return result.with_events(event)
        taken = broker_set.replicas.get(broker_id)
        if taken is None or taken.register_check_code == register_check_code:
            return result.with_events(event)
        return result.refused(
            ResponseCode.CONTROLLER_BROKER_ID_INVALID,
            f"broker id {broker_id} of broker set {broker_name} is taken",
        )

    # -- registration --------------------------------------------------------------------

    def register_broker(
        self,
        cluster_name: str,
        broker_name: str,
        broker_id: int,
        broker_address: str,
        liveness: Liveness,
    ) -> ControllerResult[RegisterBrokerToControllerResponseHeader]:
        """REGISTER_BROKER_TO_CONTROLLER: a replica with an id says it is up (at
        ``broker_address``). The answer names the master while an alive one exists; a
        replica told of none asks for an election (:meth:`elect_master` with its id),
        which makes it master if the set never had one."""
        result = ControllerResult(
            RegisterBrokerToControllerResponseHeader(cluster_name, broker_name)
        )
        broker_set = self.state.get(broker_name)
        if broker_set is None:
            return result.refused(
                ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                f"broker set {broker_name} is not registered",
            )
        if broker_id not in broker_set.replicas:
            return result.refused(
                ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                f"broker id {broker_id} is not registered in broker set {broker_name}",
            )
        response = result.response
        master = broker_set.master_id
        if master is not None and liveness.presumed_alive(cluster_name, broker_name, master):
            response = RegisterBrokerToControllerResponseHeader(
                cluster_name,
                broker_name,
                master_broker_id=master,
                master_address=broker_set.address_of(master),
                master_epoch=broker_set.master_epoch,
                sync_state_set_epoch=broker_set.sync_state_set_epoch,
            )
        events: tuple[Event, ...] = ()
        if broker_set.address_of(broker_id) != broker_address:
            events = (UpdateBrokerAddress(cluster_name, broker_name, broker_id, broker_address),)
        return ControllerResult(response, body=_sync_state_set(broker_set), events=events)

    # -- elections -----------------------------------------------------------------------

    def elect_master(
        self,
        broker_name: str,
        broker_id: int | None,
        liveness: Liveness,
        *,
        designate_elect: bool = False,
    ) -> ControllerResult[ElectMasterResponseHeader]:
        """ELECT_MASTER, from a replica (``broker_id`` its own id: it wants to be master
        if none is fine), from the controller (``broker_id`` ``None`` or
        :data:`NO_BROKER_ID`: the master died) or from an administrator
        (``designate_elect``: ``broker_id`` and no other).

        The first election of a set takes the asking replica; later ones follow
        :func:`~mqcore.controller.elect.elect`. An alive master that remains the choice is
        kept (``CONTROLLER_MASTER_STILL_EXIST``). When nobody can be elected and the
        controller asked, a recorded master is recorded as gone (one epoch on); a set
        without one is left as it is, so its first election is still its first."""
        result = ControllerResult(ElectMasterResponseHeader())
        broker_set = self.state.get(broker_name)
        if broker_set is None:
            return result.refused(
                ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                f"broker set {broker_name} is not registered",
            )
        asked = None if broker_id is None or broker_id == NO_BROKER_ID else broker_id
        old_master = broker_set.master_id
        new_master: int | None = None
        if broker_set.master_epoch == 0 and asked in broker_set.replicas:
            new_master = asked
        elif (
            old_master is not None
            and not designate_elect
            and liveness.presumed_alive(broker_set.cluster_name, broker_name, old_master)
            and not liveness.is_alive(broker_set.cluster_name, broker_name, old_master)
        ):
            new_master = old_master  # unheard by a new leader, not known dead: kept
        if new_master is None:
            new_master = elect(
                liveness,
                broker_set.cluster_name,
                broker_name,
                broker_set.sync_state_set,
                set(broker_set.replicas) if self.enable_elect_unclean_master else None,
                old_master,
                asked if designate_elect else None,
            )
        if new_master is not None and new_master == old_master:
            return ControllerResult(
                _master_of(broker_set),
                code=ResponseCode.CONTROLLER_MASTER_STILL_EXIST,
                remark=f"master {old_master} of broker set {broker_name} is still alive",
                body=ElectMasterResponseBody(sync_state_set=set(broker_set.sync_state_set)),
            )
        if new_master is not None:
            return ControllerResult(
                ElectMasterResponseHeader(
                    master_broker_id=new_master,
                    master_address=broker_set.address_of(new_master),
                    master_epoch=broker_set.master_epoch + 1,
                    sync_state_set_epoch=broker_set.sync_state_set_epoch + 1,
                ),
                body=ElectMasterResponseBody(_member_group(broker_set), {new_master}),
                events=(ElectMaster(broker_name, new_master, broker_set.master_epoch),),
            )
        if asked is None and old_master is not None:
            return ControllerResult(
                ElectMasterResponseHeader(),
                code=ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE,
                remark=f"the master of broker set {broker_name} is gone and no replica "
                "can be elected",
                events=(ElectMaster(broker_name, None, broker_set.master_epoch),),
            )
        return result.refused(
            ResponseCode.CONTROLLER_ELECT_MASTER_FAILED,
            f"no replica of broker set {broker_name} can be elected",
        )

    def alter_sync_state_set(
        self,
        broker_name: str,
        master_broker_id: int,
        master_epoch: int,
        new_sync_state_set: Set[int],
        sync_state_set_epoch: int,
        liveness: Liveness,
    ) -> ControllerResult[AlterSyncStateSetResponseHeader]:
        """ALTER_SYNC_STATE_SET: the master says which replicas are in sync. Only the
        current master, at the current master and set epochs, with alive registered
        replicas that include itself, and only for a set that differs."""
        result = ControllerResult(AlterSyncStateSetResponseHeader())
        broker_set = self.state.get(broker_name)
        if broker_set is None:
            return result.refused(
                ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                f"broker set {broker_name} is not registered",
            )
        new_set = frozenset(new_sync_state_set)
        if new_set == broker_set.sync_state_set:
            return result.refused(
                ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                "the sync state set is already that",
            )
        if broker_set.master_id is None or broker_set.master_id != master_broker_id:
            return result.refused(
                ResponseCode.CONTROLLER_INVALID_MASTER,
                f"the master is {broker_set.master_id}, not {master_broker_id}",
            )
        if master_epoch != broker_set.master_epoch:
            return result.refused(
                ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH,
                f"the master epoch is {broker_set.master_epoch}, not {master_epoch}",
            )
        if sync_state_set_epoch != broker_set.sync_state_set_epoch:
            return result.refused(
                ResponseCode.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
                f"the sync state set epoch is {broker_set.sync_state_set_epoch}, "
                f"not {sync_state_set_epoch}",
            )
        for replica in sorted(new_set):
            if replica not in broker_set.replicas:
                return result.refused(
                    ResponseCode.CONTROLLER_INVALID_REPLICAS,
                    f"replica {replica} is not registered",
                )
            if not liveness.is_alive(broker_set.cluster_name, broker_name, replica):
                return result.refused(
                    ResponseCode.CONTROLLER_BROKER_NOT_ALIVE, f"replica {replica} is not alive"
                )
        if broker_set.master_id not in new_set:
            return result.refused(
                ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                f"the new sync state set leaves out the master {broker_set.master_id}",
            )
        epoch = broker_set.sync_state_set_epoch + 1
        return ControllerResult(
            AlterSyncStateSetResponseHeader(new_sync_state_set_epoch=epoch),
            body=SyncStateSet(set(new_set), epoch),
            events=(
                AlterSyncStateSet(
                    broker_name,
                    tuple(sorted(new_set)),
                    broker_set.master_epoch,
                    broker_set.sync_state_set_epoch,
                ),
            ),
        )

    # -- administration ------------------------------------------------------------------

    def clean_broker_data(
        self,
        cluster_name: str,
        broker_name: str,
        broker_ids_to_clean: str | None,
        liveness: Liveness,
        *,
        clean_living_broker: bool = False,
    ) -> ControllerResult[None]:
        """CLEAN_BROKER_DATA: forget the replicas ``1;2;3`` of a broker set, or all of it
        when none are named. Refused while one of them is alive (or, naming none, while
        the set has a master), unless ``clean_living_broker``."""
        result: ControllerResult[None] = ControllerResult(None)
        ids: tuple[int, ...] = ()
        if broker_ids_to_clean and broker_ids_to_clean.strip():
            try:
                ids = tuple(sorted({int(part) for part in broker_ids_to_clean.split(";")}))
            except ValueError:
                return result.refused(
                    ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                    f"broker ids to clean are ';'-separated numbers, not {broker_ids_to_clean!r}",
                )
        broker_set = self.state.get(broker_name)
        if not clean_living_broker:
            if not ids and broker_set is not None and broker_set.master_id is not None:
                return result.refused(
                    ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                    f"broker set {broker_name} is still alive",
                )
            for broker_id in ids:
                if liveness.is_alive(cluster_name, broker_name, broker_id):
                    return result.refused(
                        ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                        f"broker {broker_id} of broker set {broker_name} is still alive",
                    )
        if broker_set is None:
            return result.refused(
                ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                f"broker set {broker_name} does not exist",
            )
        return result.with_events(CleanBrokerData(broker_name, ids))

    # -- reads ---------------------------------------------------------------------------

    def get_replica_info(self, broker_name: str) -> ControllerResult[GetReplicaInfoResponseHeader]:
        """GET_REPLICA_INFO: the master and the sync state set of one broker set."""
        broker_set = self.state.get(broker_name)
        if broker_set is None:
            return ControllerResult(
                GetReplicaInfoResponseHeader(),
                code=ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST,
                remark=f"broker set {broker_name} does not exist",
            )
        return ControllerResult(
            GetReplicaInfoResponseHeader(
                master_broker_id=broker_set.master_id,
                master_address=broker_set.address_of(broker_set.master_id),
                master_epoch=broker_set.master_epoch,
            ),
            body=_sync_state_set(broker_set),
        )

    def get_sync_state_data(
        self, broker_names: Iterable[str], liveness: Liveness
    ) -> ControllerResult[None]:
        """GET_SYNC_STATE_DATA: every named broker set that exists, its replicas split
        into in sync and not, each with whether it is alive."""
        table: dict[str, ReplicasInfo] = {}
        for name in broker_names:
            broker_set = self.state.get(name)
            if broker_set is None:
                continue
            in_sync: list[ReplicaIdentity] = []
            not_in_sync: list[ReplicaIdentity] = []
            for broker_id, replica in sorted(broker_set.replicas.items()):
                identity = ReplicaIdentity(
                    name,
                    broker_id,
                    replica.address,
                    liveness.is_alive(broker_set.cluster_name, name, broker_id),
                )
                (in_sync if broker_id in broker_set.sync_state_set else not_in_sync).append(
                    identity
                )
            table[name] = ReplicasInfo(
                master_broker_id=broker_set.master_id,
                master_address=broker_set.address_of(broker_set.master_id),
                master_epoch=broker_set.master_epoch,
                sync_state_set_epoch=broker_set.sync_state_set_epoch,
                in_sync_replicas=in_sync,
                not_in_sync_replicas=not_in_sync,
            )
        return ControllerResult(None, body=BrokerReplicasInfo(dict(sorted(table.items()))))

    def scan_need_reelect_broker_sets(self, liveness: Liveness) -> list[str]:
        """Broker sets whose master is dead while another replica lives: the controller
        asks for an election (``elect_master(name, None, ...)``) for each."""
        found = []
        for name, broker_set in sorted(self.state.broker_sets.items()):
            master = broker_set.master_id
            cluster = broker_set.cluster_name
            if master is None or liveness.presumed_alive(cluster, name, master):
                continue
            if any(liveness.is_alive(cluster, name, b) for b in broker_set.replicas):
                found.append(name)
        return found


def _sync_state_set(broker_set: BrokerSet) -> SyncStateSet:
    return SyncStateSet(set(broker_set.sync_state_set), broker_set.sync_state_set_epoch)


def _master_of(broker_set: BrokerSet) -> ElectMasterResponseHeader:
    return ElectMasterResponseHeader(
        master_broker_id=broker_set.master_id,
        master_address=broker_set.address_of(broker_set.master_id),
        master_epoch=broker_set.master_epoch,
        sync_state_set_epoch=broker_set.sync_state_set_epoch,
    )


def _member_group(broker_set: BrokerSet) -> BrokerMemberGroup:
    return BrokerMemberGroup(
        broker_set.cluster_name,
        broker_set.broker_name,
        {broker_id: r.address for broker_id, r in broker_set.replicas.items()},
    )

"""The controller's state per broker set, and how each event changes it.

This is the part every controller node holds identically: it changes only through
:meth:`ReplicasState.apply`, which reads nothing but the state and the event (no clock,
no randomness, no liveness), so the same events in the same order give the same state on
every node, and after a restart from the Raft journal.

RocketMQ 5 keeps two tables per broker name (``BrokerReplicaInfo`` and ``SyncStateInfo``);
here one :class:`BrokerSet` holds both, so they cannot disagree about whether a broker
set exists.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import orjson

from mqcore.controller.events import (
    AlterSyncStateSet,
    ApplyBrokerId,
    CleanBrokerData,
    ElectMaster,
    Event,
    EventDecodeError,
    UpdateBrokerAddress,
)

__all__ = ["FIRST_BROKER_CONTROLLER_ID", "BrokerSet", "Replica", "ReplicasState"]

FIRST_BROKER_CONTROLLER_ID = 1
"""The id the first replica of a broker set is given (RocketMQ 5's
``MixAll.FIRST_BROKER_CONTROLLER_ID``); ids are never given twice within a set."""


@dataclass(slots=True)
class Replica:
    address: str
    register_check_code: str


@dataclass(slots=True)
class BrokerSet:
    """One broker name: its replicas, its master and its in-sync set, with epochs.

    ``master_epoch`` moves with every election (also one that found nobody), and
    ``sync_state_set_epoch`` with every change of the in-sync set (an election makes the
    new master the whole set); neither ever goes down."""

    cluster_name: str
    broker_name: str
    replicas: dict[int, Replica] = field(default_factory=dict)
    next_broker_id: int = FIRST_BROKER_CONTROLLER_ID
    master_id: int | None = None
    master_epoch: int = 0
    sync_state_set: frozenset[int] = frozenset()
    sync_state_set_epoch: int = 0

    def address_of(self, broker_id: int | None) -> str | None:
        replica = self.replicas.get(broker_id) if broker_id is not None else None
        return replica.address if replica is not None else None

    def to_wire(self) -> dict[str, Any]:
        return {
            "clusterName": self.cluster_name,
            "brokerName": self.broker_name,
            "replicas": [
                [broker_id, r.address, r.register_check_code]
                for broker_id, r in sorted(self.replicas.items())
            ],
            "nextBrokerId": self.next_broker_id,
            "masterBrokerId": self.master_id,
            "masterEpoch": self.master_epoch,
            "syncStateSet": sorted(self.sync_state_set),
            "syncStateSetEpoch": self.sync_state_set_epoch,
        }

    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> BrokerSet:
        return cls(
            cluster_name=wire["clusterName"],
            broker_name=wire["brokerName"],
            replicas={int(i): Replica(str(a), str(c)) for i, a, c in wire["replicas"]},
            next_broker_id=int(wire["nextBrokerId"]),
            master_id=None if wire["masterBrokerId"] is None else int(wire["masterBrokerId"]),
            master_epoch=int(wire["masterEpoch"]),
            sync_state_set=frozenset(int(i) for i in wire["syncStateSet"]),
            sync_state_set_epoch=int(wire["syncStateSetEpoch"]),
        )


class ReplicasState:
    """Every broker set by name, changed by events only."""

    def __init__(self) -> None:
        self.broker_sets: dict[str, BrokerSet] = {}

    def get(self, broker_name: str) -> BrokerSet | None:
        return self.broker_sets.get(broker_name)

    def copy(self) -> ReplicasState:
        """A deep copy, for reading outside the thread that applies events."""
        twin = ReplicasState()
        twin.broker_sets = copy.deepcopy(self.broker_sets)
        return twin

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReplicasState) and self.broker_sets == other.broker_sets

    __hash__ = None  # type: ignore[assignment]

    def apply(self, event: Event) -> bool:
        """Change the state as ``event`` says; ``False`` when it no longer applies (its
        broker set is gone, or the epochs it was decided at have moved on), in which case
        nothing changed."""
        match event:
            case ApplyBrokerId():
                return self._apply_broker_id(event)
            case UpdateBrokerAddress():
                return self._update_broker_address(event)
            case ElectMaster():
                return self._elect_master(event)
            case AlterSyncStateSet():
                return self._alter_sync_state_set(event)
            case CleanBrokerData():
                return self._clean_broker_data(event)

    def _apply_broker_id(self, event: ApplyBrokerId) -> bool:
        broker_set = self.broker_sets.get(event.broker_name)
        if broker_set is None:
            broker_set = BrokerSet(event.cluster_name, event.broker_name)
            self.broker_sets[event.broker_name] = broker_set
        taken = broker_set.replicas.get(event.broker_id)
        if taken is not None:
            # the same replica applying again changes nothing; another one lost the race
            return taken.register_check_code == event.register_check_code
        broker_set.replicas[event.broker_id] = Replica(
            event.broker_address, event.register_check_code
        )
        broker_set.next_broker_id = max(broker_set.next_broker_id, event.broker_id + 1)
        return True

    def _update_broker_address(self, event: UpdateBrokerAddress) -> bool:
        broker_set = self.broker_sets.get(event.broker_name)
        replica = broker_set.replicas.get(event.broker_id) if broker_set else None
        if replica is None:
            return False
        replica.address = event.broker_address
        return True

    def _elect_master(self, event: ElectMaster) -> bool:
        broker_set = self.broker_sets.get(event.broker_name)
        if broker_set is None or broker_set.master_epoch != event.master_epoch:
            return False
        if event.new_master_id is not None and event.new_master_id not in broker_set.replicas:
            return False
        broker_set.master_id = event.new_master_id
        broker_set.master_epoch += 1
        if event.new_master_id is not None:
            broker_set.sync_state_set = frozenset({event.new_master_id})
            broker_set.sync_state_set_epoch += 1
        return True

    def _alter_sync_state_set(self, event: AlterSyncStateSet) -> bool:
        broker_set = self.broker_sets.get(event.broker_name)
        if (
            broker_set is None
            or broker_set.master_epoch != event.master_epoch
            or broker_set.sync_state_set_epoch != event.sync_state_set_epoch
            or broker_set.master_id not in event.sync_state_set
            or not set(event.sync_state_set) <= broker_set.replicas.keys()
        ):
            return False
        broker_set.sync_state_set = frozenset(event.sync_state_set)
        broker_set.sync_state_set_epoch += 1
        return True

    def _clean_broker_data(self, event: CleanBrokerData) -> bool:
        broker_set = self.broker_sets.get(event.broker_name)
        if broker_set is None:
            return False
        if not event.broker_ids:
            del self.broker_sets[event.broker_name]
            return True
        for broker_id in event.broker_ids:
            broker_set.replicas.pop(broker_id, None)
        broker_set.sync_state_set = broker_set.sync_state_set.difference(event.broker_ids)
        if broker_set.master_id in event.broker_ids:
            # a master that is forgotten is no master: as an election that found nobody
            broker_set.master_id = None
            broker_set.master_epoch += 1
        if not broker_set.replicas:
            del self.broker_sets[event.broker_name]
        return True

    def snapshot(self) -> bytes:
        """The whole state as JSON, sorted, so equal states give equal bytes."""
        return orjson.dumps(
            [b.to_wire() for _, b in sorted(self.broker_sets.items())],
        )

    @classmethod
    def from_snapshot(cls, data: bytes) -> ReplicasState:
        try:
            wire = orjson.loads(data)
            state = cls()
            for item in wire:
                broker_set = BrokerSet.from_wire(item)
                state.broker_sets[broker_set.broker_name] = broker_set
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise EventDecodeError(f"not a controller snapshot: {e}") from None
        return state

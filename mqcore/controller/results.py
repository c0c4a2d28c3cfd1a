"""What the controller answers: a code, a response header's fields, a JSON body.

Each operation of :class:`~mqcore.controller.replicas.ReplicasInfoManager` returns a
:class:`ControllerResult`: the answer for the caller and the events that, once
replicated and applied, make the state match it. The response types carry the fields of
RocketMQ 5's response headers (``ElectMasterResponseHeader`` and kin) in snake case; the
bodies know their JSON shape (:meth:`to_wire`, RocketMQ's field names) so the request
processor only has to encode them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from mqcore.controller.events import Event
from mqcore.protocol.codes import ResponseCode

__all__ = [
    "AlterSyncStateSetResponse",
    "ApplyBrokerIdResponse",
    "Body",
    "BrokerMemberGroup",
    "BrokerReplicasInfo",
    "ControllerResult",
    "ElectMasterBody",
    "ElectMasterResponse",
    "NextBrokerIdResponse",
    "RegisterBrokerResponse",
    "ReplicaIdentity",
    "ReplicaInfoResponse",
    "ReplicasInfo",
    "SyncStateSet",
]

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class SyncStateSet:
    """The in-sync replica ids and the epoch of that set (RocketMQ's ``SyncStateSet``)."""

    sync_state_set: frozenset[int]
    sync_state_set_epoch: int

    def to_wire(self) -> dict[str, Any]:
        return {
            "syncStateSet": sorted(self.sync_state_set),
            "syncStateSetEpoch": self.sync_state_set_epoch,
        }


@dataclass(frozen=True, slots=True)
class BrokerMemberGroup:
    """Every replica of a broker set by id (RocketMQ's ``BrokerMemberGroup``)."""

    cluster: str
    broker_name: str
    broker_addrs: Mapping[int, str]

    def to_wire(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "brokerName": self.broker_name,
            "brokerAddrs": {str(k): v for k, v in sorted(self.broker_addrs.items())},
        }


@dataclass(frozen=True, slots=True)
class ElectMasterBody:
    """The new master's sync state set and its group (``ElectMasterResponseBody``)."""

    sync_state_set: frozenset[int]
    broker_member_group: BrokerMemberGroup | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"syncStateSet": sorted(self.sync_state_set)}
        if self.broker_member_group is not None:
            wire["brokerMemberGroup"] = self.broker_member_group.to_wire()
        return wire


@dataclass(frozen=True, slots=True)
class ReplicaIdentity:
    broker_name: str
    broker_id: int
    broker_address: str
    alive: bool

    def to_wire(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "brokerId": self.broker_id,
            "brokerAddress": self.broker_address,
            "alive": self.alive,
        }


@dataclass(frozen=True, slots=True)
class ReplicasInfo:
    """One broker set as an administrator sees it (``BrokerReplicasInfo.ReplicasInfo``)."""

    master_broker_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set_epoch: int
    in_sync_replicas: tuple[ReplicaIdentity, ...]
    not_in_sync_replicas: tuple[ReplicaIdentity, ...]

    def to_wire(self) -> dict[str, Any]:
        return {
            "masterBrokerId": self.master_broker_id,
            "masterAddress": self.master_address,
            "masterEpoch": self.master_epoch,
            "syncStateSetEpoch": self.sync_state_set_epoch,
            "inSyncReplicas": [r.to_wire() for r in self.in_sync_replicas],
            "notInSyncReplicas": [r.to_wire() for r in self.not_in_sync_replicas],
        }


@dataclass(frozen=True, slots=True)
class BrokerReplicasInfo:
    """The answer of GET_SYNC_STATE_DATA: the broker sets asked for that exist."""

    replicas_info_table: Mapping[str, ReplicasInfo]

    def to_wire(self) -> dict[str, Any]:
        return {
            "replicasInfoTable": {
                name: info.to_wire() for name, info in sorted(self.replicas_info_table.items())
            }
        }


Body = SyncStateSet | ElectMasterBody | BrokerReplicasInfo


@dataclass(frozen=True, slots=True)
class NextBrokerIdResponse:
    cluster_name: str
    broker_name: str
    next_broker_id: int


@dataclass(frozen=True, slots=True)
class ApplyBrokerIdResponse:
    cluster_name: str
    broker_name: str


@dataclass(frozen=True, slots=True)
class RegisterBrokerResponse:
    """The master's fields are set only while an alive master exists."""

    cluster_name: str
    broker_name: str
    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: int | None = None
    sync_state_set_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class ElectMasterResponse:
    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: int | None = None
    sync_state_set_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class AlterSyncStateSetResponse:
    new_sync_state_set_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class ReplicaInfoResponse:
    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class ControllerResult(Generic[R]):
    """The answer to one request, and the events that make it true once applied.

    ``code`` is ``ResponseCode.SUCCESS`` or a :class:`~mqcore.controller.codes.ControllerCode`;
    a refused request has no events, though a failed election may (the old master is
    gone even when nobody could replace it)."""

    response: R
    code: int = ResponseCode.SUCCESS
    remark: str | None = None
    body: Body | None = None
    events: tuple[Event, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.code == ResponseCode.SUCCESS

    def with_events(self, *events: Event) -> ControllerResult[R]:
        return replace(self, events=events)

    def refused(self, code: int, remark: str) -> ControllerResult[R]:
        """The same response header with ``code`` and ``remark``, no body and nothing to
        apply."""
        return replace(self, code=code, remark=remark, body=None, events=())

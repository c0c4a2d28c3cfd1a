"""Bodies of RocketMQ 5's controller mode, as fastjson writes them for RocketMQ 5.

Java classes: ``SyncStateSet``, ``ElectMasterResponseBody``, ``BrokerMemberGroup``,
``BrokerReplicasInfo`` (with its nested ``ReplicasInfo`` and ``ReplicaIdentity``) and
``EpochEntryCache``; CONTROLLER_GET_SYNC_STATE_DATA's request body is a bare JSON array of
broker names (:func:`encode_broker_names`).

The sync state set (the replicas that keep up with the master, among which the controller
elects) is a Java ``Set<Long>``: a JSON array of ids, in no order, written sorted here.
``BrokerMemberGroup.brokerAddrs`` is a ``Map<Long,String>``, which fastjson writes with
bare integer keys (``{1:"127.0.0.1:30911"}``); we write them quoted, as every other
``Map<Long,…>``. Epochs are Java ``int``: a number beyond 32 bits is a BodyError, as
fastjson refuses it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mqcore.common import fastjson
from mqcore.protocol.bodies.base import (
    BodyError,
    RemotingBody,
    as_bool,
    as_dict,
    as_int,
    as_list,
    as_str,
    decode_json,
    int_key_map,
)

__all__ = [
    "BrokerMemberGroup",
    "BrokerReplicasInfo",
    "ElectMasterResponseBody",
    "EpochEntry",
    "EpochEntryCache",
    "ReplicaIdentity",
    "ReplicasInfo",
    "SyncStateSet",
    "decode_broker_names",
    "encode_broker_names",
]

_INT_MIN = -(1 << 31)
_INT_MAX = (1 << 31) - 1


def _as_java_int(value: Any, default: int = 0) -> int:
    """A Java ``int`` field: as :func:`as_int`, within 32 bits."""
    number = as_int(value, default)
    if not _INT_MIN <= number <= _INT_MAX:
        raise BodyError(f"{value!r} is out of the range of a Java int")
    return number


def _id_set(value: Any) -> set[int]:
    return {as_int(broker_id) for broker_id in as_list(value)}


@dataclass(slots=True)
class SyncStateSet(RemotingBody):
    """A broker group's in-sync replica ids and the epoch of that set. The master proposes
    a new set (CONTROLLER_ALTER_SYNC_STATE_SET); the controller answers with the set it
    accepted, and sends the set with replica info, registrations and role changes."""

    sync_state_set: set[int] = field(default_factory=set)
    sync_state_set_epoch: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "syncStateSet": sorted(self.sync_state_set),
            "syncStateSetEpoch": self.sync_state_set_epoch,
        }

    @classmethod
    def from_json(cls, obj: Any) -> SyncStateSet:
        obj = as_dict(obj)
        return cls(_id_set(obj.get("syncStateSet")), _as_java_int(obj.get("syncStateSetEpoch")))


@dataclass(slots=True)
class BrokerMemberGroup(RemotingBody):
    """A broker group's members by broker id, as the controller knows them after an
    election (a new master learns where its slaves are)."""

    cluster: str = ""
    broker_name: str = ""
    broker_addrs: dict[int, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerAddrs": {str(k): v for k, v in sorted(self.broker_addrs.items())},
            "brokerName": self.broker_name,
            "cluster": self.cluster,
        }

    @classmethod
    def from_json(cls, obj: Any) -> BrokerMemberGroup:
        obj = as_dict(obj)
        return cls(
            as_str(obj.get("cluster")),
            as_str(obj.get("brokerName")),
            {k: as_str(v) for k, v in int_key_map(as_dict(obj.get("brokerAddrs"))).items()},
        )


@dataclass(slots=True)
class ElectMasterResponseBody(RemotingBody):
    """CONTROLLER_ELECT_MASTER's answer body: the new sync state set (just the new master)
    and, when a master was elected, the group's members. With CONTROLLER_MASTER_STILL_EXIST
    it carries the current set only. Java leaves out a null ``brokerMemberGroup``."""

    broker_member_group: BrokerMemberGroup | None = None
    sync_state_set: set[int] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.broker_member_group is not None:
            out["brokerMemberGroup"] = self.broker_member_group.to_json()
        out["syncStateSet"] = sorted(self.sync_state_set)
        return out

    @classmethod
    def from_json(cls, obj: Any) -> ElectMasterResponseBody:
        obj = as_dict(obj)
        group = obj.get("brokerMemberGroup")
        return cls(
            None if group is None else BrokerMemberGroup.from_json(group),
            _id_set(obj.get("syncStateSet")),
        )


@dataclass(slots=True)
class ReplicaIdentity(RemotingBody):
    """``BrokerReplicasInfo.ReplicaIdentity``: one replica of a group. Equality ignores
    ``alive``, as Java's does: a replica is the same one whether or not it is up."""

    broker_name: str = ""
    broker_id: int = 0
    broker_address: str = ""
    alive: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "alive": self.alive,
            "brokerAddress": self.broker_address,
            "brokerId": self.broker_id,
            "brokerName": self.broker_name,
        }

    @classmethod
    def from_json(cls, obj: Any) -> ReplicaIdentity:
        obj = as_dict(obj)
        return cls(
            as_str(obj.get("brokerName")),
            as_int(obj.get("brokerId")),
            as_str(obj.get("brokerAddress")),
            as_bool(obj.get("alive")),
        )


@dataclass(slots=True)
class ReplicasInfo(RemotingBody):
    """``BrokerReplicasInfo.ReplicasInfo``: a group's master and its replicas, split by
    whether they are in the sync state set. A group without a master has no
    ``masterBrokerId``/``masterAddress`` (Java leaves the nulls out)."""

    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: int = 0
    sync_state_set_epoch: int = 0
    in_sync_replicas: list[ReplicaIdentity] = field(default_factory=list)
    not_in_sync_replicas: list[ReplicaIdentity] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"inSyncReplicas": [r.to_json() for r in self.in_sync_replicas]}
        if self.master_address is not None:
            out["masterAddress"] = self.master_address
        if self.master_broker_id is not None:
            out["masterBrokerId"] = self.master_broker_id
        out["masterEpoch"] = self.master_epoch
        out["notInSyncReplicas"] = [r.to_json() for r in self.not_in_sync_replicas]
        out["syncStateSetEpoch"] = self.sync_state_set_epoch
        return out

    @classmethod
    def from_json(cls, obj: Any) -> ReplicasInfo:
        obj = as_dict(obj)
        master_id, master_address = obj.get("masterBrokerId"), obj.get("masterAddress")
        return cls(
            None if master_id is None else as_int(master_id),
            None if master_address is None else as_str(master_address),
            _as_java_int(obj.get("masterEpoch")),
            _as_java_int(obj.get("syncStateSetEpoch")),
            [ReplicaIdentity.from_json(r) for r in as_list(obj.get("inSyncReplicas"))],
            [ReplicaIdentity.from_json(r) for r in as_list(obj.get("notInSyncReplicas"))],
        )


@dataclass(slots=True)
class BrokerReplicasInfo(RemotingBody):
    """CONTROLLER_GET_SYNC_STATE_DATA's answer (mqadmin ``getSyncStateSet``): the replica
    info of each broker group asked for, by broker name."""

    replicas_info_table: dict[str, ReplicasInfo] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"replicasInfoTable": {k: v.to_json() for k, v in self.replicas_info_table.items()}}

    @classmethod
    def from_json(cls, obj: Any) -> BrokerReplicasInfo:
        obj = as_dict(obj)
        return cls(
            {
                str(name): ReplicasInfo.from_json(info)
                for name, info in as_dict(obj.get("replicasInfoTable")).items()
            }
        )


_NO_END = (1 << 63) - 1
"""``EpochEntry.endOffset``'s Java default, Long.MAX_VALUE: the epoch is still open."""


@dataclass(slots=True)
class EpochEntry(RemotingBody):
    """One master epoch and the commit log range it wrote. The wire twin of the store's
    :class:`mqcore.store.epoch_file.EpochEntry` (same attributes): importing the store
    here would load all of it for one record."""

    epoch: int = 0
    start_offset: int = 0
    end_offset: int = _NO_END

    def to_json(self) -> dict[str, Any]:
        return {"endOffset": self.end_offset, "epoch": self.epoch, "startOffset": self.start_offset}

    @classmethod
    def from_json(cls, obj: Any) -> EpochEntry:
        obj = as_dict(obj)
        return cls(
            _as_java_int(obj.get("epoch")),
            as_int(obj.get("startOffset")),
            as_int(obj.get("endOffset"), _NO_END),
        )


@dataclass(slots=True)
class EpochEntryCache(RemotingBody):
    """GET_BROKER_EPOCH_CACHE's answer (mqadmin ``getBrokerEpoch``): a broker's epoch
    entries (``endOffset`` Long.MAX_VALUE for the open one) and its commit log's max
    offset."""

    cluster_name: str = ""
    broker_name: str = ""
    broker_id: int = 0
    epoch_list: list[EpochEntry] = field(default_factory=list)
    max_offset: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerId": self.broker_id,
            "brokerName": self.broker_name,
            "clusterName": self.cluster_name,
            "epochList": [e.to_json() for e in self.epoch_list],
            "maxOffset": self.max_offset,
        }

    @classmethod
    def from_json(cls, obj: Any) -> EpochEntryCache:
        obj = as_dict(obj)
        return cls(
            as_str(obj.get("clusterName")),
            as_str(obj.get("brokerName")),
            as_int(obj.get("brokerId")),
            [EpochEntry.from_json(e) for e in as_list(obj.get("epochList"))],
            as_int(obj.get("maxOffset")),
        )


def encode_broker_names(names: Iterable[str]) -> bytes:
    """CONTROLLER_GET_SYNC_STATE_DATA's request body: the broker names, a JSON array."""
    return fastjson.dumps(list(names))


def decode_broker_names(data: bytes | bytearray | memoryview | str) -> list[str]:
    """The broker names of a CONTROLLER_GET_SYNC_STATE_DATA request. BodyError for what is
    no array of strings (Java's controller fails on any other element too)."""
    names = decode_json(data)
    if not isinstance(names, list):
        raise BodyError(f"expected a JSON array of broker names, got {type(names).__name__}")
    for name in names:
        if not isinstance(name, str):
            raise BodyError(f"a broker name must be a string, not {name!r}")
    return names

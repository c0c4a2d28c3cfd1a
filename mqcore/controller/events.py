"""The events that change the controller's state: what the Raft log carries.

An operation of :class:`~mqcore.controller.replicas.ReplicasInfoManager` decides, from
the state it reads and the liveness it is given, what should change and says so as a
list of events; applying them (on every controller node, in log order) is the only way
the state changes. So an event holds plain values only (no liveness, no clock), and it
round-trips through :func:`encode_events` / :func:`decode_events`, a compact JSON.

The events are RocketMQ 5's (``ApplyBrokerIdEvent``, ``UpdateBrokerAddressEvent``,
``ElectMasterEvent``, ``AlterSyncStateSetEvent``, ``CleanBrokerDataEvent``) with one
addition: the two that move epochs carry the epochs their decision saw. Applying one
whose epochs are no longer current does nothing, so two decisions taken on the same
state (a leader change between deciding and committing) cannot both take effect.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from mqcore.errors import MQError

__all__ = [
    "AlterSyncStateSet",
    "ApplyBrokerId",
    "CleanBrokerData",
    "ElectMaster",
    "Event",
    "EventDecodeError",
    "UpdateBrokerAddress",
    "decode_events",
    "encode_events",
]


class EventDecodeError(MQError, ValueError):
    """Bytes that are not an encoded event list (a damaged log entry or snapshot)."""


@dataclass(frozen=True, slots=True)
class ApplyBrokerId:
    """A replica takes ``broker_id`` in its broker set (the set is created by its first
    replica). ``register_check_code`` (``address;token``) tells a replica that applies
    again for its own id from one that wants an id already taken."""

    kind: ClassVar[str] = "apply-broker-id"
    cluster_name: str
    broker_name: str
    broker_id: int
    broker_address: str
    register_check_code: str


@dataclass(frozen=True, slots=True)
class UpdateBrokerAddress:
    """A registered replica came back at another address."""

    kind: ClassVar[str] = "update-broker-address"
    cluster_name: str
    broker_name: str
    broker_id: int
    broker_address: str


@dataclass(frozen=True, slots=True)
class ElectMaster:
    """The outcome of an election: ``new_master_id`` becomes master, alone in the sync
    state set, both epochs one up; ``None`` means no replica could be elected and the
    old master is gone (the master epoch still moves, the sync state set stays).
    Applied only while the master epoch is still ``master_epoch``."""

    kind: ClassVar[str] = "elect-master"
    broker_name: str
    new_master_id: int | None
    master_epoch: int


@dataclass(frozen=True, slots=True)
class AlterSyncStateSet:
    """The master's new in-sync set; the set's epoch one up. Applied only while both
    epochs are still the ones the master's request named."""

    kind: ClassVar[str] = "alter-sync-state-set"
    broker_name: str
    sync_state_set: tuple[int, ...]
    master_epoch: int
    sync_state_set_epoch: int


@dataclass(frozen=True, slots=True)
class CleanBrokerData:
    """Forget replicas of a broker set (an administrator's clean-up): the given ids, or
    the whole set when ``broker_ids`` is empty."""

    kind: ClassVar[str] = "clean-broker-data"
    broker_name: str
    broker_ids: tuple[int, ...] = ()


Event = ApplyBrokerId | UpdateBrokerAddress | ElectMaster | AlterSyncStateSet | CleanBrokerData

_KINDS: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (ApplyBrokerId, UpdateBrokerAddress, ElectMaster, AlterSyncStateSet, CleanBrokerData)
}


def _field_values(event: Event) -> list[Any]:
    return [getattr(event, f.name) for f in dataclasses.fields(event)]


def encode_events(events: Iterable[Event]) -> bytes:
    """``[[kind, field values in declaration order], ...]`` as JSON: small, and as
    readable in a log dump as the dataclasses themselves."""
    return orjson.dumps([[event.kind, _field_values(event)] for event in events])


def _build(cls: type[Event], values: Sequence[Any]) -> Event:
    fields = dataclasses.fields(cls)
    if len(values) != len(fields):
        raise EventDecodeError(f"{cls.kind}: {len(values)} values for {len(fields)} fields")
    args: list[Any] = [tuple(v) if isinstance(v, list) else v for v in values]
    event = cls(*args)
    for field in fields:
        _check_type(cls.kind, field.name, field.type, getattr(event, field.name))
    return event


_SCALARS: dict[str, tuple[type, ...]] = {"str": (str,), "int": (int,)}


def _check_type(kind: str, name: str, annotation: object, value: object) -> None:
    """The few annotations events use, checked so a damaged entry fails here, named,
    rather than as a ``TypeError`` deep in an apply."""
    text = str(annotation)
    if text == "int | None" and value is None:
        return
    if text.startswith("tuple["):
        if isinstance(value, tuple) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            return
    else:
        expected = _SCALARS[text.removesuffix(" | None")]
        if isinstance(value, expected) and not isinstance(value, bool):
            return
    raise EventDecodeError(f"{kind}: {name}={value!r} is not {text}")


def decode_events(data: bytes) -> list[Event]:
    """The events :func:`encode_events` wrote; :class:`EventDecodeError` for anything
    else."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise EventDecodeError(f"not JSON: {e}") from None
    if not isinstance(raw, list):
        raise EventDecodeError("not a list of events")
    events: list[Event] = []
    for item in raw:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], list)):
            raise EventDecodeError(f"not an event: {item!r}")
        kind, values = item
        cls = _KINDS.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise EventDecodeError(f"unknown event kind {kind!r}")
        events.append(_build(cls, values))
    return events

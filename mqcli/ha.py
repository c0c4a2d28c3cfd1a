"""Master/slave state of a broker, read from its GET_BROKER_RUNTIME_INFO table.

One reader for `mq cluster list`, `mq broker status` and the dashboard, so the three
agree. Only ``commitLogMaxOffset`` is certain to be there (RocketMQ 4.9.8 has it too);
``brokerRole``, ``haConnectionCount``, ``haPush2SlaveMaxOffset``, ``haMasterAddress``
and ``haMasterConnected`` are what `mq` brokers add, so every one may be missing and
then reads as ``None`` (shown as ``-``). A slave's lag is computed here, as its
master's ``commitLogMaxOffset`` minus its own, which works against RocketMQ as well.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["HAState", "ReplicaState", "ha_state", "in_sync", "replica_state", "slave_lag"]

MASTER_ROLES = frozenset({"ASYNC_MASTER", "SYNC_MASTER", "MASTER"})


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _bool(value: str | None) -> bool | None:
    if value is None:
        return None
    text = value.strip().lower()
    return True if text == "true" else False if text == "false" else None


def _ids(value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        return tuple(sorted(int(x) for x in value.split(",") if x.strip()))
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """What a broker in controller mode says the controllers agreed (``None``: not
    reported; a broker that reports no ``masterEpoch`` is not in controller mode)."""

    controller_id: int | None
    """``controllerBrokerId``: its id at the controller (-1 before it has one)."""
    epoch: int | None
    """``masterEpoch``: the epoch of the master it knows (0 before the first election)."""
    master_id: int | None
    """``masterBrokerId``: the controller id of that master (-1: none known)."""
    sync_state_set: tuple[int, ...] | None
    """``syncStateSet``: the in-sync replicas' controller ids (a master's is current)."""
    sync_state_set_epoch: int | None

    @property
    def is_master(self) -> bool:
        return self.controller_id is not None and self.controller_id == self.master_id

    def in_sync_text(self) -> str:
        """The in-sync set for a table cell, ``1,2``; ``-`` when none is known."""
        return ",".join(map(str, self.sync_state_set)) if self.sync_state_set else "-"

    def to_json(self) -> dict[str, Any]:
        """The fields `--json` adds (names as the runtime keys; ids as numbers)."""
        return {
            "controllerBrokerId": self.controller_id,
            "masterEpoch": self.epoch,
            "masterBrokerId": self.master_id,
            "syncStateSet": None if self.sync_state_set is None else list(self.sync_state_set),
            "syncStateSetEpoch": self.sync_state_set_epoch,
        }


NO_REPLICA_JSON: dict[str, Any] = {k: None for k in ReplicaState(*[None] * 5).to_json()}
""":meth:`ReplicaState.to_json` of a broker not in controller mode: every field null."""


def replica_state(runtime: Mapping[str, str]) -> ReplicaState | None:
    """The controller-mode state in ``runtime``; None when the broker reports none."""
    epoch = _int(runtime.get("masterEpoch"))
    if epoch is None:
        return None
    return ReplicaState(
        _int(runtime.get("controllerBrokerId")),
        epoch,
        _int(runtime.get("masterBrokerId")),
        _ids(runtime.get("syncStateSet")),
        _int(runtime.get("syncStateSetEpoch")),
    )


def in_sync(replica: ReplicaState | None, master: ReplicaState | None) -> bool | None:
    """Whether the slave ``replica`` is in the in-sync set of its ``master`` (None when
    either is unknown or they disagree on the epoch, so one of them is behind)."""
    if replica is None or master is None or master.sync_state_set is None:
        return None
    if replica.controller_id is None or replica.controller_id < 0:
        return None
    if replica.epoch != master.epoch:
        return None
    return replica.controller_id in master.sync_state_set


@dataclass(frozen=True, slots=True)
class HAState:
    """What a broker says about its part in replication (``None``: not reported)."""

    role: str
    """``brokerRole`` (ASYNC_MASTER, SYNC_MASTER, SLAVE) when reported; else MASTER or
    SLAVE from the broker id, since a RocketMQ broker does not tell the kind of master."""
    commit_log_max: int | None = None
    connections: int | None = None
    """Master: slaves connected to its HA port (``haConnectionCount``)."""
    acked_offset: int | None = None
    """Master: the highest offset a slave acknowledged (``haPush2SlaveMaxOffset``)."""
    master_addr: str | None = None
    """Slave: the master HA address it replicates from (``haMasterAddress``)."""
    master_connected: bool | None = None
    """Slave: whether its HA connection is up (``haMasterConnected``)."""
    lag_bytes: int | None = None
    """Slave: master's commit log max offset minus its own (None: master unknown)."""
    replica: ReplicaState | None = None
    """Controller mode: what the controllers agreed (None: not in controller mode)."""
    in_sync: bool | None = None
    """Controller mode, slave: whether its master's in-sync set holds it."""

    @property
    def is_master(self) -> bool:
        return self.role in MASTER_ROLES

    @property
    def epoch_text(self) -> str:
        """The EPOCH cell: the master epoch it knows, ``-`` outside controller mode."""
        return (
            "-" if self.replica is None or self.replica.epoch is None else str(self.replica.epoch)
        )

    @property
    def in_sync_text(self) -> str:
        """The IN-SYNC cell: a master's in-sync set (controller ids, ``1,2``); for a
        slave ``yes`` or ``no`` (in its master's set or not); ``-`` when not known."""
        if self.replica is None:
            return "-"
        if self.is_master:
            return self.replica.in_sync_text()
        return "-" if self.in_sync is None else "yes" if self.in_sync else "no"

    def summary(self) -> str:
        """A few words for a table cell: ``2 slaves``, ``connected``, or ``-``."""
        if self.is_master:
            if self.connections is None:
                return "-"
            n = self.connections
            return "no slave" if n == 0 else f"{n} slave" + ("s" if n > 1 else "")
        if self.master_connected is None:
            return "-"
        return "connected" if self.master_connected else "disconnected"

    @property
    def alarming(self) -> bool:
        """Worth a red cell: a slave cut off from its master, or a SYNC_MASTER without a
        slave (its sends fail with SLAVE_NOT_AVAILABLE)."""
        if self.is_master:
            return self.role == "SYNC_MASTER" and self.connections == 0
        return self.master_connected is False

    def to_json(self) -> dict[str, Any]:
        """The fields `--json` adds to a broker's document (names as the runtime keys)."""
        return {
            "role": self.role,
            "haConnectionCount": self.connections,
            "haPush2SlaveMaxOffset": self.acked_offset,
            "haMasterAddress": self.master_addr,
            "haMasterConnected": self.master_connected,
            "slaveLagBytes": self.lag_bytes,
            **(NO_REPLICA_JSON if self.replica is None else self.replica.to_json()),
            "inSync": self.in_sync,
        }


def slave_lag(master_max: int | None, slave_max: int | None) -> int | None:
    """Bytes the slave is behind; 0 when the two samples cross (they are taken apart)."""
    if master_max is None or slave_max is None:
        return None
    return max(0, master_max - slave_max)


def ha_state(
    runtime: Mapping[str, str],
    broker_id: int | None,
    master_max: int | None = None,
    master_runtime: Mapping[str, str] | None = None,
) -> HAState:
    """The HA state in ``runtime`` of broker ``broker_id``; ``master_max`` is the
    ``commitLogMaxOffset`` of its master (same broker name, id 0), for a slave's lag,
    and ``master_runtime`` its master's runtime table, for whether a slave in controller
    mode is in sync."""
    role = (runtime.get("brokerRole") or "").strip().upper()
    if role not in ("ASYNC_MASTER", "SYNC_MASTER", "SLAVE"):
        role = "SLAVE" if broker_id else "MASTER"
    own_max = _int(runtime.get("commitLogMaxOffset"))
    replica = replica_state(runtime)
    if role == "SLAVE":
        master = replica_state(master_runtime) if master_runtime is not None else None
        return HAState(
            role,
            own_max,
            master_addr=runtime.get("haMasterAddress") or None,
            master_connected=_bool(runtime.get("haMasterConnected")),
            lag_bytes=slave_lag(master_max, own_max),
            replica=replica,
            in_sync=in_sync(replica, master),
        )
    return HAState(
        role,
        own_max,
        connections=_int(runtime.get("haConnectionCount")),
        acked_offset=_int(runtime.get("haPush2SlaveMaxOffset")),
        replica=replica,
    )

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

__all__ = ["HAState", "ha_state", "slave_lag"]

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

    @property
    def is_master(self) -> bool:
        return self.role in MASTER_ROLES

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
        }


def slave_lag(master_max: int | None, slave_max: int | None) -> int | None:
    """Bytes the slave is behind; 0 when the two samples cross (they are taken apart)."""
    if master_max is None or slave_max is None:
        return None
    return max(0, master_max - slave_max)


def ha_state(
    runtime: Mapping[str, str], broker_id: int | None, master_max: int | None = None
) -> HAState:
    """The HA state in ``runtime`` of broker ``broker_id``; ``master_max`` is the
    ``commitLogMaxOffset`` of its master (same broker name, id 0), for a slave's lag."""
    role = (runtime.get("brokerRole") or "").strip().upper()
    if role not in ("ASYNC_MASTER", "SYNC_MASTER", "SLAVE"):
        role = "SLAVE" if broker_id else "MASTER"
    own_max = _int(runtime.get("commitLogMaxOffset"))
    if role == "SLAVE":
        return HAState(
            role,
            own_max,
            master_addr=runtime.get("haMasterAddress") or None,
            master_connected=_bool(runtime.get("haMasterConnected")),
            lag_bytes=slave_lag(master_max, own_max),
        )
    return HAState(
        role,
        own_max,
        connections=_int(runtime.get("haConnectionCount")),
        acked_offset=_int(runtime.get("haPush2SlaveMaxOffset")),
    )

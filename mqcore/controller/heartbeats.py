"""`BrokerHeartbeatManager`: who is alive, as RocketMQ 5's controller learns it.

Brokers in controller mode send BROKER_HEARTBEAT (904) every ``brokerHeartbeatInterval``
with their epoch, max offset, confirm offset and election priority; each controller node
keeps the last one per replica. It is not replicated: a newly elected controller leader
has heard nobody yet, and treats a replica as dead only once a whole timeout has passed
without its heartbeat (as RocketMQ 5 does). Elections read it through
:class:`~mqcore.controller.elect.LiveBrokers`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mqcore.controller.elect import DEFAULT_ELECTION_PRIORITY, BrokerLiveInfo, LiveBrokers
from mqcore.protocol.headers.controller import BrokerHeartbeatRequestHeader

__all__ = ["DEFAULT_HEARTBEAT_TIMEOUT_MS", "BrokerHeartbeatManager"]

DEFAULT_HEARTBEAT_TIMEOUT_MS = 10_000
"""``controllerHeartBeatTimeoutMills``' default, for heartbeats that do not say."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class BrokerHeartbeatManager:
    """The last heartbeat of every replica; dead ones are dropped by :meth:`expire`."""

    def __init__(self, clock_ms: Callable[[], int] = _now_ms) -> None:
        self._clock_ms = clock_ms
        self._table: dict[tuple[str, int], BrokerLiveInfo] = {}
        self._lead_since_ms: int | None = None
        """When this node was first seen leading (None while it follows): until a
        heartbeat timeout has passed since, silence proves nothing."""

    def on_heartbeat(self, header: BrokerHeartbeatRequestHeader) -> None:
        if header.broker_id is None:
            return  # a broker that is not in controller mode (name server heartbeat)
        key = (header.broker_name, header.broker_id)
        old = self._table.get(key)
        self._table[key] = BrokerLiveInfo(
            cluster_name=header.cluster_name,
            broker_name=header.broker_name,
            broker_id=header.broker_id,
            broker_address=header.broker_addr,
            last_update_ms=self._clock_ms(),
            heartbeat_timeout_ms=header.heartbeat_timeout_mills or DEFAULT_HEARTBEAT_TIMEOUT_MS,
            epoch=header.epoch if header.epoch is not None else (old.epoch if old else 0),
            max_offset=header.max_offset if header.max_offset is not None else 0,
            confirm_offset=header.confirm_offset if header.confirm_offset is not None else 0,
            election_priority=(
                header.election_priority
                if header.election_priority is not None
                else DEFAULT_ELECTION_PRIORITY
            ),
        )

    def liveness(self, leading: bool = True) -> LiveBrokers:
        """The heartbeats judged now (for one decision). ``leading``: whether this node
        leads now; the first call that says so starts its grace (one heartbeat timeout,
        the longest any replica asked for, 10 s before any did)."""
        now = self._clock_ms()
        if not leading:
            self._lead_since_ms = None
            return LiveBrokers(self._table.values(), now)
        if self._lead_since_ms is None:
            self._lead_since_ms = now
        timeout = max(
            (info.heartbeat_timeout_ms for info in self._table.values()),
            default=DEFAULT_HEARTBEAT_TIMEOUT_MS,
        )
        return LiveBrokers(self._table.values(), now, self._lead_since_ms + timeout)

    def live(self) -> list[BrokerLiveInfo]:
        now = self._clock_ms()
        return [info for info in self._table.values() if info.alive_at(now)]

    def expire(self) -> list[BrokerLiveInfo]:
        """Drop and return the replicas silent for longer than their timeout."""
        now = self._clock_ms()
        dead = [info for info in self._table.values() if not info.alive_at(now)]
        for info in dead:
            del self._table[(info.broker_name, info.broker_id)]
        return dead

    def forget(self, broker_name: str, broker_id: int) -> None:
        self._table.pop((broker_name, broker_id), None)

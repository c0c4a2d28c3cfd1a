"""Who may be master: liveness as the controller's input, and the election policy.

Liveness comes from the brokers' heartbeats (their epoch, max offset and election
priority with them); this module only reads it, through :class:`Liveness`, so the state
machine that calls it stays pure: given the same state and the same liveness, the same
decision. :class:`LiveBrokers` is the plain implementation, a table of heartbeats judged
at a time that is passed in.

The policy is RocketMQ 5's ``DefaultElectPolicy``: the in-sync replicas first, then (only
with unclean election on) any replica; among the alive ones, the old master if it is
one of them and nobody else was asked for; the preferred replica if asked for (and
nobody else); otherwise the best by (epoch desc, max offset desc, election priority asc),
the lowest id breaking ties so every node would pick the same one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from typing import Protocol

__all__ = ["BrokerLiveInfo", "LiveBrokers", "Liveness", "elect"]

DEFAULT_ELECTION_PRIORITY = 2**31 - 1
"""``brokerElectionPriority``'s default: the lowest priority (a smaller number wins)."""


@dataclass(frozen=True, slots=True)
class BrokerLiveInfo:
    """The last heartbeat of one replica: when it came and what it said."""

    cluster_name: str
    broker_name: str
    broker_id: int
    broker_address: str
    last_update_ms: int
    heartbeat_timeout_ms: int
    epoch: int = 0
    max_offset: int = 0
    confirm_offset: int = 0
    election_priority: int = DEFAULT_ELECTION_PRIORITY

    def alive_at(self, now_ms: int) -> bool:
        return self.last_update_ms + self.heartbeat_timeout_ms >= now_ms


class Liveness(Protocol):
    """What the controller knows of the replicas beyond its own state."""

    def is_alive(self, cluster_name: str, broker_name: str, broker_id: int) -> bool: ...

    def live_info(
        self, cluster_name: str, broker_name: str, broker_id: int
    ) -> BrokerLiveInfo | None: ...

    def presumed_alive(self, cluster_name: str, broker_name: str, broker_id: int) -> bool:
        """Alive, or not heard from yet by a controller that has led for less than a
        heartbeat timeout (its silence proves nothing)."""
        ...


class LiveBrokers:
    """Heartbeats judged at ``now_ms``: a replica is alive while its last heartbeat is
    younger than its timeout. Built afresh for each decision (it is cheap).

    ``grace_until_ms``: until then a replica never heard from is presumed alive. A
    controller that has just become leader has heard nobody (heartbeats go to the leader
    only, and are not replicated): judging a master dead by that silence would elect
    another after every controller restart or leader change."""

    def __init__(
        self, heartbeats: Iterable[BrokerLiveInfo], now_ms: int, grace_until_ms: int = 0
    ) -> None:
        self._now_ms = now_ms
        self._grace_until_ms = grace_until_ms
        self._table: dict[tuple[str, int], BrokerLiveInfo] = {
            (info.broker_name, info.broker_id): info for info in heartbeats
        }

    @classmethod
    def everyone(cls, replicas: Mapping[str, Iterable[int]], cluster_name: str = "") -> LiveBrokers:
        """Every listed replica alive with equal figures (tests, and a controller that
        has just started and heard nobody yet must not use it)."""
        return cls(
            (
                BrokerLiveInfo(cluster_name, name, broker_id, "", 0, 1)
                for name, ids in replicas.items()
                for broker_id in ids
            ),
            now_ms=0,
        )

    def is_alive(self, cluster_name: str, broker_name: str, broker_id: int) -> bool:
        info = self._table.get((broker_name, broker_id))
        return info is not None and info.alive_at(self._now_ms)

    def live_info(
        self, cluster_name: str, broker_name: str, broker_id: int
    ) -> BrokerLiveInfo | None:
        return self._table.get((broker_name, broker_id))

    def presumed_alive(self, cluster_name: str, broker_name: str, broker_id: int) -> bool:
        if (broker_name, broker_id) not in self._table:
            return self._now_ms < self._grace_until_ms
        return self.is_alive(cluster_name, broker_name, broker_id)


def _rank(
    liveness: Liveness, cluster_name: str, broker_name: str, broker_id: int
) -> tuple[int, ...]:
    info = liveness.live_info(cluster_name, broker_name, broker_id)
    if info is None:
        # alive by the predicate but no figures: behind every replica that sent some
        return (1, 0, 0, DEFAULT_ELECTION_PRIORITY, broker_id)
    return (0, -info.epoch, -info.max_offset, info.election_priority, broker_id)


def _try_elect(
    liveness: Liveness,
    cluster_name: str,
    broker_name: str,
    candidates: Set[int],
    old_master: int | None,
    preferred: int | None,
) -> int | None:
    alive = {b for b in candidates if liveness.is_alive(cluster_name, broker_name, b)}
    if not alive:
        return None
    if old_master in alive and preferred in (None, old_master):
        return old_master
    if preferred is not None:
        return preferred if preferred in alive else None
    return min(alive, key=lambda b: _rank(liveness, cluster_name, broker_name, b))


def elect(
    liveness: Liveness,
    cluster_name: str,
    broker_name: str,
    sync_state_set: Set[int],
    all_replicas: Set[int] | None,
    old_master: int | None,
    preferred: int | None = None,
) -> int | None:
    """The replica to be master, or ``None``. ``all_replicas`` is given only when unclean
    election is on: out-of-sync replicas are tried only after every in-sync one failed.
    A result equal to ``old_master`` means the master is still fine."""
    chosen = _try_elect(liveness, cluster_name, broker_name, sync_state_set, old_master, preferred)
    if chosen is None and all_replicas is not None:
        chosen = _try_elect(
            liveness, cluster_name, broker_name, all_replicas, old_master, preferred
        )
    return chosen

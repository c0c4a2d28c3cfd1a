"""`RebalanceLockManager`: which client holds which queue for orderly consumption.

LOCK_BATCH_MQ / UNLOCK_BATCH_MQ (spec §8.9). Per consumer group and MessageQueue the
table keeps the holder's client id and when it last (re)locked. A lock is granted when
the queue is free, held by the same client (refresh), or its holder has not refreshed it
for ``rebalanceLockMaxLiveTime`` (60 s): orderly consumers re-lock every 20 s, so a
holder that stopped doing so is gone. Unlock removes only the requester's own entries.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mqcore.protocol.bodies import MessageQueue

__all__ = ["LockEntry", "RebalanceLockManager"]

log = logging.getLogger("mq.broker.lock")


@dataclass(slots=True)
class LockEntry:
    client_id: str
    last_update: float

    def expired(self, now: float, max_live: float) -> bool:
        return now - self.last_update > max_live


class RebalanceLockManager:
    """Group -> queue -> holder. Event-loop only (no thread locks needed)."""

    def __init__(
        self, max_live_time_ms: int = 60_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_live = max_live_time_ms / 1000
        self._clock = clock
        self.table: dict[str, dict[MessageQueue, LockEntry]] = {}

    def try_lock_batch(
        self, group: str, mqs: Iterable[MessageQueue], client_id: str
    ) -> set[MessageQueue]:
        """Lock what can be locked; returns the subset now held by ``client_id``."""
        now = self._clock()
        locks = self.table.setdefault(group, {})
        granted: set[MessageQueue] = set()
        for mq in mqs:
            entry = locks.get(mq)
            if entry is None:
                locks[mq] = LockEntry(client_id, now)
                log.info("lock %s for %s of %s: new", mq, client_id, group)
            elif entry.client_id == client_id:
                entry.last_update = now
            elif entry.expired(now, self.max_live):
                log.warning(
                    "lock %s of %s: %s expired, now held by %s",
                    mq,
                    group,
                    entry.client_id,
                    client_id,
                )
                entry.client_id, entry.last_update = client_id, now
            else:
                continue
            granted.add(mq)
        if not locks:
            del self.table[group]
        return granted

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> int:
        """Release the queues ``client_id`` holds among ``mqs``; returns how many."""
        locks = self.table.get(group)
        if locks is None:
            return 0
        released = 0
        for mq in mqs:
            entry = locks.get(mq)
            if entry is not None and entry.client_id == client_id:
                del locks[mq]
                released += 1
        if not locks:
            del self.table[group]
        return released

    def is_locked(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        """True when ``client_id`` holds a live lock on ``mq``."""
        entry = self.table.get(group, {}).get(mq)
        return (
            entry is not None
            and entry.client_id == client_id
            and not entry.expired(self._clock(), self.max_live)
        )

    def holder(self, group: str, mq: MessageQueue) -> str | None:
        """The client holding a live lock on ``mq``, or None."""
        entry = self.table.get(group, {}).get(mq)
        if entry is None or entry.expired(self._clock(), self.max_live):
            return None
        return entry.client_id

    def remove_group(self, group: str) -> None:
        self.table.pop(group, None)

"""Where a half message is, by transaction id: what END_TRANSACTION needs and a 5.x
``EndTransactionRequest`` lacks (RocketMQ 5's ``TransactionDataManager``).

A 5.x producer ends a transaction by its id alone; a 4.x broker needs the half message's
commit log offset and queue offset. The access point notes both when the half message is
stored, and again when the broker asks the producer to check it, and hands them out once.
An entry lives ``expire_ms`` (30 s, as RocketMQ 5): a producer that answers later is told
it is unknown, and the broker's check-back asks again.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["TransactionData", "TransactionDataStore"]

DEFAULT_EXPIRE_MS = 30_000
DEFAULT_MAX_ENTRIES = 100_000
"""Entries kept at most; the oldest go first (each is a few hundred bytes)."""


@dataclass(frozen=True, slots=True)
class TransactionData:
    tran_state_table_offset: int
    """The half message's offset in its queue of RMQ_SYS_TRANS_HALF_TOPIC."""
    commit_log_offset: int
    expires_ms: int
    broker_name: str = ""
    """The broker that holds the half message (cluster mode sends END_TRANSACTION there)."""


class TransactionDataStore:
    """(producer group, transaction id) -> where the half message is, for a while."""

    def __init__(
        self,
        *,
        expire_ms: int = DEFAULT_EXPIRE_MS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.expire_ms = expire_ms
        self.max_entries = max_entries
        self._clock_ms = clock_ms
        self._entries: OrderedDict[tuple[str, str], TransactionData] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def add(
        self,
        group: str,
        transaction_id: str,
        queue_offset: int,
        commit_log_offset: int,
        broker_name: str = "",
    ) -> None:
        now = self._clock_ms()
        self._drop_expired(now)
        key = (group, transaction_id)
        self._entries.pop(key, None)
        self._entries[key] = TransactionData(
            queue_offset, commit_log_offset, now + self.expire_ms, broker_name
        )
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def take(self, group: str, transaction_id: str) -> TransactionData | None:
        """The entry, removed; None when there is none or it expired."""
        data = self._entries.pop((group, transaction_id), None)
        if data is None or data.expires_ms < self._clock_ms():
            return None
        return data

    def _drop_expired(self, now: int) -> None:
        """Entries are kept in the order they expire, so the expired ones are in front."""
        entries = self._entries
        while entries:
            key, data = next(iter(entries.items()))
            if data.expires_ms >= now:
                return
            del entries[key]

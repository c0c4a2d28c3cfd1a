"""`StoreObserver`: who wants to time the store's appends and reads.

4.9.8's DefaultMessageStore times each put (until its group commit under SYNC_FLUSH) and
each get for the broker's runtime statistics. The store stays free of statistics: it
calls an observer, when one is set, with the result and the start time.
"""

from __future__ import annotations

from typing import Protocol

from mqcore.store.results import PutResult

__all__ = ["StoreObserver"]


class StoreObserver(Protocol):
    def on_put(self, result: PutResult, started: float) -> None:
        """A put returned ``result``; it began at ``started`` (``time.monotonic()``)."""

    def on_get(self, started: float) -> None:
        """A get that began at ``started`` returned."""

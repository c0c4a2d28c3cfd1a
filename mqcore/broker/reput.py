"""`ReputService`: the broker's dispatch driver (RocketMQ's ``ReputMessageService``).

The send path only appends; the store keeps an append receipt per put and calls
:meth:`ReputService.wake`. The first wake of an event loop pass schedules one :meth:`run`
behind the answers of that pass: it writes the consume queue and index entries of every
append since the previous run in one go, then wakes the held pulls of the queues that
grew. So a burst of sends costs one dispatch, no thread and no lock hand-off; answers do
not wait for dispatch; and every writer (sends, send-backs, the schedule service,
transactions) reaches long polling through the same place.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence

from mqcore.broker.long_polling import LongPollingService
from mqcore.errors import DiskFullError
from mqcore.store.dispatcher import Arrival
from mqcore.store.message_store import MessageStore

__all__ = ["ReputService"]

log = logging.getLogger("mq.broker.reput")

_RETRY_DELAY = 0.1
"""Seconds before a failed dispatch (e.g. a full disk mapping a queue file) is retried."""
_MAX_RETRY_DELAY = 5.0


class ReputService:
    """Dispatches the store's appends once per loop pass and notifies long polling."""

    def __init__(
        self,
        store: MessageStore,
        long_polling: LongPollingService,
        *,
        after_dispatch: Callable[[], None] | None = None,
        on_arrivals: Callable[[Sequence[Arrival]], None] | None = None,
    ) -> None:
        self._store = store
        self._long_polling = long_polling
        self._after_dispatch = after_dispatch
        """Told after each pass (the HA master wakes its writers: new bytes to stream)."""
        self._on_arrivals = on_arrivals
        """Told which queues grew in a pass (a slave learns the topics it replicates)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._scheduled = False
        self._retry_delay = _RETRY_DELAY

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Take over dispatching from the store's puts (call on the loop's thread)."""
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._store.on_append = self.wake

    def stop(self) -> None:
        """Hand dispatching back to the puts, after one last run."""
        self._store.on_append = None
        self._loop = None
        self.run()

    def wake(self) -> None:
        """An append happened: make sure one run follows, after this pass's answers.

        Answers leave at the end of the received chunk or by callbacks queued in this
        pass, so the run is queued one hop later: a send's answer never waits for its
        dispatch, and the producer's next request overlaps it. (A pull that comes first
        still sees the message: store reads dispatch what is pending.)
        """
        loop = self._loop
        if self._scheduled or loop is None:
            return
        self._scheduled = True
        if threading.get_ident() == self._loop_thread:
            loop.call_soon(self._after_answers)
        else:
            loop.call_soon_threadsafe(self._after_answers)

    def _after_answers(self) -> None:
        if self._loop is None:
            self._scheduled = False
            return
        self._loop.call_soon(self.run)

    def run(self) -> None:
        """Dispatch everything pending and wake the pulls waiting on what arrived."""
        self._scheduled = False
        try:
            arrivals = self._store.dispatch_pending()
        except Exception as exc:
            # e.g. a full disk refusing a new consume queue file: retry, backing off, and
            # say so once per streak rather than ten times a second.
            if self._retry_delay == _RETRY_DELAY:
                if isinstance(exc, DiskFullError):
                    log.error("dispatching appends failed: %s; retrying", exc)
                else:
                    log.exception("dispatching appends failed; retrying")
            if self._loop is not None and not self._scheduled:
                self._scheduled = True
                self._loop.call_later(self._retry_delay, self.run)
            self._retry_delay = min(self._retry_delay * 2, _MAX_RETRY_DELAY)
            return
        self._retry_delay = _RETRY_DELAY
        if self._after_dispatch is not None:
            self._after_dispatch()
        if arrivals and self._on_arrivals is not None:
            self._on_arrivals(arrivals)
        polling = self._long_polling
        for topic, queue_id, max_offset, tags_code in arrivals:
            if polling.has_waiters(topic, queue_id):
                polling.notify_message_arriving(topic, queue_id, max_offset, tags_code)

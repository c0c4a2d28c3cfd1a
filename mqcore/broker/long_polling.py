"""`LongPollingService`: held pull requests, woken by arrivals (``PullRequestHoldService``).

A pull that finds nothing (PULL_NOT_FOUND) with the SUSPEND flag parks here on its
(topic, queue id) until a message for that queue arrives (and passes the request's tag
filter) or its hold time passes; then the pull processor runs the pull once more and
answers. Parking is just awaiting a future, so each request is answered exactly once by
the coroutine that received it: a wake-up only resolves the future, and a second
wake-up or the timer finding it already resolved does nothing.

The broker's :class:`~mqcore.broker.reput.ReputService` calls
:meth:`notify_message_arriving` when it has written new consume queue entries, whoever
appended them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["LongPollingService"]

log = logging.getLogger("mq.broker.longpoll")

TagMatcher = Callable[[int], bool]


@dataclass(slots=True, eq=False)
class _HeldPull:
    offset: int
    """Queue offset the pull asked for: any max offset above it is news."""
    matcher: TagMatcher | None
    future: asyncio.Future[bool] = field(repr=False)


class LongPollingService:
    """Per-queue lists of parked pulls; all on the event loop, no locks."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, int], list[_HeldPull]] = {}
        self._held_topics: dict[str, list[asyncio.Future[bool]]] = {}
        """Requests waiting for any queue of a topic (POP and NOTIFICATION)."""
        self._closed = False

    @property
    def closed(self) -> bool:
        """Shut down: nothing is held any more."""
        return self._closed

    @property
    def held_count(self) -> int:
        return sum(len(v) for v in self._held.values())

    async def hold(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        timeout: float,
        matcher: TagMatcher | None = None,
        max_offset: Callable[[], int] | None = None,
    ) -> bool:
        """Wait until a matching message lands in the queue at or past ``offset``.

        True when woken by an arrival, False on timeout or shutdown. ``max_offset`` reads
        the queue's max offset once the pull is registered: entries dispatched between the
        pull finding nothing and this registration wake nobody, so they answer it now."""
        if self._closed:
            return False
        loop = asyncio.get_running_loop()
        held = _HeldPull(offset, matcher, loop.create_future())
        key = (topic, queue_id)
        self._held.setdefault(key, []).append(held)
        if max_offset is not None and max_offset() > offset:
            held.future.set_result(True)
        timer = loop.call_later(max(0.0, timeout), _resolve, held.future, False)
        try:
            return await held.future
        finally:
            timer.cancel()
            waiting = self._held.get(key)
            if waiting is not None:
                try:
                    waiting.remove(held)
                except ValueError:
                    pass
                if not waiting:
                    del self._held[key]

    def held_by_queue(self, topic: str) -> dict[int, int]:
        """Queue id -> parked pulls on it: shows which queues consumers are polling."""
        return {qid: len(v) for (t, qid), v in self._held.items() if t == topic and v}

    def has_waiters(self, topic: str, queue_id: int) -> bool:
        """Cheap test so writers skip work (tag hashing) when nobody waits."""
        return (topic, queue_id) in self._held or topic in self._held_topics

    async def hold_topics(self, topics: tuple[str, ...], timeout: float) -> bool:
        """Wait until a message arrives on any queue of any of ``topics`` (a POP of a
        topic and its retry topic, RocketMQ 5's PopLongPollingService). True when woken
        by an arrival, False on timeout or shutdown; the caller reads again either way."""
        if self._closed:
            return False
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        for topic in topics:
            self._held_topics.setdefault(topic, []).append(future)
        timer = loop.call_later(max(0.0, timeout), _resolve, future, False)
        try:
            return await future
        finally:
            timer.cancel()
            for topic in topics:
                waiting = self._held_topics.get(topic)
                if waiting is not None:
                    if future in waiting:
                        waiting.remove(future)
                    if not waiting:
                        del self._held_topics[topic]

    def topic_held_count(self, topic: str | None = None) -> int:
        """Requests waiting on any queue of ``topic``, or of any topic (POLLING_FULL
        counts these; a request on several topics counts once for each)."""
        if topic is None:
            return sum(len(v) for v in self._held_topics.values())
        return len(self._held_topics.get(topic, ()))

    def notify_topic(self, topic: str) -> None:
        """Wake every request waiting on ``topic`` as a whole (e.g. after a pop found more
        than it could take, or an ack unblocked a FIFO queue)."""
        for future in self._held_topics.get(topic, ()):
            _resolve(future, True)

    def notify_message_arriving(
        self, topic: str, queue_id: int, max_offset: int, tags_code: int | None = None
    ) -> None:
        """A message was dispatched to (topic, queue) and its max offset is now
        ``max_offset``: wake the pulls it is news for. ``tags_code`` None (a batch,
        unknown tags) wakes regardless of tag filters; the re-run pull filters anyway."""
        if topic in self._held_topics:
            self.notify_topic(topic)
        waiting = self._held.get((topic, queue_id))
        if not waiting:
            return
        for held in waiting:
            if held.future.done() or max_offset <= held.offset:
                continue
            if tags_code is not None and held.matcher is not None and not held.matcher(tags_code):
                continue
            held.future.set_result(True)

    def shutdown(self) -> None:
        """Answer every held pull now (each re-runs and answers what it finds)."""
        self._closed = True
        for futures in list(self._held_topics.values()):
            for future in futures:
                _resolve(future, False)
        for waiting in list(self._held.values()):
            for held in waiting:
                _resolve(held.future, False)


def _resolve(future: asyncio.Future[bool], value: bool) -> None:
    if not future.done():
        future.set_result(value)

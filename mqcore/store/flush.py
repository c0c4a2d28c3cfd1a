"""Flush services: make appended bytes durable without an fsync per message.

Byte layout: none; these threads only ``msync`` ranges of the mapped files and write the
checkpoint (see :mod:`checkpoint`) once the data it names is durable.

* :class:`FlushRealTimeService` (ASYNC_FLUSH): every ``flushIntervalCommitLog`` ms flush
  the commit log if at least ``flushCommitLogLeastPages`` pages are dirty, and fully at
  least every ``flushCommitLogThoroughInterval`` ms. Producers never wait.
* :class:`GroupCommitService` (SYNC_FLUSH): an appender submits the end offset of its
  bytes and gets a ``concurrent.futures.Future``; the thread takes every pending request,
  does one flush covering all of them, and resolves them together (many waiters, one
  msync). It also flushes every 10 ms when idle, like RocketMQ.
* :class:`FlushConsumeQueueService`: every ``flushIntervalConsumeQueue`` ms flush consume
  queues and index, then the checkpoint; also runs periodic housekeeping (cleanup).

All threads are daemons that stop and join in :meth:`shutdown` after a final flush.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

from mqcore.store.commitlog import CommitLog

log = logging.getLogger(__name__)
_GROUP_COMMIT_IDLE_S = 0.01


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


class _ServiceThread:
    """A named daemon thread with a stop event; subclasses implement :meth:`_run_once`."""

    name = "service"

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._run_once()
            except Exception:  # keep flushing: one failure must not stop durability
                log.exception("%s failed", self.name)
                self._stop.wait(0.1)
        try:
            self._on_stop()
        except Exception:
            log.exception("%s final flush failed", self.name)

    def _run_once(self) -> None:
        raise NotImplementedError

    def _on_stop(self) -> None:
        """Final work after the loop ends (a last flush)."""

    def shutdown(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _wake(self) -> None:
        """Interrupt a wait so shutdown is prompt."""

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


class CommitLogFlusher(_ServiceThread):
    """Common part: flush the commit log and remember the flushed store timestamp."""

    def __init__(self, commit_log: CommitLog) -> None:
        super().__init__()
        self.commit_log = commit_log
        self.flushed_store_timestamp = 0
        """Store ts of the last record known durable (checkpoint physicMsgTimestamp)."""
        self._flush_lock = threading.Lock()

    def flush_to(self, target: int, least_pages: int = 0) -> int:
        """Flush until ``target`` (or all written data, if smaller) is durable."""
        with self._flush_lock:
            ts = self.commit_log.last_store_timestamp
            queue = self.commit_log.queue
            target = min(target, queue.max_offset)
            for _ in range(len(queue.files) + 1):
                before = queue.flushed_where
                done = queue.flush(least_pages)
                if done or queue.flushed_where >= target or queue.flushed_where == before:
                    break
            if queue.flushed_where >= target and ts > self.flushed_store_timestamp:
                self.flushed_store_timestamp = ts
            return queue.flushed_where

    def flush_all(self) -> int:
        return self.flush_to(self.commit_log.max_offset)

    def submit(self, end_offset: int) -> Future[bool]:
        """A future that resolves True once ``end_offset`` is durable."""
        raise NotImplementedError

    def _on_stop(self) -> None:
        self.flush_all()


class FlushRealTimeService(CommitLogFlusher):
    """ASYNC_FLUSH: periodic flush with a dirty-page threshold and a thorough interval."""

    name = "FlushRealTimeService"

    def __init__(
        self, commit_log: CommitLog, interval_ms: int, least_pages: int, thorough_ms: int
    ) -> None:
        super().__init__(commit_log)
        self.interval_ms = interval_ms
        self.least_pages = least_pages
        self.thorough_ms = thorough_ms
        self._last_thorough = _now_ms()

    def _run_once(self) -> None:
        if self._stop.wait(self.interval_ms / 1000):
            return
        least = self.least_pages
        now = _now_ms()
        if now >= self._last_thorough + self.thorough_ms:
            self._last_thorough = now
            least = 0
        self.flush_to(self.commit_log.max_offset, least)

    def submit(self, end_offset: int) -> Future[bool]:
        """Async mode: flush now on the caller's thread (used for explicit waits)."""
        fut: Future[bool] = Future()
        fut.set_result(self.flush_to(end_offset) >= end_offset)
        return fut


class GroupCommitService(CommitLogFlusher):
    """SYNC_FLUSH: one msync per round resolves every request it covers."""

    name = "GroupCommitService"

    def __init__(self, commit_log: CommitLog) -> None:
        super().__init__(commit_log)
        self._cond = threading.Condition()
        self._requests: list[tuple[int, Future[bool]]] = []

    def submit(self, end_offset: int) -> Future[bool]:
        fut: Future[bool] = Future()
        with self._cond:
            if self._stop.is_set():
                fut.set_result(self.flush_to(end_offset) >= end_offset)
                return fut
            self._requests.append((end_offset, fut))
            self._cond.notify()
        return fut

    def _run_once(self) -> None:
        with self._cond:
            if not self._requests:
                self._cond.wait(_GROUP_COMMIT_IDLE_S)
            batch, self._requests = self._requests, []
        if not batch:
            self.flush_to(self.commit_log.max_offset)
            return
        target = max(end for end, _ in batch)
        flushed = self.flush_to(target)
        for end, fut in batch:
            fut.set_result(flushed >= end)

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _on_stop(self) -> None:
        flushed = self.flush_all()
        with self._cond:
            batch, self._requests = self._requests, []
        for end, fut in batch:
            fut.set_result(flushed >= end)


class FlushConsumeQueueService(_ServiceThread):
    """Flush consume queues, index and checkpoint; run housekeeping on its own period."""

    name = "FlushConsumeQueueService"

    def __init__(
        self,
        interval_ms: int,
        flush: Callable[[], None],
        housekeeping: Callable[[], None] | None = None,
        housekeeping_interval_ms: int = 10_000,
    ) -> None:
        super().__init__()
        self.interval_ms = interval_ms
        self._flush = flush
        self._housekeeping = housekeeping
        self.housekeeping_interval_ms = housekeeping_interval_ms
        self._next_housekeeping = _now_ms() + housekeeping_interval_ms

    def _run_once(self) -> None:
        if self._stop.wait(self.interval_ms / 1000):
            return
        self._flush()
        now = _now_ms()
        if self._housekeeping is not None and now >= self._next_housekeeping:
            self._next_housekeeping = now + self.housekeeping_interval_ms
            self._housekeeping()

    def _on_stop(self) -> None:
        self._flush()

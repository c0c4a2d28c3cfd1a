"""`ConfigPersister`: write config files off the caller's thread, coalesced.

A burst of changes (a heartbeat that creates a thousand groups, a thousand clients that
each create one) must not cost a thousand rewrites of ``subscriptionGroup.json`` nor hold
the broker's event loop while the file is encoded and fsynced. Callers change the table
in memory and :meth:`request` a write; one daemon thread writes each requested file at
most once per ``interval`` seconds (the first request of a quiet period is written at
once), with :meth:`ConfigFileManager.persist`'s crash-safe temp + fsync + rename. A
failed write is logged and retried at the next turn; :meth:`flush` writes what is
pending before a shutdown.

Changes that must be on disk before they are acknowledged (an admin's topic or group)
use :meth:`request_durable`: a group commit. The write starts as soon as the thread is
free, whatever the interval, and the returned future completes when a write that began
after the request has finished; requests made while a write is under way share the next
one, so N concurrent creates cost one or two writes, not N.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

from mqcore.errors import ConfigError
from mqcore.store.metadata.config_file import ConfigFileManager

__all__ = ["DEFAULT_PERSIST_INTERVAL", "ConfigPersister"]

log = logging.getLogger("mq.store.config")

DEFAULT_PERSIST_INTERVAL = 1.0
"""Seconds between two writes of one file: a crash loses at most this much of the
auto-created metadata, which the next heartbeat creates again anyway."""


class ConfigPersister:
    """Coalesces write requests per manager and performs them on its own thread."""

    def __init__(
        self,
        interval: float = DEFAULT_PERSIST_INTERVAL,
        *,
        clock: Callable[[], float] = time.monotonic,
        name: str = "config-persister",
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._cond = threading.Condition()
        self._pending: dict[ConfigFileManager, None] = {}  # ordered set
        self._waiters: dict[ConfigFileManager, list[Future[None]]] = {}
        """Durable requests per manager, not yet taken by a write."""
        self._last_write: dict[ConfigFileManager, float] = {}
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._started = False

    def start(self) -> None:
        with self._cond:
            if not self._started:
                self._started = True
                self._thread.start()

    def request(self, *managers: ConfigFileManager) -> None:
        """Ask for ``managers`` to be written soon; cheap, never blocks on I/O."""
        with self._cond:
            for manager in managers:
                self._pending[manager] = None
            self._cond.notify()

    def request_durable(self, manager: ConfigFileManager) -> Future[None]:
        """Write ``manager`` as soon as possible; the future completes (or fails with
        :class:`ConfigError`) once a write that read the table after this call is done.

        Without a running thread (not started yet, or closed) the write is made on the
        calling thread before returning."""
        future: Future[None] = Future()
        with self._cond:
            inline = not self._started or self._closed
            if not inline:
                self._pending[manager] = None
                self._waiters.setdefault(manager, []).append(future)
                self._cond.notify()
        if inline:
            try:
                manager.persist()
            except Exception as exc:
                future.set_exception(exc)
            else:
                future.set_result(None)
        return future

    def pending(self) -> list[ConfigFileManager]:
        with self._cond:
            return list(self._pending)

    def flush(self) -> None:
        """Write everything pending now, on the calling thread (shutdown, tests)."""
        with self._cond:
            due, self._pending = list(self._pending), {}
            waiters, self._waiters = self._waiters, {}
        self._write(due, waiters)

    def close(self) -> None:
        """Stop the thread after writing what is pending."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        if self._started:
            self._thread.join()
        self.flush()

    def _run(self) -> None:
        while True:
            with self._cond:
                due = self._due_now()
                while not due and not self._closed:
                    self._cond.wait(self._wait_time())
                    due = self._due_now()
                if self._closed:
                    return  # close() flushes on its own thread
                waiters: dict[ConfigFileManager, list[Future[None]]] = {}
                for manager in due:
                    del self._pending[manager]
                    if manager in self._waiters:
                        waiters[manager] = self._waiters.pop(manager)
            self._write(due, waiters)

    def _due_now(self) -> list[ConfigFileManager]:
        """Managers someone waits for, and those whose interval has passed."""
        now = self._clock()
        return [
            m
            for m in self._pending
            if m in self._waiters or now - self._last_write.get(m, -self.interval) >= self.interval
        ]

    def _wait_time(self) -> float | None:
        if not self._pending:
            return None
        now = self._clock()
        waits = [
            self._last_write.get(m, -self.interval) + self.interval - now for m in self._pending
        ]
        return max(0.001, min(waits))

    def _write(
        self,
        managers: list[ConfigFileManager],
        waiters: dict[ConfigFileManager, list[Future[None]]],
    ) -> None:
        """Write each manager, then complete the futures of those waiting for it."""
        for manager in managers:
            with self._cond:
                self._last_write[manager] = self._clock()
            error: Exception | None = None
            try:
                manager.persist()
            except ConfigError as exc:
                error = exc
                log.error("%s not written (retried at the next turn): %s", manager.path, exc)
                with self._cond:
                    self._pending[manager] = None
            except Exception as exc:
                error = exc
                log.exception("%s not written", manager.path)
            for future in waiters.get(manager, ()):
                if error is None:
                    future.set_result(None)
                else:
                    future.set_exception(error)

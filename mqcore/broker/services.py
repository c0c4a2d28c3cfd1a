"""What runs in a broker: periodic timers and named services grouped in sets.

A broker is the same parts in every role; what differs is which services run. The
controller builds each service once and groups them in :class:`ServiceSet` s (the
broker-wide one and one per role); starting or stopping a role is one call on its set,
which is how a broker changes role at run time. A set owns a :class:`Timers`, so the
periodic work of its services (the schedule service's offset flush, the slave's metadata
sync, ...) stops with it and nothing of an old role keeps running.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mqcore.common.aio import cancel_and_wait

__all__ = ["Every", "Service", "ServiceSet", "Timers", "maybe_await", "periodic"]

log = logging.getLogger("mq.broker")

Every = Callable[..., object]
"""``every(interval_ms, fn, *, name=..., initial_delay_ms=...)``: :meth:`Timers.every`."""


async def maybe_await(value: object) -> None:
    """Await ``value`` when a start or stop function returned an awaitable."""
    if inspect.isawaitable(value):
        await value


class Timers:
    """Periodic tasks of one owner, cancelled together."""

    def __init__(self) -> None:
        self._tasks: list[asyncio.Task[None]] = []

    def every(
        self,
        interval_ms: int,
        fn: Callable[[], object],
        *,
        name: str | None = None,
        initial_delay_ms: int | None = None,
    ) -> asyncio.Task[None]:
        """Run ``fn`` (plain or coroutine function) every ``interval_ms`` until
        :meth:`cancel`; a failing run is logged and the next one still happens."""

        async def loop() -> None:
            delay = interval_ms if initial_delay_ms is None else initial_delay_ms
            while True:
                await asyncio.sleep(delay / 1000)
                delay = interval_ms
                try:
                    await maybe_await(fn())
                except Exception:
                    log.exception("periodic task %s failed", name or fn)

        task = asyncio.create_task(loop(), name=name)
        self._tasks.append(task)
        return task

    def spawn(self, coro: object, *, name: str) -> None:
        """Run ``coro`` once, as one of these tasks (cancelled with them)."""
        assert inspect.iscoroutine(coro)
        self._tasks.append(asyncio.create_task(coro, name=name))

    @property
    def names(self) -> list[str]:
        """The names of the tasks still running."""
        return [t.get_name() for t in self._tasks if not t.done()]

    async def cancel(self) -> None:
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(tasks)


@dataclass(frozen=True, slots=True)
class Service:
    """One named part that runs: ``start()`` and ``stop()`` may return awaitables."""

    name: str
    start: Callable[[], object]
    stop: Callable[[], object] | None = None


class ServiceSet:
    """Services started in order and stopped in reverse, with the timers they use."""

    def __init__(self, name: str, services: Sequence[Service], timers: Timers) -> None:
        self.name = name
        self.services = list(services)
        self.timers = timers
        """Handed to the set's services at construction (their ``every``)."""
        self._started: list[Service] = []

    @property
    def running(self) -> bool:
        return bool(self._started)

    @property
    def running_names(self) -> list[str]:
        return [s.name for s in self._started]

    async def start(self) -> None:
        """Start every service; if one fails, stop those already started and re-raise."""
        if self._started:
            return
        try:
            for service in self.services:
                await maybe_await(service.start())
                self._started.append(service)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Cancel the set's timers, then stop its services last first (a failing stop is
        logged; the others still stop)."""
        await self.timers.cancel()
        started, self._started = self._started, []
        for service in reversed(started):
            if service.stop is None:
                continue
            try:
                await maybe_await(service.stop())
            except Exception:
                log.exception("stopping %s (%s) failed", service.name, self.name)


def periodic(
    timers: Timers,
    name: str,
    interval_ms: int,
    fn: Callable[[], object],
    *,
    initial_delay_ms: int | None = None,
) -> Service:
    """A service that is one periodic task on ``timers`` (stopped when they are
    cancelled, i.e. with the set that owns them)."""

    def start() -> None:
        timers.every(interval_ms, fn, name=name, initial_delay_ms=initial_delay_ms)

    return Service(name, start)

"""Waiting in tests: poll a condition until a deadline, never sleep as synchronisation.

One home for the loop every test used to copy: a predicate is polled (it may be a
coroutine function) until it is truthy; at the deadline the test fails with ``what``.
``what`` may be a callable: it is asked at the deadline, so the failure shows what was
seen last (a route, a table row, a subprocess's stderr), not what was known at the start.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from mqcore.message import MessageExt

Pause = Callable[[], Awaitable[object]]
What = str | Callable[[], object]


def _failure(timeout: float, what: What, predicate: Callable[[], object]) -> AssertionError:
    said = what() if callable(what) else what
    return AssertionError(f"not within {timeout} s: {said or predicate}")


async def until(
    predicate: Callable[[], object],
    timeout: float = 20.0,
    what: What = "",
    *,
    interval: float = 0.01,
    pause: Pause | None = None,
) -> None:
    """Poll ``predicate()`` (awaited when it returns an awaitable) until it is truthy;
    ``AssertionError`` naming ``what`` after ``timeout`` seconds. ``pause`` replaces the
    sleep between polls (a Textual pilot lets its app run there)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return
        if time.monotonic() > deadline:
            raise _failure(timeout, what, predicate)
        if pause is not None:
            await pause()
        else:
            await asyncio.sleep(interval)


def until_sync(
    predicate: Callable[[], object],
    timeout: float = 20.0,
    what: What = "",
    *,
    interval: float = 0.1,
) -> None:
    """:func:`until` for code without an event loop (subprocess servers, the CLI)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise _failure(timeout, what, predicate)
        time.sleep(interval)


class Polling(Protocol):
    """A lite pull consumer, as far as :func:`poll_messages` is concerned."""

    async def poll(self, timeout: float = ...) -> list[MessageExt]: ...


async def poll_messages(
    consumer: Polling, count: int, timeout: float = 20.0, *, poll_timeout: float = 0.5
) -> list[MessageExt]:
    """Poll ``consumer`` until it has handed over ``count`` messages or ``timeout`` s
    passed; what arrived, for the test's own assertion to judge (it says more than a
    deadline would: which messages are missing, or that too many came)."""
    got: list[MessageExt] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        got.extend(await consumer.poll(timeout=poll_timeout))
    return got

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

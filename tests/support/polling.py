"""Waiting in tests: poll a condition until a deadline, never sleep as synchronisation.

One home for the loop every test used to copy: a predicate is polled (it may be a
coroutine function) until it is truthy; at the deadline the test fails with ``what``.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

Pause = Callable[[], Awaitable[object]]


async def until(
    predicate: Callable[[], object],
    timeout: float = 20.0,
    what: str = "",
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
            raise AssertionError(f"not within {timeout} s: {what or predicate}")
        if pause is not None:
            await pause()
        else:
            await asyncio.sleep(interval)


def until_sync(
    predicate: Callable[[], object], timeout: float = 20.0, what: str = "", *, interval: float = 0.1
) -> None:
    """:func:`until` for code without an event loop (subprocess servers, the CLI)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what or predicate}")
        time.sleep(interval)

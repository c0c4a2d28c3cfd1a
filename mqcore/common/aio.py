"""Small asyncio helpers shared by servers and clients."""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["SLICE_SECONDS", "cancel_and_wait", "run_all", "run_in_slices", "wait_event"]

SLICE_SECONDS = 0.002
"""How long a sliced job holds the loop before it lets others run: a request that
arrives meanwhile waits at most about this long."""


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait until each has finished: a stopped service leaves no task
    running behind it, and a task's own error on the way out is not re-raised."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


async def wait_event(event: asyncio.Event, timeout: float) -> bool:
    """Wait until ``event`` is set or ``timeout`` seconds pass; whether it was set.

    Why not ``asyncio.wait_for(event.wait(), timeout)``: on Python 3.11, when the event is
    set in the same loop pass as the waiting task is cancelled, ``wait_for`` returns the
    result and drops the cancellation, so a service loop built on it never stops
    (``cancel_and_wait`` then waits forever). ``asyncio.timeout`` keeps the cancellation.
    """
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return False
    return True


async def run_in_slices(
    steps: Iterable[object],
    budget: float = SLICE_SECONDS,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> int:
    """Advance ``steps`` (a generator that yields between units of work) to its end,
    giving the loop back whenever ``budget`` seconds have passed since it last had it;
    how many times it was given back.

    A periodic job over every topic or group (statistics samples, client scans) takes
    tens of milliseconds at 10,000 of them; written as steps it holds the loop for a
    slice at a time and the same code still runs at once through :func:`run_all`."""
    yielded = 0
    started = clock()
    for _ in steps:
        if clock() - started >= budget:
            await asyncio.sleep(0)
            yielded += 1
            started = clock()
    return yielded


def run_all(steps: Iterable[object]) -> None:
    """Advance ``steps`` to its end at once (no loop needed: tests, shutdown)."""
    collections.deque(steps, maxlen=0)

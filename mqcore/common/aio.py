"""Small asyncio helpers shared by servers and clients."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

__all__ = ["cancel_and_wait", "wait_event"]


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

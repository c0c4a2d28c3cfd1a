"""Event loop selection: uvloop when it is installed (it roughly halves per-request cost),
the stdlib loop otherwise. Servers and the CLI start through :func:`run`."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["new_event_loop", "run", "uvloop_available"]

T = TypeVar("T")


def uvloop_available() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new loop: uvloop's if available."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


def run(main: Coroutine[Any, Any, T], *, use_uvloop: bool = True) -> T:
    """``asyncio.run`` on uvloop when installed (and ``use_uvloop``)."""
    factory = new_event_loop if use_uvloop else asyncio.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)

"""Pilot helpers for the dashboard tests: deadlines instead of sleeps.

A module of its own (not conftest.py): ``from conftest import ...`` picks whichever
conftest Python imported first when several test folders run together."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.pilot import Pilot


async def wait_until(
    pilot: Pilot[None], cond: Callable[[], bool], timeout: float = 15.0, what: str = ""
) -> None:
    """Let the app run until ``cond()`` holds; fail at the deadline."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what or cond}")
        await pilot.pause(0.02)


async def poll(pilot: Pilot[None], timeout: float = 15.0) -> None:
    """One refresh, applied (the tests run the app with its timer off)."""
    from mqcli.tui.app import MQApp

    app = pilot.app
    assert isinstance(app, MQApp)
    await wait_until(pilot, lambda: not app._polling, timeout, "idle poller")
    before = app.polls
    app.refresh_now()
    await wait_until(pilot, lambda: app.polls > before, timeout, "a poll")
    await pilot.pause()

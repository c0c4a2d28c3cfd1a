"""Pilot helpers for the dashboard tests: deadlines instead of sleeps.

A module of its own (not conftest.py): ``from conftest import ...`` picks whichever
conftest Python imported first when several test folders run together."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.segment import Segment
from textual.app import App
from textual.pilot import Pilot

from tests.support import until


async def wait_until(
    pilot: Pilot[None], cond: Callable[[], bool], timeout: float = 15.0, what: str = ""
) -> None:
    """Let the app run until ``cond()`` holds; fail at the deadline."""
    await until(cond, timeout, what, pause=lambda: pilot.pause(0.02))


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


def screen_lines(app: App[None]) -> list[str]:
    """The screen as the terminal shows it, one string per row (what a user reads)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def screen_segments(app: App[None]) -> list[list[Segment]]:
    """The screen's rows as styled segments (for colours)."""
    return [list(strip) for strip in app.screen._compositor.render_strips()]


def record_notifications(app: App[None]) -> list[str]:
    """Every toast's message from now on, in order (the toast rack is off in tests)."""
    seen: list[str] = []
    notify = app.notify

    def recording(message: str, **kwargs: Any) -> None:
        seen.append(message)
        notify(message, **kwargs)

    app.notify = recording  # type: ignore[method-assign]
    return seen

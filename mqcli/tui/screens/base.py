"""What every view shares: the status bar, the footer, the filter box, and how a
snapshot reaches it."""

from __future__ import annotations

import time
from typing import ClassVar, Protocol, runtime_checkable

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input

from mqcli.tui.model import Snapshot
from mqcli.tui.poller import Poller
from mqcli.tui.widgets.status_bar import StatusBar, ViewTabs

__all__ = ["NARROW_BELOW", "Dashboard", "ViewScreen", "fmt_int", "fmt_short_ms"]

NARROW_BELOW = 100
"""Screens narrower than this (an 80x24 terminal) get each view's narrow columns."""


def fmt_int(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def fmt_short_ms(ms: int | None, now_ms: int) -> str:
    """A narrow column's time: ``HH:MM:SS`` on the day of ``now_ms``, else
    ``MM-DD HH:MM`` (``-`` for unknown)."""
    if not ms:
        return "-"
    day = time.strftime("%Y%m%d", time.localtime(now_ms / 1000))
    when = time.localtime(ms / 1000)
    fmt = "%H:%M:%S" if time.strftime("%Y%m%d", when) == day else "%m-%d %H:%M"
    return time.strftime(fmt, when)


@runtime_checkable
class Dashboard(Protocol):
    """What a view reads of the app it runs in. :class:`~mqcli.tui.app.MQApp` implements
    it; views import this, not the app module (which imports every view)."""

    @property
    def namesrv(self) -> str: ...

    @property
    def snapshot(self) -> Snapshot | None: ...

    @property
    def last_good_ms(self) -> int | None: ...

    @property
    def poller(self) -> Poller: ...

    @property
    def MODES(self) -> dict[str, type[ViewScreen]]: ...  # the App's own attribute

    def mode_of(self, screen: ViewScreen) -> str: ...

    def action_next_view(self) -> None: ...

    def action_prev_view(self) -> None: ...


class ViewScreen(Screen[None]):
    """A view (one App mode). Subclasses compose their body in :meth:`compose_body` and
    render a snapshot in :meth:`render_snapshot`; the app calls :meth:`show` after every
    poll while the view is active, and the view re-renders the latest snapshot when it
    comes back, so switching views never waits for the network."""

    TITLE: ClassVar[str] = ""
    TAB: ClassVar[str] = ""
    """A shorter title for the tab row on narrow screens (default: ``TITLE``)."""
    FILTERABLE: ClassVar[bool] = True
    AUTO_FOCUS = "LiveTable"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "next", "Next view", show=False),
        Binding("shift+tab", "prev", "Prev view", show=False),
        Binding("slash", "filter", "Filter"),
    ]

    filter_text: str = ""

    class RefreshNow(Message):
        """The view needs a poll now (e.g. the highlighted group changed)."""

    @property
    def mq_app(self) -> Dashboard:
        app = self.app
        assert isinstance(app, Dashboard)
        return app

    def compose(self) -> ComposeResult:
        yield StatusBar(self.mq_app.namesrv, self.TITLE)
        modes = self.mq_app.MODES
        tabs = [(m, modes[m].TITLE, modes[m].TAB or modes[m].TITLE) for m in modes]
        yield ViewTabs(tabs, self.mq_app.mode_of(self))
        if self.FILTERABLE:
            yield Input(placeholder="filter (enter keeps it, esc clears it)", id="filter")
        yield from self.compose_body()
        yield Footer()

    def compose_body(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        self.call_after_refresh(self.on_screen_resume)

    def on_screen_resume(self) -> None:
        snap = self.mq_app.snapshot
        if snap is not None:
            self.show(snap)

    def show(self, snapshot: Snapshot) -> None:
        if not self.is_mounted:
            return  # on_mount shows the latest snapshot
        bar = self.query_one(StatusBar)
        bar.last_good_ms = self.mq_app.last_good_ms
        bar.snapshot = snapshot
        self.render_snapshot(snapshot)

    @property
    def narrow(self) -> bool:
        """Fewer, shorter columns, so nothing that matters is cut at 80 columns."""
        return self.app.size.width < NARROW_BELOW

    def on_resize(self) -> None:
        self.rerender()

    def set_paused(self, paused: bool) -> None:
        self.query_one(StatusBar).paused = paused

    def render_snapshot(self, snapshot: Snapshot) -> None:
        """Patch the view's widgets from ``snapshot`` (never rebuild them)."""

    # -- tab: the next view, or in a text box the next field ----------------------------

    def action_next(self) -> None:
        """Outside text boxes the next view (as the help says); in one, the next field,
        as in any form (a view's search boxes, then its table)."""
        if isinstance(self.focused, Input):
            self.focus_next()
        else:
            self.mq_app.action_next_view()

    def action_prev(self) -> None:
        if isinstance(self.focused, Input):
            self.focus_previous()
        else:
            self.mq_app.action_prev_view()

    # -- filtering ------------------------------------------------------------------------

    def action_filter(self) -> None:
        if not self.FILTERABLE:
            return
        box = self.query_one("#filter", Input)
        box.add_class("shown")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.filter_text = event.value.strip()
            self.rerender()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            event.stop()
            if not event.value.strip():
                event.input.remove_class("shown")
            self.focus_main()

    def on_key(self, event: object) -> None:
        from textual.events import Key

        if isinstance(event, Key) and event.key == "escape" and self.FILTERABLE:
            box = self.query_one("#filter", Input)
            if box.has_focus or self.filter_text:
                event.stop()
                box.value = ""
                box.remove_class("shown")
                self.filter_text = ""
                self.rerender()
                self.focus_main()

    def matches(self, *texts: str) -> bool:
        """Case-insensitive substring match of the active filter."""
        needle = self.filter_text.lower()
        return not needle or any(needle in t.lower() for t in texts)

    def rerender(self) -> None:
        snap = self.mq_app.snapshot
        if snap is not None:
            self.render_snapshot(snap)

    def focus_main(self) -> None:
        """Focus the view's main widget (its first table)."""
        if self.AUTO_FOCUS:
            self.query(self.AUTO_FOCUS).first().focus()

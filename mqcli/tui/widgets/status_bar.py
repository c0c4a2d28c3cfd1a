"""The dashboard's top bar: where we are connected, and how fresh the data is."""

from __future__ import annotations

import time

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from mqcli.tui.model import Snapshot

__all__ = ["StatusBar", "ViewTabs"]


class StatusBar(Static):
    """Name server address and connection state, brokers up/down, the time of the last
    good poll and its latency, and whether refreshing is paused (a dialog is open)."""

    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        background: $panel;
        color: $text;
        padding: 0 1;
    }
    """

    namesrv: reactive[str] = reactive("")
    """The address list the app connects to."""
    view: reactive[str] = reactive("")
    """The current view's title."""
    snapshot: reactive[Snapshot | None] = reactive(None, always_update=True)
    """The last poll (good or not)."""
    last_good_ms: reactive[int | None] = reactive(None)
    """When a name server last answered."""
    paused: reactive[bool] = reactive(False)
    """True while a dialog holds refreshing."""

    def __init__(self, namesrv: str = "", view: str = "", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.set_reactive(StatusBar.namesrv, namesrv)
        self.set_reactive(StatusBar.view, view)

    def render(self) -> Text:
        snap = self.snapshot
        text = Text.assemble(("mq ", "bold"), (self.view, "bold cyan"), "  ")
        if snap is None:
            text.append("● connecting", style="yellow")
        elif snap.connected:
            text.append("● connected", style="bold green")
        else:
            text.append("● disconnected", style="bold red")
        text.append(f"  namesrv {self.namesrv}")
        if snap is not None:
            down = len(snap.brokers_down)
            text.append(f"  brokers {len(snap.brokers)}")
            if down:
                text.append(f" ({down} down)", style="bold red")
        if self.last_good_ms is not None:
            clock = time.strftime("%H:%M:%S", time.localtime(self.last_good_ms / 1000))
            text.append(f"  polled {clock}")
            if snap is not None:
                text.append(f" in {snap.latency_ms:.0f} ms")
        if self.paused:
            text.append("  ⏸ paused", style="bold yellow")
        return text


class ViewTabs(Static):
    """The views and their number keys, the current one reversed (always visible, so
    the keys are discoverable without ``?``)."""

    DEFAULT_CSS = """
    ViewTabs {
        height: 1;
        background: $boost;
        padding: 0 1;
    }
    """

    def __init__(self, views: list[tuple[str, str]], current: str, *, id: str | None = None):
        """``views`` are ``(mode, title)`` pairs in number-key order."""
        super().__init__(id=id)
        self.views = views
        self.current = current

    def render(self) -> Text:
        text = Text()
        for i, (mode, title) in enumerate(self.views, start=1):
            style = "reverse bold" if mode == self.current else ""
            text.append(f" {i} {title} ", style=style)
            text.append(" ")
        return text

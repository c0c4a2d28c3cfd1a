"""The dashboard's top bar: where we are connected, and how fresh the data is."""

from __future__ import annotations

import time

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from mqcli.tui.model import UNKNOWN_STATE, Snapshot

__all__ = ["SEPARATOR", "StatusBar", "ViewTabs"]


SEPARATOR = " │ "
"""Between the bar's parts, so no two run together whatever the terminal does."""


class StatusBar(Static):
    """Name server address and connection state, brokers up/down, the time of the last
    good poll and its latency, and whether refreshing is paused (a dialog is open).

    Parts that do not fit the width are left out whole (least important first), never
    cut mid-word."""

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

    def parts(self) -> list[tuple[int, Text]]:
        """``(priority, text)`` in display order; 0 is kept first."""
        snap = self.snapshot
        parts = [(5, Text.assemble(("mq ", "bold"), (self.view, "bold cyan")))]
        if snap is None:
            parts.append((0, Text("● connecting", "yellow")))
        elif snap.connected:
            parts.append((0, Text("● connected", "bold green")))
        elif snap.brokers_unknown:
            parts.append((0, Text("● " + UNKNOWN_STATE, "bold red")))
        else:
            parts.append((0, Text("● disconnected", "bold red")))
        parts.append((1, Text(f"namesrv {self.namesrv}")))
        if snap is not None:
            brokers = Text(f"brokers {len(snap.brokers)}")
            down = len(snap.brokers_down)
            if down:
                brokers.append(f" ({down} down)", style="bold red")
            parts.append((2, brokers))
        if self.paused:
            parts.append((3, Text("⏸ paused", "bold yellow")))
        if self.last_good_ms is not None:
            clock = time.strftime("%H:%M:%S", time.localtime(self.last_good_ms / 1000))
            polled = f"polled {clock}"
            if snap is not None:
                polled += f" in {snap.latency_ms:.0f} ms"
            parts.append((4, Text(polled)))
        return parts

    def render(self) -> Text:
        parts = self.parts()
        width = self.size.width
        keep: set[int] = set()
        used = 0
        for index in sorted(range(len(parts)), key=lambda i: parts[i][0]):
            need = parts[index][1].cell_len + (len(SEPARATOR) if keep else 0)
            if width <= 0 or used + need <= width or not keep:
                keep.add(index)
                used += need
        return Text(SEPARATOR, "dim").join(t for i, (_, t) in enumerate(parts) if i in keep)


class ViewTabs(Static):
    """The views and their number keys, the current one reversed (always visible, so
    the keys are discoverable without ``?``). Short titles when the long ones do not
    fit, so every tab shows at 80 columns."""

    DEFAULT_CSS = """
    ViewTabs {
        height: 1;
        background: $boost;
        padding: 0 1;
    }
    """

    def __init__(
        self, views: list[tuple[str, str, str]], current: str, *, id: str | None = None
    ) -> None:
        """``views`` are ``(mode, title, short title)`` in number-key order."""
        super().__init__(id=id)
        self.views = views
        self.current = current

    def render(self) -> Text:
        text = self._tabs(short=False)
        if self.size.width > 0 and text.cell_len > self.size.width:
            text = self._tabs(short=True)
        return text

    def _tabs(self, *, short: bool) -> Text:
        text = Text()
        for i, (mode, title, brief) in enumerate(self.views, start=1):
            style = "reverse bold" if mode == self.current else ""
            if i > 1:
                text.append(" ")
            text.append(f" {i} {brief if short else title} ", style=style)
        return text

"""The delay-levels view: how far each SCHEDULE_TOPIC_XXXX queue has been delivered."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from mqcli.tui.model import Snapshot
from mqcli.tui.screens.base import ViewScreen
from mqcli.tui.widgets.delay_levels import DelayLevels

__all__ = ["DelayScreen"]


class DelayScreen(ViewScreen):
    """Per broker and level: delivered offset / max offset, messages waiting, when the
    next one is due, the delivery rate, and a progress bar, from the runtime info's
    ``scheduleMessageOffset_<level>`` (no RocketMQ tool shows this well)."""

    TITLE = "Delay levels"
    TAB = "Delay"
    AUTO_FOCUS = "DelayLevels"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("w", "toggle_waiting", "Only waiting"),
    ]

    only_waiting: bool = False

    def compose_body(self) -> ComposeResult:
        yield Static(id="delay-note")
        yield DelayLevels(id="levels")

    def render_snapshot(self, snapshot: Snapshot) -> None:
        rows = [
            r
            for r in snapshot.delay_levels
            if (not self.only_waiting or r.waiting) and self.matches(r.broker, r.delay_text)
        ]
        self.query_one(DelayLevels).sync(rows, snapshot.taken_ms, narrow=self.narrow)
        note = "level · delivered / scheduled · waiting · next due · rate" if self.narrow else ""
        if self.only_waiting:
            note += "  only levels with waiting messages (w shows all)"
        if self.filter_text:
            note += f"  filter: {self.filter_text}"
        self.query_one("#delay-note", Static).update(Text(note.strip(), "dim"))

    def action_toggle_waiting(self) -> None:
        self.only_waiting = not self.only_waiting
        self.rerender()

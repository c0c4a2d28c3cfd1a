"""Delay-level progress: one row per ``SCHEDULE_TOPIC_XXXX`` queue with a progress bar."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Label, ProgressBar

from mqcli.tui.model import DelayLevelRow

__all__ = ["DelayLevel", "DelayLevels", "due_text", "rate_text"]


def due_text(next_due_ms: int | None, now_ms: int, *, clock: bool = True) -> str:
    """``"in 1m05s (12:01:30)"``, ``"overdue 3s"`` or ``"-"``; without the clock time
    when ``clock`` is false (narrow screens)."""
    if next_due_ms is None:
        return "-"
    at = " (" + time.strftime("%H:%M:%S", time.localtime(next_due_ms / 1000)) + ")"
    at = at if clock else ""
    delta = (next_due_ms - now_ms) // 1000
    if delta < 0:
        return f"overdue {-delta}s{at}"
    minutes, seconds = divmod(delta, 60)
    hours, minutes = divmod(minutes, 60)
    span = f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"
    return f"in {span}{at}"


def rate_text(per_s: float | None) -> str:
    """``"2.5/s"`` delivered, or ``"-"`` when the broker does not say."""
    return "-" if per_s is None else f"{per_s:.1f}/s"


class DelayLevel(Horizontal):
    """One level: name and delay, delivered/max, waiting, next due, rate, and a bar of
    delivered over everything ever scheduled at that level. A level nothing was ever
    scheduled at (0 / 0) shows no bar: a full bar there would claim work done."""

    DEFAULT_CSS = """
    DelayLevel {
        height: 1;
    }
    DelayLevel > Label {
        padding: 0 1 0 0;
    }
    DelayLevel > .level { width: 22; }
    DelayLevel > .offsets { width: 22; }
    DelayLevel > .waiting { width: 16; }
    DelayLevel > .due { width: 30; }
    DelayLevel > .rate { width: 12; }
    DelayLevel > ProgressBar { width: 1fr; }
    DelayLevel > ProgressBar > Horizontal { width: 1fr; }
    DelayLevel Bar { width: 1fr; }
    DelayLevel > ProgressBar.idle { visibility: hidden; }
    """

    row: reactive[DelayLevelRow | None] = reactive(None, always_update=True)
    """What the last poll said about this level."""
    now_ms: reactive[int] = reactive(0)
    """The poll's time, for "next due in ...": never the wall clock, so tests are stable."""
    narrow: reactive[bool] = reactive(False)
    """Shorter texts (no clock time, waiting as a bare count) for 80 columns."""

    def __init__(
        self, row: DelayLevelRow, *, now_ms: int = 0, narrow: bool = False, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.set_reactive(DelayLevel.row, row)
        self.set_reactive(DelayLevel.now_ms, now_ms)
        self.set_reactive(DelayLevel.narrow, narrow)

    def compose(self) -> ComposeResult:
        yield Label(classes="level")
        yield Label(classes="offsets")
        yield Label(classes="waiting")
        yield Label(classes="due")
        yield Label(classes="rate")
        yield ProgressBar(show_eta=False, show_percentage=True)

    def on_mount(self) -> None:
        self.watch_row()

    @property
    def waiting(self) -> int:
        return self.row.waiting if self.row is not None else 0

    def watch_narrow(self) -> None:
        self.watch_row()

    def watch_row(self) -> None:
        row = self.row
        if row is None or not self.children:
            return  # not composed yet: on_mount renders
        self.query_one(".level", Label).update(f"{row.broker} L{row.level:<2} {row.delay_text}")
        self.query_one(".offsets", Label).update(f"{row.delivered:,} / {row.max_offset:,}")
        style = "bold yellow" if row.waiting else "dim"
        waiting = f"{row.waiting:,}" if self.narrow else f"waiting {row.waiting:,}"
        self.query_one(".waiting", Label).update(Text(waiting, style=style))
        due = due_text(row.next_due_ms, self.now_ms, clock=not self.narrow)
        self.query_one(".due", Label).update(due)
        self.query_one(".rate", Label).update(rate_text(row.delivery_rate))
        bar = self.query_one(ProgressBar)
        bar.set_class(row.max_offset <= 0, "idle")
        if row.max_offset > 0:
            bar.update(total=row.max_offset, progress=row.delivered)
        else:
            bar.update(total=None, progress=0)


class DelayLevels(VerticalScroll):
    """Every level of every master, patched in place by :meth:`sync` (keyed by broker
    and level), so scrolling survives refreshes. The border title sums the waiting."""

    DEFAULT_CSS = """
    DelayLevels {
        border: round $primary 40%;
        border-title-color: $foreground;
        border-title-style: bold;
        height: 1fr;
        padding: 0 1;
    }
    DelayLevels.-narrow DelayLevel > .level { width: 18; }
    DelayLevels.-narrow DelayLevel > .offsets { width: 14; }
    DelayLevels.-narrow DelayLevel > .waiting { width: 7; }
    DelayLevels.-narrow DelayLevel > .due { width: 13; }
    DelayLevels.-narrow DelayLevel > .rate { width: 8; }
    """

    def sync(self, rows: Sequence[DelayLevelRow], now_ms: int, *, narrow: bool = False) -> None:
        """Show ``rows``; ``narrow`` picks the short texts and widths (80 columns)."""
        self.set_class(narrow, "-narrow")
        wanted = {self.row_id(r): r for r in rows}
        existing = {w.id: w for w in self.query(DelayLevel) if w.id is not None}
        for key, widget in existing.items():
            if key not in wanted:
                widget.remove()
        new: list[DelayLevel] = []
        for key, row in wanted.items():
            found = existing.get(key)
            if found is None:
                new.append(DelayLevel(row, now_ms=now_ms, narrow=narrow, id=key))
            else:
                found.now_ms = now_ms
                found.narrow = narrow
                found.row = row
        if new:
            self.mount_all(new)
        waiting = sum(r.waiting for r in rows)
        levels = sum(1 for r in rows if r.waiting)
        self.border_title = (
            f"Delay levels, SCHEDULE_TOPIC_XXXX ({len(rows)}): "
            f"{waiting:,} waiting in {levels} level(s)"
        )

    @staticmethod
    def row_id(row: DelayLevelRow) -> str:
        return _level_id(row.broker, row.level)

    def waiting(self, broker: str, level: int) -> int | None:
        """The waiting count shown for a level (``None`` when not shown)."""
        found = self.query(f"#{_level_id(broker, level)}")
        return found.first(DelayLevel).waiting if found else None


def _level_id(broker: str, level: int) -> str:
    return "level-" + re.sub(r"[^A-Za-z0-9_-]", "_", broker) + f"-{level}"

"""Sparklines and trends for rolling series (topic put TPS, group lag)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Label, Sparkline

from mqcli.tui.model import trend_direction

__all__ = ["LagSparkline", "spark", "trend"]

_BARS = "▁▂▃▄▅▆▇█"


def spark(values: Sequence[float], width: int = 12, top: float | None = None) -> str:
    """The last ``width`` values as block characters, so a sparkline fits in a DataTable
    cell (blank while there is no history). ``top`` is the value of a full bar: give the
    same one to every row of a table, so bars compare across rows (a lag of 1 is a low
    bar beside a lag of 168); by default the values' own maximum."""
    tail = list(values)[-width:]
    if not tail:
        return ""
    top = max(tail) if top is None else max(top, max(tail))
    if top <= 0:
        return _BARS[0] * len(tail)
    return "".join(_BARS[min(7, int(v / top * 7.999))] for v in tail)


def trend(values: Sequence[float]) -> Text:
    """An arrow for the trend over the last polls (:func:`~mqcli.tui.model.trend_direction`):
    red up (growing), green down, dim flat."""
    direction = trend_direction(values)
    if direction > 0:
        return Text("↑", style="bold red")
    if direction < 0:
        return Text("↓", style="green")
    return Text("→", style="dim")


class LagSparkline(Widget):
    """A labelled sparkline with the current value and a trend arrow, e.g. for a group's
    total lag under its per-queue table."""

    DEFAULT_CSS = """
    LagSparkline {
        layout: horizontal;
        height: 1;
    }
    LagSparkline > Label {
        width: auto;
        padding: 0 1 0 0;
    }
    LagSparkline > Sparkline {
        width: 1fr;
    }
    """

    values: reactive[list[float]] = reactive(list, always_update=True)
    """The series, oldest first."""

    def __init__(
        self,
        label: str,
        values: Sequence[float] = (),
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.label = label
        self.set_reactive(LagSparkline.values, list(values))

    def compose(self) -> ComposeResult:
        yield Label(self._text(), id="value")
        yield Sparkline(self.values or [0.0], id="spark")

    def _text(self) -> Text:
        current = int(self.values[-1]) if self.values else 0
        return Text.assemble(f"{self.label} {current:,} ", trend(self.values))

    def watch_values(self) -> None:
        if not self.children:
            return  # not composed yet
        self.query_one("#value", Label).update(self._text())
        self.query_one("#spark", Sparkline).data = self.values or [0.0]

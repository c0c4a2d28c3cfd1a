"""A DataTable that a poll patches in place instead of clearing and refilling."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist

__all__ = ["LiveTable"]


def _plain(value: Any) -> Any:
    return value.plain if isinstance(value, Text) else value


class LiveTable(DataTable[Any]):
    """Rows keyed by a stable string (``"broker-a/3"`` for a queue); :meth:`sync` updates
    changed cells with ``update_cell``, adds and removes only rows whose keys come or go,
    and keeps the cursor on the same row, so cursor and scroll survive every refresh
    (kaskade's ``clear()``-and-refill loses both). The border title carries the row
    count and the active filter.
    """

    DEFAULT_CSS = """
    LiveTable {
        height: 1fr;
        border: round $primary 40%;
        border-title-color: $foreground;
        border-title-style: bold;
    }
    LiveTable:focus {
        border: round $primary;
    }
    """

    title: reactive[str] = reactive("")
    """The table's name, shown in the border with the row count."""
    filter_text: reactive[str] = reactive("")
    """The filter the rows were chosen by (shown in the title; filtering is the caller's)."""
    total: reactive[int | None] = reactive(None)
    """Rows before filtering, for "3 of 10"; ``None`` when not filtered."""

    def __init__(
        self,
        columns: Sequence[tuple[str, str]],
        *,
        title: str = "",
        order_by: Sequence[str] = (),
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """``columns`` are ``(key, label)`` pairs; ``order_by`` the column keys new rows
        are sorted by (the default keeps the order rows were first seen in)."""
        super().__init__(name=name, id=id, classes=classes, cursor_type="row", zebra_stripes=True)
        self._columns_spec = list(columns)
        self._order_by = list(order_by)
        self.set_reactive(LiveTable.title, title)
        for key, label in self._columns_spec:
            self.add_column(label, key=key)
        self._update_title()

    def set_columns(
        self, columns: Sequence[tuple[str, str]], *, order_by: Sequence[str] = ()
    ) -> None:
        """Show other columns (e.g. fewer on a narrow screen): the rows are dropped, and
        the next :meth:`sync` brings them back; nothing happens if they are the same."""
        if list(columns) == self._columns_spec:
            return
        self.clear(columns=True)
        self._columns_spec = list(columns)
        self._order_by = list(order_by)
        for key, label in self._columns_spec:
            self.add_column(label, key=key)

    @property
    def highlighted_key(self) -> str | None:
        """Key of the row under the cursor."""
        if not self.row_count:
            return None
        try:
            row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except CellDoesNotExist:
            return None
        return row_key.value

    def sync(self, rows: Mapping[str, Sequence[Any]]) -> None:
        """Make the table show ``rows`` (key -> cells, in display order)."""
        keep = self.highlighted_key
        current = {k.value for k in self.rows if k.value is not None}
        for key in current - rows.keys():
            self.remove_row(key)
        added = False
        columns = [k for k, _ in self._columns_spec]
        for key, cells in rows.items():
            if key in current:
                row = self.get_row(key)
                for column, old, new in zip(columns, row, cells, strict=False):
                    if old != new:
                        self.update_cell(key, column, new, update_width=True)
            else:
                self.add_row(*cells, key=key)
                added = True
        if added and self._order_by:
            self.sort(*self._order_by, key=lambda values: tuple(map(_plain, values)))
        if keep is not None and keep in rows:
            index = self.get_row_index(keep)
            if index != self.cursor_row:
                self.move_cursor(row=index, animate=False, scroll=False)
        self._update_title()

    def _update_title(self) -> None:
        count = f"{self.row_count}" if self.total is None else f"{self.row_count} of {self.total}"
        title = f"{self.title} ({count})" if self.title else f"({count})"
        if self.filter_text:
            title += f" filter: {self.filter_text}"
        self.border_title = title

    def watch_title(self) -> None:
        self._update_title()

    def watch_filter_text(self) -> None:
        self._update_title()

    def watch_total(self) -> None:
        self._update_title()

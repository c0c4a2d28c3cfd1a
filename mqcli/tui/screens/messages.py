"""The messages view: look up by key, message id or store time range."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import DataTable, Input

from mqcli.tui.lookup import LookupQuery, lookup, parse_query
from mqcli.tui.model import Snapshot
from mqcli.tui.screens.base import ViewScreen, fmt_short_ms
from mqcli.tui.widgets.live_table import LiveTable
from mqcli.tui.widgets.message_detail import MessageDetail, fmt_ms
from mqcli.tui.widgets.trace_timeline import TraceTimeline
from mqcore.message import MessageExt

__all__ = ["MESSAGE_COLUMNS", "NARROW_MESSAGE_COLUMNS", "MessagesScreen", "message_cells"]


def message_cells(m: MessageExt, keys: Sequence[str] = (), now_ms: int = 0) -> tuple[object, ...]:
    """The cells of ``keys`` (default: every one of :data:`MESSAGE_COLUMNS`); with
    ``now_ms`` the store time is the short one of narrow screens."""
    cells: dict[str, object] = {
        "id": m.msg_id, "topic": m.topic, "host": f"{m.store_host[0]}:{m.store_host[1]}",
        "qid": m.queue_id, "offset": m.queue_offset,
        "stored": fmt_short_ms(m.store_timestamp, now_ms) if now_ms else fmt_ms(m.store_timestamp),
        "keys": " ".join(m.keys) or "-", "tags": m.tags or "-", "size": len(m.body),
    }  # fmt: skip
    return tuple(cells[k] for k in keys or [k for k, _ in MESSAGE_COLUMNS])


MESSAGE_COLUMNS = [
    ("id", "MSG ID"), ("topic", "TOPIC"), ("host", "STORE HOST"), ("qid", "QUEUE"),
    ("offset", "OFFSET"), ("stored", "STORED"), ("keys", "KEYS"), ("tags", "TAGS"),
    ("size", "SIZE"),
]  # fmt: skip
NARROW_MESSAGE_COLUMNS = [
    ("id", "MSG ID"), ("qid", "QUEUE"), ("offset", "OFFSET"), ("stored", "STORED"),
    ("keys", "KEYS"),
]  # fmt: skip
"""80 columns: the whole id (never cut), where and when; the detail pane has the rest."""


class TopicBox(Input):
    """The topic box: ``/`` (search) is never typed into it (no topic name holds one);
    with a topic given it goes on to the query box, whose text may hold a ``/``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "on_to_query", "Search", show=False, priority=True),
    ]

    def action_on_to_query(self) -> None:
        if self.value.strip():
            self.screen.query_one("#query", Input).focus()


class MessagesScreen(ViewScreen):
    """A topic and a query (``key:K``, ``id:ID``, ``time:-1h..now``; bare text is a key),
    the results, and the highlighted message in full. Searches run as workers."""

    TITLE = "Messages"
    FILTERABLE = False
    AUTO_FOCUS = "#topic"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "Search"),
        Binding("h", "toggle_hex", "Hex/text"),
    ]

    results: list[MessageExt]

    def compose_body(self) -> ComposeResult:
        self.results = []
        with Horizontal(id="search-bar"):
            yield TopicBox(placeholder="topic (/ to search)", id="topic")
            yield Input(placeholder="key:K  id:MSG_ID  time:-1h..now (enter)", id="query")
        yield LiveTable(MESSAGE_COLUMNS, title="Results", id="results")
        yield MessageDetail(id="detail")
        yield TraceTimeline(lambda: self.mq_app.poller.admin, id="trace")

    def on_screen_resume(self) -> None:
        """Entering the view focuses the lookup box, so typed digits go into it (the
        rule of every text box: esc leaves it; F1-F6 and alt+digit switch anyway)."""
        super().on_screen_resume()
        if not isinstance(self.focused, Input):
            self.action_search()

    def action_search(self) -> None:
        box = self.query_one("#topic", Input)
        (self.query_one("#query", Input) if box.value else box).focus()

    def on_key(self, event: object) -> None:
        from textual.events import Key

        # esc leaves the search boxes, so number keys switch views again
        if isinstance(event, Key) and event.key == "escape":
            event.stop()
            self.query_one("#results", LiveTable).focus()

    def render_snapshot(self, snapshot: Snapshot) -> None:
        """Results come from lookups, not polls; before the first one the empty table
        still gets the columns that fit."""
        if not self.results:
            spec = NARROW_MESSAGE_COLUMNS if self.narrow else MESSAGE_COLUMNS
            self.query_one("#results", LiveTable).set_columns(spec)

    def on_resize(self) -> None:
        """A resize lays the results out again."""
        super().on_resize()
        if self.results:
            table = self.query_one("#results", LiveTable)
            self.show_results(self.results, table.title.removeprefix("Results of "), focus=False)

    def action_toggle_hex(self) -> None:
        detail = self.query_one(MessageDetail)
        detail.hex = not detail.hex

    @on(Input.Submitted, "#topic")
    def _topic_entered(self) -> None:
        self.query_one("#query", Input).focus()

    @on(Input.Submitted, "#query")
    def _query_entered(self) -> None:
        topic = self.query_one("#topic", Input).value.strip()
        text = self.query_one("#query", Input).value
        try:
            query = parse_query(topic, text, int(time.time() * 1000))
        except ValueError as exc:
            self.notify(str(exc), severity="warning")
            return
        self.search(query)

    @work(exclusive=True, group="lookup")
    async def search(self, query: LookupQuery) -> None:
        table = self.query_one("#results", LiveTable)
        table.loading = True
        try:
            found = await lookup(self.mq_app.poller.admin, query)
        except Exception as exc:  # errors are toasts, never crashes
            self.notify(f"{query.mode} {query.value}: {exc}", severity="error", title="Lookup")
            found = []
        finally:
            table.loading = False
        self.show_results(found, f"{query.mode} {query.value} in {query.topic or 'any topic'}")

    def show_results(self, found: list[MessageExt], what: str, *, focus: bool = True) -> None:
        self.results = found
        table = self.query_one("#results", LiveTable)
        table.title = f"Results of {what}"
        spec = NARROW_MESSAGE_COLUMNS if self.narrow else MESSAGE_COLUMNS
        table.set_columns(spec)
        keys = [k for k, _ in spec]
        now_ms = int(time.time() * 1000) if self.narrow else 0
        table.sync({f"{i}:{m.msg_id}": message_cells(m, keys, now_ms) for i, m in enumerate(found)})
        if focus:
            self.query_one(MessageDetail).message = found[0] if found else None
        if found and focus:
            table.focus()

    @on(DataTable.RowHighlighted, "#results")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        index = event.cursor_row
        if 0 <= index < len(self.results):
            self.query_one(MessageDetail).message = self.results[index]

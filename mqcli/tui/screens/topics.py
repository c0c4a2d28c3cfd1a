"""The topics view: every topic's depth and put rate, and the highlighted one's queues."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable

from mqcli.tui.dialogs.confirm_name import ConfirmByName
from mqcli.tui.model import Snapshot, TopicRow
from mqcli.tui.screens.base import ViewScreen, fmt_int, fmt_short_ms
from mqcli.tui.widgets.lag_sparkline import spark
from mqcli.tui.widgets.live_table import LiveTable
from mqcli.tui.widgets.message_detail import fmt_ms

__all__ = ["NARROW_TOPIC_COLUMNS", "TOPIC_COLUMNS", "TopicsScreen"]

TOPIC_COLUMNS = [
    ("topic", "TOPIC"), ("kind", "KIND"), ("perm", "PERM"), ("queues", "QUEUES"),
    ("depth", "DEPTH"), ("max", "MAX OFFSET"), ("last", "LAST STORE"),
    ("tps", "PUT TPS"), ("trend", "TPS TREND"),
]  # fmt: skip
NARROW_TOPIC_COLUMNS = [
    ("topic", "TOPIC"), ("queues", "QUEUES"), ("depth", "DEPTH"), ("last", "LAST STORE"),
    ("tps", "PUT TPS"), ("trend", "TPS TREND"),
]  # fmt: skip
"""80 columns: kind, perm and max offset give way to the rate and its trend, and the
store time loses its date when it is today."""


class TopicsScreen(ViewScreen):
    """Topics with queue count, depth (max - min), max offset, last store time and put
    TPS with a sparkline; below, the highlighted topic's queues keyed by (broker, queue).
    System, retry and DLQ topics are hidden until ``s``."""

    TITLE = "Topics"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "toggle_system", "System topics"),
        Binding("d", "delete_topic", "Delete topic"),
    ]

    show_system: bool = False

    def compose_body(self) -> ComposeResult:
        yield LiveTable(TOPIC_COLUMNS, title="Topics", order_by=("topic",), id="topics")
        yield LiveTable(
            [
                ("broker", "BROKER"), ("qid", "QUEUE"), ("min", "MIN OFFSET"),
                ("max", "MAX OFFSET"), ("depth", "DEPTH"), ("last", "LAST STORE"),
            ],
            title="Queues", order_by=("broker", "qid"), id="queues",
        )  # fmt: skip

    def visible_topics(self, snapshot: Snapshot) -> list[TopicRow]:
        return [
            t
            for t in snapshot.topics.values()
            if (self.show_system or t.kind == "normal") and self.matches(t.name)
        ]

    def render_snapshot(self, snapshot: Snapshot) -> None:
        table = self.query_one("#topics", LiveTable)
        spec = NARROW_TOPIC_COLUMNS if self.narrow else TOPIC_COLUMNS
        table.set_columns(spec, order_by=("topic",))
        keys = [k for k, _ in spec]
        rows = self.visible_topics(snapshot)
        table.filter_text = self.filter_text
        hidden = "" if self.show_system else ", system hidden"
        table.title = f"Topics{hidden}"
        shown_total = sum(
            1 for t in snapshot.topics.values() if self.show_system or t.kind == "normal"
        )
        table.total = shown_total if self.filter_text else None
        top = max((max(t.tps_history[-12:], default=0.0) for t in rows), default=0.0)
        table.sync({t.name: self._cells(t, keys, snapshot.taken_ms, top) for t in rows})
        self._render_queues(snapshot)

    def _cells(self, t: TopicRow, keys: list[str], now_ms: int, top: float) -> tuple[object, ...]:
        """The cells of ``keys``; the TPS trend is scaled to ``top`` (the table's largest)."""
        last = fmt_short_ms(t.last_store_ms, now_ms) if self.narrow else fmt_ms(t.last_store_ms)
        cells: dict[str, object] = {
            "topic": t.name, "kind": t.kind, "perm": t.perm, "queues": len(t.queues),
            "depth": fmt_int(t.depth), "max": fmt_int(t.max_offset), "last": last,
            "tps": f"{t.put_tps:.1f}", "trend": Text(spark(t.tps_history, top=top), "cyan"),
        }  # fmt: skip
        return tuple(cells[k] for k in keys)

    def _render_queues(self, snapshot: Snapshot) -> None:
        key = self.query_one("#topics", LiveTable).highlighted_key
        topic = snapshot.topics.get(key) if key else None
        queues = self.query_one("#queues", LiveTable)
        queues.title = f"Queues of {topic.name}" if topic else "Queues"
        queues.sync(
            {
                f"{q.broker}/{q.queue_id}": (
                    q.broker,
                    q.queue_id,
                    fmt_int(q.min_offset),
                    fmt_int(q.max_offset),
                    fmt_int(q.depth),
                    fmt_ms(q.last_store_ms),
                )
                for q in (topic.queues if topic else [])
            }
        )

    @on(DataTable.RowHighlighted, "#topics")
    def _topic_highlighted(self) -> None:
        snap = self.mq_app.snapshot
        if snap is not None:
            self._render_queues(snap)

    def action_toggle_system(self) -> None:
        self.show_system = not self.show_system
        self.rerender()

    class DeleteTopic(Message):
        """The operator confirmed deleting ``topic`` on every broker (the app acts)."""

        def __init__(self, topic: str) -> None:
            super().__init__()
            self.topic = topic

    def action_delete_topic(self) -> None:
        topic = self.query_one("#topics", LiveTable).highlighted_key
        if topic is None:
            return

        def confirmed(ok: bool | None) -> None:
            if ok:
                self.post_message(self.DeleteTopic(topic))

        self.app.push_screen(
            ConfirmByName(f"Delete topic {topic} on every broker", topic), confirmed
        )

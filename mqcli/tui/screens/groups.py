"""The consumer groups view: lag per group with a trend, and the highlighted group's
members and per-queue progress (for a group that consumes by POP, also what each queue
has in flight and invisible)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from mqcli.tui.dialogs.confirm_name import ConfirmByName
from mqcli.tui.model import GroupQueueRow, GroupRow, Snapshot
from mqcli.tui.screens.base import ViewScreen, fmt_int, fmt_short_ms
from mqcli.tui.widgets.lag_sparkline import LagSparkline, spark, trend
from mqcli.tui.widgets.live_table import LiveTable
from mqcli.tui.widgets.message_detail import fmt_ms
from mqcore.message.const import RETRY_GROUP_TOPIC_PREFIX

__all__ = [
    "GROUP_COLUMNS", "NARROW_GROUP_COLUMNS", "NARROW_QUEUE_COLUMNS", "POP_QUEUE_COLUMNS",
    "QUEUE_COLUMNS", "GroupsScreen",
]  # fmt: skip

GROUP_COLUMNS = [
    ("group", "GROUP"), ("model", "MODEL"), ("topics", "TOPICS"), ("queues", "QUEUES"),
    ("lag", "TOTAL LAG"), ("trend", "TREND"), ("spark", "LAG HISTORY"),
]  # fmt: skip
NARROW_GROUP_COLUMNS = [
    ("group", "GROUP"), ("lag", "TOTAL LAG"), ("trend", "TREND"), ("spark", "LAG HISTORY"),
    ("topics", "TOPICS"),
]  # fmt: skip
"""Under 120 columns: the group and how far behind it is come first, its topics last
(what a long list of them may push off the screen); the detail has model and queues."""

QUEUE_COLUMNS = [
    ("topic", "TOPIC"), ("broker", "BROKER"), ("qid", "QUEUE"),
    ("broker_offset", "BROKER OFFSET"), ("consumer_offset", "CONSUMER OFFSET"),
    ("lag", "LAG"), ("last", "LAST CONSUMED"),
]  # fmt: skip
NARROW_QUEUE_COLUMNS = [
    ("topic", "TOPIC"), ("broker", "BROKER"), ("qid", "QUEUE"), ("lag", "LAG"),
    ("last", "LAST"),
]  # fmt: skip
"""Half of 80 columns: which queue, how far behind, since when."""
POP_QUEUE_COLUMNS = [
    ("in_flight", "IN FLIGHT"), ("invisible", "INVISIBLE"),
]  # fmt: skip
"""After LAG for a POP group: handed out and not acked, and the part not yet due back."""
NARROW_POP_QUEUE_COLUMNS = [("in_flight", "IN FLIGHT")]


class GroupsScreen(ViewScreen):
    """Groups (model, topics, queues, total lag, trend); groups whose lag grew over the
    last polls are highlighted in red. The highlighted group's subscription, members and
    per-queue broker offset / consumer offset / lag / last consume time come from
    GET_CONSUME_STATS, polled for that group only; for a POP group, also each queue's
    messages in flight and invisible, and their totals beside the subscription."""

    TITLE = "Groups"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "toggle_system", "System groups"),
        Binding("x", "skip_backlog", "Skip backlog"),
    ]

    show_system: bool = False

    def compose_body(self) -> ComposeResult:
        yield LiveTable(GROUP_COLUMNS, title="Groups", order_by=("group",), id="groups")
        with Horizontal(id="group-detail"):
            with Vertical(id="group-info-pane"):
                yield Static(id="group-info")
                yield LagSparkline("total lag", id="group-lag")
                yield LiveTable(
                    [("client", "CLIENT ID"), ("addr", "ADDRESS"), ("lang", "LANGUAGE"),
                     ("version", "VERSION")],
                    title="Members", order_by=("client",), id="members",
                )  # fmt: skip
            yield LiveTable(
                QUEUE_COLUMNS, title="Queues", order_by=("topic", "broker", "qid"),
                id="group-queues",
            )  # fmt: skip

    @property
    def selected_group(self) -> str | None:
        return self.query_one("#groups", LiveTable).highlighted_key

    def render_snapshot(self, snapshot: Snapshot) -> None:
        table = self.query_one("#groups", LiveTable)
        shown = [g for g in snapshot.groups.values() if self.show_system or not g.system]
        rows = [g for g in shown if self.matches(g.name, *g.topics)]
        table.filter_text = self.filter_text
        table.title = "Groups" if self.show_system else "Groups, system hidden"
        table.total = len(shown) if self.filter_text else None
        spec = NARROW_GROUP_COLUMNS if self.narrow else GROUP_COLUMNS
        table.set_columns(spec, order_by=("group",))
        keys = [k for k, _ in spec]
        top = max((max(g.lag_history[-12:], default=0) for g in rows), default=0)
        table.sync({g.name: self._cells(g, keys, top) for g in rows})
        self._render_detail(snapshot)

    @staticmethod
    def _cells(g: GroupRow, keys: list[str], top: float) -> tuple[object, ...]:
        """The cells of ``keys``; the lag history is scaled to ``top``, the largest lag
        the table shows, so bars compare across groups."""
        style = "bold red" if g.lag_growing else ""
        topics = [t for t in g.topics if not t.startswith(RETRY_GROUP_TOPIC_PREFIX)]
        cells: dict[str, object] = {
            "group": Text(g.name, style), "model": g.model.lower() if g.model != "-" else "-",
            "topics": ", ".join(topics) or "-", "queues": g.queues,
            "lag": Text(fmt_int(g.total_lag), style), "trend": trend(g.lag_history),
            "spark": Text(spark(g.lag_history, top=top), "magenta"),
        }  # fmt: skip
        return tuple(cells[k] for k in keys)

    def _render_detail(self, snapshot: Snapshot) -> None:
        name = self.selected_group
        detail = snapshot.group_detail
        info = self.query_one("#group-info", Static)
        members = self.query_one("#members", LiveTable)
        queues = self.query_one("#group-queues", LiveTable)
        group = snapshot.groups.get(name) if name else None
        if group is not None:
            self.query_one("#group-lag", LagSparkline).values = [
                float(v) for v in group.lag_history
            ]
        if detail is None or detail.name != name:
            info.update(Text(f"{name or 'no group'}: loading…" if name else "No group", "dim"))
            members.sync({})
            queues.sync({})
            return
        subs = ", ".join(f"{t} [{e}]" for t, e in detail.subscriptions.items()) or "-"
        text = Text.assemble(
            (detail.name, "bold"), f"  model {detail.model}  type {detail.consume_type}\n",
            f"subscriptions: {subs}",
        )  # fmt: skip
        if detail.popping:
            text.append(
                f"\nPOP: {fmt_int(detail.in_flight)} in flight, "
                f"{fmt_int(detail.invisible)} invisible"
            )
        if detail.error:
            text.append(f"\n{detail.error}", style="red")
        info.update(text)
        members.sync(
            {m.client_id: (m.client_id, m.addr, m.language, m.version) for m in detail.members}
        )
        queues.title = f"Queues of {detail.name}"
        spec = self._queue_spec(detail.popping)
        queues.set_columns(spec, order_by=("topic", "broker", "qid"))
        keys = [k for k, _ in spec]
        queues.sync(
            {
                f"{q.topic}/{q.broker}/{q.queue_id}": self._queue_cells(q, keys, snapshot.taken_ms)
                for q in detail.queues
            }
        )

    def _queue_spec(self, popping: bool) -> list[tuple[str, str]]:
        """The queue columns; a POP group's in-flight columns go right after LAG."""
        spec = list(NARROW_QUEUE_COLUMNS if self.narrow else QUEUE_COLUMNS)
        if popping:
            at = [k for k, _ in spec].index("lag") + 1
            spec[at:at] = NARROW_POP_QUEUE_COLUMNS if self.narrow else POP_QUEUE_COLUMNS
        return spec

    def _queue_cells(self, q: GroupQueueRow, keys: list[str], now_ms: int) -> tuple[object, ...]:
        last = fmt_short_ms(q.last_consume_ms, now_ms) if self.narrow else fmt_ms(q.last_consume_ms)
        cells: dict[str, object] = {
            "topic": q.topic, "broker": q.broker, "qid": q.queue_id,
            "broker_offset": fmt_int(q.broker_offset),
            "consumer_offset": fmt_int(q.consumer_offset),
            "lag": Text(fmt_int(q.lag), "bold yellow" if q.lag else ""), "last": last,
            "in_flight": fmt_int(q.in_flight),
            "invisible": fmt_int(q.invisible),
        }  # fmt: skip
        return tuple(cells[k] for k in keys)

    @on(DataTable.RowHighlighted, "#groups")
    def _group_highlighted(self) -> None:
        snap = self.mq_app.snapshot
        if snap is not None:
            self._render_detail(snap)
            if snap.group_detail is None or snap.group_detail.name != self.selected_group:
                self.post_message(self.RefreshNow())  # the new group's detail

    def action_toggle_system(self) -> None:
        self.show_system = not self.show_system
        self.rerender()

    class SkipBacklog(Message):
        """The operator confirmed moving ``group``'s offsets on ``topics`` to their end
        (the app acts)."""

        def __init__(self, group: str, topics: list[str]) -> None:
            super().__init__()
            self.group = group
            self.topics = topics

    def action_skip_backlog(self) -> None:
        snap, name = self.mq_app.snapshot, self.selected_group
        if snap is None or name is None or name not in snap.groups:
            return
        topics = [t for t in snap.groups[name].topics if not t.startswith(RETRY_GROUP_TOPIC_PREFIX)]

        def confirmed(ok: bool | None) -> None:
            if ok:
                self.post_message(self.SkipBacklog(name, topics))

        self.app.push_screen(
            ConfirmByName(
                f"Skip the backlog of {name}: offsets to the end of {', '.join(topics)}", name
            ),
            confirmed,
        )

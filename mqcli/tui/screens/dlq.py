"""The dead-letters view: browse a group's %DLQ% topic, view, resend to the origin."""

from __future__ import annotations

import time
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable

from mqcli.tui.dialogs.confirm_name import ConfirmByName
from mqcli.tui.lookup import dlq_messages, original_topic
from mqcli.tui.model import Snapshot
from mqcli.tui.screens.base import ViewScreen, fmt_int
from mqcli.tui.screens.messages import MESSAGE_COLUMNS, message_cells
from mqcli.tui.widgets.live_table import LiveTable
from mqcli.tui.widgets.message_detail import MessageDetail, fmt_ms
from mqcore.message import MessageExt
from mqcore.message.const import DLQ_GROUP_TOPIC_PREFIX

__all__ = ["DeadLettersScreen"]

DLQ_COLUMNS = [*MESSAGE_COLUMNS, ("origin", "ORIGIN TOPIC")]
NARROW_DLQ_COLUMNS = [
    ("id", "MSG ID"), ("stored", "STORED"), ("keys", "KEYS"), ("origin", "ORIGIN TOPIC"),
]  # fmt: skip
"""80 columns: the whole id, when, and where it came from (the last column is ORIGIN)."""


class DeadLettersScreen(ViewScreen):
    """Groups with dead letters (DLQ depth, last store); ``enter`` loads the highlighted
    group's messages; ``e`` resends the highlighted one and ``E`` all of them to the
    topic they were first sent to, after the group's name is typed."""

    TITLE = "Dead letters"
    TAB = "DLQ"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "load", "Load DLQ", show=False),
        Binding("e", "resend_one", "Resend one"),
        Binding("E", "resend_all", "Resend all"),
        Binding("h", "toggle_hex", "Hex/text"),
    ]

    loaded_group: str | None = None
    messages: list[MessageExt]

    def compose_body(self) -> ComposeResult:
        self.messages = []
        yield LiveTable(
            [("group", "GROUP"), ("topic", "DLQ TOPIC"), ("depth", "DEAD LETTERS"),
             ("last", "LAST STORE")],
            title="Groups with dead letters", order_by=("group",), id="dlq-groups",
        )  # fmt: skip
        yield LiveTable(DLQ_COLUMNS, title="Dead letters", id="dlq-messages")
        yield MessageDetail(id="dlq-detail")

    def render_snapshot(self, snapshot: Snapshot) -> None:
        if self.loaded_group is None:  # the empty table fits the screen too
            spec = NARROW_DLQ_COLUMNS if self.narrow else DLQ_COLUMNS
            self.query_one("#dlq-messages", LiveTable).set_columns(spec)
        table = self.query_one("#dlq-groups", LiveTable)
        dlqs = [t for t in snapshot.topics.values() if t.kind == "dlq"]
        rows = [t for t in dlqs if self.matches(t.name)]
        table.filter_text = self.filter_text
        table.total = len(dlqs) if self.filter_text else None
        table.sync(
            {
                t.name[len(DLQ_GROUP_TOPIC_PREFIX) :]: (
                    t.name[len(DLQ_GROUP_TOPIC_PREFIX) :],
                    t.name,
                    fmt_int(t.depth),
                    fmt_ms(t.last_store_ms),
                )
                for t in rows
            }
        )

    @on(DataTable.RowSelected, "#dlq-groups")
    def _group_selected(self) -> None:
        self.action_load()

    def action_load(self) -> None:
        group = self.query_one("#dlq-groups", LiveTable).highlighted_key
        if group is not None:
            self.load(group)

    @work(exclusive=True, group="dlq")
    async def load(self, group: str) -> None:
        snap = self.mq_app.snapshot
        if snap is None:
            return
        table = self.query_one("#dlq-messages", LiveTable)
        table.loading = True
        try:
            found = await dlq_messages(self.mq_app.poller.admin, snap, group)
        except Exception as exc:  # errors are toasts, never crashes
            self.notify(f"DLQ of {group}: {exc}", severity="error", title="Error")
            found = []
        finally:
            table.loading = False
        self.show_messages(group, found)

    def on_resize(self) -> None:
        super().on_resize()
        if self.loaded_group is not None:
            self.show_messages(self.loaded_group, self.messages, focus=False)

    def show_messages(self, group: str, found: list[MessageExt], *, focus: bool = True) -> None:
        table = self.query_one("#dlq-messages", LiveTable)
        self.loaded_group, self.messages = group, found
        table.title = f"Dead letters of {group}"
        spec = NARROW_DLQ_COLUMNS if self.narrow else DLQ_COLUMNS
        table.set_columns(spec)
        keys = [k for k, _ in spec][:-1]
        now_ms = int(time.time() * 1000) if self.narrow else 0
        table.sync(
            {
                f"{i}:{m.msg_id}": (*message_cells(m, keys, now_ms), original_topic(m) or "-")
                for i, m in enumerate(found)
            }
        )
        if focus:
            self.query_one(MessageDetail).message = found[0] if found else None
        if found and focus:
            table.focus()

    @on(DataTable.RowHighlighted, "#dlq-messages")
    def _message_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.messages):
            self.query_one(MessageDetail).message = self.messages[event.cursor_row]

    def action_toggle_hex(self) -> None:
        detail = self.query_one(MessageDetail)
        detail.hex = not detail.hex

    def action_resend_one(self) -> None:
        row = self.query_one("#dlq-messages", LiveTable).cursor_row
        if self.loaded_group and 0 <= row < len(self.messages):
            self._confirm_resend([self.messages[row]])

    def action_resend_all(self) -> None:
        if self.loaded_group and self.messages:
            self._confirm_resend(list(self.messages))

    class Resend(Message):
        """The operator confirmed resending ``messages`` (dead letters of ``group``) to
        the topics they were first sent to (the app acts)."""

        def __init__(self, group: str, messages: list[MessageExt]) -> None:
            super().__init__()
            self.group = group
            self.messages = messages

    def _confirm_resend(self, messages: list[MessageExt]) -> None:
        group = self.loaded_group
        assert group is not None
        what = "1 dead letter" if len(messages) == 1 else f"{len(messages)} dead letters"

        def confirmed(ok: bool | None) -> None:
            if ok:
                self.post_message(self.Resend(group, messages))

        self.app.push_screen(
            ConfirmByName(f"Resend {what} of {group} to their original topic", group), confirmed
        )

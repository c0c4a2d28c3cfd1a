"""One message in full: where it is stored, every property, and the body."""

from __future__ import annotations

import time

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.widgets import Static

from mqcli.tui.lookup import body_text, hex_dump
from mqcore.message import MessageExt

__all__ = ["MessageDetail", "fmt_ms"]


def fmt_ms(ms: int | None) -> str:
    """Local ``YYYY-MM-DD HH:MM:SS.mmm``, or ``-`` for unknown/zero."""
    if not ms:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) + f".{ms % 1000:03d}"


class MessageDetail(VerticalScroll):
    """The detail pane of the messages and dead-letter views. The body shows as text
    when it is UTF-8, else as a hex dump; ``hex`` forces the dump."""

    DEFAULT_CSS = """
    MessageDetail {
        border: round $primary 40%;
        border-title-color: $foreground;
        border-title-style: bold;
        height: 1fr;
    }
    MessageDetail > #fields { height: auto; }
    MessageDetail > #body { height: auto; padding: 1 0 0 0; }
    """

    message: reactive[MessageExt | None] = reactive(None, always_update=True)
    """The message shown (``None``: a hint)."""
    hex: reactive[bool] = reactive(False)
    """Show the body as hex even when it is text."""

    def compose(self) -> ComposeResult:
        yield Static(id="fields")
        yield Static(id="body")

    def on_mount(self) -> None:
        self.border_title = "Message"
        self._render_message()

    def watch_message(self) -> None:
        self._render_message()

    def watch_hex(self) -> None:
        self._render_message()

    def _render_message(self) -> None:
        try:
            fields, body = self.query_one("#fields", Static), self.query_one("#body", Static)
        except NoMatches:
            return  # not composed yet: on_mount renders
        msg = self.message
        if msg is None:
            fields.update(Text("Select a message to see its properties and body.", style="dim"))
            body.update("")
            return
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        for label, value in (
            ("Msg ID", msg.msg_id),
            ("Unique key", msg.unique_key or "-"),
            ("Topic", msg.topic),
            ("Queue", f"{msg.queue_id} @ offset {msg.queue_offset}"),
            ("Tags", msg.tags or "-"),
            ("Keys", " ".join(msg.keys) or "-"),
            ("Born", f"{fmt_ms(msg.born_timestamp)} from {msg.born_host[0]}:{msg.born_host[1]}"),
            ("Stored", f"{fmt_ms(msg.store_timestamp)} at {msg.store_host[0]}:{msg.store_host[1]}"),
            ("Commit log offset", str(msg.commit_log_offset)),
            ("Reconsume times", str(msg.reconsume_times)),
            ("Body", f"{len(msg.body)} bytes (stored {msg.store_size})"),
        ):
            table.add_row(label, value)
        for key, value in sorted(msg.properties.items()):
            table.add_row(Text(key, style="cyan"), value)
        fields.update(table)
        text = None if self.hex else body_text(msg.body)
        if text is None:
            body.update(Text(hex_dump(msg.body), style="dim"))
            self.border_title = "Message (body as hex; h toggles)"
        else:
            body.update(Text(text))
            self.border_title = "Message (body as text; h toggles)"

"""The key reference (``?``)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

__all__ = ["HELP_TEXT", "HelpScreen"]

HELP_TEXT = """\
# mq tui

| Key | Where | What |
|---|---|---|
| `1`-`6`, `tab`, `shift+tab` | everywhere | views: cluster, topics, groups, delay, ... |
| `/` | tables | filter as you type (`enter` keeps it, `esc` clears it) |
| `r` | everywhere | refresh now |
| `?` | everywhere | this help |
| `q` | everywhere | quit |
| `s` | topics, groups | show or hide system, retry and DLQ topics / system groups |
| `d` | topics | delete the highlighted topic (type its name to confirm) |
| `x` | groups | skip the highlighted group's backlog: offsets to the end (type its name) |
| `enter` | messages | search (mode: `key`, `id` or `time` with `FROM..TO`, e.g. `-1h..now`) |
| `h` | messages, dead letters | body as hex / text |
| `enter` | dead letters | load the highlighted group's dead letters |
| `e` / `E` | dead letters | resend the highlighted / all to their topic (type the group) |

Refreshing pauses while a dialog is open. The top bar shows the name server, the time of
the last good poll and how long it took; a broker that stops answering is shown as down.
"""


class HelpScreen(ModalScreen[None]):
    """Keys of every view, as a Markdown table."""

    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    HelpScreen > VerticalScroll {
        width: 96;
        max-width: 95%;
        height: 80%;
        border: thick $primary;
        background: $surface;
    }
    """

    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("question_mark", "close", "Close", show=False),
        Binding("q", "close", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(HELP_TEXT)

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).border_title = "Help (esc closes)"

    def action_close(self) -> None:
        self.dismiss(None)

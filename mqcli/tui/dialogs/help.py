"""The key reference (``?``)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

from mqcli.tui.model import TREND_THRESHOLD, TREND_WINDOW

__all__ = ["HELP_TEXT", "HelpScreen"]

HELP_TEXT = f"""\
# mq tui

| Key | Where | What |
|---|---|---|
| `F1`-`F6`, `alt+1`-`alt+6` | everywhere but dialogs, typing too | views (see the tabs) |
| `1`-`6`, `tab`, `shift+tab` | outside text boxes | the same views |
| `tab`, `shift+tab` | in a text box | the next / previous field (then the table) |
| `esc` | in a text box | leave it (the digit keys switch views again) |
| `/` | tables | filter as you type (`enter` keeps it, `esc` clears it) |
| `r` | outside text boxes | refresh now |
| `?` | outside text boxes | this help |
| `q` | outside text boxes | quit |
| `ctrl+s` | everywhere | screenshot (SVG) into `$MQ_SCREENSHOT_DIR` or the current dir |
| `s` | topics, groups | show or hide system, retry and DLQ topics / system groups |
| `d` | topics | delete the highlighted topic (type its name to confirm) |
| `x` | groups | skip the highlighted group's backlog: offsets to the end (type its name) |
| `/` | messages | the lookup boxes (from the topic box: on to the query box) |
| `enter` | messages | search (mode: `key`, `id` or `time` with `FROM..TO`, e.g. `-1h..now`) |
| `h` | messages, dead letters | body as hex / text |
| `enter` | dead letters | load the highlighted group's dead letters |
| `e` / `E` | dead letters | resend the highlighted / all to their topic (type the group) |

One rule for keys: a text box (the messages view's lookup boxes, a filter, a dialog)
takes what you type, so there digits are text; `esc` leaves the box. The function keys
and `alt`+digit switch views from anywhere but a dialog; `ctrl+s` works everywhere.

Refreshing pauses while a dialog is open. The top bar shows the name server, the time of
the last good poll and how long it took; a broker that stops answering is shown as down.
When no name server answers, the bar says "name server unreachable, broker state unknown"
and the brokers' state is "unknown" (a broker outlives its name server), not down. Group
trends (↑ ↓ →) follow the lag over the last {TREND_WINDOW} polls; a change under
{TREND_THRESHOLD:.0%} of the lag is flat.
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

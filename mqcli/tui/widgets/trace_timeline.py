"""The trace timeline of the message shown in a :class:`MessageDetail` pane.

Follows the detail pane beside it: when its message changes, the message's trace is
read from the trace topic (as ``mq message trace``) in a worker and shown as the send,
then each consumer group's SubBefore/SubAfter with cost and status. The panel is shown
only for a message that has trace records, so views of untraced topics keep their room;
a lookup that fails (no trace topic on the cluster) hides it too, and never crashes.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from mqcli.tui.widgets.message_detail import MessageDetail, fmt_ms
from mqcore.client.admin import Admin
from mqcore.client.trace_view import MessageTrace, TraceEvent, query_message_trace
from mqcore.message import MessageExt

__all__ = ["TraceTimeline", "render_trace"]

NO_TRACE = (
    "No trace records. Producers and consumers write them with tracing on "
    "(mq produce --trace, enableMsgTrace) to brokers with traceTopicEnable=true."
)


def _row(ev: TraceEvent) -> tuple[RenderableType, ...]:
    timed = ev.type in ("Pub", "SubAfter")
    status = ev.outcome
    style = "green" if ev.success else "red"
    return (
        Text(ev.type, style="bold" if ev.type == "Pub" else ""),
        ev.group or "-",
        ev.client_host or "-",
        fmt_ms(ev.timestamp),
        f"{ev.cost_ms} ms" if timed else "-",
        Text(status, style=style if timed else ""),
    )


def render_trace(trace: MessageTrace) -> RenderableType:
    """The timeline as a grid: Pub rows, then each group's rows in time order."""
    if trace.empty:
        return Text(NO_TRACE, style="dim")
    table = Table(box=None, header_style="cyan", pad_edge=False, expand=False)
    for name in ("TYPE", "GROUP", "CLIENT HOST", "TIME", "COST", "STATUS"):
        table.add_column(name, no_wrap=True)
    for ev in trace.pubs:
        table.add_row(*_row(ev))
    for group in sorted(trace.consumers):
        for ev in trace.consumers[group]:
            table.add_row(*_row(ev))
    return table


class TraceTimeline(Static):
    """Shows the trace of the message in the screen's :class:`MessageDetail`.

    ``admin`` gives the connection to read the trace topic with (looked up when a
    message is shown, so a reconnected admin is used)."""

    DEFAULT_CSS = """
    TraceTimeline {
        border: round $primary 40%;
        border-title-color: $foreground;
        border-title-style: bold;
        height: auto;
        max-height: 12;
        overflow-y: auto;
    }
    """

    def __init__(
        self,
        admin: Callable[[], Admin],
        *,
        trace_topic: str | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self._admin = admin
        self.trace_topic = trace_topic
        self.trace: MessageTrace | None = None
        """The trace of the message shown (None until read, or when reading failed)."""
        self.error: str | None = None
        """Why the last trace could not be read."""

    def on_mount(self) -> None:
        self.display = False
        detail = self.screen.query(MessageDetail).first(MessageDetail)
        self.watch(detail, "message", self.show_message)

    def show_message(self, msg: MessageExt | None) -> None:
        self.trace = None
        self.error = None
        self.display = False
        if msg is not None:
            msg_id = msg.unique_key or msg.msg_id
            self.run_worker(self._load(msg_id), exclusive=True, group="trace")

    async def _load(self, msg_id: str) -> None:
        try:
            trace = await query_message_trace(self._admin(), msg_id, self.trace_topic)
        except Exception as exc:  # the panel stays hidden, the app never crashes
            self.error = f"trace of {msg_id}: {exc}"
            return
        self.trace = trace
        if trace.empty:
            return
        self.border_title = f"Trace of {msg_id}"
        self.update(render_trace(trace))
        self.display = True

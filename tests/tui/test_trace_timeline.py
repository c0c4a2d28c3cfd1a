"""The trace panel follows the message detail pane and shows the message's timeline."""

from __future__ import annotations

from typing import Any

from pilot_support import screen_lines, wait_until
from textual.app import App, ComposeResult

from mqcli.tui.widgets.message_detail import MessageDetail
from mqcli.tui.widgets.trace_timeline import NO_TRACE, TraceTimeline
from mqcore.message import MessageExt

C, F = "\x01", "\x02"


def rec(*fields: str) -> str:
    return C.join(fields) + F


class FakeAdmin:
    """Answers the trace topic query with one trace message (4.9.8 layout)."""

    def __init__(self, body: str, fail: bool = False) -> None:
        self.body = body
        self.fail = fail
        self.asked: list[tuple[str, str]] = []

    async def query_by_key(self, topic: str, key: str, **_: Any) -> list[MessageExt]:
        self.asked.append((topic, key))
        if self.fail:
            raise RuntimeError("no route info of RMQ_SYS_TRACE_TOPIC")
        return [MessageExt(topic=topic, body=self.body.encode(), born_host=("10.0.0.9", 5))]


class Detail(App[None]):
    def __init__(self, admin: FakeAdmin) -> None:
        super().__init__()
        self.admin = admin

    def compose(self) -> ComposeResult:
        yield MessageDetail(id="detail")
        yield TraceTimeline(lambda: self.admin, id="trace")  # type: ignore[arg-type,return-value]


BODY = (
    rec("Pub", "1700000000000", "R", "PG", "T", "M1", "null", "null", "h:1", "1", "4", "0", "O",
        "true")
    + rec("SubBefore", "1700000000100", "R", "CG", "Q", "M1", "0", "null")
    + rec("SubAfter", "Q", "M1", "7", "false", "null", "4", "1700000000107", "CG")
    + rec("Pub", "1700000000000", "R", "PG", "T", "OTHER", "null", "null", "h:1", "1", "4",
          "0", "O", "true")
)  # fmt: skip


def shown(app: Detail) -> str:
    return "\n".join(screen_lines(app))


async def test_the_panel_shows_the_highlighted_messages_trace() -> None:
    admin = FakeAdmin(BODY)
    app = Detail(admin)
    async with app.run_test(size=(120, 40)) as pilot:
        app.query_one(MessageDetail).message = MessageExt(topic="T", properties={"UNIQ_KEY": "M1"})
        timeline = app.query_one(TraceTimeline)
        await wait_until(pilot, lambda: "Trace of M1" in shown(app), what="the trace")
        assert admin.asked == [("RMQ_SYS_TRACE_TOPIC", "M1")]
        trace = timeline.trace
        assert trace is not None and [e.group for e in trace.pubs] == ["PG"]
        assert [(e.type, e.success) for e in trace.consumers["CG"]] == [
            ("SubBefore", True), ("SubAfter", False),
        ]  # fmt: skip
        text = shown(app)
        assert "Trace of M1" in text and "SubAfter" in text and "failed" in text
        assert "OTHER" not in text


async def test_the_panel_hides_for_untraced_messages_and_failed_lookups() -> None:
    admin = FakeAdmin(BODY)
    app = Detail(admin)
    async with app.run_test(size=(160, 40)) as pilot:
        detail, timeline = app.query_one(MessageDetail), app.query_one(TraceTimeline)
        assert not timeline.display
        detail.message = MessageExt(topic="T", properties={"UNIQ_KEY": "M1"})
        await wait_until(pilot, lambda: timeline.display, what="the panel")
        admin.body = ""
        detail.message = MessageExt(topic="T", properties={"UNIQ_KEY": "M2"})
        await wait_until(pilot, lambda: timeline.trace is not None, what="the empty trace")
        assert timeline.trace is not None and timeline.trace.empty
        assert not timeline.display and "Trace of" not in shown(app)
        admin.fail = True
        detail.message = MessageExt(topic="T", properties={"UNIQ_KEY": "M3"})
        await wait_until(pilot, lambda: timeline.error is not None, what="the error")
        assert "no route info" in (timeline.error or "") and not timeline.display
        assert NO_TRACE.startswith("No trace records")

"""The timer-message part of `mq broker status`: RocketMQ 5's timer wheel progress.

From GET_BROKER_RUNTIME_INFO's keys as RocketMQ 5 names them (``timerReadBehind``
seconds, ``timerOffsetBehind`` messages not yet in the wheel, ``timerCongestNum``
messages waiting in it, ``timerEnqueueTps``, ``timerDequeueTps``) and, from an mq
broker, where the wheel reads and writes. A 4.x broker has none of them: no section.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from mqcli.commands.cluster import as_float, as_int
from mqcli.render import fmt_ts
from mqcli.tables import make_table, print_table
from mqcore.store.timer.offline import TimerFilesState

__all__ = ["render_timer_files", "render_timers", "timer_doc"]


def timer_doc(rt: dict[str, str]) -> dict[str, Any] | None:
    """The ``timers`` object of ``--json`` (None when the broker has no timer wheel)."""
    if "timerCongestNum" not in rt:
        return None
    return {
        "waiting": as_int(rt.get("timerCongestNum")),
        "notEnqueued": as_int(rt.get("timerOffsetBehind")),
        "readBehindSeconds": as_int(rt.get("timerReadBehind")),
        "enqueueTps": as_float(rt.get("timerEnqueueTps")),
        "dequeueTps": as_float(rt.get("timerDequeueTps")),
        "readTimeMs": as_int(rt.get("timerCurrReadTimeMs")),
        "committedReadTimeMs": as_int(rt.get("timerCommitReadTimeMs")),
        "writeTimeMs": as_int(rt.get("timerCurrWriteTimeMs")),
        "queueOffset": as_int(rt.get("timerQueueOffset")),
        "precisionMs": as_int(rt.get("timerPrecisionMs")),
        "deleted": as_int(rt.get("timerDeletedNum")),
    }


def render_timers(doc: dict[str, Any] | None, fmt: str) -> None:
    """The "Timer messages" table (nothing for a broker without a wheel)."""
    if doc is None:
        return
    table = make_table("Timer messages (rmq_sys_wheel_timer)", "KEY", "VALUE")

    def show(value: object, unit: str = "") -> str:
        return "-" if value is None else f"{value}{unit}"

    read = doc["readTimeMs"]
    rows = [
        ("waiting in the wheel", show(doc["waiting"])),
        ("not yet in the wheel", show(doc["notEnqueued"])),
        ("read behind", show(doc["readBehindSeconds"], " s")),
        ("enqueue / dequeue TPS", f"{show(doc['enqueueTps'])} / {show(doc['dequeueTps'])}"),
        ("wheel reads at", fmt_ts(read) if read else "-"),
        ("precision", show(doc["precisionMs"], " ms")),
        ("cancelled", show(doc["deleted"])),
    ]
    for key, value in rows:
        table.add_row(key, escape(value))
    print_table(table, fmt, section=True)


def render_timer_files(state: TimerFilesState, fmt: str) -> None:
    """`mq store inspect`'s timer section: what the files say, offline."""
    table = make_table("Timer wheel (timerwheel, timerlog, config/timercheck)", "KEY", "VALUE")
    precision = state.precision_ms
    due = (
        f"{fmt_ts(state.next_due_ms)} .. {fmt_ts(state.last_due_ms)}"
        if state.next_due_ms is not None and state.last_due_ms is not None
        else "-"
    )
    rows = [
        ("waiting", f"{state.waiting} in {state.slots} slots"),
        ("due", due),
        ("read time (delivered before)", fmt_ts(state.last_read_time_ms) or "-"),
        ("timer queue offset", str(state.master_timer_queue_offset)),
        (
            "timer log",
            f"{state.timer_log_files} file(s), flushed to {state.last_timer_log_flush_pos}",
        ),
        ("precision", "-" if precision is None else f"{precision} ms (from the ticks)"),
    ]
    for key, value in rows:
        table.add_row(key, escape(value))
    print_table(table, fmt, section=True)

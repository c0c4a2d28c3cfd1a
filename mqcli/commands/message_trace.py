"""`mq message trace MSG_ID`, and the track per group that `mq message view` shows.

mqadmin ``queryMsgTraceById``: who sent it (producer group, client host, time, cost,
status), then per consumer group each consumption (SubBefore when the listener got it,
SubAfter with its cost and outcome). The records are those producers and consumers
write with tracing on (``Producer(..., trace=True)``, ``mq produce --trace``, the Java
client's ``enableMsgTrace``) to ``RMQ_SYS_TRACE_TOPIC``, which brokers create with
``traceTopicEnable=true``.

``mq message view`` adds mqadmin ``queryMsgById``'s message track: per consumer group of
the topic, CONSUMED / CONSUMED_BUT_FILTERED / NOT_CONSUME_YET / NOT_ONLINE / PULL /
UNKNOWN (:mod:`mqcore.client.trace_track`).
"""

from __future__ import annotations

import typer

from mqcli.connect import NamesrvOpt, resolve_namesrv, run_async
from mqcli.credentials import client_config
from mqcli.output import console, fail, print_json, print_json_line
from mqcli.render import broker_of, fmt_ts, message_json
from mqcli.tables import FormatOpt, make_table, note, print_table, resolve_format
from mqcore.client import Admin
from mqcore.client.errors import TopicRouteNotFoundError
from mqcore.client.trace_track import MessageTrack, TrackType, message_track_detail
from mqcore.client.trace_view import MessageTrace, TraceEvent, query_message_trace
from mqcore.errors import MQError
from mqcore.message import MessageExt
from mqcore.protocol.bodies.trace import RMQ_SYS_TRACE_TOPIC

COLUMNS = ("TYPE", "GROUP", "CLIENT-HOST", "TIME", "COST", "STATUS", "RETRY", "REQUEST-ID")


def _row(ev: TraceEvent) -> tuple[str, ...]:
    timed = ev.type in ("Pub", "SubAfter")
    return (
        ev.type,
        ev.group or "-",
        ev.client_host or "-",
        fmt_ts(ev.timestamp) if ev.timestamp else "-",
        f"{ev.cost_ms}ms" if timed else "-",
        ev.outcome,
        str(ev.retry_times) if ev.type.startswith("Sub") else "-",
        ev.request_id or "-",
    )


def timeline_rows(trace: MessageTrace) -> list[tuple[str, ...]]:
    """Pub rows, then each consumer group's rows in time order."""
    rows = [_row(ev) for ev in trace.pubs]
    for group in sorted(trace.consumers):
        rows += [_row(ev) for ev in trace.consumers[group]]
    return rows


async def _query(namesrv: str, msg_id: str, trace_topic: str) -> MessageTrace:
    async with Admin(namesrv, client_config=client_config()) as admin:
        try:
            return await query_message_trace(admin, msg_id, trace_topic)
        except TopicRouteNotFoundError:
            fail(
                f"no trace topic {trace_topic} on this cluster",
                hint="start brokers with traceTopicEnable=true (or pass --trace-topic)",
            )


def trace(
    msg_id: str = typer.Argument(
        ...,
        metavar="MSG_ID",
        help="The producer's msg id (UNIQ_KEY), or the offset msg id of the message.",
    ),
    trace_topic: str = typer.Option(
        RMQ_SYS_TRACE_TOPIC, "--trace-topic", help="The topic the traces were written to."
    ),
    fmt: str | None = FormatOpt,
    as_json: bool = typer.Option(False, "--json", "-j", help="Same as --format json."),
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Show a message's trace: its send, then each consumer group's consumption.

    Needs brokers started with traceTopicEnable=true and clients with tracing on
    (mq produce --trace, mq consume --trace, or the Java client's enableMsgTrace).

    Examples:
      mq produce -t orders --body hi --trace
      mq message trace 7F0000010A2B18B4AAC2...
      mq message trace 7F0000010A2B18B4AAC2... --json | jq '.consumers'
    """
    chosen = resolve_format(fmt, as_json)
    result = run_async(_query(resolve_namesrv(namesrv), msg_id.strip(), trace_topic))
    if chosen == "json":
        print_json(result.to_json())
        return
    if result.empty:
        fail(
            f"no trace of {msg_id} in {trace_topic}",
            hint="was it sent with tracing on (mq produce --trace)? traces arrive within ~1 s",
        )
    rows = timeline_rows(result)
    table = make_table(f"trace of {msg_id}", *COLUMNS, count=len(rows))
    for row in rows:
        table.add_row(*row)
    print_table(table, chosen)
    if result.unreadable:
        note(f"{result.unreadable} trace record(s) in {trace_topic} could not be read")


async def tracks_of(admin: Admin, msg: MessageExt) -> list[MessageTrack] | str:
    """The message's track per group, or why it could not be read (never raises)."""
    try:
        return await message_track_detail(admin, msg)
    except MQError as exc:
        return str(exc)


_TRACK_STYLE = {
    TrackType.CONSUMED: "green",
    TrackType.CONSUMED_BUT_FILTERED: "cyan",
    TrackType.NOT_CONSUME_YET: "yellow",
    TrackType.NOT_ONLINE: "red",
}


async def view_tracks(namesrv: str, msg: MessageExt) -> list[MessageTrack] | str:
    async with Admin(namesrv, client_config=client_config()) as admin:
        await admin.refresh_route(msg.topic)
        return await tracks_of(admin, msg)


def print_view_json(
    msg: MessageExt,
    brokers: dict[str, dict[int, str]],
    tracks: list[MessageTrack] | str | None,
    charset: str,
) -> None:
    """``mq message view --json``: the message object as ``mq query`` prints it, with
    ``messageTrack`` when asked (a list of tracks, or why they could not be read)."""
    obj = message_json(msg, charset=charset)
    obj["brokerName"] = broker_of(brokers, msg.store_host)
    if tracks is not None:
        obj["messageTrack"] = tracks if isinstance(tracks, str) else [t.to_json() for t in tracks]
    print_json_line(obj)


def print_tracks(msg: MessageExt, tracks: list[MessageTrack] | str, fmt: str) -> None:
    """The track table under ``mq message view``'s message."""
    if isinstance(tracks, str):
        note(f"message track unknown: {tracks}")
        return
    if not tracks:
        note(f"no consumer group subscribes to {msg.topic}")
        return
    table = make_table("message track", "GROUP", "TRACK", "DETAIL", count=len(tracks))
    for t in tracks:
        style = _TRACK_STYLE.get(t.track_type)
        kind = f"[{style}]{t.track_type.value}[/]" if style and console.is_terminal else None
        table.add_row(t.consumer_group, kind or t.track_type.value, t.exception_desc or "-")
    print_table(table, None if fmt == "detail" else fmt)


def add_trace_command(app: typer.Typer) -> None:
    app.command("trace")(trace)

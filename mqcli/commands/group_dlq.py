"""`mq group dlq GROUP`: the dead letters of a group (topic ``%DLQ%GROUP``) with where
they came from -- original topic and message id, reconsume times -- read with plain
pulls as the TOOLS_CONSUMER group, so no offset of the group changes.
`mq message resend ID` sends one back to its topic."""

from __future__ import annotations

import typer
from rich.markup import escape

from mqcli.commands.admin_util import (
    GroupArg,
    JsonOpt,
    admin_session,
    group_option,
    resolve_group,
)
from mqcli.connect import NamesrvOpt, run_async
from mqcli.output import console, fail, print_json_line
from mqcli.render import fmt_ts, message_json, preview
from mqcli.tables import FormatOpt, cell, make_table, print_table, resolve_format
from mqcore.client import Admin, TopicRouteNotFoundError
from mqcore.client.route import subscribe_queues
from mqcore.message import MessageExt
from mqcore.message.const import (
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_RETRY_TOPIC,
)


def _origin(msg: MessageExt) -> tuple[str | None, str | None]:
    props = msg.properties
    topic = props.get(PROPERTY_RETRY_TOPIC) or props.get(PROPERTY_REAL_TOPIC)
    return topic, props.get(PROPERTY_ORIGIN_MESSAGE_ID) or msg.unique_key


async def _read_dlq(admin: Admin, topic: str, limit: int) -> tuple[list[MessageExt], int]:
    """Up to ``limit`` dead letters, oldest queue offsets first, and how many there are."""
    route = await admin.topic_route(topic)
    await admin.refresh_route(topic)
    out: list[MessageExt] = []
    total = 0
    for mq in subscribe_queues(topic, route):
        lo, hi = await admin.min_offset(mq), await admin.max_offset(mq)
        total += max(0, hi - lo)
        offset = lo
        while offset < hi and len(out) < limit:
            result = await admin.read_queue(
                mq, offset, min(32, limit - len(out)), timeout=admin.timeout
            )
            if not result.messages or result.next_begin_offset <= offset:
                break
            out.extend(result.messages)
            offset = result.next_begin_offset
    return out[:limit], total


def dlq(
    group: str | None = GroupArg,
    group_opt: str | None = group_option(False),
    limit: int = typer.Option(64, "--max", "-m", min=1, help="Show at most this many."),
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Dead letters of a group (topic %DLQ%GROUP): original topic and message id,
    reconsume times, store time, tags, keys and a body preview (the whole body with
    -o wide or in a pipe). --json prints one message per line.

    Examples:
      mq group dlq billing
      mq group dlq billing -o wide --max 10
      mq group dlq billing --json | jq -r .originMsgId
    """
    fmt = resolve_format(fmt, as_json)
    as_json = fmt == "json"
    group = resolve_group(group, group_opt)
    topic = f"%DLQ%{group}"

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            try:
                msgs, total = await _read_dlq(admin, topic, limit)
            except TopicRouteNotFoundError:
                # no DLQ topic: fine for a known group (nothing died yet), not for a typo
                if group not in await admin.subscription_groups():
                    fail(f"no group named {group}", hint="`mq group list` shows the groups")
                msgs, total = [], 0
        if as_json:
            for m in msgs:
                origin_topic, origin_id = _origin(m)
                print_json_line(
                    {**message_json(m), "originTopic": origin_topic, "originMsgId": origin_id}
                )
            return
        if not total:
            console.print(f"no dead letters for group {escape(group)} ({escape(topic)} is empty)")
            return
        table = make_table(
            f"Dead letters of {escape(group)} · {total} in {escape(topic)}"
            + (f" · first {len(msgs)}" if len(msgs) < total else ""),
            "MSG-ID",
            "ORIGIN-TOPIC",
            "ORIGIN-MSG-ID",
            "RECONSUME",
            "STORED",
            "TAGS",
            "KEYS",
            "BODY",
            count=len(msgs),
            drop=("ORIGIN-MSG-ID", "KEYS", "TAGS", "RECONSUME", "STORED", "ORIGIN-TOPIC"),
        )
        for m in msgs:
            origin_topic, origin_id = _origin(m)
            table.add_row(
                m.msg_id,
                escape(cell(origin_topic)),
                cell(origin_id),
                str(m.reconsume_times),
                fmt_ts(m.store_timestamp),
                escape(cell(m.tags)),
                escape(cell(" ".join(m.keys))),
                escape(preview(m.body, 40 if fmt == "table" else 0)),
            )
        print_table(table, fmt)

    run_async(go())


def register(group_app: typer.Typer) -> None:
    group_app.command("dlq")(dlq)

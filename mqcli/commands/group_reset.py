"""`mq group reset`: move a group's offsets on a topic (mqadmin resetOffsetByTime and
skipAccumulatedMessage). The plan (old -> new per queue) is shown and confirmed before
anything changes; offline groups get the offsets written directly, online members are
told through the broker, and an offset reset refuses online members (they would
overwrite it from memory)."""

from __future__ import annotations

import asyncio

import typer
from rich.markup import escape

from mqcli.commands.admin_util import (
    GroupArg,
    JsonOpt,
    YesOpt,
    admin_session,
    confirm,
    group_option,
    resolve_group,
    topic_option,
)
from mqcli.connect import NamesrvOpt, run_async
from mqcli.output import err_console, fail, print_json
from mqcli.tables import cell, make_table, print_table
from mqcli.timespec import Kind, Position, TimespecError, parse_position
from mqcore.client import Admin, ResetRow
from mqcore.errors import MQBrokerError
from mqcore.protocol import ResponseCode

__all__ = ["register", "reset"]


def reset(
    group: str | None = GroupArg,
    group_opt: str | None = group_option(False),
    topic: str = topic_option(True, "Topic whose offsets to move."),
    to_offset: int | None = typer.Option(
        None, "--to-offset", help="This offset in every queue (clamped to min..max)."
    ),
    to_time: str | None = typer.Option(
        None,
        "--to-time",
        metavar="TIME",
        help="The first message stored at or after TIME, a time of consume --from "
        "(@-1h, @2026-01-02T10:00, @<epoch ms>, now; the @ may be left out).",
    ),
    to: str | None = typer.Option(
        None,
        "--to",
        metavar="POSITION",
        help="Where to move, in the grammar of consume --from: end|last (skip the backlog), "
        "begin|first (replay all), an offset (42), +N / -N (N after the first / before the "
        "end), a time @2026-01-02T10:00, @<epoch ms>, @-1h, or now.",
    ),
    yes: bool = YesOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Move a group's offsets on a topic: shows old -> new per queue, asks, then applies.

    Offline groups get the offsets written directly; with members online a reset by
    time or to end/begin goes through the broker, which tells the members.

    Examples:
      mq group reset billing -t Orders --to @-1h
      mq group reset billing -t Orders --to end --yes
      mq group reset billing -t Orders --to -100
    """
    group = resolve_group(group, group_opt)
    if sum(x is not None for x in (to_offset, to_time, to)) != 1:
        raise typer.BadParameter("give exactly one of --to, --to-offset, --to-time")
    time_ms: int | None = None
    relative: Position | None = None
    to_end = to_begin = False
    if to_time is not None:
        try:
            time_ms = _reset_time(to_time)
        except TimespecError as exc:
            raise typer.BadParameter(str(exc), param_hint="--to-time") from None
    if to is not None:
        try:
            position = parse_position(to)
        except TimespecError as exc:
            raise typer.BadParameter(str(exc), param_hint="--to") from None
        to_end, to_begin = position.kind is Kind.LAST, position.kind is Kind.FIRST
        if position.kind is Kind.OFFSET:
            to_offset = position.value
        elif position.kind is Kind.TIME:
            time_ms = position.value
        elif position.kind in (Kind.AFTER_FIRST, Kind.BEFORE_LAST):
            relative = position

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            await admin.topic_route(topic)  # a clear error for an unknown topic
            await check_group_known(admin, group, topic)
            if relative is not None:
                plan = await _plan_relative(admin, group, topic, relative)
            else:
                plan = await admin.plan_reset(
                    group,
                    topic,
                    to_offset=to_offset,
                    to_time_ms=time_ms,
                    to_end=to_end,
                    to_begin=to_begin,
                )
            if time_ms is not None:
                plan = await _at_or_after(admin, plan, time_ms)
            _print_plan(group, topic, plan, as_json)
            if all(r.old_offset == r.new_offset for r in plan):
                err_console.print("nothing to change")
                return
            if not yes and not confirm(f"Apply this reset to group {group}?"):
                fail("not applied", hint="add --yes to apply without asking")
            members = await _members(admin, group)
            if members and (to_offset is not None or relative is not None):
                fail(
                    f"group {group} has {members} member(s) online; they keep offsets in memory"
                    " and would overwrite a reset to an offset",
                    hint="stop them first, or reset with --to-time / --to end|begin",
                )
            if members:
                stamp = -1 if to_end else 0 if to_begin else time_ms
                assert stamp is not None
                # The broker resets only queues the group has offsets for: write the plan
                # first, then let the broker tell the members (RESET_CONSUMER_CLIENT_OFFSET).
                await admin.apply_reset(group, plan)
                result = await admin.reset_offset_by_time(group, topic, stamp)
                changed = len(result)
                how = f"through the broker; {members} member(s) told"
            else:
                await admin.apply_reset(group, plan)
                changed = len(plan)
                how = "written directly (no member online)"
        err_console.print(f"reset {changed} queue(s) of {group} on {topic}: {how}")

    run_async(go())


async def check_group_known(admin: Admin, group: str, topic: str) -> None:
    """End the command when no broker knows ``group``: no subscription group of that
    name and no offsets of it on ``topic`` (a reset would otherwise plan offsets for a
    group nobody runs, likely a typo, and say "nothing to change")."""
    if group in await admin.subscription_groups() or group in await admin.groups_of_topic(topic):
        return
    fail(
        f"no group named {group}: no broker has its subscription or offsets on {topic}",
        hint=f"`mq group list` shows the groups; `mq group create {group}` makes one",
    )


def _reset_time(text: str) -> int:
    """--to-time: a time in consume --from's grammar, its leading ``@`` optional."""
    spec = text.strip()
    if not spec.startswith("@") and spec.lower() != "now":
        spec = f"@{spec}"
    return parse_position(spec).time_ms()


async def _plan_relative(
    admin: Admin, group: str, topic: str, position: Position
) -> list[ResetRow]:
    """``+N`` / ``-N``: N after the first or before the end of each queue (mqadmin's
    skipAccumulatedMessage generalised), clamped to the queue."""
    firsts = await admin.plan_reset(group, topic, to_begin=True)
    ends = {r.mq: r.new_offset for r in await admin.plan_reset(group, topic, to_end=True)}
    return [
        ResetRow(r.mq, r.old_offset, position.clamp(r.new_offset, ends.get(r.mq, r.new_offset)))
        for r in firsts
    ]


async def _at_or_after(admin: Admin, plan: list[ResetRow], time_ms: int) -> list[ResetRow]:
    """SEARCH_OFFSET_BY_TIMESTAMP answers the *nearest* message (RocketMQ's semantics, and
    the last one for a later time); a reset wants the first stored at or after the time,
    as the broker's own reset by time does. One single-message pull per queue settles it."""

    async def fix(row: ResetRow) -> ResetRow:
        if row.new_offset >= await admin.max_offset(row.mq):
            return row
        result = await admin.read_queue(row.mq, row.new_offset, 1)
        if result.messages and result.messages[0].store_timestamp < time_ms:
            return ResetRow(row.mq, row.old_offset, row.new_offset + 1)
        return row

    await admin.refresh_route(plan[0].mq.topic) if plan else None
    return list(await asyncio.gather(*(fix(r) for r in plan)))


async def _members(admin: Admin, group: str) -> int:
    try:
        return len((await admin.consumer_connections(group)).connection_set)
    except MQBrokerError as exc:
        if exc.code == ResponseCode.CONSUMER_NOT_ONLINE:
            return 0
        raise


def _print_plan(group: str, topic: str, plan: list[ResetRow], as_json: bool) -> None:
    if as_json:
        print_json(
            {
                "group": group,
                "topic": topic,
                "queues": [
                    {
                        "broker": r.mq.broker_name,
                        "queueId": r.mq.queue_id,
                        "oldOffset": r.old_offset,
                        "newOffset": r.new_offset,
                    }
                    for r in plan
                ],
            }
        )
        return
    table = make_table(
        f"Reset of {escape(group)} on {escape(topic)}",
        "BROKER",
        "QUEUE",
        "OLD",
        "NEW",
        "CHANGE",
        count=len(plan),
    )
    for r in plan:
        old = r.old_offset if r.old_offset is not None and r.old_offset >= 0 else None
        change = "-" if old is None else f"{r.new_offset - old:+d}"
        table.add_row(
            escape(r.mq.broker_name),
            str(r.mq.queue_id),
            cell(old),
            str(r.new_offset),
            change if change != "+0" else "0",
        )
    print_table(table)


def register(group_app: typer.Typer) -> None:
    group_app.command("reset")(reset)

"""`mq group status GROUP [--client ID] [--stack]`: what the group's consumers say about
themselves (mqadmin consumerStatus).

Each member online is asked, through a broker it is connected to, for its
ConsumerRunningInfo (GET_CONSUMER_RUNNING_INFO): its settings, subscriptions, each queue
it holds (messages and MiB cached, the offset it will commit, the orderly lock, when it
last pulled and consumed), per topic its pull and consume rates and times, and with
``--stack`` its stacks (a Java client's jstack, a Python client's threads and tasks).
Without ``--client`` every member gets one summary row, and what mqadmin's analysis
flags is said below: members that subscribe differently, a queue whose cached messages
have not moved for a minute, an orderly queue whose lock is lost.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import typer
from rich.markup import escape

from mqcli.commands.admin_util import (
    GroupArg,
    JsonOpt,
    admin_session,
    group_option,
    online_connections,
    resolve_group,
)
from mqcli.connect import NamesrvOpt, run_async
from mqcli.output import console, fail, print_json
from mqcli.render import fmt_ts
from mqcli.tables import (
    FormatOpt,
    cell,
    fmt_age,
    make_table,
    note,
    print_table,
    resolve_format,
)
from mqcore.protocol.bodies import ConsumerConnection
from mqcore.protocol.bodies.running_info import (
    PROP_CONSUME_ORDERLY,
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
    ConsumerRunningInfo,
)

__all__ = ["problems", "register", "status"]

BLOCKED_MS = 60_000
"""A queue whose cached messages have not moved for this long is flagged (as mqadmin)."""


def _is_push(info: ConsumerRunningInfo) -> bool:
    return info.properties.get(PROP_CONSUME_TYPE) == "CONSUME_PASSIVELY"


def _orderly(info: ConsumerRunningInfo) -> bool:
    return info.properties.get(PROP_CONSUME_ORDERLY, "").lower() == "true"


def problems(client_id: str, info: ConsumerRunningInfo, now_ms: int) -> list[str]:
    """What mqadmin's analyzeProcessQueue says of one push consumer: orderly queues it
    cannot lock, concurrent queues whose cache has not been consumed for a minute."""
    if not _is_push(info):
        return []
    found = []
    for mq, pq in sorted(info.mq_table.items()):
        where = f"{mq.topic}/{mq.broker_name}/{mq.queue_id}"
        if _orderly(info):
            if not pq.locked:
                since = (
                    fmt_age(now_ms - pq.last_lock_timestamp) if pq.last_lock_timestamp else "ever"
                )
                found.append(f"{client_id}: {where} not locked (last lock {since} ago)")
            elif pq.dropped and pq.try_unlock_times > 0:
                found.append(
                    f"{client_id}: {where} unlocked {pq.try_unlock_times} times, still held"
                )
        else:
            idle = now_ms - pq.last_consume_timestamp
            if pq.cached_msg_count > 0 and idle > BLOCKED_MS:
                found.append(
                    f"{client_id}: {where} has {pq.cached_msg_count} cached messages and consumed"
                    f" nothing for {fmt_age(idle)}: is the listener blocked? (--stack shows it)"
                )
    return found


def subscriptions_agree(infos: dict[str, ConsumerRunningInfo]) -> bool:
    """Every member subscribes to the same topics with the same expressions."""
    seen = {
        tuple(sorted((s.topic, s.sub_string, s.expression_type) for s in i.subscription_set))
        for i in infos.values()
    }
    return len(seen) <= 1


def _member_doc(client_id: str, info: ConsumerRunningInfo, now_ms: int) -> dict[str, Any]:
    """A member's ConsumerRunningInfo JSON, its ``mqTable`` as a list ``queues`` (each
    queue's topic, brokerName and queueId beside its figures: what jq can select on)."""
    doc = info.to_json()
    del doc["mqTable"]
    queues = [{**mq.to_json(), **pq.to_json()} for mq, pq in sorted(info.mq_table.items())]
    found = problems(client_id, info, now_ms)
    return {"clientId": client_id, **doc, "queues": queues, "problems": found}


def status(
    group: str | None = GroupArg,
    group_opt: str | None = group_option(False),
    client: str | None = typer.Option(
        None, "--client", "-i", metavar="CLIENT_ID", help="Only this member, in detail."
    ),
    stack: bool = typer.Option(
        False, "--stack", "-s", help="Also the members' stacks (threads and tasks; jstack)."
    ),
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """What the group's consumers report about themselves (mqadmin consumerStatus).

    Without --client: one row per member online (queues held, messages cached, consume
    and pull rates, failures in the last hour, when it started), then what looks wrong:
    members subscribing differently, queues whose cached messages have not been consumed
    for a minute, orderly queues without their lock. With --client: that member's
    settings, subscriptions, every queue it holds (cached messages, the offset it will
    commit, lock, last pull and consume) and its figures per topic. --stack adds the
    stacks (a Java consumer's jstack; a Python one's threads and tasks). --json prints
    4.9.8's ConsumerRunningInfo of each member, its mqTable as a list "queues".

    Examples:
      mq group status billing
      mq group status billing --client 10.0.0.7@4711 --stack
      mq group status billing --json | jq '.members[].statusTable'
    """
    fmt = resolve_format(fmt, as_json)
    group = resolve_group(group, group_opt)

    async def go() -> tuple[ConsumerConnection, dict[str, ConsumerRunningInfo]]:
        async with admin_session(namesrv) as admin:
            conn = await online_connections(admin, group)
            members = sorted(c.client_id for c in conn.connection_set)
            if client is not None:
                if client not in members:
                    fail(
                        f"no member {client} in group {group}",
                        hint=f"members online: {', '.join(members)}",
                    )
                members = [client]
            infos = await asyncio.gather(
                *(admin.consumer_running_info(group, m, jstack=stack) for m in members)
            )
            return conn, dict(zip(members, infos, strict=True))

    conn, infos = run_async(go())
    now_ms = int(time.time() * 1000)
    if fmt == "json":
        print_json(
            {
                "group": group,
                "subscriptionsAgree": subscriptions_agree(infos),
                "members": [_member_doc(c, i, now_ms) for c, i in infos.items()],
            }
        )
        return
    if client is not None:
        _print_detail(client, infos[client], fmt)
    else:
        _print_members(group, conn, infos, fmt, now_ms)
    found = [p for c, i in infos.items() for p in problems(c, i, now_ms)]
    if len(infos) > 1 and not subscriptions_agree(infos):
        found.insert(0, f"the members of {group} subscribe differently: see --client")
    for line in found:
        console.print(f"[yellow]warning:[/] {escape(line)}", highlight=False)
    if stack:
        for c, info in infos.items():
            console.rule(f"stack of {escape(c)}")
            console.out(info.jstack or "(no stack in the answer)", highlight=False)


def _member_row(client_id: str, info: ConsumerRunningInfo, now_ms: int) -> list[str]:
    cached = sum(pq.cached_msg_count for pq in info.mq_table.values())
    rates = info.status_table.values()
    started = int(info.properties.get(PROP_CONSUMER_START_TIMESTAMP, "0") or 0)
    kind = "push" if _is_push(info) else "pull"
    return [
        escape(client_id),
        kind + (" orderly" if _orderly(info) else ""),
        str(len(info.mq_table)),
        str(cached),
        f"{sum(r.consume_ok_tps for r in rates):.1f}",
        f"{sum(r.consume_failed_tps for r in rates):.1f}",
        f"{max((r.consume_rt for r in rates), default=0.0):.1f}",
        f"{sum(r.pull_tps for r in rates):.1f}",
        str(sum(r.consume_failed_msgs for r in rates)),
        fmt_age(now_ms - started) if started else "-",
        escape(info.properties.get("PROP_CLIENT_VERSION", "-")),
    ]


def _print_members(
    group: str,
    conn: ConsumerConnection,
    infos: dict[str, ConsumerRunningInfo],
    fmt: str,
    now_ms: int,
) -> None:
    note(
        f"{escape(group)} · type {cell(conn.consume_type)} · model {cell(conn.message_model)}"
        f" · subscriptions {'agree' if subscriptions_agree(infos) else 'DIFFER'}"
    )
    table = make_table(
        f"Members of {escape(group)}",
        "CLIENT-ID",
        "TYPE",
        "QUEUES",
        "CACHED",
        "OK-TPS",
        "FAILED-TPS",
        "CONSUME-RT",
        "PULL-TPS",
        "FAILED-1H",
        "UP",
        "VERSION",
        count=len(infos),
        drop=("VERSION", "UP", "PULL-TPS", "CONSUME-RT", "FAILED-TPS", "FAILED-1H", "TYPE"),
    )
    for client_id, info in infos.items():
        table.add_row(*_member_row(client_id, info, now_ms))
    print_table(table, fmt)


def _print_detail(client_id: str, info: ConsumerRunningInfo, fmt: str) -> None:
    props = make_table(f"Consumer {escape(client_id)}", "KEY", "VALUE", drop=())
    for key, value in sorted(info.properties.items()):
        props.add_row(escape(key), escape(value) or "-")
    print_table(props, fmt, section=True)
    subs = make_table(
        "Subscriptions", "TOPIC", "EXPRESSION", "TYPE", count=len(info.subscription_set)
    )
    for s in sorted(info.subscription_set, key=lambda s: s.topic):
        subs.add_row(escape(s.topic), escape(s.sub_string), s.expression_type)
    print_table(subs, fmt, section=True)
    queues = make_table(
        "Queues held",
        "TOPIC",
        "BROKER",
        "QUEUE",
        "COMMIT-OFFSET",
        "CACHED",
        "CACHED-MIB",
        "MIN-CACHED",
        "MAX-CACHED",
        "LOCKED",
        "LAST-PULL",
        "LAST-CONSUME",
        count=len(info.mq_table),
        drop=("MIN-CACHED", "MAX-CACHED", "CACHED-MIB", "LAST-PULL", "LOCKED", "LAST-CONSUME"),
    )
    for mq, pq in sorted(info.mq_table.items()):
        queues.add_row(
            escape(mq.topic),
            escape(mq.broker_name),
            str(mq.queue_id),
            str(pq.commit_offset),
            str(pq.cached_msg_count),
            str(pq.cached_msg_size_in_mib),
            str(pq.cached_msg_min_offset) if pq.cached_msg_count else "-",
            str(pq.cached_msg_max_offset) if pq.cached_msg_count else "-",
            "yes" if pq.locked else "no",
            fmt_ts(pq.last_pull_timestamp),
            fmt_ts(pq.last_consume_timestamp),
        )
    print_table(queues, fmt, section=True)
    figures = make_table(
        "Rates (last minute; failures: last hour)",
        "TOPIC",
        "PULL-RT",
        "PULL-TPS",
        "CONSUME-RT",
        "OK-TPS",
        "FAILED-TPS",
        "FAILED-1H",
        count=len(info.status_table),
    )
    for topic, st in sorted(info.status_table.items()):
        figures.add_row(
            escape(topic),
            f"{st.pull_rt:.1f}",
            f"{st.pull_tps:.1f}",
            f"{st.consume_rt:.1f}",
            f"{st.consume_ok_tps:.1f}",
            f"{st.consume_failed_tps:.1f}",
            str(st.consume_failed_msgs),
        )
    print_table(figures, fmt, section=True)


def register(group_app: typer.Typer) -> None:
    group_app.command("status")(status)

"""`mq group list|lag|reset|clients|status|create|delete|dlq`: consumer groups as mqadmin's
consumerProgress, resetOffsetByTime / skipAccumulatedMessage, consumerConnection,
consumerStatus, updateSubGroup / deleteSubGroup see them, plus the group's dead letters.

Lag is shown in messages and as an age (now minus the store time of the first
unconsumed message), never negative (apache/rocketmq#6600); a reset shows old -> new per
queue and asks before it changes anything (apache/rocketmq-dashboard#3993, rpk seek).

``reset``, ``status``, ``dlq`` and ``clone-offsets`` live in :mod:`.group_reset`,
:mod:`.group_status`, :mod:`.group_dlq` and :mod:`.group_offsets`; :func:`register` adds
every command in the order ``mq group --help`` lists them.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from mqcli.commands import group_dlq, group_offsets, group_reset, group_status
from mqcli.commands.admin_util import (
    SYSTEM_GROUPS,
    GroupArg,
    JsonOpt,
    WatchOpt,
    YesOpt,
    admin_session,
    confirm,
    group_option,
    online_connections,
    resolve_group,
    topic_option,
    watch,
)
from mqcli.connect import NamesrvOpt, run_async
from mqcli.output import console, fail, print_json, print_json_line
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
from mqcore.client import Admin, QueueProgress
from mqcore.common.metadata import SubscriptionGroupConfig
from mqcore.errors import MQError
from mqcore.protocol.bodies import ConsumerConnection

group_app = typer.Typer(
    help="Consumer groups: lag, members and their status, offset resets, dead letters.",
    no_args_is_help=True,
)

ClusterOpt = typer.Option(
    None, "--cluster", "-c", help="Only the masters of this cluster (default: every cluster)."
)
LAG_CAVEAT = (
    "lag counts every message in a queue, also tags this group does not subscribe to "
    "(apache/rocketmq#3323)"
)


POP_NOTE = (
    "POP: CONSUMER-OFFSET is where the next pop starts; IN-FLIGHT was handed out and not "
    "acked, INVISIBLE is the part of it not yet due back (the rest returns at the next "
    "revive)"
)


def _is_system_group(name: str) -> bool:
    return name in SYSTEM_GROUPS or name.startswith("CID_RMQ_SYS_")


# -- list ------------------------------------------------------------------------------------


def list_groups(
    topic: str | None = topic_option(False, "Only groups that consume this topic."),
    show_all: bool = typer.Option(False, "--all", "-a", help="Also the system groups."),
    long: bool = typer.Option(
        False,
        "--long",
        "-l",
        help="Also members online, total lag and, for POP groups, messages in flight (two "
        "calls a group; always with -o wide).",
    ),
    cluster: str | None = ClusterOpt,
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """List the subscription groups the brokers know.

    Examples:
      mq group list
      mq group list -t Orders -o wide
      mq group list --all --json
    """
    fmt = resolve_format(fmt, as_json)
    as_json, long = fmt == "json", long or fmt == "wide"

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            configs = await admin.subscription_groups(cluster)
            names = [g for g in configs if show_all or not _is_system_group(g)]
            if topic is not None:
                consumers = await admin.groups_of_topic(topic)
                names = [g for g in names if g in consumers]
            extra: list[dict[str, Any]] = []
            if long:
                extra = list(await asyncio.gather(*(_group_summary(admin, g) for g in names)))
        rows = []
        for i, name in enumerate(names):
            c = configs[name]
            row: dict[str, Any] = {
                "group": name,
                "consumeEnable": c.consume_enable,
                "consumeBroadcastEnable": c.consume_broadcast_enable,
                "retryQueueNums": c.retry_queue_nums,
                "retryMaxTimes": c.retry_max_times,
                "brokerId": c.broker_id,
                "whichBrokerWhenConsumeSlowly": c.which_broker_when_consume_slowly,
            }
            if long:
                row.update(extra[i])
            rows.append(row)
        if as_json:
            print_json(rows)
            return
        cols = ["GROUP", "CONSUME", "BROADCAST", "RETRY-QUEUES", "RETRY-MAX"]
        popping = long and any(r["inFlight"] is not None for r in rows)
        if long:
            cols += ["MEMBERS", "TYPE", "MODEL", "LAG"] + (["IN-FLIGHT"] if popping else [])
        drop = ("RETRY-QUEUES", "RETRY-MAX", "BROADCAST", "MODEL", "TYPE", "CONSUME", "MEMBERS")
        table = make_table("Consumer groups", *cols, count=len(rows), drop=drop)
        for r in rows:
            values = [
                escape(r["group"]),
                "yes" if r["consumeEnable"] else "no",
                "yes" if r["consumeBroadcastEnable"] else "no",
                str(r["retryQueueNums"]),
                str(r["retryMaxTimes"]),
            ]
            if long:
                values += [
                    str(r["members"]),
                    cell(r["consumeType"]),
                    cell(r["messageModel"]),
                    cell(r["lag"]),
                ] + ([cell(r["inFlight"])] if popping else [])
            table.add_row(*values)
        print_table(table, fmt)
        if not show_all:
            note("system groups hidden: --all shows them")

    run_async(go())


async def _group_summary(admin: Admin, group: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "members": 0, "consumeType": None, "messageModel": None, "lag": None, "inFlight": None,
    }  # fmt: skip
    try:
        conn = await admin.consumer_connections(group)
        out.update(
            members=len(conn.connection_set),
            consumeType=conn.consume_type,
            messageModel=conn.message_model,
        )
    except MQError:
        pass
    try:
        rows = await admin.consume_progress(group)
    except MQError:
        return out
    out["lag"] = sum(r.lag for r in rows)
    out["inFlight"] = _popped_total(rows, "in_flight")
    return out


# -- lag -------------------------------------------------------------------------------------


def _popped_total(rows: list[QueueProgress], field: str) -> int | None:
    """The sum of a POP figure over the queues that report it; None when none does
    (no POP on them since their brokers started, or brokers that do not count)."""
    values = [getattr(r, field) for r in rows if getattr(r, field) is not None]
    return sum(values) if values else None


def _lag_json(group: str, rows: list[QueueProgress], now_ms: int) -> dict[str, Any]:
    """`mq group lag --json`. For POP queues ``consumerOffset`` is the pop offset, and
    ``inFlight`` / ``invisible`` say what is handed out and not acked, and how much of
    that is not yet due back (null on queues nobody popped from)."""
    return {
        "group": group,
        "timestamp": now_ms,
        "totalLag": sum(r.lag for r in rows),
        "maxAgeMs": max((r.age_ms(now_ms) for r in rows), default=0),
        "totalInFlight": _popped_total(rows, "in_flight"),
        "totalInvisible": _popped_total(rows, "invisible"),
        "queues": [
            {
                "topic": r.mq.topic,
                "broker": r.mq.broker_name,
                "queueId": r.mq.queue_id,
                "brokerOffset": r.broker_offset,
                "consumerOffset": r.consumer_offset,
                "lag": r.lag,
                "ageMs": r.age_ms(now_ms),
                "lastTimestamp": r.last_timestamp,
                "firstUnconsumedTimestamp": r.first_unconsumed_ts,
                "inFlight": r.in_flight,
                "invisible": r.invisible,
            }
            for r in rows
        ],
    }


def lag_table(group: str, rows: list[QueueProgress], doc: dict[str, Any], now_ms: int) -> Table:
    """`mq group lag`'s table: the queue (topic, broker, id) and its lag always show; the
    offsets, the age and the last consumed time give way on a narrow terminal. A group
    that consumes by POP also gets IN-FLIGHT and INVISIBLE (``-`` on queues nobody
    popped from), and the title says how many are in flight."""
    popping = doc.get("totalInFlight") is not None
    title = (
        f"Lag of {escape(group)} · {doc['totalLag']} messages behind · oldest "
        f"waiting {fmt_age(doc['maxAgeMs'])}"
    )
    columns = ["TOPIC", "BROKER", "QUEUE", "BROKER-OFFSET", "CONSUMER-OFFSET", "LAG"]
    if popping:
        title += f" · {doc['totalInFlight']} in flight"
        columns += ["IN-FLIGHT", "INVISIBLE"]
    table = make_table(
        title,
        *columns,
        "AGE",
        "LAST-CONSUMED",
        count=len(rows),
        drop=("LAST-CONSUMED", "BROKER-OFFSET", "CONSUMER-OFFSET", "AGE", "INVISIBLE"),
    )
    for r in rows:
        behind = r.lag > 0
        cells = [
            escape(r.mq.topic),
            escape(r.mq.broker_name),
            str(r.mq.queue_id),
            str(r.broker_offset),
            str(r.consumer_offset) if r.consumer_offset >= 0 else "-",
            f"[yellow]{r.lag}[/]" if behind else "0",
        ]
        if popping:
            cells += [cell(r.in_flight), cell(r.invisible)]
        cells += [fmt_age(r.age_ms(now_ms)) if behind else "-", fmt_ts(r.last_timestamp)]
        table.add_row(*cells)
    return table


def lag(
    group: str | None = GroupArg,
    group_opt: str | None = group_option(False),
    topic: str | None = topic_option(False, "Only this topic."),
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    interval: float | None = WatchOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """How far a group is behind, per queue: in messages and in age (how long the oldest
    unconsumed message has waited). For a group that consumes by POP (mq consume --pop,
    RocketMQ 5's simple consumers) also what is in flight: handed out and not acked, and
    how much of it is still invisible.

    Examples:
      mq group lag billing
      mq group lag billing -t Orders --watch 2
      mq group lag billing -o json | jq .totalLag
    """
    fmt = resolve_format(fmt, as_json)
    as_json = fmt == "json"
    group = resolve_group(group, group_opt)

    async def go() -> None:
        async with admin_session(namesrv) as admin:

            async def sample(_: int) -> None:
                rows = await admin.consume_progress(group, topic, with_age=True)
                if not rows and group not in await admin.subscription_groups():
                    fail(f"no group named {group}", hint="`mq group list` shows the groups")
                now_ms = int(time.time() * 1000)
                doc = _lag_json(group, rows, now_ms)
                if as_json:
                    print_json_line(doc) if interval is not None else print_json(doc)
                    return
                table = lag_table(group, rows, doc, now_ms)
                print_table(table, fmt)
                if doc["totalLag"]:
                    note(LAG_CAVEAT)
                if doc["totalInFlight"] is not None:
                    note(POP_NOTE)

            await watch(interval, sample, as_json=as_json)

    run_async(go())


# -- clients ---------------------------------------------------------------------------------


def clients(
    group: str | None = GroupArg,
    group_opt: str | None = group_option(False),
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """The group's members online (client id, address, language, version) and what
    they subscribe to.

    Examples:
      mq group clients billing
      mq group clients billing --json
    """
    fmt = resolve_format(fmt, as_json)
    group = resolve_group(group, group_opt)

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            conn = await online_connections(admin, group)
        _print_connections(group, conn, fmt)

    run_async(go())


def _print_connections(group: str, conn: ConsumerConnection, fmt: str) -> None:
    if fmt == "json":
        print_json({"group": group, **conn.to_json()})
        return
    note(
        f"{escape(group)} · type {cell(conn.consume_type)} · model "
        f"{cell(conn.message_model)} · from {cell(conn.consume_from_where)}"
    )
    table = make_table(
        "Members",
        "CLIENT-ID",
        "ADDRESS",
        "LANGUAGE",
        "VERSION",
        count=len(conn.connection_set),
        drop=("LANGUAGE", "VERSION"),
    )
    for c in sorted(conn.connection_set, key=lambda c: c.client_id):
        table.add_row(escape(c.client_id), c.client_addr, c.language, str(c.version))
    print_table(table, fmt)
    subs = make_table(
        "Subscriptions", "TOPIC", "EXPRESSION", "TYPE", count=len(conn.subscription_table)
    )
    for topic, sub in sorted(conn.subscription_table.items()):
        subs.add_row(escape(topic), escape(sub.sub_string), sub.expression_type)
    print_table(subs, fmt)


# -- create / delete -------------------------------------------------------------------------


def create(
    group: str | None = GroupArg,
    group_opt: str | None = group_option(False),
    retry_max: int = typer.Option(
        16, "--retry-max", help="Reconsume times before a message goes to the DLQ."
    ),
    retry_queues: int = typer.Option(1, "--retry-queues", help="Queues of %RETRY%GROUP."),
    broadcast: bool = typer.Option(
        True, "--broadcast/--no-broadcast", help="Allow broadcasting consumers."
    ),
    consume: bool = typer.Option(True, "--consume/--no-consume", help="Allow consuming at all."),
    broker_id: int = typer.Option(
        0,
        "--broker-id",
        min=0,
        help="Broker id to read from while keeping up (brokers with slaveReadEnable).",
    ),
    slow_broker_id: int = typer.Option(
        1,
        "--which-broker-when-consume-slowly",
        min=0,
        help="Broker id to read from when far behind (brokers with slaveReadEnable).",
    ),
    cluster: str | None = ClusterOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Create (or update) a subscription group on every master.

    --broker-id and --which-broker-when-consume-slowly are mqadmin updateSubGroup's -i
    and -w: a master with slaveReadEnable=true steers the group's pulls to them (see
    docs/ha.md).

    Examples:
      mq group create billing
      mq group create billing --retry-max 3 --no-broadcast
    """
    group = resolve_group(group, group_opt)
    config = SubscriptionGroupConfig(
        group,
        consume_enable=consume,
        consume_broadcast_enable=broadcast,
        retry_queue_nums=retry_queues,
        retry_max_times=retry_max,
        broker_id=broker_id,
        which_broker_when_consume_slowly=slow_broker_id,
    )

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            brokers = await admin.create_subscription_group(config, cluster=cluster)
        if not brokers:
            fail("no broker is registered with the name server", hint="is `mq broker` running?")
        console.print(
            f"group [bold]{escape(group)}[/] on {', '.join(brokers)}: retry max {retry_max}, "
            f"{retry_queues} retry queue(s), broadcast {'on' if broadcast else 'off'}"
        )

    run_async(go())


def delete(
    group: str | None = GroupArg,
    group_opt: str | None = group_option(False),
    keep_offsets: bool = typer.Option(False, "--keep-offsets", help="Keep its offsets."),
    cluster: str | None = ClusterOpt,
    yes: bool = YesOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Delete a subscription group (and its offsets) on every master.

    Examples:
      mq group delete billing
      mq group delete billing --keep-offsets --yes
    """
    group = resolve_group(group, group_opt)

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            if group not in await admin.subscription_groups(cluster):
                fail(f"no group named {group}", hint="`mq group list` shows the groups")
            if not yes and not confirm(f"Delete group {group} and its offsets?"):
                fail("not deleted")
            await admin.delete_subscription_group(
                group, cluster=cluster, remove_offset=not keep_offsets
            )
        console.print(f"deleted group [bold]{escape(group)}[/]")

    run_async(go())


def register(app: typer.Typer) -> None:
    group_app.command("list")(list_groups)
    group_app.command("lag")(lag)
    group_reset.register(group_app)
    group_app.command("clients")(clients)
    group_status.register(group_app)
    group_app.command("create")(create)
    group_app.command("delete")(delete)
    group_dlq.register(group_app)
    group_offsets.register(group_app)
    app.add_typer(group_app, name="group")

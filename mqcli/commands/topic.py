"""`mq topic create|update|delete|list|route|status`: mqadmin's updateTopic, deleteTopic,
topicList, topicRoute and topicStatus, with tables a person can read (a route as a table
per broker, apache/rocketmq#2698) and ``--json`` for scripts."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import typer
from rich.markup import escape

from mqcli.commands.admin_util import (
    JsonOpt,
    WatchOpt,
    YesOpt,
    admin_session,
    complete_topic,
    confirm,
    topic_kind,
    topic_option,
    watch,
)
from mqcli.connect import NamesrvOpt, run_async
from mqcli.output import console, fail, print_json, print_json_line
from mqcli.render import fmt_ts
from mqcli.tables import (
    FormatOpt,
    cell,
    fmt_perm,
    make_table,
    note,
    parse_perm,
    print_table,
    resolve_format,
    rows_table,
)
from mqcore.client import Admin, QueueStatus, TopicRouteNotFoundError
from mqcore.protocol.bodies import TopicRouteData

topic_app = typer.Typer(
    help="Create, change, delete and look at topics (queues, routes, depth).",
    no_args_is_help=True,
)

ClusterOpt = typer.Option(
    None, "--cluster", "-c", help="Only the masters of this cluster (default: every cluster)."
)
TopicArg = typer.Argument(
    None, metavar="TOPIC", help="Topic (or -t).", autocompletion=complete_topic, show_default=False
)
TopicsArg = typer.Argument(
    None,
    metavar="TOPIC...",
    help="Topics (or -t for one).",
    autocompletion=complete_topic,
    show_default=False,
)


def resolve_topic(positional: str | None, option: str | None) -> str:
    """The topic given as TOPIC or as -t (as `mq group` takes its group)."""
    if positional and option and positional != option:
        raise typer.BadParameter(f"two topics given: {positional!r} and -t {option!r}")
    topic = positional or option
    if not topic:
        raise typer.BadParameter("give the topic as TOPIC or -t TOPIC")
    return topic


def resolve_topics(positional: list[str], option: str | None) -> list[str]:
    """The topics given as TOPIC... and/or -t, each once, in the order given."""
    topics = list(dict.fromkeys([*positional, *([option] if option else [])]))
    if not topics:
        raise typer.BadParameter("give the topic as TOPIC or -t TOPIC")
    return topics


def _perm(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return parse_perm(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--perm") from None


def _check_queues(*values: int | None) -> None:
    for v in values:
        if v is not None and not 1 <= v <= 1024:
            raise typer.BadParameter("queue counts must be between 1 and 1024")


async def _route_or_none(admin: Admin, topic: str) -> TopicRouteData | None:
    try:
        return await admin.topic_route(topic)
    except TopicRouteNotFoundError:
        return None


async def _wait_for_route(
    admin: Admin, topic: str, done: Any, timeout: float = 5.0
) -> TopicRouteData | None:
    """Brokers re-register after a change: poll the name server until ``done(route)``."""
    deadline = time.monotonic() + timeout
    route = None
    while time.monotonic() < deadline:
        route = await _route_or_none(admin, topic)
        if done(route):
            return route
        await asyncio.sleep(0.1)
    return route


def _route_rows(route: TopicRouteData) -> list[dict[str, Any]]:
    brokers = {b.broker_name: b for b in route.broker_datas}
    rows = []
    for q in sorted(route.queue_datas, key=lambda q: q.broker_name):
        b = brokers.get(q.broker_name)
        addrs = b.broker_addrs if b else {}
        rows.append(
            {
                "broker": q.broker_name,
                "cluster": b.cluster if b else None,
                "master": addrs.get(0),
                "slaves": [a for i, a in sorted(addrs.items()) if i != 0],
                "readQueueNums": q.read_queue_nums,
                "writeQueueNums": q.write_queue_nums,
                "perm": q.perm,
                "permText": fmt_perm(q.perm),
            }
        )
    return rows


def _print_route(topic: str, route: TopicRouteData, fmt: str = "table") -> None:
    table = rows_table(
        f"Route of {escape(topic)}",
        {
            "BROKER": lambda r: escape(r["broker"]),
            "CLUSTER": lambda r: cell(r["cluster"]),
            "ADDRESS": lambda r: cell(r["master"]),
            "SLAVES": lambda r: cell(", ".join(r["slaves"])),
            "READ-QUEUES": lambda r: str(r["readQueueNums"]),
            "WRITE-QUEUES": lambda r: str(r["writeQueueNums"]),
            "PERM": lambda r: str(r["permText"]),
        },
        _route_rows(route),
        drop=("CLUSTER", "PERM", "WRITE-QUEUES", "READ-QUEUES", "SLAVES"),
    )
    print_table(table, fmt)
    if route.order_topic_conf:
        console.print(f"order conf: {escape(route.order_topic_conf)}")


# -- create / update ---------------------------------------------------------------------


@topic_app.command("create")
def create(
    topics: list[str] | None = TopicsArg,
    topic_opt: str | None = topic_option(False, "Topic to create."),
    queues: int = typer.Option(8, "--queues", "-q", help="Read and write queues per broker."),
    read_queues: int | None = typer.Option(None, "--read-queues", "-r", help="Read queues."),
    write_queues: int | None = typer.Option(None, "--write-queues", "-w", help="Write queues."),
    perm: str = typer.Option("RW", "--perm", "-p", help="R, W or RW (or 4, 2, 6)."),
    order: bool = typer.Option(False, "--order", help="Mark as an ordered topic."),
    cluster: str | None = ClusterOpt,
    broker: list[str] = typer.Option([], "--broker", "-b", help="Only these brokers (repeat)."),
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Create topics on every master (of --cluster, or only --broker ones).

    Several topics go in one request per broker (RocketMQ 5's
    UPDATE_AND_CREATE_TOPIC_LIST), one by one to a broker that lacks it (RocketMQ 4.x).

    Examples:
      mq topic create Orders
      mq topic create Orders -q 16 --perm RW -c DefaultCluster
      mq topic create Payments --order --broker broker-a
      mq topic create Orders Payments Refunds -q 4
    """
    names = resolve_topics(topics or [], topic_opt)
    _check_queues(queues, read_queues, write_queues)
    read, write, perm_value = read_queues or queues, write_queues or queues, _perm(perm) or 6
    if len(names) > 1:
        run_async(_create_many(namesrv, names, read, write, perm_value, order, cluster, broker))
        return
    run_async(
        _create(namesrv, names[0], read, write, perm_value, order, cluster, broker, update=False)
    )


@topic_app.command("update")
def update(
    topic_arg: str | None = TopicArg,
    topic_opt: str | None = topic_option(False, "Topic to change."),
    queues: int | None = typer.Option(None, "--queues", "-q", help="Read and write queues."),
    read_queues: int | None = typer.Option(None, "--read-queues", "-r", help="Read queues."),
    write_queues: int | None = typer.Option(None, "--write-queues", "-w", help="Write queues."),
    perm: str | None = typer.Option(None, "--perm", "-p", help="R, W or RW (or 4, 2, 6)."),
    order: bool | None = typer.Option(None, "--order/--no-order", help="Ordered topic or not."),
    cluster: str | None = ClusterOpt,
    broker: list[str] = typer.Option([], "--broker", "-b", help="Only these brokers (repeat)."),
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Change an existing topic; what is not given keeps its current value.

    Examples:
      mq topic update Orders -q 16
      mq topic update Orders --perm R
    """
    topic = resolve_topic(topic_arg, topic_opt)
    _check_queues(queues, read_queues, write_queues)
    if all(v is None for v in (queues, read_queues, write_queues, perm, order)):
        fail("nothing to change", hint="give --queues, --read-queues, --write-queues or --perm")
    perm_value = _perm(perm)

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            route = await _route_or_none(admin, topic)
            if route is None or not route.queue_datas:
                fail(
                    f"topic {topic} does not exist",
                    hint=f"create it with `mq topic create -t {topic}`",
                )
            current = route.queue_datas[0]
        await _create(
            namesrv,
            topic,
            read_queues or queues or current.read_queue_nums,
            write_queues or queues or current.write_queue_nums,
            perm_value if perm_value is not None else current.perm,
            bool(order) if order is not None else bool(route.order_topic_conf),
            cluster,
            broker,
            update=True,
        )

    run_async(go())


async def _create(
    namesrv: str | None,
    topic: str,
    read: int,
    write: int,
    perm: int,
    order: bool,
    cluster: str | None,
    brokers: list[str],
    *,
    update: bool,
) -> None:
    async with admin_session(namesrv) as admin:
        names = await admin.create_topic(
            topic,
            read_queue_nums=read,
            write_queue_nums=write,
            perm=perm,
            order=order,
            cluster=cluster,
            brokers=brokers or None,
        )

        def applied(route: TopicRouteData | None) -> bool:
            if route is None:
                return False
            seen = {
                q.broker_name: (q.read_queue_nums, q.write_queue_nums, q.perm)
                for q in route.queue_datas
            }
            return all(seen.get(n) == (read, write, perm) for n in names)

        route = await _wait_for_route(admin, topic, applied)
    verb = "updated" if update else "created"
    console.print(
        f"{verb} topic [bold]{escape(topic)}[/] on {', '.join(names)}: "
        f"{read} read / {write} write queues, perm {fmt_perm(perm)}"
    )
    if route is None or not applied(route):
        console.print("[yellow]the name server does not show it yet; check `mq topic route`[/]")


async def _create_many(
    namesrv: str | None,
    topics: list[str],
    read: int,
    write: int,
    perm: int,
    order: bool,
    cluster: str | None,
    brokers: list[str],
) -> None:
    async with admin_session(namesrv) as admin:
        names = await admin.create_topics(
            topics,
            read_queue_nums=read,
            write_queue_nums=write,
            perm=perm,
            order=order,
            cluster=cluster,
            brokers=brokers or None,
        )
        missing = await _wait_for_topics(admin, set(topics))
    console.print(
        f"created {len(topics)} topics on {', '.join(names)}: "
        f"{read} read / {write} write queues, perm {fmt_perm(perm)}"
    )
    if missing:
        shown = ", ".join(sorted(missing)[:5]) + (", ..." if len(missing) > 5 else "")
        console.print(
            f"[yellow]the name server does not list {len(missing)} of them yet ({escape(shown)});"
            " check `mq topic list`[/]"
        )


async def _wait_for_topics(admin: Admin, topics: set[str], timeout: float = 10.0) -> set[str]:
    """Poll the name server's topic list until it holds ``topics``; those it lacks."""
    deadline = time.monotonic() + timeout
    while True:
        missing = topics - await admin.topic_list()
        if not missing or time.monotonic() >= deadline:
            return missing
        await asyncio.sleep(0.1)


# -- delete ------------------------------------------------------------------------------


@topic_app.command("delete")
def delete(
    topic_arg: str | None = TopicArg,
    topic_opt: str | None = topic_option(False, "Topic to delete."),
    cluster: str | None = ClusterOpt,
    yes: bool = YesOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Delete a topic from the brokers (with its consumer offsets) and the name servers.

    Examples:
      mq topic delete Orders
      mq topic delete Orders --yes
    """
    topic = resolve_topic(topic_arg, topic_opt)

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            if await _route_or_none(admin, topic) is None:
                fail(f"topic {topic} does not exist", hint="`mq topic list` shows the topics")
            if not yes and not confirm(f"Delete topic {topic} and its consumer offsets?"):
                fail("not deleted", code=1)
            await admin.delete_topic(topic, cluster=cluster)
        console.print(f"deleted topic [bold]{escape(topic)}[/]")

    run_async(go())


# -- list ----------------------------------------------------------------------------------


@topic_app.command("list")
def list_topics(
    show_all: bool = typer.Option(False, "--all", "-a", help="Also retry, DLQ and system topics."),
    long: bool = typer.Option(
        False, "--long", "-l", help="Also queues and perms (always with -o wide)."
    ),
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """List the topics the name servers know.

    Examples:
      mq topic list
      mq topic list --all -o wide
      mq topic list --json | jq -r '.[].topic'
    """
    fmt = resolve_format(fmt, as_json)
    as_json, long = fmt == "json", long or fmt == "wide"

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            names = sorted(await admin.topic_list())
            info = await admin.cluster_info()
            # Name servers list cluster and broker names as topics too (RocketMQ does).
            hidden = frozenset(info.cluster_addr_table) | frozenset(info.broker_addr_table)
            topics = [t for t in names if show_all or topic_kind(t, hidden) == "normal"]
            routes: list[TopicRouteData | None] = []
            if long:
                routes = list(await asyncio.gather(*(_route_or_none(admin, t) for t in topics)))
        rows: list[dict[str, Any]] = []
        for i, t in enumerate(topics):
            row: dict[str, Any] = {"topic": t, "kind": topic_kind(t, hidden)}
            if long:
                route = routes[i]
                qd = route.queue_datas if route else []
                row["brokers"] = sorted(q.broker_name for q in qd)
                row["readQueueNums"] = sum(q.read_queue_nums for q in qd)
                row["writeQueueNums"] = sum(q.write_queue_nums for q in qd)
                row["perm"] = fmt_perm(qd[0].perm) if qd else None
            rows.append(row)
        if as_json:
            print_json(rows)
            return
        cols = ["TOPIC", "KIND"] + (["BROKERS", "READ", "WRITE", "PERM"] if long else [])
        drop = ("PERM", "WRITE-QUEUES", "READ-QUEUES", "KIND", "BROKERS")
        table = make_table("Topics", *cols, count=len(rows), drop=drop)
        for r in rows:
            values = [escape(r["topic"]), r["kind"]]
            if long:
                values += [
                    cell(", ".join(r["brokers"])),
                    str(r["readQueueNums"]),
                    str(r["writeQueueNums"]),
                    cell(r["perm"]),
                ]
            table.add_row(*values)
        print_table(table, fmt)
        if not show_all:
            note("retry, DLQ and system topics hidden: --all shows them")

    run_async(go())


# -- route -----------------------------------------------------------------------------------


@topic_app.command("route")
def route(
    topic_arg: str | None = TopicArg,
    topic_opt: str | None = topic_option(False),
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Show where a topic lives: brokers, addresses, queue counts and permissions.

    Examples:
      mq topic route Orders
      mq topic route Orders --json
    """
    topic = resolve_topic(topic_arg, topic_opt)
    fmt = resolve_format(fmt, as_json)
    as_json = fmt == "json"

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            data = await admin.topic_route(topic)
        if as_json:
            print_json({"topic": topic, "brokers": _route_rows(data), "route": data.to_json()})
        else:
            _print_route(topic, data, fmt)

    run_async(go())


# -- status ----------------------------------------------------------------------------------


def _status_json(topic: str, rows: list[QueueStatus]) -> dict[str, Any]:
    return {
        "topic": topic,
        "total": sum(r.count for r in rows),
        "queues": [
            {
                "broker": r.mq.broker_name,
                "queueId": r.mq.queue_id,
                "minOffset": r.min_offset,
                "maxOffset": r.max_offset,
                "messages": r.count,
                "lastUpdateTimestamp": r.last_update_timestamp,
            }
            for r in rows
        ],
    }


@topic_app.command("status")
def status(
    topic_arg: str | None = TopicArg,
    topic_opt: str | None = topic_option(False),
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    interval: float | None = WatchOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Per queue: min and max offset, messages held, last store time.

    Examples:
      mq topic status Orders
      mq topic status Orders --watch 1
      mq topic status -t Orders -o json | jq .total
    """
    topic = resolve_topic(topic_arg, topic_opt)
    fmt = resolve_format(fmt, as_json)
    as_json = fmt == "json"

    async def go() -> None:
        async with admin_session(namesrv) as admin:

            async def sample(_: int) -> None:
                rows = await admin.topic_status(topic)
                if as_json:
                    doc = _status_json(topic, rows)
                    print_json_line(doc) if interval is not None else print_json(doc)
                    return
                total = sum(r.count for r in rows)
                table = make_table(
                    f"Status of {escape(topic)} · {total} messages held",
                    "BROKER",
                    "QUEUE",
                    "MIN-OFFSET",
                    "MAX-OFFSET",
                    "MESSAGES",
                    "LAST-UPDATED",
                    count=len(rows),
                    drop=("LAST-UPDATED", "MIN-OFFSET", "MAX-OFFSET"),
                )
                for r in rows:
                    table.add_row(
                        escape(r.mq.broker_name),
                        str(r.mq.queue_id),
                        str(r.min_offset),
                        str(r.max_offset),
                        str(r.count),
                        fmt_ts(r.last_update_timestamp),
                    )
                print_table(table, fmt)

            await watch(interval, sample, as_json=as_json)

    run_async(go())


def register(app: typer.Typer) -> None:
    app.add_typer(topic_app, name="topic")

"""`mq broker consume-stats|query-cq|producers|stats|clean-expired-cq|clean-unused-topic|
delete-expired-commitlog`: what mqadmin's brokerConsumeStats, queryCq, producer, statsAll,
cleanExpiredCQ, cleanUnusedTopic and deleteExpiredCommitLog do, against running brokers.

A command works on one broker (``BROKER_ADDR`` or ``-b NAME``), on the masters of one
cluster (``-c``), or on every master the name server knows.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from mqcli.commands.admin_util import (
    BrokerNameOpt,
    JsonOpt,
    MastersOfClusterOpt,
    YesOpt,
    admin_session,
    broker_targets,
    confirm,
    topic_option,
)
from mqcli.connect import NamesrvOpt, run_async
from mqcli.output import console, fail, print_json
from mqcli.render import fmt_ts
from mqcli.tables import FormatOpt, make_table, print_table, resolve_format, rows_table
from mqcore.errors import MQBrokerError
from mqcore.protocol.bodies.store_admin import ConsumeStatsList

if TYPE_CHECKING:
    from mqcore.client import Admin

__all__ = ["register"]

BrokerAddrArg = typer.Argument(
    None, metavar="BROKER_ADDR", help="host:port of one broker (default: every master)."
)
NameOpt = BrokerNameOpt
ClusterOpt = MastersOfClusterOpt


async def _topic_masters(admin: Admin, topic: str, name: str | None) -> dict[str, str]:
    """Broker name -> master address of the brokers in ``topic``'s route (only ``name``
    when given); one error line when there is none."""
    route = await admin.topic_route(topic)
    masters = {
        b.broker_name: b.master_addr() or ""
        for b in route.broker_datas
        if b.master_addr() and (name is None or b.broker_name == name)
    }
    if not masters:
        fail(f"topic {topic} has no master named {name}", hint="see `mq topic route`")
    return masters


# -- consume-stats ----------------------------------------------------------------------------


def _stats_rows(stats: ConsumeStatsList, min_lag: int) -> list[dict[str, Any]]:
    rows = []
    for entry in stats.consume_stats_list:
        for group, per_topic in entry.items():
            for consume in per_topic:
                for mq, w in sorted(consume.offset_table.items()):
                    lag = w.broker_offset - w.consumer_offset
                    if lag < min_lag:
                        continue
                    rows.append(
                        {
                            "topic": mq.topic,
                            "group": group,
                            "brokerName": mq.broker_name,
                            "queueId": mq.queue_id,
                            "brokerOffset": w.broker_offset,
                            "consumerOffset": w.consumer_offset,
                            "lag": lag,
                            "lastTimestamp": w.last_timestamp,
                        }
                    )
    return rows


def consume_stats(
    broker_addr: str | None = BrokerAddrArg,
    name: str | None = NameOpt,
    cluster: str | None = ClusterOpt,
    order: bool = typer.Option(False, "--order", help="Only ordered topics (mqadmin -o)."),
    min_lag: int = typer.Option(
        0, "--min-lag", "-l", min=0, help="Only queues at least this far behind (mqadmin -l)."
    ),
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Every group's progress on every queue of a broker (mqadmin brokerConsumeStats):
    broker and consumer offset, lag and when the last consumed message was stored.

    Examples:
      mq broker consume-stats
      mq broker consume-stats -b broker-a --min-lag 100 -o wide
    """
    fmt = resolve_format(fmt, as_json)

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            targets = await broker_targets(admin, broker_addr, name, cluster)
            results = await asyncio.gather(
                *(admin.broker_consume_stats(a, order_only=order) for a in targets.values())
            )
        docs: list[dict[str, Any]] = [
            {
                "brokerAddr": s.broker_addr,
                "totalDiff": s.total_diff,
                "queues": _stats_rows(s, min_lag),
            }
            for s in results
        ]
        if fmt == "json":
            print_json(docs)
            return
        for doc in docs:
            table = rows_table(
                f"Consume stats of {escape(doc['brokerAddr'])} · {doc['totalDiff']} behind in all",
                {
                    "TOPIC": lambda r: escape(r["topic"]),
                    "GROUP": lambda r: escape(r["group"]),
                    "BROKER": lambda r: escape(r["brokerName"]),
                    "QUEUE": lambda r: str(r["queueId"]),
                    "BROKER-OFFSET": lambda r: str(r["brokerOffset"]),
                    "CONSUMER-OFFSET": lambda r: str(r["consumerOffset"]),
                    "LAG": lambda r: f"[yellow]{r['lag']}[/]" if r["lag"] > 0 else "0",
                    "LAST-CONSUMED": lambda r: (
                        fmt_ts(r["lastTimestamp"]) if r["lastTimestamp"] else "-"
                    ),
                },
                doc["queues"],
                drop=("LAST-CONSUMED", "BROKER-OFFSET", "CONSUMER-OFFSET", "BROKER"),
            )
            print_table(table, fmt)

    run_async(go())


# -- query-cq ---------------------------------------------------------------------------------


def query_cq(
    topic: str = topic_option(),
    queue_id: int = typer.Option(..., "--queue", "-q", min=0, help="Queue id."),
    index: int = typer.Option(0, "--index", "-i", min=0, help="First unit (queue offset)."),
    count: int = typer.Option(10, "--count", "-C", min=1, help="How many units."),
    name: str | None = typer.Option(
        None, "--name", "-b", help="Broker name (default: every master of the topic's route)."
    ),
    group: str | None = typer.Option(
        None, "--group", "-g", help="Also show this group's subscription and filter data."
    ),
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Raw consume-queue units of a queue (mqadmin queryCq): the commit-log offset, size
    and tag code each queue offset points at, and the queue's min/max offset.

    Examples:
      mq broker query-cq -t Orders -q 0 -i 0 -C 10
      mq broker query-cq -t Orders -q 1 -o json
    """
    fmt = resolve_format(fmt, as_json)

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            masters = await _topic_masters(admin, topic, name)
            answers = {
                n: await admin.query_consume_queue(a, topic, queue_id, index, count, group=group)
                for n, a in sorted(masters.items())
            }
        docs = []
        for broker_name, (body, remark) in answers.items():
            doc: dict[str, Any] = {"brokerName": broker_name, "topic": topic, "queueId": queue_id}
            if body is None:
                doc["remark"] = remark
            else:
                doc.update(body.to_json())
                doc["queueData"] = [
                    {"index": index + i, **u.to_json()} for i, u in enumerate(body.queue_data or [])
                ]
            docs.append(doc)
        if fmt == "json":
            print_json(docs)
            return
        for doc in docs:
            if "remark" in doc:
                console.print(f"{escape(doc['brokerName'])}: {escape(str(doc['remark']))}")
                continue
            table = make_table(
                f"{escape(topic)} queue {queue_id} on {escape(doc['brokerName'])} · offsets "
                f"{doc['minQueueIndex']}..{doc['maxQueueIndex']}",
                "INDEX",
                "PHYSIC-OFFSET",
                "SIZE",
                "TAGS-CODE",
                count=len(doc["queueData"]),
            )
            for u in doc["queueData"]:
                table.add_row(
                    str(u["index"]),
                    str(u["physicOffset"]),
                    str(u["physicSize"]),
                    str(u["tagsCode"]),
                )
            print_table(table, fmt)
            if group is not None:
                sub = doc.get("subscriptionData")
                console.print(
                    f"subscription of {escape(group)}: "
                    f"{escape(sub['subString']) if sub else '-'}; "
                    f"filter data: {escape(str(doc.get('filterData')))}"
                )

    run_async(go())


# -- producers --------------------------------------------------------------------------------


def producers(
    broker_addr: str | None = BrokerAddrArg,
    name: str | None = NameOpt,
    cluster: str | None = ClusterOpt,
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Producer connections of each broker by group (mqadmin producer).

    Examples:
      mq broker producers
      mq broker producers -c DefaultCluster -o json
    """
    fmt = resolve_format(fmt, as_json)

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            targets = await broker_targets(admin, broker_addr, name, cluster)
            tables = await asyncio.gather(*(admin.producer_table(a) for a in targets.values()))
        rows = [
            {"broker": broker, "group": group, **p.to_json()}
            for broker, table in zip(targets, tables, strict=True)
            for group, infos in table.data.items()
            for p in infos
        ]
        if fmt == "json":
            print_json(rows)
            return
        table = rows_table(
            "Producers",
            {
                "BROKER": lambda r: escape(r["broker"]),
                "GROUP": lambda r: escape(r["group"]),
                "CLIENT-ID": lambda r: escape(r["clientId"]),
                "ADDRESS": lambda r: escape(r["remoteIP"].lstrip("/")),
                "LANGUAGE": lambda r: str(r["language"]),
                "VERSION": lambda r: str(r["version"]),
                "LAST-HEARTBEAT": lambda r: fmt_ts(r["lastUpdateTimestamp"]),
            },
            rows,
            drop=("LAST-HEARTBEAT", "LANGUAGE", "VERSION", "BROKER"),
        )
        print_table(table, fmt)

    run_async(go())


# -- stats ------------------------------------------------------------------------------------


def stats(
    topic: str = topic_option(),
    group: str | None = typer.Option(
        None, "--group", "-g", help="A consumer group: its gets instead of the topic's puts."
    ),
    name: str | None = NameOpt,
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Puts to a topic (or a group's gets from it) over the last minute, hour and day,
    per broker of the topic's route (mqadmin statsAll's figures, VIEW_BROKER_STATS_DATA).

    Examples:
      mq broker stats -t Orders
      mq broker stats -t Orders -g billing
    """
    fmt = resolve_format(fmt, as_json)
    family = "GROUP_GET" if group else "TOPIC_PUT"
    key = f"{topic}@{group}" if group else topic

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            masters = await _topic_masters(admin, topic, name)
            rows: list[dict[str, Any]] = []
            for broker_name, addr in sorted(masters.items()):
                row: dict[str, Any] = {"brokerName": broker_name, "key": key}
                for unit in ("NUMS", "SIZE"):
                    try:
                        data = await admin.broker_stats(addr, f"{family}_{unit}", key)
                    except MQBrokerError:  # nothing counted for this key on this broker
                        row[unit.lower()] = None
                    else:
                        row[unit.lower()] = data.to_json()
                rows.append(row)
        if fmt == "json":
            print_json(rows)
            return
        what = f"gets of {escape(group)} from" if group else "puts to"
        table = make_table(
            f"{what.capitalize()} {escape(topic)}",
            "BROKER",
            "WINDOW",
            "MESSAGES",
            "MSG/S",
            "BYTES",
            "MSGS-PER-CALL",
            count=len(rows) * 3,
        )
        for row in rows:
            nums, size = row["nums"] or {}, row["size"] or {}
            for window in ("statsMinute", "statsHour", "statsDay"):
                n, b = nums.get(window), size.get(window)
                table.add_row(
                    escape(row["brokerName"]),
                    window[len("stats") :].lower(),
                    str(n["sum"]) if n else "-",
                    f"{n['tps']:.2f}" if n else "-",
                    str(b["sum"]) if b else "-",
                    f"{n['avgpt']:.1f}" if n else "-",
                )
        print_table(table, fmt)

    run_async(go())


# -- housekeeping -----------------------------------------------------------------------------


def what_name(method: str) -> str:
    """The subcommand name of a housekeeping method (as registered below)."""
    return {
        "clean_expired_consume_queue": "clean-expired-cq",
        "clean_unused_topic": "clean-unused-topic",
        "delete_expired_commit_log": "delete-expired-commitlog",
    }[method]


def _housekeeping(what: str, question: str, method: str, help_text: str) -> Any:
    def command(
        broker_addr: str | None = BrokerAddrArg,
        name: str | None = NameOpt,
        cluster: str | None = ClusterOpt,
        yes: bool = YesOpt,
        namesrv: str | None = NamesrvOpt,
    ) -> None:
        async def go() -> None:
            async with admin_session(namesrv) as admin:
                targets = await broker_targets(admin, broker_addr, name, cluster)
                names = ", ".join(sorted(targets))
                if not yes and not confirm(f"{question} on {names}?"):
                    fail("nothing done")
                await getattr(admin, method)(targets.values())
            console.print(f"{what} on {len(targets)} broker(s): {escape(names)}")

        run_async(go())

    command.__doc__ = (
        f"{help_text}\n\n    Examples:\n      mq broker {what_name(method)}\n"
        f"      mq broker {what_name(method)} -c DefaultCluster -y\n    "
    )
    return command


clean_expired_cq = _housekeeping(
    "cleaned expired consume queues",
    "Destroy the consume queues whose messages are all deleted",
    "clean_expired_consume_queue",
    "Destroy consume queues whose messages are all gone from the commit log (mqadmin "
    "cleanExpiredCQ); such a queue starts again at offset 0.",
)
clean_unused_topic = _housekeeping(
    "cleaned unused topics",
    "Destroy the consume queues of topics the broker no longer has",
    "clean_unused_topic",
    "Destroy the consume queues of topics missing from the broker's topic table "
    "(mqadmin cleanUnusedTopic).",
)
delete_expired_commitlog = _housekeeping(
    "deleted expired commit log files",
    "Delete commit log files older than fileReservedTime now",
    "delete_expired_commit_log",
    "Delete commit log files older than fileReservedTime now, as at deleteWhen "
    "(mqadmin deleteExpiredCommitLog).",
)


def register(broker_app: typer.Typer) -> None:
    from mqcli.commands import broker_perm

    broker_app.command("consume-stats")(consume_stats)
    broker_app.command("query-cq")(query_cq)
    broker_app.command("producers")(producers)
    broker_app.command("stats")(stats)
    broker_app.command("clean-expired-cq")(clean_expired_cq)
    broker_app.command("clean-unused-topic")(clean_unused_topic)
    broker_app.command("delete-expired-commitlog")(delete_expired_commitlog)
    broker_perm.register(broker_app)

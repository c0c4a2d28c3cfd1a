"""`mq broker status`: a broker's runtime figures (mqadmin brokerStatus) with the
delay levels as a table -- the strongest unmet need of RocketMQ users
(apache/rocketmq#3296, #3212, #4226): how many messages wait per level, when the head
of each level is due, and (with ``--watch``) how fast each level delivers.

The levels come from ``scheduleMessageOffset_<level>`` = ``"delivered,max"`` of
GET_BROKER_RUNTIME_INFO; the delays from the broker's ``messageDelayLevel``
(GET_BROKER_CONFIG); the head's due time is its store time plus the level's delay
(what the broker writes in the consume-queue tag slot), read with a one-message pull of
``SCHEDULE_TOPIC_XXXX`` queue level-1 at the delivered offset.

The master/slave lines (role, HA connection, a slave's lag in bytes, and in controller
mode the epoch and in-sync set) come from :mod:`mqcli.ha`; a slave's lag needs its
master's ``commitLogMaxOffset`` (and whether it is in sync, the master's in-sync set), so
the master is asked too when only the slave was named. RocketMQ 5's timer wheel has its
own section (:mod:`mqcli.commands.broker_timer`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import typer
from rich.markup import escape

from mqcli.commands.admin_util import JsonOpt, WatchOpt, admin_session, watch
from mqcli.commands.broker_timer import render_timers, timer_doc
from mqcli.commands.cluster import as_float, as_int, first_rate
from mqcli.connect import NamesrvOpt, run_async
from mqcli.ha import HAState, ha_state
from mqcli.output import console, fail, print_json_line
from mqcli.render import fmt_ts
from mqcli.tables import (
    FormatOpt,
    delay_table,
    fmt_age,
    fmt_bytes,
    fmt_delay,
    make_table,
    print_table,
    resolve_format,
)
from mqcore.client import Admin
from mqcore.common.loop_lag import DEFAULT_WARN_MS, LoopLagFigures
from mqcore.errors import MQError
from mqcore.message.const import SCHEDULE_TOPIC
from mqcore.store.store_config import parse_delay_levels

DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"


@dataclass(slots=True)
class LiveDelayLevel:
    level: int
    delay_ms: int
    delivered: int
    max_offset: int
    waiting: int
    head_due_timestamp: int | None


@dataclass(slots=True)
class Target:
    addr: str
    name: str | None
    cluster: str | None
    broker_id: int | None


async def _targets(
    admin: Admin, addr: str | None, name: str | None
) -> tuple[list[Target], dict[str, str]]:
    """The brokers to show, and every broker name's master address (for slave lag)."""
    info = await admin.cluster_info()
    known: list[Target] = []
    for cluster, names in sorted(info.cluster_addr_table.items()):
        for n in sorted(names):
            data = info.broker_addr_table.get(n)
            for bid, a in sorted((data.broker_addrs if data else {}).items()):
                known.append(Target(a, n, cluster, bid))
    masters = {t.name: t.addr for t in known if t.name is not None and t.broker_id == 0}
    if addr is not None:
        found = [t for t in known if t.addr == addr] or [Target(addr, None, None, None)]
        return found, masters
    if name is not None:
        found = [t for t in known if t.name == name]
        if not found:
            known_names = ", ".join(sorted({t.name or "" for t in known})) or "none"
            fail(f"no broker named {name} is registered (known: {known_names})")
        return found, masters
    if not known:
        fail("no broker is registered with the name server", hint="is `mq broker` running?")
    return known, masters


async def master_runtimes(
    admin: Admin, results: list[tuple[Target, dict[str, str]]], masters: dict[str, str]
) -> dict[str, dict[str, str] | None]:
    """Broker name -> its master's runtime table, for the slaves in ``results`` (their
    lag needs the master's ``commitLogMaxOffset``, their place in the in-sync set of
    controller mode its ``syncStateSet``): from the master's own answer when it is
    there, else asked for (None when the master does not answer: a slave's lag is then
    unknown, not an error)."""
    have: dict[str, dict[str, str] | None] = {
        t.name: rt for t, rt in results if t.name is not None and t.broker_id == 0
    }
    wanted = sorted({t.name for t, _ in results if t.broker_id and t.name in masters} - set(have))

    async def ask(name: str) -> None:
        try:
            have[name] = await admin.broker_runtime_info(masters[name])
        except MQError:
            have[name] = None

    await asyncio.gather(*(ask(n) for n in wanted if n is not None))
    return have


async def _delay_table_ms(admin: Admin, addr: str) -> dict[int, int]:
    """The broker's ``messageDelayLevel`` (the default table when it cannot be read)."""
    try:
        config = await admin.broker_config(addr)
    except MQError:
        config = {}
    return parse_delay_levels(config.get("messageDelayLevel", DEFAULT_DELAY_LEVELS))


async def _head_store_time(admin: Admin, addr: str, level: int, offset: int) -> int | None:
    try:
        found = await admin.peek(addr, SCHEDULE_TOPIC, level - 1, offset, 1)
    except MQError:
        return None
    return found[0].store_timestamp if found else None


async def delay_levels(admin: Admin, addr: str, runtime: dict[str, str]) -> list[LiveDelayLevel]:
    """Levels that ever held a message, with the head's due time where one waits."""
    delays = await _delay_table_ms(admin, addr)
    rows: list[LiveDelayLevel] = []
    for key, value in runtime.items():
        if not key.startswith("scheduleMessageOffset_"):
            continue
        try:
            level = int(key.rpartition("_")[2])
            delivered, max_offset = (int(x) for x in value.split(","))
        except ValueError:
            continue
        if max_offset <= 0 and delivered <= 0:
            continue
        waiting = max(0, max_offset - delivered)
        rows.append(
            LiveDelayLevel(level, delays.get(level, 0), delivered, max_offset, waiting, None)
        )
    rows.sort(key=lambda r: r.level)

    async def head(row: LiveDelayLevel) -> None:
        if row.waiting:
            stored = await _head_store_time(admin, addr, row.level, row.delivered)
            if stored is not None:
                row.head_due_timestamp = stored + row.delay_ms

    await asyncio.gather(*(head(r) for r in rows))
    return rows


def delivery_rates(
    addr: str,
    runtime: dict[str, str],
    levels: list[LiveDelayLevel],
    previous: dict[tuple[str, int], tuple[float, int]],
    now: float,
) -> dict[int, float | None]:
    """Messages/s delivered per level: the broker's own ``scheduleMessageDeliverTps_<n>``
    (10-second window, so a single sample has one), else the change of the delivered
    offset since the previous sample (None on the first). ``previous`` is updated."""
    rates: dict[int, float | None] = {}
    for d in levels:
        before = previous.get((addr, d.level))
        previous[(addr, d.level)] = (now, d.delivered)
        published = first_rate(runtime.get(f"scheduleMessageDeliverTps_{d.level}"))
        if published is not None:
            rates[d.level] = published
        elif before is not None and now > before[0]:
            rates[d.level] = max(0.0, (d.delivered - before[1]) / (now - before[0]))
        else:
            rates[d.level] = None
    return rates


def _status_doc(
    t: Target, rt: dict[str, str], levels: list[LiveDelayLevel], ha: HAState
) -> dict[str, Any]:
    boot = as_int(rt.get("bootTimestamp"))
    now = int(time.time() * 1000)
    put_now = as_int(rt.get("msgPutTotalTodayNow")) or 0
    get_now = as_int(rt.get("msgGetTotalTodayNow")) or 0
    return {
        "addr": t.addr,
        "broker": t.name,
        "cluster": t.cluster,
        "brokerId": t.broker_id,
        **ha.to_json(),
        "timestamp": now,
        "version": rt.get("brokerVersionDesc"),
        # which core the broker runs: compiled, or pure and why (mq brokers only)
        "core": rt.get("mqCore"),
        "bootTimestamp": boot,
        "uptimeMs": now - boot if boot else None,
        "putTps": first_rate(rt.get("putTps")),
        "getTps": first_rate(rt.get("getTransferedTps")),
        "messagesToday": {
            "put": max(0, put_now - (as_int(rt.get("msgPutTotalTodayMorning")) or 0)),
            "get": max(0, get_now - (as_int(rt.get("msgGetTotalTodayMorning")) or 0)),
        },
        "commitLog": {
            "minOffset": as_int(rt.get("commitLogMinOffset")),
            "maxOffset": as_int(rt.get("commitLogMaxOffset")),
        },
        "diskRatio": {
            "commitLog": as_float(rt.get("commitLogDiskRatio")),
            "consumeQueue": as_float(rt.get("consumeQueueDiskRatio")),
        },
        "dispatchBehindBytes": as_int(rt.get("dispatchBehindBytes")),
        "earliestMessageTimestamp": as_int(  # mq's exact key, else 4.9.8's (often -1)
            rt.get("earliestStoredMessageTimeStamp") or rt.get("earliestMessageTimeStamp")
        ),
        # how late the broker's event loop ran what was due (mq brokers only; None elsewhere)
        "loopLag": _loop_lag_json(rt),
        # damage recovery found and worked around (mq brokers only; None elsewhere)
        "storeProblems": as_int(rt.get("storeProblems")),
        "storeProblemsDetail": [p for p in rt.get("storeProblemsDetail", "").split(" | ") if p],
        "delayLevels": [
            {
                "level": d.level,
                "delay": fmt_delay(d.delay_ms),
                "delayMs": d.delay_ms,
                "delivered": d.delivered,
                "maxOffset": d.max_offset,
                "waiting": d.waiting,
                "headDueTimestamp": d.head_due_timestamp,
            }
            for d in levels
        ],
        # RocketMQ 5's timer wheel (None for a broker without one)
        "timers": timer_doc(rt),
        "runtime": dict(sorted(rt.items())),
    }


def _loop_lag_json(rt: dict[str, str]) -> dict[str, object] | None:
    figures = LoopLagFigures.from_runtime_info(rt)
    return figures.to_json() if figures is not None else None


def _loop_lag_text(doc: dict[str, Any]) -> str:
    """The loop-lag row: the largest stall of the last minute first (what an operator
    chasing timeouts asks), then of the last 10 minutes, and how many passed the
    broker's warning threshold (each of those is in its log, some folded together)."""
    lag = doc["loopLag"]
    if lag is None:
        return "-"
    stalls = lag["stalls"]
    return (
        f"{lag['maxMsLastMinute']:.0f} ms largest in the last minute, "
        f"{lag['maxMs']:.0f} ms in 10 minutes; "
        f"{stalls} stall{'' if stalls == 1 else 's'} over {DEFAULT_WARN_MS:.0f} ms since start"
    )


def _render(
    doc: dict[str, Any],
    levels: list[LiveDelayLevel],
    rates: dict[int, float | None] | None,
    fmt: str,
) -> None:
    title = escape(doc["broker"] or doc["addr"])
    where = f"{doc['addr']}" + (f" · cluster {escape(doc['cluster'])}" if doc["cluster"] else "")
    if doc["brokerId"] is not None:
        where += " · master" if doc["brokerId"] == 0 else f" · slave {doc['brokerId']}"
    console.print(f"[bold]{title}[/] {where}")
    ha = _ha_text(doc)
    cl = doc["commitLog"]
    ratio = doc["diskRatio"]["commitLog"]
    rt = doc["runtime"]
    kv = make_table("Runtime", "KEY", "VALUE")
    for key, value in (
        ("version", doc["version"]),
        ("core", doc["core"]),
        ("uptime", f"{fmt_age(doc['uptimeMs'])} (since {fmt_ts(doc['bootTimestamp'] or 0)})"),
        ("put TPS 10s/60s/600s", rt.get("putTps")),
        ("get TPS 10s/60s/600s", rt.get("getTransferedTps")),
        ("messages today", f"{doc['messagesToday']['put']} in, {doc['messagesToday']['get']} out"),
        (
            "commit log",
            f"offsets {cl['minOffset']}..{cl['maxOffset']} "
            f"({fmt_bytes((cl['maxOffset'] or 0) - (cl['minOffset'] or 0))})",
        ),
        ("disk used", "-" if ratio is None or ratio < 0 else f"{ratio:.1%}"),
        ("dispatch behind", fmt_bytes(doc["dispatchBehindBytes"])),
        ("loop lag", _loop_lag_text(doc)),
        ("earliest message", fmt_ts(doc["earliestMessageTimestamp"] or 0)),
        ("role", doc["role"]),
        ("HA", ha),
        *([("controller", _replica_text(doc))] if doc["masterEpoch"] is not None else []),
        ("store problems", doc["storeProblems"]),
    ):
        kv.add_row(key, escape(str(value if value is not None else "-")))
    print_table(kv, fmt, section=True)
    if doc["storeProblems"]:
        console.print(
            f"[bold red]{doc['storeProblems']} store problem(s) found at startup[/] "
            "(worked around; see the broker log):"
        )
        for problem in doc["storeProblemsDetail"]:
            console.print(f"  {escape(problem)}", soft_wrap=True)
    if levels:
        table = delay_table(
            levels, "Delay levels (SCHEDULE_TOPIC_XXXX)", rates=rates, now_ms=doc["timestamp"]
        )
        print_table(table, fmt, section=True)
    else:
        console.print("[dim]no delayed messages yet[/]")
    render_timers(doc["timers"], fmt)


def _ha_text(doc: dict[str, Any]) -> str:
    """The HA row: a master's slaves and what they acknowledged; a slave's master, its
    connection and how far behind it is. Parts the broker does not report are left
    out ("-" when none is known)."""
    parts: list[str] = []
    if doc["role"] == "SLAVE":
        if doc["haMasterAddress"]:
            parts.append(f"master {doc['haMasterAddress']}")
        if doc["haMasterConnected"] is not None:
            parts.append("connected" if doc["haMasterConnected"] else "DISCONNECTED")
        if doc["slaveLagBytes"] is not None:
            parts.append(f"{fmt_bytes(doc['slaveLagBytes'])} behind")
        return ", ".join(parts) or "-"
    count = doc["haConnectionCount"]
    if count is not None:
        parts.append(f"{count} slave{'' if count == 1 else 's'} connected")
    acked = doc["haPush2SlaveMaxOffset"]
    if acked is not None and count:
        behind = (doc["commitLog"]["maxOffset"] or 0) - acked
        parts.append(f"acknowledged up to {acked} ({fmt_bytes(max(0, behind))} behind)")
    if doc["role"] == "SYNC_MASTER" and count == 0:
        parts.append("sends fail with SLAVE_NOT_AVAILABLE")
    return ", ".join(parts) or "-"


def _replica_text(doc: dict[str, Any]) -> str:
    """The controller row of a broker in controller mode: its id at the controller, the
    master epoch and master it knows, and the in-sync set (a master's) or whether the
    slave is in it."""
    me, master = doc["controllerBrokerId"], doc["masterBrokerId"]
    parts = [f"replica {me if me is not None and me >= 0 else '-'}"]
    parts.append(f"epoch {doc['masterEpoch']}")
    if master is None or master < 0:
        parts.append("no master")
    elif master == me:
        ids = doc["syncStateSet"] or []
        in_sync = ",".join(map(str, ids)) or "-"
        parts.append(f"master, in-sync set {in_sync} (epoch {doc['syncStateSetEpoch']})")
    else:
        parts.append(f"master is replica {master}")
        if doc["inSync"] is not None:
            parts.append("in sync" if doc["inSync"] else "NOT in sync")
    return ", ".join(parts)


def status(
    broker_addr: str | None = typer.Argument(
        None, metavar="BROKER_ADDR", help="host:port of the broker (default: every broker)."
    ),
    name: str | None = typer.Option(None, "--name", "-b", help="Broker name (brokerName)."),
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    interval: float | None = WatchOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Runtime figures and delay levels of a broker (mqadmin brokerStatus).

    Version, uptime, put/get TPS, messages today, commit-log offsets, disk use, dispatch
    lag, loop lag (the largest stall of the broker's event loop in the last minute and
    in 10 minutes), role and HA state (a master's connected slaves and the offset they
    acknowledged; a slave's master, its connection and its lag in bytes), in controller
    mode the replica's id, master epoch and in-sync set, per delay
    level: messages waiting, when the head is due, and the delivery rate (the broker's
    10-second figure, or between --watch samples for a broker that does not publish
    one), and the timer wheel (RocketMQ 5's timer messages): messages waiting in it and
    not yet in it, how far its reading trails the clock, enqueue and dequeue TPS.
    --json prints one object per broker per sample.

    Examples:
      mq broker status
      mq broker status --name broker-a --watch 2
      mq broker status 127.0.0.1:10911 --json | jq .delayLevels
      mq broker status --json | jq .loopLag.maxMsLastMinute
      mq broker status --json | jq .timers
    """
    fmt = resolve_format(fmt, as_json)
    as_json = fmt == "json"
    if broker_addr is not None and name is not None:
        raise typer.BadParameter("give BROKER_ADDR or --name, not both")

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            targets, masters = await _targets(admin, broker_addr, name)
            previous: dict[tuple[str, int], tuple[float, int]] = {}

            async def one(t: Target) -> tuple[Target, dict[str, str], list[LiveDelayLevel]]:
                rt = await admin.broker_runtime_info(t.addr)
                return t, rt, await delay_levels(admin, t.addr, rt)

            async def sample(_: int) -> None:
                results = await asyncio.gather(*(one(t) for t in targets))
                now = time.monotonic()
                master_rt = await master_runtimes(admin, [(t, rt) for t, rt, _ in results], masters)
                for t, rt, levels in results:
                    rates = delivery_rates(t.addr, rt, levels, previous, now)
                    mrt = master_rt.get(t.name or "")
                    master_max = as_int(mrt.get("commitLogMaxOffset")) if mrt else None
                    ha = ha_state(rt, t.broker_id, master_max, mrt)
                    doc = _status_doc(t, rt, levels, ha)
                    for entry in doc["delayLevels"]:
                        entry["deliveryRate"] = rates.get(entry["level"])
                    if as_json:
                        print_json_line(doc)
                    else:
                        _render(doc, levels, rates, fmt)

            await watch(interval, sample, as_json=as_json)

    run_async(go())


def register(broker_app: typer.Typer) -> None:
    broker_app.command("status")(status)

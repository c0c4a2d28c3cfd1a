"""`mq cluster list`: one row per broker, as mqadmin clusterList prints it (cluster,
broker, id, address, version, in/out TPS, today's totals, uptime, disk), with
``--watch N`` in place of its ``-i``, plus what mqadmin leaves out for master/slave
pairs: each broker's role, its HA connection state and a slave's lag in bytes, and for
brokers in controller mode (RocketMQ 5) the master epoch and the in-sync set."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import typer
from rich.markup import escape

from mqcli.commands.admin_util import JsonOpt, WatchOpt, admin_session, watch
from mqcli.connect import NamesrvOpt, run_async
from mqcli.ha import ha_state
from mqcli.output import console, err_console, print_json, print_json_line
from mqcli.tables import (
    FormatOpt,
    cell,
    fmt_age,
    fmt_bytes,
    make_table,
    print_table,
    resolve_format,
)
from mqcore.client import Admin
from mqcore.errors import MQError

cluster_app = typer.Typer(help="Clusters and their brokers.", no_args_is_help=True)


def first_rate(value: str | None) -> float | None:
    """The 10-second figure of a ``"<10s> <60s> <600s>"`` TPS value."""
    parts = (value or "").split()
    if not parts:  # a 4.9.8 broker that has served nothing yet sends a blank
        return None
    try:
        return float(parts[0])
    except ValueError:
        return None


def as_int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def as_float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


async def broker_rows(admin: Admin, cluster: str | None = None) -> list[dict[str, Any]]:
    """Every broker address the name server lists (masters and slaves) with its runtime
    figures and HA state; a broker that does not answer gets ``up: false`` and ``error``.
    A slave's lag needs its master's figures, so all brokers are asked first."""
    info = await admin.cluster_info()
    targets: list[tuple[str, str, int, str]] = []
    for cluster_name, names in sorted(info.cluster_addr_table.items()):
        if cluster is not None and cluster_name != cluster:
            continue
        for name in sorted(names):
            data = info.broker_addr_table.get(name)
            for bid, addr in sorted((data.broker_addrs if data else {}).items()):
                targets.append((cluster_name, name, bid, addr))

    async def one(target: tuple[str, str, int, str]) -> dict[str, Any]:
        cluster_name, name, bid, addr = target
        row: dict[str, Any] = {"cluster": cluster_name, "broker": name, "brokerId": bid}
        row["addr"] = addr
        try:
            rt = await admin.broker_runtime_info(addr)
        except MQError as exc:
            return {**row, "role": ha_state({}, bid).role, "up": False, "error": str(exc)}
        boot = as_int(rt.get("bootTimestamp"))
        put_now, get_now = (
            as_int(rt.get("msgPutTotalTodayNow")),
            as_int(rt.get("msgGetTotalTodayNow")),
        )
        put_morning = as_int(rt.get("msgPutTotalTodayMorning")) or 0
        get_morning = as_int(rt.get("msgGetTotalTodayMorning")) or 0
        return {
            **row,
            "up": True,
            "version": rt.get("brokerVersionDesc"),
            "inTps": first_rate(rt.get("putTps")),
            "outTps": first_rate(rt.get("getTransferedTps")),
            "todayIn": None if put_now is None else max(0, put_now - put_morning),
            "todayOut": None if get_now is None else max(0, get_now - get_morning),
            "bootTimestamp": boot,
            "uptimeMs": int(time.time() * 1000) - boot if boot else None,
            "commitLogDiskRatio": as_float(rt.get("commitLogDiskRatio")),
            "commitLogMaxOffset": as_int(rt.get("commitLogMaxOffset")),
            "runtime": rt,
        }

    rows = list(await asyncio.gather(*(one(t) for t in targets)))
    masters = {(r["cluster"], r["broker"]): r for r in rows if r["up"] and r["brokerId"] == 0}
    for r in rows:
        if r["up"]:
            master = masters.get((r["cluster"], r["broker"]))
            r.update(
                ha_state(
                    r["runtime"],
                    r["brokerId"],
                    master["commitLogMaxOffset"] if master else None,
                    master["runtime"] if master else None,
                ).to_json()
            )
    return rows


CLUSTER_DROP_ORDER = (
    "TODAY-OUT",
    "TODAY-IN",
    "UPTIME",
    "DISK",
    "OUT-TPS",
    "IN-TPS",
    "SLAVE-LAG",
    "EPOCH",
    "IN-SYNC",
    "HA",
    "CLUSTER",
    "VERSION",
)
"""What a narrow terminal hides first; broker, id, role and address always show."""


def shows_replicas(rows: list[dict[str, Any]], fmt: str) -> bool:
    """Whether the EPOCH and IN-SYNC columns are shown: when some broker is in
    controller mode (reports a master epoch), and always in wide output."""
    return fmt == "wide" or any(r.get("masterEpoch") is not None for r in rows)


@cluster_app.command("list")
def list_clusters(
    cluster: str | None = typer.Option(None, "--cluster", "-c", help="Only this cluster."),
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    interval: float | None = WatchOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """One row per broker: cluster, name, id (0 = master), role, address, version, TPS in
    and out, messages in and out today, uptime, commit-log disk use, HA state and lag.

    ROLE is the broker's brokerRole (ASYNC_MASTER, SYNC_MASTER, SLAVE), or MASTER/SLAVE
    from the id for a broker that does not report it (RocketMQ itself). HA is, for a
    master, how many slaves are connected; for a slave, whether it is connected to its
    master. SLAVE-LAG is the master's commit-log max offset minus the slave's, in bytes.
    For brokers in controller mode (RocketMQ 5; see `mq up --replicas`), EPOCH is the
    master epoch the broker knows and IN-SYNC a master's in-sync set (the replicas'
    controller ids) or, for a slave, whether that set holds it; these two columns show
    when some broker reports them, and always with -o wide. A figure the broker does
    not report shows as "-".

    Examples:
      mq cluster list
      mq cluster list -c DefaultCluster --watch 2
      mq cluster list -o json | jq '.[] | select(.up == false)'
    """
    fmt = resolve_format(fmt, as_json)
    as_json = fmt == "json"

    async def go() -> None:
        async with admin_session(namesrv) as admin:

            async def sample(_: int) -> None:
                rows = await broker_rows(admin, cluster)
                if as_json:
                    docs = [{k: v for k, v in r.items() if k != "runtime"} for r in rows]
                    print_json_line(docs) if interval is not None else print_json(docs)
                    return
                _print_rows(rows, fmt)

            await watch(interval, sample, as_json=as_json)

    run_async(go())


def _print_rows(rows: list[dict[str, Any]], fmt: str = "table") -> None:
    replicas = shows_replicas(rows, fmt)
    extra = ("EPOCH", "IN-SYNC") if replicas else ()
    table = make_table(
        "Brokers",
        "CLUSTER",
        "BROKER",
        "BID",
        "ROLE",
        "ADDRESS",
        "VERSION",
        "IN-TPS",
        "OUT-TPS",
        "TODAY-IN",
        "TODAY-OUT",
        "UPTIME",
        "DISK",
        "HA",
        "SLAVE-LAG",
        *extra,
        count=len(rows),
        drop=CLUSTER_DROP_ORDER,
    )
    for r in rows:
        if not r["up"]:
            table.add_row(
                escape(r["cluster"]),
                escape(r["broker"]),
                str(r["brokerId"]),
                r["role"],
                r["addr"],
                "[red]down[/]",
                *["-"] * (8 + len(extra)),
            )
            continue
        ratio = r["commitLogDiskRatio"]
        state = ha_state(r["runtime"], r["brokerId"], None)
        ha = escape(state.summary())
        replica_cells = (epoch_cell(r), in_sync_cell(r)) if replicas else ()
        table.add_row(
            escape(r["cluster"]),
            escape(r["broker"]),
            str(r["brokerId"]),
            r["role"],
            r["addr"],
            cell(r["version"]),
            cell(r["inTps"]),
            cell(r["outTps"]),
            cell(r["todayIn"]),
            cell(r["todayOut"]),
            fmt_age(r["uptimeMs"]),
            "-" if ratio is None or ratio < 0 else f"{ratio:.0%}",
            f"[red]{ha}[/]" if state.alarming else ha,
            fmt_bytes(r["slaveLagBytes"]),
            *replica_cells,
        )
    print_table(table, fmt)
    for r in rows:
        if not r["up"]:
            line = f"[red]{escape(r['broker'])} {r['addr']}:[/] {escape(r['error'])}"
            (console if console.is_terminal else err_console).print(line)


def epoch_cell(doc: dict[str, Any]) -> str:
    """The EPOCH cell of a broker document (``masterEpoch``)."""
    return cell(doc.get("masterEpoch"))


def in_sync_cell(doc: dict[str, Any]) -> str:
    """The IN-SYNC cell: a master's in-sync set as controller ids (``1,2``), for a slave
    ``yes``/``no`` (in its master's set), ``-`` outside controller mode; red when a
    slave is out of it."""
    if doc.get("masterEpoch") is None:
        return "-"
    if doc.get("role") != "SLAVE":
        ids = doc.get("syncStateSet")
        return ",".join(map(str, ids)) if ids else "-"
    in_sync = doc.get("inSync")
    return "-" if in_sync is None else "yes" if in_sync else "[red]no[/]"


def register(app: typer.Typer) -> None:
    app.add_typer(cluster_app, name="cluster")

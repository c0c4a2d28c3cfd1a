"""The cluster view: name server health and every broker's vital signs."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult

from mqcli.tui.model import BrokerRow, Snapshot
from mqcli.tui.screens.base import ViewScreen, fmt_int
from mqcli.tui.widgets.live_table import LiveTable
from mqcore.common.loop_lag import DEFAULT_WARN_MS

__all__ = [
    "COMPACT_BELOW",
    "NARROW_COLUMNS",
    "REPLICA_COLUMNS",
    "ClusterScreen",
    "ha_text",
    "in_sync_text",
    "loop_lag_text",
    "size_text",
    "uptime_text",
    "with_replica_columns",
]

COMPACT_BELOW = 160
"""Screens narrower than this get the compact broker columns (they fit 120 columns)."""

FULL_COLUMNS = [
    ("cluster", "CLUSTER"), ("broker", "BROKER"), ("bid", "BID"), ("role", "ROLE"),
    ("addr", "ADDRESS"), ("state", "STATE"), ("version", "VERSION"), ("uptime", "UPTIME"),
    ("put_tps", "PUT TPS"), ("get_tps", "GET TPS"), ("put_today", "PUT TODAY"),
    ("get_today", "GET TODAY"), ("disk", "DISK"), ("cl_max", "COMMITLOG MAX"),
    ("loop", "LOOP LAG"), ("ha", "HA"), ("lag", "SLAVE LAG"),
]  # fmt: skip
COMPACT_COLUMNS = [
    ("broker", "BROKER"), ("role", "ROLE"), ("addr", "ADDRESS"), ("state", "STATE"),
    ("uptime", "UPTIME"), ("tps", "TPS IN/OUT"),
    ("today", "TODAY IN/OUT"), ("disk", "DISK"), ("cl_max", "CL MAX"), ("ha", "HA"),
    ("lag", "LAG"),
]  # fmt: skip
"""No cluster or version column, broker id folded into ROLE, in/out pairs in one
column, sizes in binary units; no LOOP LAG column: a stall past the broker's warning
threshold is said in STATE instead."""
NARROW_COLUMNS = [
    ("broker", "BROKER"), ("role", "ROLE"), ("addr", "ADDRESS"), ("state", "STATE"),
    ("tps", "TPS IN/OUT"), ("disk", "DISK"), ("ha", "HA"),
]  # fmt: skip
"""What an 80-column terminal has room for: who, where, alive, how busy, how full."""
SLOW_LOOP_MS = 50.0
"""A loop stall this long is shown in yellow: a request waited that long for it."""
REPLICA_COLUMNS = [("epoch", "EPOCH"), ("insync", "IN-SYNC")]
"""Added while some broker is in controller mode (RocketMQ 5): the master epoch it
knows, and a master's in-sync set or whether a slave is in it."""


def with_replica_columns(spec: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``spec`` in controller mode, as wide as before or nearly: the full columns get
    EPOCH and IN-SYNC; the compact ones give TODAY IN/OUT for them; at 80 columns IN-SYNC
    takes HA's place (a slave in sync is a connected one) and the epoch stays out."""
    if spec is NARROW_COLUMNS:
        return [("insync", "IN-SYNC") if key == "ha" else (key, label) for key, label in spec]
    if spec is COMPACT_COLUMNS:
        return [c for c in spec if c[0] != "today"] + REPLICA_COLUMNS
    return spec + REPLICA_COLUMNS


def size_text(n: int | None) -> str:
    """``73400320`` -> ``"70.0M"`` (binary units), ``None`` -> ``"-"``."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "K", "M", "G", "T"):
        if value < 1024 or unit == "T":
            return f"{int(value)}B" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return "-"  # unreachable


def uptime_text(boot_ms: int | None, now_ms: int) -> str:
    if not boot_ms:
        return "-"
    secs = max(0, (now_ms - boot_ms) // 1000)
    days, rest = divmod(secs, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s"


def ha_text(b: BrokerRow) -> Text | str:
    """The HA cell: red when replication is broken, green for a connected slave."""
    if b.ha is None:
        return "-"
    text = b.ha.summary()
    if b.ha.alarming:
        return Text(text, "bold red")
    return Text(text, "green") if b.ha.master_connected else text


def in_sync_text(b: BrokerRow) -> Text | str:
    """The IN-SYNC cell: a master's in-sync set (controller ids), or for a slave
    ``yes`` (green) or ``no`` (red: it cannot take over); ``-`` outside controller mode."""
    if b.ha is None:
        return "-"
    text = b.ha.in_sync_text
    if b.ha.is_master or b.ha.in_sync is None:
        return text
    return Text(text, "green") if b.ha.in_sync else Text(text, "bold red")


def loop_lag_text(b: BrokerRow) -> Text | str:
    """The LOOP LAG cell: the largest stall of the broker's event loop in the last
    minute; yellow from 50 ms (requests feel it), red from the broker's warning
    threshold (it logged the stall)."""
    ms = b.loop_lag_ms
    if ms is None:
        return "-"
    text = f"{ms:.0f} ms"
    if ms >= DEFAULT_WARN_MS:
        return Text(text, "bold red")
    return Text(text, "yellow") if ms >= SLOW_LOOP_MS else text


def _controller_mode(brokers: list[BrokerRow]) -> bool:
    return any(b.ha is not None and b.ha.replica is not None for b in brokers)


class ClusterScreen(ViewScreen):
    """Brokers (name, id and role, address, version, uptime, put/get TPS, messages
    today, disk use, commit log max offset, the event loop's largest stall in the last
    minute, HA connection, slave lag) and the name servers. HA is a master's connected
    slaves or a slave's link to its master, red when replication is broken (a slave cut
    off, a SYNC_MASTER without a slave). In controller mode, EPOCH and IN-SYNC follow:
    the master epoch, and a master's in-sync set or whether a slave is in it (red when
    not)."""

    TITLE = "Cluster"
    AUTO_FOCUS = "#brokers"

    def compose_body(self) -> ComposeResult:
        yield LiveTable(
            [("addr", "NAME SERVER"), ("state", "STATE"), ("latency", "LATENCY"),
             ("error", "ERROR")],
            title="Name servers", id="namesrvs",
        )  # fmt: skip
        yield LiveTable(FULL_COLUMNS, title="Brokers", order_by=("broker", "bid"), id="brokers")

    @property
    def compact(self) -> bool:
        return self.app.size.width < COMPACT_BELOW

    def render_snapshot(self, snapshot: Snapshot) -> None:
        names = self.query_one("#namesrvs", LiveTable)
        names.sync(
            {
                n.addr: (
                    n.addr,
                    Text("up", "green") if n.ok else Text("DOWN", "bold red"),
                    f"{n.latency_ms:.0f} ms" if n.latency_ms is not None else "-",
                    n.error or "",
                )
                for n in snapshot.namesrvs
            }
        )
        brokers = [b for b in snapshot.brokers if self.matches(b.name, b.addr, b.cluster)]
        table = self.query_one("#brokers", LiveTable)
        spec = NARROW_COLUMNS if self.narrow else COMPACT_COLUMNS if self.compact else FULL_COLUMNS
        if _controller_mode(snapshot.brokers):
            spec = with_replica_columns(spec)
        table.set_columns(spec, order_by=("broker", "role") if self.compact else ("broker", "bid"))
        keys = [k for k, _ in spec]
        table.filter_text = self.filter_text
        table.total = len(snapshot.brokers) if self.filter_text else None
        table.sync({b.key: self._cells(b, snapshot.taken_ms, keys) for b in brokers})

    @staticmethod
    def _cells(b: BrokerRow, now_ms: int, keys: list[str]) -> tuple[object, ...]:
        state = Text("up", "green") if b.up else Text("DOWN", "bold red")
        if b.unknown:  # no name server answers: nothing current to show
            state = Text("unknown", "bold yellow")
        elif b.up and b.store_problems:  # recovery worked around damage: say so, loudly
            state = Text(f"up, {b.store_problems} damaged", "bold red")
        elif b.up and "loop" not in keys and (b.loop_lag_ms or 0) >= DEFAULT_WARN_MS:
            state = Text(f"up, {b.loop_lag_ms:.0f} ms stall", "bold red")  # no LOOP LAG column
        role = b.role_text if b.broker_id == 0 else f"slave {b.broker_id}"
        cells: dict[str, object] = {
            "cluster": b.cluster, "broker": b.name, "bid": b.broker_id, "addr": b.addr,
            "state": state, "version": b.version,
            "role": b.role_text if "bid" in keys else role,
        }  # fmt: skip
        if b.unknown or not b.up:
            if not b.unknown:
                cells["broker"] = Text(b.name, "bold red")
            dash = Text("-", "dim")
            return tuple(cells.get(k, dash) for k in keys)
        disk = "-" if b.disk_ratio is None else f"{b.disk_ratio * 100:.1f}%"
        cells.update(
            uptime=uptime_text(b.boot_ms, now_ms), put_tps=f"{b.put_tps:.1f}",
            get_tps=f"{b.get_tps:.1f}", tps=f"{b.put_tps:.1f}/{b.get_tps:.1f}",
            put_today=fmt_int(b.put_today), get_today=fmt_int(b.get_today),
            today=f"{fmt_int(b.put_today)}/{fmt_int(b.get_today)}", disk=disk,
            ha=ha_text(b), epoch=b.ha.epoch_text if b.ha else "-", insync=in_sync_text(b),
            loop=loop_lag_text(b),
        )  # fmt: skip
        if "bid" in keys:  # the full columns: exact figures
            cells["cl_max"] = fmt_int(b.commit_log_max)
            cells["lag"] = "-" if b.slave_lag_bytes is None else f"{b.slave_lag_bytes:,} B"
        else:
            cells["cl_max"] = size_text(b.commit_log_max)
            cells["lag"] = size_text(b.slave_lag_bytes)
        return tuple(cells[k] for k in keys)

"""The cluster view: name server health and every broker's vital signs."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult

from mqcli.tui.model import BrokerRow, Snapshot
from mqcli.tui.screens.base import ViewScreen, fmt_int
from mqcli.tui.widgets.live_table import LiveTable

__all__ = ["ClusterScreen", "uptime_text"]


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


class ClusterScreen(ViewScreen):
    """Brokers (name, id and role, address, version, uptime, put/get TPS, messages
    today, disk use, commit log max offset, slave lag) and the name servers."""

    TITLE = "Cluster"
    AUTO_FOCUS = "#brokers"

    def compose_body(self) -> ComposeResult:
        yield LiveTable(
            [("addr", "NAME SERVER"), ("state", "STATE"), ("latency", "LATENCY"),
             ("error", "ERROR")],
            title="Name servers", id="namesrvs",
        )  # fmt: skip
        yield LiveTable(
            [
                ("cluster", "CLUSTER"), ("broker", "BROKER"), ("bid", "BID"),
                ("role", "ROLE"), ("addr", "ADDRESS"), ("state", "STATE"),
                ("version", "VERSION"), ("uptime", "UPTIME"), ("put_tps", "PUT TPS"),
                ("get_tps", "GET TPS"), ("put_today", "PUT TODAY"),
                ("get_today", "GET TODAY"), ("disk", "DISK"), ("cl_max", "COMMITLOG MAX"),
                ("lag", "SLAVE LAG"),
            ],
            title="Brokers", order_by=("broker", "bid"), id="brokers",
        )  # fmt: skip

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
        table.filter_text = self.filter_text
        table.total = len(snapshot.brokers) if self.filter_text else None
        table.sync({b.key: self._cells(b, snapshot.taken_ms) for b in brokers})

    @staticmethod
    def _cells(b: BrokerRow, now_ms: int) -> tuple[object, ...]:
        state = Text("up", "green") if b.up else Text("DOWN", "bold red")
        if not b.up:
            dash = Text("-", "dim")
            return (b.cluster, Text(b.name, "bold red"), b.broker_id, b.role, b.addr, state,
                    b.version, dash, dash, dash, dash, dash, dash, dash, dash)  # fmt: skip
        disk = "-" if b.disk_ratio is None else f"{b.disk_ratio * 100:.1f}%"
        lag = "-" if b.slave_lag_bytes is None else f"{b.slave_lag_bytes:,} B"
        return (
            b.cluster, b.name, b.broker_id, b.role, b.addr, state, b.version,
            uptime_text(b.boot_ms, now_ms), f"{b.put_tps:.1f}", f"{b.get_tps:.1f}",
            fmt_int(b.put_today), fmt_int(b.get_today), disk, fmt_int(b.commit_log_max), lag,
        )  # fmt: skip

"""Master/slave figures (not a test): how fast an empty slave catches up, and what
SYNC_MASTER costs a synchronous send next to ASYNC_MASTER, from one run.

Usage: ``.venv/bin/python bench/ha_bench.py [--mib 1000] [--sends 5000] [--json]``

1. ``mq store generate`` writes ``--mib`` MiB of 4 KiB messages into the master's store
   (one 1 GiB commit log file, so the empty slave copies all of it: 4.9.8 starts an empty
   slave at the start of the master's last file).
2. A name server, that master (ASYNC_MASTER) and an empty slave start as ``mq`` processes
   on loopback; catch-up is timed from the slave's "listening" line until its commit
   log ends where the master's does, with both processes' CPU seconds.
3. ``mq bench produce --mode sync`` (1 KiB, one client) runs against the master with the
   slave connected, once as ASYNC_MASTER and once restarted as SYNC_MASTER.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from reliability_common import stop_process
from rich.console import Console
from rich.table import Table

from mqcore.client.sync import SyncAdmin

LISTEN = re.compile(r"listening on (\S+):(\d+)")
RECORD_BYTES = 4096
CLK_TCK = os.sysconf("SC_CLK_TCK")


class Procs:
    """Every process this run starts, stopped at the end whatever happens."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.procs: dict[str, subprocess.Popen[str]] = {}

    def start(self, name: str, *args: str) -> str:
        log = open(self.root / f"{name}.out", "w")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [sys.executable, "-m", "mqcli.main", *args],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env={**os.environ, "HOME": str(self.root)},
        )
        self.procs[name] = proc
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if m := LISTEN.search(line):
                return f"{m.group(1)}:{m.group(2)}"
        raise SystemExit(f"{name} did not start; see {self.root / (name + '.out')}")

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is not None:
            stop_process(proc)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name)

    def cpu_seconds(self, name: str) -> float:
        fields = Path(f"/proc/{self.procs[name].pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK


def broker_conf(root: Path, name: str, namesrv: str, **props: str) -> Path:
    settings = {
        "brokerName": "broker-a",
        "brokerIP1": "127.0.0.1",
        "namesrvAddr": namesrv,
        "storePathRootDir": str(root / name / "store"),
        "logDir": str(root / name / "logs"),
        "registerNameServerPeriod": "1000",
        **props,
    }
    path = root / f"{name}.conf"
    path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    return path


def commit_log_end(admin: SyncAdmin, addr: str) -> int:
    return int(admin.broker_runtime_info(addr)["commitLogMaxOffset"])


def ha_connections(admin: SyncAdmin, addr: str) -> int:
    return int(admin.broker_runtime_info(addr).get("haConnectionCount", "0"))


def wait_until(what: str, check: Any, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"not within {timeout} s: {what}")
        time.sleep(0.05)


def produce(namesrv: str, topic: str, sends: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "bench", "produce", "-n", namesrv, "-t", topic,
         "--mode", "sync", "--clients", "1", "--size", "1024", "--count", str(sends), "--json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(json.loads(out.stdout))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=1000, help="master data before the slave starts")
    ap.add_argument("--sends", type=int, default=5000, help="sync sends per role")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    console = Console(stderr=True)
    root = Path(tempfile.mkdtemp(prefix="mq-ha-bench-"))
    procs = Procs(root)
    client: SyncAdmin | None = None
    result: dict[str, Any] = {}
    try:
        count = args.mib * 1024 * 1024 // (RECORD_BYTES + 150)
        console.print(f"writing {count:,} messages (~{args.mib} MiB) into the master's store")
        subprocess.run(
            [sys.executable, "-m", "mqcli.main", "store", "generate", str(root / "m" / "store"),
             "--count", str(count), "--body-size", str(RECORD_BYTES), "-t", "HaBench"],
            check=True, capture_output=True,
        )  # fmt: skip
        namesrv = procs.start("namesrv", "namesrv", "--listen", "127.0.0.1:0")
        client = admin = SyncAdmin(namesrv)
        admin.start()
        master = procs.start(
            "master", "broker", "-c", str(broker_conf(root, "m", namesrv)), "--listen",
            "127.0.0.1:0",
        )  # fmt: skip
        end = commit_log_end(admin, master)
        slave_conf = broker_conf(root, "s", namesrv, brokerId="1", brokerRole="SLAVE")
        slave = procs.start("slave", "broker", "-c", str(slave_conf), "--listen", "127.0.0.1:0")
        t0 = time.monotonic()  # from "listening": the process start is not replication
        wait_until("slave caught up", lambda: commit_log_end(admin, slave) == end)
        seconds = time.monotonic() - t0
        result["catchUp"] = {
            "bytes": end,
            "seconds": round(seconds, 2),
            "mibPerSec": round(end / 2**20 / seconds, 1),
            "slaveCpuSeconds": round(procs.cpu_seconds("slave"), 1),
            "masterCpuSeconds": round(procs.cpu_seconds("master"), 1),
        }
        console.print(f"catch-up: {result['catchUp']}")
        for role in ("ASYNC_MASTER", "SYNC_MASTER"):
            procs.stop("master")
            conf = broker_conf(root, "m", namesrv, brokerRole=role)
            master = procs.start("master", "broker", "-c", str(conf), "--listen", "127.0.0.1:0")
            wait_until("slave reconnects", lambda m=master: ha_connections(admin, m) > 0)
            produce(namesrv, "HaWarm", 200)
            result[role] = produce(namesrv, f"HaLatency{role}", args.sends)
            console.print(f"{role}: {result[role]['msgsPerSec']:,.0f} msgs/s")
    finally:
        if client is not None:
            client.shutdown()
        procs.stop_all()
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    table = Table(title="mq master/slave, one run")
    for col in ("measure", "value"):
        table.add_column(col)
    c = result["catchUp"]
    table.add_row("empty slave catch-up", f"{c['bytes'] / 2**20:,.0f} MiB in {c['seconds']} s "
                  f"= {c['mibPerSec']} MiB/s (CPU s: slave {c['slaveCpuSeconds']}, "
                  f"master {c['masterCpuSeconds']})")  # fmt: skip
    for role in ("ASYNC_MASTER", "SYNC_MASTER"):
        r = result[role]
        lat = r["latencyUs"]
        table.add_row(
            f"sync send 1 KiB, {role}",
            f"{r['msgsPerSec']:,.0f} msgs/s, p50 {lat['p50']:,} µs, p99 {lat['p99']:,} µs, "
            f"p99.9 {lat['p99.9']:,} µs",
        )
    Console().print(table)


if __name__ == "__main__":
    main()

"""kill -9 of a SYNC_FLUSH broker under mixed load, N rounds: does it lose anything
it acknowledged? (Figures, not a test; tests/integration/test_kill_mixed.py runs 3 rounds.)

Usage: ``.venv/bin/python bench/kill_rounds.py [--rounds 50] [--seed 1] [--json]``

A name server and a SYNC_FLUSH broker run as ``mq`` processes on loopback (tmp dirs).
One client process sends single, batch, async, delayed (level 1-2) and transactional
messages (commit, rollback, and unknown until the broker's check-back) while a push
consumer group consumes. Each round: the broker starts on the same store and port, the
load runs for a random 1-3 s, SIGKILL. At the end the broker starts once more and
everything drains (delays fire, transaction checks resolve). Accounting: acknowledged,
lost (acknowledged and never delivered; must be 0), rolled-back transactions delivered
(must be 0), duplicates delivered (at-least-once allows some), recovery time per restart
(process start to the broker answering a request). Exits 1 on a loss.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from reliability_common import Cluster, Ledger, MixedLoad, drain, percentile, quiet_client_logs
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

TOPIC = "KillMixed"
BROKER_PROPS = {
    "transactionTimeOut": "1000",
    "transactionCheckInterval": "1000",
    "transactionCheckMax": "100",
    "registerNameServerPeriod": "2000",
}


async def run(
    rounds: int, seed: int, drain_timeout: float, console: Console, keep: bool = False
) -> dict[str, Any]:
    rng = random.Random(seed)
    root = Path(tempfile.mkdtemp(prefix="mq-kill-rounds-"))
    if keep:
        console.print(f"keeping {root}")
    cluster = Cluster(root, **BROKER_PROPS)
    ledger = Ledger()
    recovery: list[float] = []
    load: MixedLoad | None = None
    try:
        await cluster.start_namesrv()
        recovery.append(await cluster.start_broker())
        load = MixedLoad(cluster.namesrv_addr, TOPIC, ledger)
        await load.start()
        load.start_sending()
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        ) as progress:
            bar = progress.add_task("kill -9 rounds", total=rounds, status="")
            for n in range(rounds):
                if n:
                    recovery.append(await cluster.start_broker())
                await asyncio.sleep(rng.uniform(1.0, 3.0))
                cluster.kill_broker()
                progress.update(
                    bar,
                    advance=1,
                    status=f"acked {len(ledger.acked):,}  delivered {len(ledger.delivered):,}"
                    f"  last recovery {recovery[-1]:.2f} s",
                )
            recovery.append(await cluster.start_broker())
            await asyncio.sleep(1.0)  # the load sees the broker once more, then stops
            await load.stop_sending()
            dt = progress.add_task("drain", total=None, status="")
            await drain(
                load, drain_timeout, lambda owed: progress.update(dt, status=f"owed {owed:,}")
            )
            await asyncio.sleep(3.0)  # late duplicates and late (wrong) rollbacks show up
        await load.close()
        load = None
        exit_code = cluster.stop_broker()
    finally:
        if load is not None:
            await load.close()
        cluster.stop_all()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    rows = ledger.by_kind()
    owed = sorted(ledger.owed())
    rolled_back = sorted(ledger.rollbacks_delivered())
    return {
        "rounds": rounds,
        "seed": seed,
        "acknowledged": len(ledger.acked),
        "lost": len(owed),
        "lostSample": owed[:10],
        "rolledBackDelivered": len(rolled_back),
        "rolledBackDeliveredSample": rolled_back[:10],
        "duplicates": sum(r["duplicates"] for r in rows),
        "sendErrors": sum(ledger.send_errors.values()),
        "byKind": rows,
        "recoverySeconds": {
            "restarts": len(recovery) - 1,
            "p50": round(percentile(recovery[1:], 50), 3),
            "max": round(max(recovery[1:], default=0.0), 3),
            "first": round(recovery[0], 3),
            "listenP50": round(percentile(cluster.listen_seconds[1:], 50), 3),
            "listenMax": round(max(cluster.listen_seconds[1:], default=0.0), 3),
        },
        "finalStopExitCode": exit_code,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1, help="round lengths (1-3 s) come from it")
    ap.add_argument("--drain-timeout", type=float, default=60.0, help="s without progress")
    ap.add_argument("--keep", action="store_true", help="keep the tmp dir (stores, logs)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    console = Console(stderr=True)
    quiet_client_logs()
    result = asyncio.run(run(args.rounds, args.seed, args.drain_timeout, console, args.keep))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        table = Table(title=f"kill -9 under mixed SYNC_FLUSH load, {args.rounds} rounds")
        for col in ("kind", "acknowledged", "delivered", "lost", "duplicates", "send errors"):
            table.add_column(col, justify="right" if col != "kind" else "left")
        for r in result["byKind"]:
            table.add_row(
                r["kind"], f"{r['acknowledged']:,}", f"{r['delivered']:,}", str(r["lost"]),
                str(r["duplicates"]), str(r["sendErrors"]),
            )  # fmt: skip
        table.add_row(
            "all", f"{result['acknowledged']:,}", "", str(result["lost"]),
            str(result["duplicates"]), str(result["sendErrors"]), style="bold",
        )  # fmt: skip
        Console().print(table)
        rec = result["recoverySeconds"]
        Console().print(
            f"recovery (process start -> answering), {rec['restarts']} restarts: "
            f"p50 {rec['p50']} s, max {rec['max']} s; rolled-back transactions delivered: "
            f"{result['rolledBackDelivered']}"
        )
    if result["lost"] or result["rolledBackDelivered"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

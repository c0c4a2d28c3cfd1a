"""Soak: mixed load on one broker for ``--minutes``, with consumer restarts; every message
accounted for, broker memory and descriptors sampled. (Figures, not a test.)

Usage: ``.venv/bin/python bench/soak.py [--minutes 30] [--restart-every 180] [--json]``

A name server and a SYNC_FLUSH broker run as ``mq`` processes on loopback (tmp dirs).
Our client sends single, batch, async, delayed and transactional messages (paced by
``--pause``); a push consumer asks for 2 % of deliveries again (RECONSUME_LATER) and for
every id divisible by 97 always, with 2 reconsumes allowed, so those go through
``%RETRY%`` to ``%DLQ%``; the consumer is shut down and started afresh every
``--restart-every`` seconds. Broker VmRSS, RssAnon (VmRSS without the mapped store
files, which grow with the data) and open descriptors are sampled every 10 s.

At the end the load stops and everything drains. Each acknowledged message is then
delivered (consumed successfully), in the DLQ, in retry (asked again, not yet
redelivered), rolled back (a transaction; never delivered), or lost (none of those: must
be 0). Memory and descriptors are judged after warm-up (``--warm-up`` minutes, default the
first fifth of the run; bounded tables such as the transaction memory fill for longer at a
high rate, so judge after they are full): the
least-squares slope per hour and the range. Exits 1 on a loss.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from reliability_common import (
    Cluster,
    Ledger,
    MixedLoad,
    fd_count,
    quiet_client_logs,
    rss_kib,
    slope_per_hour,
    store_fd_count,
)
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

TOPIC = "Soak"
SAMPLE_EVERY = 10.0
BROKER_PROPS = {
    "transactionTimeOut": "1000",
    "transactionCheckInterval": "1000",
    "transactionCheckMax": "100",
}


async def settle(load: MixedLoad, timeout: float, progress: Any, task: Any) -> None:
    """Wait until nothing acknowledged is owed (retries and DLQ moves take ~40 s), or
    ``timeout`` s pass without progress."""
    last, since = -1, time.monotonic()
    while True:
        await load.read_dlq()
        owed = len(load.ledger.owed())
        progress.update(task, status=f"owed {owed:,}  in DLQ {len(load.ledger.dlq):,}")
        if owed == 0:
            return
        if owed != last:
            last, since = owed, time.monotonic()
        elif time.monotonic() - since > timeout:
            return
        await asyncio.sleep(2.0)


async def run(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="mq-soak-"))
    cluster = Cluster(root, heap_probe=args.heap_probe, **BROKER_PROPS)
    ledger = Ledger()
    samples: list[dict[str, float]] = []
    load: MixedLoad | None = None
    starts = 0
    seconds = args.minutes * 60
    try:
        await cluster.start_namesrv()
        await cluster.start_broker()
        await cluster.wait_registered()
        pid = cluster.broker_pid
        load = MixedLoad(
            cluster.namesrv_addr, TOPIC, ledger,
            fail_rate=0.02, poison_every=97, max_reconsume=2, rate_pause=args.pause,
        )  # fmt: skip
        await load.start()
        load.start_sending()
        t0 = time.monotonic()
        next_restart = t0 + args.restart_every
        next_sample = t0
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=console,
        ) as progress:
            bar = progress.add_task("soak", total=seconds, status="")
            while (now := time.monotonic()) - t0 < seconds:
                if now >= next_sample:
                    next_sample += SAMPLE_EVERY
                    fds, store_fds = fd_count(pid), store_fd_count(pid, cluster.root / "store")
                    sample = {
                        "t": round(now - t0, 1),
                        "rssKiB": rss_kib(pid),
                        "anonKiB": rss_kib(pid, "RssAnon"),
                        "fds": fds,
                        "storeFds": store_fds,
                        "otherFds": fds - store_fds,
                    }
                    samples.append(sample)
                    progress.update(
                        bar,
                        completed=now - t0,
                        status=f"acked {len(ledger.acked):,}  RSS {sample['rssKiB'] / 1024:.0f}"
                        f" MiB  fds {sample['fds']}  consumer starts {load.consumer_starts}",
                    )
                if now >= next_restart:
                    next_restart += args.restart_every
                    await load.stop_consumer()
                    await load.start_consumer()
                await asyncio.sleep(0.2)
            await load.stop_sending()
            dt = progress.add_task("drain", total=None, status="")
            await settle(load, args.drain_timeout, progress, dt)
            await asyncio.sleep(3.0)  # late duplicates and late (wrong) rollbacks
            await load.read_dlq()
        starts = load.consumer_starts
        await load.close()
        load = None
        cluster.stop_broker()
    finally:
        if load is not None:
            await load.close()
        cluster.stop_all()
        shutil.rmtree(root, ignore_errors=True)
    owed = ledger.owed()
    in_retry = {m for m in owed if ledger.failed_attempts[m]}
    lost = owed - in_retry
    acked_rollback = {m for m in ledger.acked if ledger.kind[m] == "tx-rollback"}
    delivered_ok = {m for m in ledger.acked if m in ledger.succeeded}
    warm_up = args.warm_up * 60 if args.warm_up is not None else seconds / 5
    warm = [s for s in samples if s["t"] >= warm_up] or samples

    def curve(key: str) -> dict[str, float]:
        values = [s[key] for s in warm]
        return {
            "first": values[0] if values else 0,
            "last": values[-1] if values else 0,
            "min": min(values, default=0),
            "max": max(values, default=0),
            "slopePerHour": round(slope_per_hour([(s["t"], s[key]) for s in warm]), 1),
        }

    return {
        "minutes": args.minutes,
        "warmUpSeconds": warm_up,
        "consumerStarts": starts,
        "acknowledged": len(ledger.acked),
        "delivered": len(delivered_ok),
        "inDlq": len({m for m in ledger.acked if m in ledger.dlq and m not in ledger.succeeded}),
        "inRetry": len(in_retry),
        "rolledBack": len(acked_rollback),
        "lost": len(lost),
        "lostSample": sorted(lost)[:10],
        "rolledBackDelivered": len(ledger.rollbacks_delivered()),
        "duplicates": sum(r["duplicates"] for r in ledger.by_kind()),
        "byKind": ledger.by_kind(),
        "rss": curve("rssKiB"),
        "anon": curve("anonKiB"),
        "fds": curve("fds"),
        "storeFds": curve("storeFds"),
        "otherFds": curve("otherFds"),
        "samples": samples,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--restart-every", type=float, default=180, help="consumer restart, s")
    ap.add_argument("--pause", type=float, default=0.01, help="s between sends per sender")
    ap.add_argument("--drain-timeout", type=float, default=90.0, help="s without progress")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--warm-up", type=float, help="minutes before memory and descriptors are judged"
    )
    ap.add_argument(
        "--heap-probe",
        type=Path,
        help="run the broker under tracemalloc; write its heap growth by site to this file",
    )
    args = ap.parse_args()
    console = Console(stderr=True)
    quiet_client_logs()
    result = asyncio.run(run(args, console))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        table = Table(title=f"soak, {args.minutes:g} minutes")
        table.add_column("measure")
        table.add_column("value", justify="right")
        for key in ("acknowledged", "delivered", "inDlq", "inRetry", "rolledBack", "lost",
                    "rolledBackDelivered", "duplicates"):  # fmt: skip
            table.add_row(key, f"{result[key]:,}")
        for key, unit in (("rss", "KiB"), ("anon", "KiB"), ("fds", ""), ("storeFds", ""),
                          ("otherFds", "")):  # fmt: skip
            c = result[key]
            table.add_row(
                f"broker {key} after warm-up",
                f"{c['first']:,}..{c['last']:,} {unit} (range {c['min']:,}-{c['max']:,}), "
                f"slope {c['slopePerHour']:+,}/h",
            )
        Console().print(table)
    if result["lost"] or result["rolledBackDelivered"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

"""What a Prometheus scrape of a broker costs with many topics and groups.

An in-process broker with ``metricsExporterType=PROM`` (its periodic services stopped,
so nothing else runs) gets ``--topics`` topics of 8 queues and ``--groups`` groups
(bench/loop_stalls.py's tables: an offset on every queue of each ``topic@group`` pair,
put and get statistics for each, a consumer member of every group), then one message
in queue 0 of every topic and every committed offset set back to 0, so every pair lags:
each scrape reads 8 offsets and queue ends per pair and one store time (a queue per
topic holds a message: 80,000 consume queue files would pass this machine's open file
and memory map limits).

Then ``--runs`` scrapes over HTTP, each measured three ways: the whole scrape as
Prometheus waits for it, the loop's part (reading the figures, in slices) and the
largest lag a loop-lag monitor waking every 2 ms saw meanwhile (how long any request
waited for the scrape: the slices, and the GIL held by the thread rendering the text).
The GIL switch interval is 1 ms, as `mq broker` sets it.

    .venv/bin/python bench/metrics_scrape.py [--topics 10000] [--groups 10000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from loop_stalls import QUEUES, load_tables, serve_clients
from rich.console import Console
from rich.table import Table

from mqcore.broker.config import BrokerConfig
from mqcore.broker.controller import BrokerController
from mqcore.common.loop_lag import LoopLagMonitor
from mqcore.message import MessageExt
from mqcore.remoting import run
from mqcore.store.store_config import MessageStoreConfig


def lag_everywhere(broker: BrokerController, topics: int, groups: int) -> None:
    """One message in queue 0 of every topic, every offset back to 0."""
    for i in range(topics):
        msg = MessageExt(
            topic=f"Topic{i}",
            body=b"x" * 100,
            queue_id=0,
            properties={"TAGS": "bench"},
            born_timestamp=int(time.time() * 1000),
            born_host=("127.0.0.1", 50000),
            store_host=("127.0.0.1", broker.server.port),
        )
        if not broker.store.put_message(msg).ok:
            raise SystemExit(f"put failed at Topic{i}")
    broker.reput.run()  # dispatched now, as the broker's reput would have done
    for i in range(groups):
        for q in range(QUEUES):
            broker.offsets.commit(f"Group{i}", f"Topic{i % topics}", q, 0)


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as response:
        return bytes(response.read())


async def scrape_once(broker: BrokerController) -> dict[str, float]:
    endpoint = broker.metrics
    assert endpoint is not None
    monitor = LoopLagMonitor(interval=0.002, warn_ms=float("inf"))
    monitor.start()
    while monitor.samples < 3:
        await asyncio.sleep(0.005)
    t0 = time.perf_counter()
    body = await asyncio.to_thread(get, endpoint.url)
    whole = (time.perf_counter() - t0) * 1000
    await asyncio.sleep(0.02)
    await monitor.stop()
    collector = endpoint.collector
    t0 = time.perf_counter()
    metrics = await collector.collect_sliced()  # type: ignore[attr-defined]
    read = (time.perf_counter() - t0) * 1000
    return {
        "scrapeMs": whole,
        "loopReadMs": read,
        "maxLoopLagMs": monitor.figures().max_ms,
        "bytes": len(body),
        "series": sum(len(f.samples) for f in metrics),
    }


async def bench(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    config = BrokerConfig(
        broker_name="scrape",
        broker_ip1="127.0.0.1",
        bind_address="127.0.0.1",
        listen_port=0,
        metrics_exporter_type="PROM",  # type: ignore[arg-type]
        metrics_prom_exporter_port=0,
    )
    store = MessageStoreConfig(
        store_path_root_dir=str(workdir),
        mapped_file_size_consume_queue=20 * 1000,  # 10,000 queues: small files
    )
    broker = BrokerController(config, store)
    await broker.start()
    try:
        await broker.services.stop()  # nothing periodic runs; the endpoint again:
        assert broker.metrics is not None
        broker.metrics.serve()
        t0 = time.perf_counter()
        load_tables(broker, args.topics, args.groups)
        gc.collect()
        gc.freeze()  # as `mq broker` does once started
        serve_clients(broker, args.topics, args.groups)
        lag_everywhere(broker, args.topics, args.groups)
        print(f"tables filled in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        rows = [await scrape_once(broker) for _ in range(args.runs)]
    finally:
        await broker.shutdown()
    return rows


def main() -> None:
    sys.setswitchinterval(0.001)  # as `mq broker` (mqcli/serving.py)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mq-scrape-") as tmp:
        rows = run(bench(args, Path(tmp)))
    if args.json:
        print(json.dumps(rows))
        return
    table = Table(title=f"scrapes at {args.topics} topics, {args.groups} groups (8 queues)")
    for name in ("scrape (ms)", "loop's read (ms)", "max loop lag (ms)", "series", "KiB"):
        table.add_column(name, justify="right")
    for row in rows:
        table.add_row(
            f"{row['scrapeMs']:.0f}",
            f"{row['loopReadMs']:.0f}",
            f"{row['maxLoopLagMs']:.1f}",
            str(row["series"]),
            f"{row['bytes'] / 1024:.0f}",
        )
    Console().print(table)


if __name__ == "__main__":
    main()

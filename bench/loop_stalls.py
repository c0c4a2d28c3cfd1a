"""How long a broker's housekeeping holds its event loop with many topics and groups.

An in-process broker (its own periodic services stopped, so each job runs alone) gets
``--topics`` topics and ``--groups`` subscription groups straight into its tables, an
offset for every ``topic@group`` pair on every queue (what a restart loads; frozen out
of garbage collections with ``--freeze``, as ``mq broker`` does), then put and get
statistics for each and a consumer member for every group (100 client connections, as
heartbeats would leave them). Then every periodic job is run ``--runs`` times while a
loop-lag monitor wakes every 2 ms. The table shows the largest lag it saw (the longest
the loop was held while the job ran, on the loop or by a thread holding the GIL), the
job's own wall time, and the longest garbage collection meanwhile (part of the lag,
not shortened by slicing). The name server is a separate ``mq namesrv`` process, so
registration is measured on the broker's side only.

    .venv/bin/python bench/loop_stalls.py [--topics 10000] [--groups 10000] [--freeze] [--json]

An older commit is measured with the same script: ``git archive COMMIT mqcore mqcli |
tar -x -C /tmp/old`` and ``PYTHONPATH=/tmp/old``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from procs import stop_processes
from rich.console import Console
from rich.table import Table

from mqcore.broker.client_manager import ClientChannelInfo
from mqcore.broker.config import BrokerConfig
from mqcore.broker.controller import BrokerController
from mqcore.broker.services import maybe_await
from mqcore.common.loop_lag import LoopLagMonitor
from mqcore.common.metadata import SubscriptionGroupConfig, TopicConfig
from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.bodies import SubscriptionData
from mqcore.remoting import run
from mqcore.store.store_config import MessageStoreConfig

QUEUES = 8
CLIENTS = 100
Job = Callable[[], Awaitable[object]]


class FakeChannel:
    """A client connection as the client tables see it (nothing is sent on it)."""

    def __init__(self, n: int) -> None:
        self.remote_address = f"10.0.{n // 250}.{n % 250}:40000"
        self.closed = False

    def close(self) -> None:
        self.closed = True


def start_namesrv(workdir: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqcli.main", "namesrv", "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=workdir,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(r"listening on (\S+:\d+)", line)
    if found is None:
        proc.kill()
        raise SystemExit(f"name server did not start: {line!r}")
    return proc, found.group(1)


def load_tables(broker: BrokerController, topics: int, groups: int) -> None:
    """What a broker restarted on such a store loads from config/*.json: the topics, the
    groups and an offset for every queue of each ``topic@group`` pair."""
    for i in range(topics):
        broker.topic_configs.update(TopicConfig(f"Topic{i}", QUEUES, QUEUES))
    for i in range(groups):
        group, topic = f"Group{i}", f"Topic{i % topics}"
        broker.groups.update(SubscriptionGroupConfig(group))
        for q in range(QUEUES):
            broker.offsets.commit(group, topic, q, 1000 + q)


def serve_clients(broker: BrokerController, topics: int, groups: int) -> None:
    """What traffic adds once it runs: put and get statistics of every topic and pair,
    and a consumer member of every group (``CLIENTS`` connections, as heartbeats leave
    them)."""
    channels = [FakeChannel(n) for n in range(CLIENTS)]
    for i in range(topics):
        broker.stats.on_put(f"Topic{i}", 1, 100)
    for i in range(groups):
        group, topic = f"Group{i}", f"Topic{i % topics}"
        broker.stats.on_get(group, topic, 1, 100)
        info = ClientChannelInfo(channels[i % CLIENTS], f"client-{i % CLIENTS}")  # type: ignore[arg-type]
        subs = [SubscriptionData(topic)]
        broker.consumers.register_consumer(
            group, info, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", subs,
            notify=False,
        )  # fmt: skip


class GcPauses:
    """The longest garbage collection (ms) since :meth:`reset`, from ``gc.callbacks``:
    a job that allocates much sets off collections that scan every object of the broker,
    a stall of its own that no slicing shortens."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._began = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.longest = max(self.longest, (time.perf_counter() - self._began) * 1000)

    def reset(self) -> None:
        self.longest = 0.0


async def measured(job: Job, runs: int, pause: float, gc_pauses: GcPauses) -> tuple[float, float]:
    """The largest loop lag (ms) seen while ``job`` ran, and its longest wall time (ms);
    ``pause`` seconds between runs."""
    worst_lag = worst_wall = 0.0
    gc_pauses.reset()
    for _ in range(runs):
        monitor = LoopLagMonitor(interval=0.002, warn_ms=float("inf"))
        monitor.start()
        while monitor.samples < 3:
            await asyncio.sleep(0.005)
        t0 = time.perf_counter()
        await job()
        wall = (time.perf_counter() - t0) * 1000
        await asyncio.sleep(0.02)  # the monitor's wake-up after the job is recorded
        await monitor.stop()
        worst_lag = max(worst_lag, monitor.figures().max_ms)
        worst_wall = max(worst_wall, wall)
        await asyncio.sleep(pause)
    return worst_lag, worst_wall


def timer_call(owner: object, name: str, before: str) -> Callable[[], object]:
    """What the broker's timer calls, by its name now or (measuring an older commit
    with PYTHONPATH, see bench/README.md) by the name it had before."""
    fn: Callable[[], object] = getattr(owner, name, None) or getattr(owner, before)
    return fn


def jobs(broker: BrokerController) -> dict[str, Job]:
    """Each periodic job of the broker (its period in the name), run once per call,
    and the admin reads that grow with the tables."""
    history = broker.stats_history

    async def register() -> None:
        await broker.outer_api.register_all(force=True)

    async def persist_configs() -> None:
        before = broker.topic_configs.writes, broker.groups.writes
        broker.request_persist_configs()
        while broker.topic_configs.writes <= before[0] or broker.groups.writes <= before[1]:
            await asyncio.sleep(0.01)

    async def persist_offsets() -> None:
        before = broker.offsets.writes
        await maybe_await(
            timer_call(broker, "persist_consumer_offsets_in_thread", "persist_consumer_offsets")()
        )
        while broker.offsets.writes <= before:
            await asyncio.sleep(0.005)

    def periodic(fn: Callable[[], object]) -> Job:
        """What the broker's timer calls: a plain call, awaited when it returns an
        awaitable (work handed to a thread)."""

        async def job() -> None:
            await maybe_await(fn())

        return job

    def admin(code: int) -> Job:
        processor = broker.server.dispatcher.processor_for(code)
        assert processor is not None

        async def job() -> None:
            request = RemotingCommand.request(code)
            await maybe_await(processor(FakeChannel(0), request))  # type: ignore[arg-type]

        return job

    return {
        "registration with the name server (forced, every 30 s)": register,
        "topics.json + subscriptionGroup.json (persister thread, 60 s)": persist_configs,
        "consumerOffset.json (every 5 s, in a thread now)": persist_offsets,
        "client scan (every 10 s)": periodic(broker.housekeeping.scan_not_active),
        "consumer filter clean (every 10 s)": periodic(broker.housekeeping.clean_filters),
        "statistics sample (every 1 s)": periodic(
            timer_call(broker.stats, "sample_in_slices", "sample")
        ),
        "statistics hour ring (every 10 min)": periodic(
            timer_call(history, "sample_hour_ring_in_slices", "sample_hour_ring")
        ),
        "statistics day ring (every hour)": periodic(
            timer_call(history, "sample_day_ring_in_slices", "sample_day_ring")
        ),
        "connection sweep (every 30 s)": periodic(broker.server.sweep),
        "GET_ALL_TOPIC_CONFIG (mq tui polls it)": admin(RequestCode.GET_ALL_TOPIC_CONFIG),
        "GET_ALL_SUBSCRIPTIONGROUP_CONFIG (mq tui)": admin(
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG
        ),
        "GET_ALL_CONSUMER_OFFSET (mq tui)": admin(RequestCode.GET_ALL_CONSUMER_OFFSET),
        "a full garbage collection (whatever sets it off)": periodic(gc.collect),
    }


async def bench(args: argparse.Namespace, workdir: Path, namesrv: str) -> list[dict[str, Any]]:
    config = BrokerConfig(
        broker_name="stalls",
        broker_ip1="127.0.0.1",
        bind_address="127.0.0.1",
        listen_port=0,
        namesrv_addr=namesrv,
    )
    store = MessageStoreConfig(store_path_root_dir=str(workdir / "store"))
    broker = BrokerController(config, store)
    await broker.start()
    try:
        await broker.services.stop()  # no periodic job runs but the one measured
        t0 = time.perf_counter()
        load_tables(broker, args.topics, args.groups)
        if args.freeze:  # what `mq broker` does once started (mqcli/serving.py)
            gc.collect()
            gc.freeze()
        serve_clients(broker, args.topics, args.groups)
        print(f"tables filled in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        tracked = len(gc.get_objects())
        print(f"{tracked} objects walked by a full collection", file=sys.stderr)
        rows = []
        gc_pauses = GcPauses()
        for name, job in jobs(broker).items():
            if args.only and args.only not in name:
                continue
            # the persister writes a file at most once a second: runs 1.1 s apart
            pause = 1.1 if "persister" in name else 0.05
            lag, wall = await measured(job, args.runs, pause, gc_pauses)
            rows.append(
                {"job": name, "maxLoopStallMs": round(lag, 1), "wallMs": round(wall, 1),
                 "maxGcPauseMs": round(gc_pauses.longest, 1)}
            )  # fmt: skip
            print(f"  {name}: {lag:.1f} ms", file=sys.stderr)
        return rows
    finally:
        await broker.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="Runs of each job (the worst shown).")
    parser.add_argument("--json", action="store_true", help="One JSON object, no table.")
    parser.add_argument("--only", metavar="TEXT", help="Only the jobs whose name has TEXT.")
    parser.add_argument(
        "--freeze",
        action="store_true",
        help="gc.freeze() once the tables a restart loads are in (as `mq broker` does).",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mq-loop-stalls-") as tmp:
        workdir = Path(tmp)
        proc, namesrv = start_namesrv(workdir)
        try:
            rows = run(bench(args, workdir, namesrv))
        finally:
            stop_processes([proc])
    if args.json:
        print(json.dumps({"topics": args.topics, "groups": args.groups, "jobs": rows}))
        return
    table = Table(title=f"Loop stalls, {args.topics:,} topics, {args.groups:,} groups")
    table.add_column("job")
    table.add_column("largest loop stall", justify="right")
    table.add_column("job wall time", justify="right")
    table.add_column("longest GC", justify="right")
    for row in rows:
        table.add_row(
            row["job"],
            f"{row['maxLoopStallMs']:.1f} ms",
            f"{row['wallMs']:.1f} ms",
            f"{row['maxGcPauseMs']:.1f} ms",
        )
    Console().print(table)


if __name__ == "__main__":
    main()

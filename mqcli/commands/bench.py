"""`mq bench produce`: a load generator in the spirit of RocketMQ's benchmark Producer and
`nats bench`: N clients send fixed-size messages for a count or a duration, with live
progress, then one table of msgs/s, MiB/s and latency percentiles (or JSON for machines).

Latency is measured per request (a batch counts once) from the call to its answer, so
sync mode gives the round trip a client waits for and async mode adds the queueing of
``--inflight`` requests per client. Oneway sends have no answer, hence no latency.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import typer

from mqcli.connect import NamesrvOpt, resolve_namesrv, run_async
from mqcli.output import console, err_console, fail, print_json_line
from mqcore.client import Producer, make_message
from mqcore.errors import MQClientError
from mqcore.message.model import Message

PERCENTILES = (50.0, 90.0, 99.0, 99.9)


class SendMode(StrEnum):
    sync = "sync"
    async_ = "async"
    oneway = "oneway"


@dataclass(slots=True)
class BenchStats:
    """What the clients share: counts and one latency sample (µs) per answered request."""

    sent: int = 0
    failed: int = 0
    latencies_us: list[float] = field(default_factory=list)
    first_error: str | None = None

    def fail(self, count: int, exc: BaseException) -> None:
        self.failed += count
        if self.first_error is None:
            self.first_error = str(exc) or type(exc).__name__


def percentile(sorted_samples: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of ascending samples (0 when there are none)."""
    if not sorted_samples:
        return 0.0
    rank = max(1, math.ceil(round(pct * len(sorted_samples) / 100.0, 9)))
    return sorted_samples[min(rank, len(sorted_samples)) - 1]


def summarize(stats: BenchStats, seconds: float, size: int) -> dict[str, object]:
    """The final figures; keys follow the JSON the `--json` output promises."""
    samples = sorted(stats.latencies_us)
    rate = stats.sent / seconds if seconds > 0 else 0.0
    latency: dict[str, float] = {f"p{p:g}": round(percentile(samples, p), 1) for p in PERCENTILES}
    latency["max"] = round(samples[-1], 1) if samples else 0.0
    return {
        "sent": stats.sent,
        "failed": stats.failed,
        "seconds": round(seconds, 3),
        "msgsPerSec": round(rate, 1),
        "mibPerSec": round(rate * size / (1024 * 1024), 2),
        "latencyUs": latency,
        "requests": len(samples),
    }


@dataclass(frozen=True, slots=True)
class ProduceLoad:
    topic: str
    size: int
    count: int | None
    duration: float | None
    clients: int
    batch: int
    mode: SendMode
    inflight: int
    tags: str | None
    keys: bool


class _Budget:
    """Hands out message numbers until the count or the deadline is reached."""

    def __init__(self, count: int | None, duration: float | None) -> None:
        self.next = 0
        self.count = count
        self.deadline = time.monotonic() + duration if duration is not None else None

    def take(self, want: int) -> range:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return range(0)
        end = self.next + want if self.count is None else min(self.count, self.next + want)
        taken = range(self.next, end)
        self.next = end
        return taken


async def _client(
    producer: Producer, load: ProduceLoad, budget: _Budget, stats: BenchStats
) -> None:
    body = b"x" * load.size

    def message(n: int) -> Message:
        keys = f"bench-{n}" if load.keys else None
        return make_message(load.topic, body, tags=load.tags, keys=keys)

    async def one(numbers: range) -> None:
        msgs = [message(n) for n in numbers]
        begin = time.perf_counter()
        try:
            if load.mode is SendMode.oneway:
                for msg in msgs:
                    await producer.send_oneway(msg)
            elif load.batch > 1:
                await producer.send_batch(msgs)
            else:
                await producer.send(msgs[0])
        except (TimeoutError, MQClientError, OSError) as exc:
            stats.fail(len(msgs), exc)
            return
        if load.mode is not SendMode.oneway:
            stats.latencies_us.append((time.perf_counter() - begin) * 1e6)
        stats.sent += len(msgs)

    if load.mode is not SendMode.async_:
        # One request at a time: await it here, no task per send in the measured path.
        while numbers := budget.take(load.batch):
            await one(numbers)
        return
    pending: set[asyncio.Task[None]] = set()
    while numbers := budget.take(load.batch):
        if len(pending) >= load.inflight:
            _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        pending.add(asyncio.create_task(one(numbers)))
    if pending:
        await asyncio.wait(pending)


async def run_produce(
    namesrv: str, load: ProduceLoad, *, show_progress: bool
) -> tuple[BenchStats, float]:
    """Run the load; returns the stats and the wall seconds from first send to last answer."""
    stats = BenchStats()
    async with Producer("mq-bench-producer", namesrv=namesrv) as producer:
        # One send before the clock starts: route lookup, topic auto-creation, connection.
        await producer.send(make_message(load.topic, b"x" * load.size, tags=load.tags))
        budget = _Budget(load.count, load.duration)
        begin = time.monotonic()
        clients = [_client(producer, load, budget, stats) for _ in range(load.clients)]
        work = asyncio.gather(*clients)
        if show_progress:
            await _with_progress(work, load, stats, begin)
        else:
            await work
        return stats, time.monotonic() - begin


async def _with_progress(
    work: asyncio.Future[list[None]], load: ProduceLoad, stats: BenchStats, begin: float
) -> None:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    total = load.count if load.count is not None else load.duration
    columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task("sending", total=total)
        while not work.done():
            await asyncio.wait([work], timeout=0.25)
            elapsed = time.monotonic() - begin
            done = stats.sent + stats.failed if load.count is not None else elapsed
            rate = stats.sent / elapsed if elapsed > 0 else 0.0
            progress.update(task, completed=done, description=f"{stats.sent:,} sent {rate:,.0f}/s")
    await work


def _print_table(summary: dict[str, object], load: ProduceLoad) -> None:
    from rich.table import Table

    latency = summary["latencyUs"]
    assert isinstance(latency, dict)
    table = Table(title=f"produce {load.topic}: {load.clients} client(s), {load.mode.value}")
    for name in ("msgs/s", "MiB/s", "sent", "failed", *latency):
        table.add_column(name if name in ("sent", "failed") or "/" in name else f"{name} µs",
                         justify="right")  # fmt: skip
    table.add_row(
        f"{summary['msgsPerSec']:,.0f}",
        f"{summary['mibPerSec']:,.2f}",
        f"{summary['sent']:,}",
        f"{summary['failed']:,}",
        *(f"{v:,.0f}" for v in latency.values()),
    )
    console.print(table)


def produce(
    topic: str = typer.Option("BenchTopic", "--topic", "-t", help="Topic to send to."),
    size: int = typer.Option(1024, "--size", "-s", min=1, help="Body size in bytes."),
    count: int | None = typer.Option(
        None, "--count", "-c", min=1, help="Messages to send (default 10000 without --duration)."
    ),
    duration: float | None = typer.Option(
        None, "--duration", "-d", min=0.1, help="Send for this many seconds instead."
    ),
    clients: int = typer.Option(4, "--clients", min=1, help="Concurrent senders."),
    batch: int = typer.Option(1, "--batch", "-b", min=1, help="Messages per send request."),
    mode: SendMode = typer.Option(SendMode.sync, "--mode", "-m", help="sync, async or oneway."),
    inflight: int = typer.Option(
        32, "--inflight", min=1, help="Requests in flight per client in async mode."
    ),
    tags: str | None = typer.Option(None, "--tags", help="Tag every message with this tag."),
    keys: bool = typer.Option(False, "--keys", help="Give every message a key (indexed)."),
    as_json: bool = typer.Option(False, "--json", "-j", help="One JSON object (msgsPerSec...)."),
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Send a fixed load and report msgs/s, MiB/s and latency percentiles.

    Examples:
      mq bench produce -t Bench --count 100000 --clients 4
      mq bench produce -t Bench --duration 30 --batch 32 --mode async --json
    """
    if count is not None and duration is not None:
        fail("give --count or --duration, not both")
    if batch > 1 and mode is SendMode.oneway:
        fail("--batch does not go with --mode oneway", hint="use --mode sync or async")
    if count is None and duration is None:
        count = 10_000
    load = ProduceLoad(topic, size, count, duration, clients, batch, mode, inflight, tags, keys)
    show = not as_json and err_console.is_terminal
    stats, seconds = run_async(run_produce(resolve_namesrv(namesrv), load, show_progress=show))
    summary = summarize(stats, seconds, size)
    if as_json:
        print_json_line(summary)
    else:
        _print_table(summary, load)
    if stats.failed:
        err_console.print(f"{stats.failed:,} failed; the first: {stats.first_error}")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    bench = typer.Typer(
        help="Load generators: `produce` sends a fixed load and reports rate and latency.",
        no_args_is_help=True,
    )
    bench.command("produce")(produce)
    app.add_typer(bench, name="bench")

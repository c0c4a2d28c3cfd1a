"""What every `mq bench` command shares, so produce, consume and e2e report the same
figures the same way: the tally their clients add to, nearest-rank percentiles, the
summary (one table, or one JSON object) and the live progress bar."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from mqcli.output import console, err_console

T = TypeVar("T")

PERCENTILES = (50.0, 90.0, 99.0, 99.9)
MIB = 1024 * 1024
PROGRESS_INTERVAL = 0.25
"""Seconds between progress bar updates (rich redraws on its own in between)."""


class BenchAbort(Exception):
    """A run cannot go on (empty topic, failed backlog fill): one error line and a hint.

    Raised inside the event loop and turned into :func:`mqcli.output.fail` outside it, so
    the clients shut down cleanly before the process exits.
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


@dataclass(slots=True)
class Tally:
    """What the clients of one run add to: messages done (sent or received), their
    bytes, failures, and one latency sample (µs) per measured request or message."""

    count: int = 0
    bytes: int = 0
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


def latency_summary(samples: Sequence[float]) -> dict[str, float]:
    """p50, p90, p99, p99.9 and max of the samples (µs, rounded to 0.1)."""
    ordered = sorted(samples)
    latency = {f"p{p:g}": round(percentile(ordered, p), 1) for p in PERCENTILES}
    latency["max"] = round(ordered[-1], 1) if ordered else 0.0
    return latency


def summarize(
    tally: Tally, seconds: float, counts: dict[str, int], latency_from: str
) -> dict[str, object]:
    """The final figures: the command's own ``counts`` (sent, received, ...), then rates
    over ``seconds`` and the latency percentiles -- the keys `--json` promises."""
    per_sec = 1 / seconds if seconds > 0 else 0.0
    return {
        **counts,
        "bytes": tally.bytes,
        "seconds": round(seconds, 3),
        "msgsPerSec": round(tally.count * per_sec, 1),
        "mibPerSec": round(tally.bytes * per_sec / MIB, 2),
        "latencyUs": latency_summary(tally.latencies_us),
        "latencyFrom": latency_from,
    }


def print_table(title: str, summary: dict[str, object], counts: Sequence[str]) -> None:
    """One row: msgs/s, MiB/s, the named counts, then the latency percentiles in µs."""
    from rich.table import Table

    latency = summary["latencyUs"]
    assert isinstance(latency, dict)
    table = Table(title=title)
    for name in ("msgs/s", "MiB/s", *counts, *(f"{p} µs" for p in latency)):
        table.add_column(name, justify="right")
    table.add_row(
        f"{summary['msgsPerSec']:,.0f}",
        f"{summary['mibPerSec']:,.2f}",
        *(f"{summary[name]:,}" for name in counts),
        *(f"{v:,.0f}" for v in latency.values()),
    )
    console.print(table)


Status = Callable[[float], tuple[float, str]]
"""Seconds since the start -> (completed, description) for the progress bar."""


async def with_progress(
    work: Awaitable[T], *, show: bool, total: float | None, status: Status
) -> T:
    """Await ``work``; with ``show`` (stderr is a terminal, no --json) draw a transient
    progress bar on stderr meanwhile, fed by ``status`` a few times a second."""
    if not show:
        return await work
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    future = asyncio.ensure_future(work)
    begin = time.monotonic()
    columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    try:
        with Progress(*columns, console=err_console, transient=True) as progress:
            task = progress.add_task(status(0.0)[1], total=total)
            while not future.done():
                await asyncio.wait([future], timeout=PROGRESS_INTERVAL)
                completed, description = status(time.monotonic() - begin)
                progress.update(task, completed=completed, description=description)
    finally:
        if not future.done():
            future.cancel()
    return await future


def rate(count: int, seconds: float) -> float:
    """``count`` per second (0 before the clock moved); for progress lines."""
    return count / seconds if seconds > 0 else 0.0

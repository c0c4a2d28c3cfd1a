"""`mq bench produce`: a load generator in the spirit of RocketMQ's benchmark Producer and
`nats bench`: N clients send fixed-size messages for a count or a duration (optionally
paced to a rate), with live progress, then one table of msgs/s, MiB/s and latency
percentiles (or JSON for machines).

Latency is measured per request (a batch counts once) from the call to its answer, so
sync mode gives the round trip a client waits for and async mode adds the queueing of
``--inflight`` requests per client. Oneway sends have no answer, hence no latency.

The senders here also fill `mq bench consume --backlog` and drive `mq bench e2e`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import typer

from mqcli.commands.bench.stats import Status, Tally, print_table, rate, summarize, with_progress
from mqcli.connect import NamesrvOpt, resolve_namesrv, run_async
from mqcli.credentials import client_config
from mqcli.output import err_console, fail, print_json_line
from mqcore.client import Producer, make_message
from mqcore.errors import MQClientError
from mqcore.message.model import Message

PRODUCER_GROUP = "mq-bench-producer"

Body = Callable[[int], bytes]
"""Message number -> its body (fixed bytes for produce; stamped ones for e2e)."""


class SendMode(StrEnum):
    sync = "sync"
    async_ = "async"
    oneway = "oneway"


@dataclass(frozen=True, slots=True)
class SendLoad:
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
    rate: float | None = None


def check_send_flags(
    count: int | None, duration: float | None, batch: int, mode: SendMode
) -> tuple[int | None, float | None]:
    """The flag checks produce and e2e share; returns (count, duration) with the default
    count of 10000 when neither was given."""
    if count is not None and duration is not None:
        fail("give --count or --duration, not both")
    if batch > 1 and mode is SendMode.oneway:
        fail("--batch does not go with --mode oneway", hint="use --mode sync or async")
    return (10_000 if count is None and duration is None else count), duration


class Budget:
    """Hands out message numbers until the count or the deadline is reached; with a
    rate, message n is due ``n / rate`` seconds after the start."""

    def __init__(self, count: int | None, duration: float | None, rate: float | None) -> None:
        self.next = 0
        self.count = count
        self.rate = rate
        self.begin = time.monotonic()
        self.deadline = self.begin + duration if duration is not None else None

    def take(self, want: int) -> range:
        if self.deadline is not None:
            due = self.begin + self.next / self.rate if self.rate else time.monotonic()
            if due >= self.deadline:
                return range(0)
        end = self.next + want if self.count is None else min(self.count, self.next + want)
        taken = range(self.next, end)
        self.next = end
        return taken

    async def pace(self, n: int) -> None:
        """Wait until message ``n`` is due (at once without a rate)."""
        if self.rate:
            delay = self.begin + n / self.rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)


async def _sender(
    producer: Producer, load: SendLoad, budget: Budget, tally: Tally, body: Body
) -> None:
    def message(n: int) -> Message:
        keys = f"bench-{n}" if load.keys else None
        return make_message(load.topic, body(n), tags=load.tags, keys=keys)

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
            tally.fail(len(msgs), exc)
            return
        if load.mode is not SendMode.oneway:
            tally.latencies_us.append((time.perf_counter() - begin) * 1e6)
        tally.count += len(msgs)
        tally.bytes += len(msgs) * load.size

    if load.mode is not SendMode.async_:
        # One request at a time: await it here, no task per send in the measured path.
        while numbers := budget.take(load.batch):
            await budget.pace(numbers.start)
            await one(numbers)
        return
    pending: set[asyncio.Task[None]] = set()
    while numbers := budget.take(load.batch):
        await budget.pace(numbers.start)
        if len(pending) >= load.inflight:
            _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        pending.add(asyncio.create_task(one(numbers)))
    if pending:
        await asyncio.wait(pending)


async def send_load(
    producer: Producer, load: SendLoad, tally: Tally, body: Body | None = None
) -> None:
    """Run ``load.clients`` senders over one producer until the budget is spent."""
    fixed = b"x" * load.size
    budget = Budget(load.count, load.duration, load.rate)
    bodies = body or (lambda _n: fixed)
    await asyncio.gather(
        *(_sender(producer, load, budget, tally, bodies) for _ in range(load.clients))
    )


async def warm_up(producer: Producer, topic: str, size: int, tags: str | None) -> None:
    """One send before the clock starts: route lookup, topic auto-creation, connection."""
    await producer.send(make_message(topic, b"x" * size, tags=tags))


def send_status(load: SendLoad, tally: Tally, what: str = "sent") -> Status:
    """Progress of a send load: messages against the count, or time against the duration."""

    def status(elapsed: float) -> tuple[float, str]:
        done = tally.count + tally.failed if load.count is not None else elapsed
        return done, f"{tally.count:,} {what} {rate(tally.count, elapsed):,.0f}/s"

    return status


def send_total(load: SendLoad) -> float | None:
    return load.count if load.count is not None else load.duration


async def run_produce(namesrv: str, load: SendLoad, *, show_progress: bool) -> tuple[Tally, float]:
    """Run the load; returns the tally and the wall seconds from first send to last answer."""
    tally = Tally()
    async with Producer(PRODUCER_GROUP, namesrv=namesrv, client_config=client_config()) as producer:
        await warm_up(producer, load.topic, load.size, load.tags)
        begin = time.monotonic()
        await with_progress(
            send_load(producer, load, tally),
            show=show_progress,
            total=send_total(load),
            status=send_status(load, tally),
        )
        return tally, time.monotonic() - begin


TopicOpt = typer.Option("BenchTopic", "--topic", "-t", help="Topic to use.")
SizeOpt = typer.Option(1024, "--size", "-s", min=1, help="Body size in bytes.")
CountOpt = typer.Option(
    None, "--count", "-c", min=1, help="Messages to send (default 10000 without --duration)."
)
DurationOpt = typer.Option(
    None, "--duration", "-d", min=0.1, help="Send for this many seconds instead."
)
ClientsOpt = typer.Option(4, "--clients", min=1, help="Concurrent senders.")
BatchOpt = typer.Option(1, "--batch", "-b", min=1, help="Messages per send request.")
ModeOpt = typer.Option(SendMode.sync, "--mode", "-m", help="sync, async or oneway.")
InflightOpt = typer.Option(
    32, "--inflight", min=1, help="Requests in flight per client in async mode."
)
RateOpt = typer.Option(
    None, "--rate", "-r", min=0.1, help="Pace the sends to this many messages/s in total."
)
TagsOpt = typer.Option(None, "--tags", help="Tag every message with this tag.")
KeysOpt = typer.Option(False, "--keys", help="Give every message a key (indexed).")
JsonOpt = typer.Option(False, "--json", "-j", help="One JSON object (msgsPerSec...).")


def produce(
    topic: str = TopicOpt,
    size: int = SizeOpt,
    count: int | None = CountOpt,
    duration: float | None = DurationOpt,
    clients: int = ClientsOpt,
    batch: int = BatchOpt,
    mode: SendMode = ModeOpt,
    inflight: int = InflightOpt,
    rate_: float | None = RateOpt,
    tags: str | None = TagsOpt,
    keys: bool = KeysOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Send a fixed load and report msgs/s, MiB/s and latency percentiles.

    Examples:
      mq bench produce -t Bench --count 100000 --clients 4
      mq bench produce -t Bench --duration 30 --batch 32 --mode async --json
      mq bench produce -t Bench --duration 60 --rate 2000
    """
    count, duration = check_send_flags(count, duration, batch, mode)
    load = SendLoad(topic, size, count, duration, clients, batch, mode, inflight, tags, keys, rate_)
    show = not as_json and err_console.is_terminal
    tally, seconds = run_async(run_produce(resolve_namesrv(namesrv), load, show_progress=show))
    counts = {"sent": tally.count, "failed": tally.failed}
    summary = summarize(tally, seconds, counts, "request")
    summary["requests"] = len(tally.latencies_us)
    if as_json:
        print_json_line(summary)
    else:
        title = f"produce {load.topic}: {load.clients} client(s), {load.mode.value}"
        print_table(title, summary, list(counts))
    if tally.failed:
        err_console.print(f"{tally.failed:,} failed; the first: {tally.first_error}")
        raise typer.Exit(1)

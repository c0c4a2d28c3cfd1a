"""`mq bench consume`: drain a topic as fast as the client can, in the spirit of RocketMQ's
benchmark Consumer and `nats bench sub`.

What it reads: by default every message the topic holds when it starts (first offsets to
the end offsets pinned at start); ``--backlog N`` first sends N messages (not measured)
and drains exactly those; ``--count N`` stops after N messages and ``--duration S`` after
S seconds, both following new messages past the end (for a concurrent producer).

How: ``--clients`` LitePullConsumers (the client a user polls with, the same path the
peers benchmark measures) split the queues round robin by ``assign`` -- no rebalance, so
no queue is read twice while members join -- and each queue is seeked to its start. Each
queue's pull loop keeps long polls of ``--pull-batch`` messages going while the caller
counts, so the figure includes decoding every message.

Latency is consume time minus the message's *store* timestamp (the broker's clock,
millisecond resolution): for a live topic how long a message waited to be consumed; for a
backlog, its age. ``mq bench e2e`` measures from the send instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Sequence
from enum import StrEnum

import typer

from mqcli.commands.bench.produce import (
    PRODUCER_GROUP,
    JsonOpt,
    SendLoad,
    SendMode,
    TopicOpt,
    send_load,
    send_status,
    warm_up,
)
from mqcli.commands.bench.stats import (
    BenchAbort,
    Tally,
    print_table,
    rate,
    summarize,
    with_progress,
)
from mqcli.connect import NamesrvOpt, resolve_namesrv, run_async
from mqcli.credentials import client_config
from mqcli.output import err_console, fail, print_json_line
from mqcore.client import (
    Admin,
    ConsumeFromWhere,
    LitePullConsumer,
    MessageQueue,
    Producer,
    TopicRouteNotFoundError,
)
from mqcore.message import MessageExt

CONSUMER_GROUP = "mq-bench"
POLL_SLICE = 0.1
"""Longest wait in one poll, so the clients notice a stop condition quickly."""
ROUTE_WAIT = 15.0
"""Seconds to wait for the route of a topic the bench itself just created."""
FILL_BATCH = 32
NEW_TOPIC_QUEUES = 8
"""Queues per broker of a topic the bench creates (as `mq topic create`)."""
FILL_CLIENTS = 4


class StartAt(StrEnum):
    first = "first"
    last = "last"


class Receiver:
    """Counts what the consumer clients hand over and says when they stop: at ``target``
    messages, at ``deadline``, or after ``idle`` seconds without a message while a
    target is set (what is still owed then is *missing*)."""

    latency_from = "storeTimestamp"

    def __init__(self, target: int | None, deadline: float | None, idle: float) -> None:
        self.tally = Tally()
        self.target = target
        self.deadline = deadline
        self.idle = idle
        self.begin = time.monotonic()
        self.last = self.begin
        """When the last counted message arrived."""
        self._quiet_since = self.begin
        self.stopped_at: float | None = None
        self.timed_out = False
        self.clients = 0
        """Consumers that got queues (at most one per queue)."""
        self.duplicates = 0
        self._offsets: dict[tuple[tuple[str, int], str, int], int] = {}
        """(store host, topic, queue id) -> the last offset counted."""

    def expect(self, target: int) -> None:
        """Set the target late (e2e: once the senders are done); idleness counts from now."""
        self.target = target
        self._quiet_since = time.monotonic()

    def take(self, msgs: list[MessageExt]) -> None:
        """Count a polled batch (never beyond the target): bytes and store-to-now latency.

        A batch is one pull of one queue, in offset order, so one comparison per batch
        with the queue's last offset finds messages delivered twice (counted once).
        """
        now_ms = time.time() * 1000.0
        first = msgs[0]
        queue = (first.store_host, first.topic, first.queue_id)
        last = self._offsets.get(queue, -1)
        if first.queue_offset <= last:
            fresh = [m for m in msgs if m.queue_offset > last]
            self.duplicates += len(msgs) - len(fresh)
            if not fresh:
                return
            msgs = fresh
        self._offsets[queue] = msgs[-1].queue_offset
        tally = self.tally
        if self.target is not None:
            msgs = msgs[: max(0, self.target - tally.count)]
        for m in msgs:
            tally.latencies_us.append((now_ms - m.store_timestamp) * 1000.0)
            tally.bytes += len(m.body)
        if msgs:
            tally.count += len(msgs)
            self.last = time.monotonic()

    def finished(self) -> bool:
        if self.stopped_at is not None:
            return True
        now = time.monotonic()
        reached = self.target is not None and self.tally.count >= self.target
        if reached or (self.deadline is not None and now >= self.deadline):
            self.stopped_at = now
        elif self.target is not None and now - max(self.last, self._quiet_since) >= self.idle:
            self.stopped_at = now
            self.timed_out = True
        return self.stopped_at is not None

    def poll_timeout(self) -> float:
        if self.deadline is None:
            return POLL_SLICE
        return max(0.0, min(POLL_SLICE, self.deadline - time.monotonic()))

    @property
    def missing(self) -> int:
        return max(0, self.target - self.tally.count) if self.target is not None else 0

    @property
    def seconds(self) -> float:
        """Up to the last counted message when a count was the goal, else to the stop."""
        end = self.last if self.target is not None else self.stopped_at or time.monotonic()
        return end - self.begin

    def status(self, elapsed: float) -> tuple[float, str]:
        done = self.tally.count if self.target is not None else elapsed
        return done, f"{self.tally.count:,} received {rate(self.tally.count, elapsed):,.0f}/s"


async def drain(consumer: LitePullConsumer, receiver: Receiver) -> None:
    """One client's loop: poll and count until the receiver says stop."""
    while not receiver.finished():
        msgs = await consumer.poll(timeout=receiver.poll_timeout())
        if msgs:
            receiver.take(msgs)


async def queue_offsets(
    admin: Admin, topic: str, *, wait: bool, brokers: Sequence[str] = ()
) -> dict[MessageQueue, tuple[int, int]]:
    """Each queue's (min, max) offset; with ``wait``, give a topic the bench just created
    time to show up in the route (on each of ``brokers``)."""
    deadline = time.monotonic() + (ROUTE_WAIT if wait else 0.0)
    while True:
        try:
            status = await admin.topic_status(topic)
        except TopicRouteNotFoundError:
            if time.monotonic() >= deadline:
                raise
        else:
            seen = {q.mq.broker_name for q in status}
            if seen.issuperset(brokers) or time.monotonic() >= deadline:
                return {q.mq: (q.min_offset, q.max_offset) for q in status}
        await asyncio.sleep(0.1)


async def ensure_topic(admin: Admin, topic: str) -> None:
    """Create a missing topic on every master before the first send. Left to
    auto-creation, each broker would add its queues when a send first reaches it -- after
    the consumers were placed on the queues known then, so those messages went unread."""
    try:
        await admin.topic_status(topic)
        return
    except TopicRouteNotFoundError:
        pass
    brokers = await admin.create_topic(topic, queues=NEW_TOPIC_QUEUES)
    await queue_offsets(admin, topic, wait=True, brokers=brokers)


@contextlib.asynccontextmanager
async def consumers(
    namesrv: str, group: str, clients: int, pull_batch: int, starts: dict[MessageQueue, int]
) -> AsyncIterator[list[LitePullConsumer]]:
    """Up to ``clients`` started consumers (never more than queues) that split the
    queues round robin, each queue seeked to its start offset; shut down on exit."""
    queues = sorted(starts)
    shares = [queues[i::clients] for i in range(min(clients, len(queues)))]
    opened: list[LitePullConsumer] = []
    try:
        for i, share in enumerate(shares):
            consumer = LitePullConsumer(
                group,
                namesrv=namesrv,
                consume_from_where=ConsumeFromWhere.LAST,  # least to prefetch before the seek
                pull_batch_size=pull_batch,
                instance_name=f"mq-bench-{os.getpid()}-{i}",
                client_config=client_config(),
            )
            consumer.assign(share)
            opened.append(consumer)
            await consumer.start()
            for mq in share:
                await consumer.seek(mq, starts[mq])
        yield opened
    finally:
        for consumer in reversed(opened):
            with contextlib.suppress(Exception):
                await consumer.shutdown()


async def _fill(
    namesrv: str, admin: Admin, load: SendLoad, show: bool
) -> dict[MessageQueue, tuple[int, int]]:
    """Send the backlog; returns each queue's offsets from before it."""
    fill = Tally()
    await ensure_topic(admin, load.topic)
    async with Producer(PRODUCER_GROUP, namesrv=namesrv, client_config=client_config()) as producer:
        await warm_up(producer, load.topic, load.size, None)
        before = await queue_offsets(admin, load.topic, wait=True)
        status = send_status(load, fill, f"sent to {load.topic} (backlog)")
        await with_progress(
            send_load(producer, load, fill), show=show, total=load.count, status=status
        )
    if fill.failed:
        raise BenchAbort(
            f"filling the backlog: {fill.failed:,} of {load.count:,} sends failed;"
            f" the first: {fill.first_error}"
        )
    return before


async def run_consume(
    namesrv: str,
    topic: str,
    group: str,
    *,
    backlog: tuple[int, int] | None,
    start_at: StartAt,
    count: int | None,
    duration: float | None,
    clients: int,
    pull_batch: int,
    idle: float,
    show_progress: bool,
) -> Receiver:
    """Plan where each queue starts (and the drain's target), then consume."""
    async with Admin(
        namesrv, instance_name=f"mq-bench-admin-{os.getpid()}", client_config=client_config()
    ) as admin:
        before: dict[MessageQueue, tuple[int, int]] | None = None
        if backlog is not None:
            size, messages = backlog
            load = SendLoad(topic, size, messages, None, FILL_CLIENTS, FILL_BATCH,
                            SendMode.async_, 4, None, False)  # fmt: skip
            before = await _fill(namesrv, admin, load, show_progress)
        offsets = await queue_offsets(admin, topic, wait=False)
    if before is not None:  # the backlog: from the ends before it (a queue new since: all)
        starts = {mq: before.get(mq, (low, low))[1] for mq, (low, _high) in offsets.items()}
    else:
        pick = 0 if start_at is StartAt.first else 1
        starts = {mq: bounds[pick] for mq, bounds in offsets.items()}
    held = sum(max(0, offsets[mq][1] - start) for mq, start in starts.items())
    target = count if count is not None else (None if duration is not None else held)
    if target == 0:
        raise BenchAbort(
            f"topic {topic} holds no messages to drain",
            hint=f"fill it first: --backlog N, or mq bench produce -t {topic}",
        )
    # The clock starts before the seeks: what the first queues prefetch meanwhile counts.
    deadline = time.monotonic() + duration if duration is not None else None
    receiver = Receiver(target, deadline, idle)
    async with consumers(namesrv, group, clients, pull_batch, starts) as clients_:
        receiver.clients = len(clients_)
        work = asyncio.gather(*(drain(c, receiver) for c in clients_))
        await with_progress(
            work, show=show_progress, total=target or duration, status=receiver.status
        )
    return receiver


GroupOpt = typer.Option(
    CONSUMER_GROUP, "--group", "-g", help="Consumer group (offsets are committed to it)."
)
PullBatchOpt = typer.Option(32, "--pull-batch", min=1, max=1024, help="Messages per pull request.")
IDLE_TIMEOUT = 20.0
"""Longer than a broker holds a long poll (15 s): a message that a held pull only finds
when its hold runs out still counts, as late, not as missing."""
IdleOpt = typer.Option(
    IDLE_TIMEOUT,
    "--idle-timeout",
    min=0.1,
    help="Give up after this many seconds without a message; what is owed counts as missing.",
)


def report(
    receiver: Receiver,
    counts: dict[str, int],
    title: str,
    as_json: bool,
    columns: Sequence[str] | None = None,
) -> None:
    """Print the summary of a consuming run (a table with ``columns`` of the counts, or
    JSON with all of them), and a line on stderr about missing messages."""
    summary = summarize(receiver.tally, receiver.seconds, counts, receiver.latency_from)
    if as_json:
        print_json_line(summary)
    else:
        print_table(title, summary, list(counts) if columns is None else columns)
    if receiver.duplicates:
        err_console.print(f"{receiver.duplicates:,} delivered twice (counted once)")
    if receiver.missing:
        err_console.print(
            f"{receiver.missing:,} missing: no message for {receiver.idle:g}s"
            f" after {receiver.tally.count:,} received"
        )


def consume(
    topic: str = TopicOpt,
    group: str = GroupOpt,
    count: int | None = typer.Option(
        None, "--count", "-c", min=1, help="Stop after this many messages (follows the topic)."
    ),
    duration: float | None = typer.Option(
        None, "--duration", "-d", min=0.1, help="Consume for this many seconds (follows the topic)."
    ),
    backlog: int | None = typer.Option(
        None, "--backlog", min=1, help="First send this many messages, then drain exactly those."
    ),
    size: int | None = typer.Option(
        None, "--size", "-s", min=1, help="Body size of the --backlog messages (default: 1024)."
    ),
    start_at: StartAt | None = typer.Option(
        None, "--from", help="Start at the first or the last offset of each queue (default: first)."
    ),
    clients: int = typer.Option(1, "--clients", min=1, help="Consumers that split the queues."),
    pull_batch: int = PullBatchOpt,
    idle: float = IdleOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Drain a topic and report msgs/s, MiB/s and store-to-consume latency percentiles.

    Without --count or --duration it reads what the topic holds at the start (or what
    --backlog sent) and stops at its end. Latency is now minus each message's store
    timestamp (broker clock, millisecond resolution).

    Examples:
      mq bench consume -t Bench --backlog 100000
      mq bench consume -t Bench --clients 2 --pull-batch 64
      mq bench consume -t Bench --from last --duration 30 --json
    """
    if count is not None and duration is not None:
        fail("give --count or --duration, not both")
    if backlog is not None and start_at is not None:
        fail("--from does not go with --backlog", hint="the backlog is read from its first message")
    if backlog is None and size is not None:
        fail("--size goes with --backlog", hint="it is the body size of the messages to send first")
    if start_at is StartAt.last and count is None and duration is None:
        fail("--from last leaves nothing to drain", hint="add --count N or --duration S")
    show = not as_json and err_console.is_terminal
    fill = (size or 1024, backlog) if backlog is not None else None
    try:
        receiver = run_async(
            run_consume(
                resolve_namesrv(namesrv), topic, group, backlog=fill,
                start_at=start_at or StartAt.first, count=count, duration=duration,
                clients=clients, pull_batch=pull_batch, idle=idle, show_progress=show,
            )
        )  # fmt: skip
    except BenchAbort as exc:
        fail(exc.message, hint=exc.hint)
    counts = {"received": receiver.tally.count, "missing": receiver.missing,
              "duplicates": receiver.duplicates}  # fmt: skip
    title = f"consume {topic}: {receiver.clients} client(s), latency = now - store time"
    report(receiver, counts, title, as_json, columns=("received", "missing"))
    if receiver.missing:
        raise typer.Exit(1)

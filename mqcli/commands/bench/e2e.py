"""`mq bench e2e`: producers and consumers at once in one process, like `nats bench` with
publishers and subscribers: every message is sent, received and timed.

Each body starts with the run's random id, the message's number and the moment the
sender built it (``perf_counter_ns``, right before the send call), so latency is receive
time minus send time on one clock with microsecond resolution (the born timestamp in the
message has only milliseconds), numbers received twice count as duplicates, and messages
of other runs on the same topic are ignored. The consumers start at the end of every
queue before the first send; after the last send they wait until every sent message is
in, or until ``--idle-timeout`` passes without one (the rest count as missing).
"""

from __future__ import annotations

import asyncio
import os
import struct
import time

import typer

from mqcli.commands.bench.consume import (
    GroupOpt,
    IdleOpt,
    PullBatchOpt,
    Receiver,
    consumers,
    drain,
    ensure_topic,
    queue_offsets,
    report,
)
from mqcli.commands.bench.produce import (
    PRODUCER_GROUP,
    BatchOpt,
    Body,
    ClientsOpt,
    CountOpt,
    DurationOpt,
    InflightOpt,
    JsonOpt,
    KeysOpt,
    ModeOpt,
    RateOpt,
    SendLoad,
    SendMode,
    SizeOpt,
    TagsOpt,
    TopicOpt,
    check_send_flags,
    send_load,
    send_total,
    warm_up,
)
from mqcli.commands.bench.stats import Tally, rate, with_progress
from mqcli.connect import NamesrvOpt, resolve_namesrv, run_async
from mqcli.credentials import client_config
from mqcli.output import err_console, fail
from mqcore.client import Admin, Producer
from mqcore.message import MessageExt

STAMP = struct.Struct(">QQQ")
"""What leads every e2e body: run id, message number, send time (perf_counter_ns)."""


class StampedReceiver(Receiver):
    """A receiver that reads the stamp: send-to-receive latency, duplicates, strangers."""

    latency_from = "send"

    def __init__(self, idle: float) -> None:
        super().__init__(None, None, idle)
        self.run_id = int.from_bytes(os.urandom(8), "big")
        self.seen = bytearray()
        """One byte per message number: 1 once received (a set would cost ~50x)."""

    def body(self, size: int) -> Body:
        pad = b"x" * (size - STAMP.size)
        pack, run, clock = STAMP.pack, self.run_id, time.perf_counter_ns
        return lambda n: pack(run, n, clock()) + pad

    def take(self, msgs: list[MessageExt]) -> None:
        now = time.perf_counter_ns()
        tally, seen, unpack, run = self.tally, self.seen, STAMP.unpack_from, self.run_id
        counted = 0
        for m in msgs:
            body = m.body
            if len(body) < STAMP.size:
                continue
            their_run, n, sent_ns = unpack(body)
            if their_run != run:
                continue
            if n >= len(seen):
                seen.extend(bytes(max(n + 1 - len(seen), len(seen), 4096)))
            elif seen[n]:
                self.duplicates += 1
                continue
            seen[n] = 1
            tally.latencies_us.append((now - sent_ns) / 1000.0)
            tally.bytes += len(body)
            counted += 1
        if counted:
            tally.count += counted
            self.last = time.monotonic()


async def run_e2e(
    namesrv: str,
    load: SendLoad,
    *,
    group: str,
    consumer_clients: int,
    pull_batch: int,
    idle: float,
    show_progress: bool,
) -> tuple[StampedReceiver, Tally]:
    """Open the consumers at the end of every queue, then send and receive at once."""
    sent = Tally()
    async with Admin(
        namesrv, instance_name=f"mq-bench-admin-{os.getpid()}", client_config=client_config()
    ) as admin:
        await ensure_topic(admin, load.topic)
        offsets = await queue_offsets(admin, load.topic, wait=True)
    async with Producer(PRODUCER_GROUP, namesrv=namesrv, client_config=client_config()) as producer:
        # Connection and route before the clock; its unstamped message is read and ignored.
        await warm_up(producer, load.topic, load.size, load.tags)
        starts = {mq: high for mq, (_low, high) in offsets.items()}
        async with consumers(namesrv, group, consumer_clients, pull_batch, starts) as clients:
            receiver = StampedReceiver(idle)
            receiver.clients = len(clients)

            async def send_all() -> None:
                await send_load(producer, load, sent, receiver.body(load.size))
                receiver.expect(sent.count)

            def status(elapsed: float) -> tuple[float, str]:
                done = sent.count + sent.failed if load.count is not None else elapsed
                got = receiver.tally.count
                return done, f"{sent.count:,} sent, {got:,} received {rate(got, elapsed):,.0f}/s"

            work = asyncio.gather(send_all(), *(drain(c, receiver) for c in clients))
            await with_progress(work, show=show_progress, total=send_total(load), status=status)
    return receiver, sent


def e2e(
    topic: str = TopicOpt,
    group: str = GroupOpt,
    size: int = SizeOpt,
    count: int | None = CountOpt,
    duration: float | None = DurationOpt,
    clients: int = ClientsOpt,
    consumer_clients: int = typer.Option(
        1, "--consumers", min=1, help="Consumers that split the queues."
    ),
    batch: int = BatchOpt,
    mode: SendMode = ModeOpt,
    inflight: int = InflightOpt,
    rate_: float | None = RateOpt,
    tags: str | None = TagsOpt,
    keys: bool = KeysOpt,
    pull_batch: int = PullBatchOpt,
    idle: float = IdleOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Send and consume at once; report msgs/s received and send-to-receive latency.

    Latency is receive time minus the moment the bench sent the message (one clock,
    microseconds). Sends that fail and messages that never arrive exit 1.

    Examples:
      mq bench e2e -t Bench --count 100000 --clients 4
      mq bench e2e -t Bench --duration 30 --rate 1000 --json
    """
    count, duration = check_send_flags(count, duration, batch, mode)
    if size < STAMP.size:
        fail(
            f"e2e needs --size of at least {STAMP.size} bytes",
            hint="every body carries a run id, a message number and its send time",
        )
    load = SendLoad(topic, size, count, duration, clients, batch, mode, inflight, tags, keys, rate_)
    show = not as_json and err_console.is_terminal
    receiver, sent = run_async(
        run_e2e(
            resolve_namesrv(namesrv), load, group=group, consumer_clients=consumer_clients,
            pull_batch=pull_batch, idle=idle, show_progress=show,
        )
    )  # fmt: skip
    counts = {"sent": sent.count, "failed": sent.failed, "received": receiver.tally.count,
              "missing": receiver.missing, "duplicates": receiver.duplicates}  # fmt: skip
    title = (
        f"e2e {topic}: {clients} sender(s) {mode.value}, {receiver.clients} consumer(s),"
        " latency = receive - send"
    )
    report(receiver, counts, title, as_json, columns=("sent", "failed", "received", "missing"))
    if sent.failed:
        err_console.print(f"{sent.failed:,} sends failed; the first: {sent.first_error}")
    if sent.failed or receiver.missing:
        raise typer.Exit(1)

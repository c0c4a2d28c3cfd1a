"""`mq produce`: send messages from a flag, a file, stdin lines or an interactive prompt.

One row per send (status, msg id, broker, queue, queue offset) or NDJSON with ``--json``;
a progress bar on a terminal's stderr when sending many, a rate line at the end, and a
non-zero exit code when any send failed (kcat's and natscli's habits). Bodies, keys,
property values and the order key may use natscli's templates: ``{{Count}}`` (1, 2, ...),
``{{Time}}``, ``{{Unix}}``, ``{{UnixMs}}``, ``{{ID}}`` (a random id) and
``{{Random A B}}``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from mqcli.commands.admin_util import check_group, complete_topic
from mqcli.commands.produce_delay import DEFAULT_LEVELS, check_delay_level
from mqcli.commands.produce_input import bodies as read_bodies
from mqcli.commands.produce_output import Printer, Stats, progress_bar
from mqcli.commands.produce_spec import (
    DEFAULT_GROUP,
    FATAL,
    PlaceholderError,
    Spec,
    expand,
    parse_props,
    send_one,
)
from mqcli.commands.produce_timer import timer_properties
from mqcli.connect import NamesrvOpt, resolve_namesrv, run_async
from mqcli.credentials import client_config
from mqcli.output import err_console, fail
from mqcli.timespec import TimespecError
from mqcore.client import Producer, SendResult, SendStatus, select_by_hash
from mqcore.errors import MQError
from mqcore.message import Message

if TYPE_CHECKING:
    from rich.progress import TaskID

    from mqcore.client.transaction import TransactionProducer

__all__ = ["ASYNC_WINDOW", "produce", "register"]

ASYNC_WINDOW = 64
"""Sends in flight at once with ``--async``."""


async def _produce(
    namesrv: str,
    group: str,
    spec: Spec,
    bodies: Callable[[Stats], AsyncIterator[tuple[bytes, bool]]],
    total: int | None,
    *,
    mode: str,
    batch: int,
    timeout: float,
    printer: Printer,
    transaction: tuple[str, str, float] | None = None,
    trace: bool = False,
    stats: Stats | None = None,
) -> Stats:
    stats = stats if stats is not None else Stats()
    progress = progress_bar(total)
    task: TaskID | None = None
    pending: set[asyncio.Task[None]] = set()
    window = asyncio.Semaphore(ASYNC_WINDOW)

    def advance(k: int = 1) -> None:
        if progress is not None and task is not None:
            took = max(time.monotonic() - stats.started, 1e-6)
            rate = f"{(stats.sent + stats.failed) / took:,.0f}"
            progress.update(task, advance=k, rate=rate)

    def record(n: int, msg: Message, result: SendResult | None, error: str | None) -> None:
        ok = error is None and (result is None or result.status is SendStatus.SEND_OK)
        if ok:
            stats.sent += 1
        else:
            stats.failed += 1
        printer.result(n, msg, result, error)
        advance()

    fatal: list[MQError] = []  # the first error every further send would repeat

    async def background(n: int, msg: Message) -> None:
        try:
            record(n, msg, *await send_one(producer, spec, msg, n, oneway=False))
        except FATAL as exc:
            fatal.append(exc)
        finally:
            window.release()

    async def flush(buf: list[tuple[int, Message]]) -> None:
        msgs = [m for _, m in buf]
        queue = None
        if spec.order_key is not None:
            queues = await producer.fetch_publish_queues(spec.topic)
            queue = select_by_hash(queues, msgs[0], expand(spec.order_key, buf[0][0]))
        try:
            results = await producer.send_batch(msgs, queue=queue, timeout=timeout)
        except FATAL:
            raise
        except MQError as exc:
            for n, msg in buf:
                record(n, msg, None, str(exc))
            return
        i = 0
        for result in results:
            size = len(result.msg_id.split(","))
            ok = result.status is SendStatus.SEND_OK
            stats.sent += size if ok else 0
            stats.failed += 0 if ok else size
            printer.batch(buf[i][0], msgs[i : i + size], result)
            advance(size)
            i += size

    producer: Producer
    tx_producer: TransactionProducer | None = None
    if transaction is not None:
        from mqcore.client.transaction import TransactionProducer  # only --transaction

        local, check, _ = transaction
        producer = tx_producer = TransactionProducer.answering(
            local, check, group, namesrv, send_timeout=timeout, trace=trace
        )
    else:
        producer = Producer(
            group, namesrv, send_timeout=timeout, client_config=client_config(), trace=trace
        )
    await producer.start()
    try:
        # No route yet: the broker creates the topic on the first send (a typo, maybe); the
        # lookup caches the route the first send would fetch anyway.
        created = not await producer.refresh_route(spec.topic)
        if progress is not None:
            progress.start()
            task = progress.add_task("send", total=total, rate="0")
        buf: list[tuple[int, Message]] = []
        n = 0
        async for body, templated in bodies(stats):
            n += 1
            msg = spec.build(body, n, template=templated)
            if batch:
                buf.append((n, msg))
                if len(buf) >= batch:
                    await flush(buf)
                    buf = []
            elif mode == "async":
                await window.acquire()
                if fatal:
                    raise fatal[0]
                t = asyncio.create_task(background(n, msg))
                pending.add(t)
                t.add_done_callback(pending.discard)
            else:
                record(n, msg, *await send_one(producer, spec, msg, n, oneway=mode == "oneway"))
        if buf:
            await flush(buf)
        if pending:
            await asyncio.gather(*pending)
        if fatal:
            raise fatal[0]
        if created and stats.sent:
            err_console.print(
                f"created topic {spec.topic} (autoCreateTopicEnable)", style="yellow", markup=False
            )
        if tx_producer is not None and transaction and transaction[2] > 0:
            err_console.print(
                f"waiting up to {transaction[2]:g} s for the broker to check back "
                f"{stats.sent} transaction(s)...",
                highlight=False,
            )
            if not await tx_producer.wait_checks_answered(stats.sent, transaction[2]):
                err_console.print(
                    "[yellow]not every transaction was checked back in time; the broker "
                    "will ask again (transactionCheckInterval)[/]",
                    markup=True,
                )
    finally:
        for t in pending:
            t.cancel()
        if progress is not None:
            progress.stop()
        await producer.shutdown()
    if producer.trace_dispatcher is not None and producer.trace_dispatcher.dropped:
        err_console.print(
            f"{producer.trace_dispatcher.dropped} trace record(s) dropped: "
            f"{producer.trace_dispatcher.last_error or 'trace queue full'}",
            style="yellow",
            markup=False,
            highlight=False,
        )
    return stats


def produce(
    topic: str = typer.Option(
        ..., "--topic", "-t", help="Topic to send to.", autocompletion=complete_topic
    ),
    tag: str | None = typer.Option(None, "--tag", help="Tag of every message."),
    key: list[str] = typer.Option([], "--key", "-k", help="A key (repeat for several)."),
    prop: list[str] = typer.Option([], "--prop", "-p", help="A user property name=value."),
    delay: int = typer.Option(
        0,
        "--delay",
        min=0,
        help="Delay level (1 = 1s ... 18 = 2h with the default messageDelayLevel; a level "
        "the brokers do not have is refused, as they would send it at their highest). "
        "0: no delay.",
    ),
    deliver_at: str | None = typer.Option(
        None,
        "--deliver-at",
        metavar="TIME",
        help="Deliver at TIME (RocketMQ 5 timer message, TIMER_DELIVER_MS): "
        "2026-01-02T10:00 (local), 10:30, +90s or epoch ms; up to 3 days ahead by default.",
    ),
    delay_for: str | None = typer.Option(
        None,
        "--delay-for",
        metavar="DURATION",
        help="Deliver DURATION after each message reaches the broker (RocketMQ 5 timer "
        "message, TIMER_DELAY_MS): 90s, 15m, 1h30m, 250ms.",
    ),
    body: str | None = typer.Option(None, "--body", "-b", help="The body text."),
    file: Path | None = typer.Option(None, "--file", "-F", help="A file's bytes ('-': stdin)."),
    count: int = typer.Option(1, "--count", "-c", min=1, help="Send each body N times."),
    use_async: bool = typer.Option(False, "--async", help=f"Up to {ASYNC_WINDOW} in flight."),
    oneway: bool = typer.Option(False, "--oneway", help="Do not wait for the broker."),
    batch: int = typer.Option(0, "--batch", min=0, help="Send N messages per batch request."),
    order_key: str | None = typer.Option(
        None, "--order-key", help="Same key, same queue: per-key order (hash selector)."
    ),
    interactive: bool = typer.Option(
        False, "--interactive", "-i", help="A prompt: one message per line, :help for commands."
    ),
    namesrv: str | None = NamesrvOpt,
    group: str = typer.Option(DEFAULT_GROUP, "--group", "-g", help="Producer group."),
    timeout: float = typer.Option(
        3.0, "--timeout", min=0.1, help="Send timeout (seconds); with --request, send and reply."
    ),
    as_json: bool = typer.Option(False, "--json", "-j", help="One JSON object per send."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No rows, only the final line."),
    transaction: str | None = typer.Option(
        None,
        "--transaction",
        help="Send as transactional messages whose local transaction ends commit, rollback "
        "or unknown (then the broker checks back).",
    ),
    check_answer: str | None = typer.Option(
        None, "--check-answer", help="What to answer the broker's check-back (default: commit)."
    ),
    check_wait: float | None = typer.Option(
        None,
        "--check-wait",
        min=0,
        help="With unknown: seconds to stay up for check-backs (default 90).",
    ),
    request: bool = typer.Option(
        False,
        "--request",
        help="Send one request (RocketMQ 4.6+ request/reply) and print the reply a consumer "
        "sends back; --timeout covers the wait.",
    ),
    trace: bool = typer.Option(
        False,
        "--trace",
        help="Write a trace record of each send to RMQ_SYS_TRACE_TOPIC (brokers with "
        "traceTopicEnable=true); see mq message trace MSG_ID.",
    ),
) -> None:
    """Send messages to TOPIC.

    The body comes from --body, --file, or stdin (one message per line; empty lines are
    skipped). Templates in bodies, keys, property values and the order key: {{Count}},
    {{Time}}, {{Unix}}, {{UnixMs}}, {{ID}}, {{Random A B}}.

    Examples:
      mq produce -t Orders --tag paid --key o-1 --body '{"id": 1}'
      mq produce -t Orders --body 'order {{Count}}' --count 1000 --async
      seq 100 | mq produce -t Orders --batch 50
      mq produce -t Orders --order-key 'customer-{{Random 1 5}}' --body x -c 20
      mq produce -t Orders -i
      mq produce -t Orders --body paid --transaction unknown --check-answer commit
      mq produce -t Prices --request --body 'quote AAPL' --timeout 5 --json
      mq produce -t Orders --body paid --trace
      mq produce -t Orders --body reminder --deliver-at 2026-01-02T09:00
      mq produce -t Orders --body 'retry {{Count}}' --count 10 --delay-for 90s
    """
    check_group(group, "producer group")
    if body is not None and file is not None:
        fail("give the body with --body or --file, not both")
    if sum([use_async, oneway, batch > 0]) > 1:
        fail("--async, --oneway and --batch exclude each other")
    if order_key is not None and use_async:
        fail("--order-key sends one at a time to keep order; drop --async")
    if batch and delay:
        fail("delayed messages cannot be batched (RocketMQ refuses them); drop --batch")
    try:
        timer = timer_properties(deliver_at, delay_for, int(time.time() * 1000))
    except TimespecError as exc:
        fail(str(exc))
    if timer and (delay or batch):
        fail("a timer message has no delay level and is not batched; drop --delay/--batch")
    tx = _transaction_options(
        transaction,
        check_answer,
        check_wait,
        use_async or oneway or batch > 0 or delay > 0 or bool(timer) or order_key is not None,
    )
    spec = Spec(
        topic, tag, list(key), {**parse_props(list(prop)), **timer}, delay, order_key,
        transactional=transaction is not None,
    )  # fmt: skip
    addr = resolve_namesrv(namesrv)
    if delay > len(DEFAULT_LEVELS):
        run_async(check_delay_level(addr, delay))
    if request:
        from mqcli.commands.produce_request import run_request

        given = {
            "--count": count > 1,
            "--async": use_async,
            "--oneway": oneway,
            "--batch": batch > 0,
            "-i": interactive,
            "--transaction": tx is not None,
        }
        conflicts = [flag for flag, on in given.items() if on]
        run_request(addr, group, spec, body, file, timeout, as_json, conflicts)
        return
    if interactive:
        if body is not None or file is not None:
            fail("-i reads messages from the prompt; drop --body/--file")
        from mqcli.interactive import run_prompt

        code = run_async(run_prompt(addr, group, spec, timeout=timeout, as_json=as_json))
        raise typer.Exit(code)
    if body is None and file is None and sys.stdin.isatty():
        fail(
            "nothing to send",
            hint="give --body TEXT, --file F, pipe lines on stdin, or use -i for a prompt",
        )
    try:
        expand(" ".join([body or "", *key, *spec.props.values(), order_key or ""]), 1)
    except PlaceholderError as exc:
        fail(str(exc))
    total = count if (body is not None or file is not None) else None
    mode = "async" if use_async else "oneway" if oneway else "sync"
    printer = Printer(as_json=as_json, quiet=quiet)
    stats = Stats()
    try:
        run_async(
            _produce(
                addr,
                group,
                spec,
                lambda st: read_bodies(body, file, count, st),
                total,
                mode=mode,
                batch=batch,
                timeout=timeout,
                printer=printer,
                transaction=tx,
                trace=trace,
                stats=stats,
            )
        )
    except typer.Exit as exc:
        if exc.exit_code == 130:  # Ctrl-C: what was done so far, also with --quiet
            err_console.print(stats.line(topic) + " (interrupted)", markup=True, highlight=False)
        raise
    if stats.sent + stats.failed != 1 or stats.skipped:
        err_console.print(stats.line(topic), markup=True, highlight=False)
    if stats.sent + stats.failed == 0:
        fail("no message was sent (no input?)")
    if stats.failed:
        raise typer.Exit(1)


def _transaction_options(
    transaction: str | None, check_answer: str | None, check_wait: float | None, other: bool
) -> tuple[str, str, float] | None:
    """Validate --transaction/--check-answer/--check-wait: (local, check, wait seconds)."""
    if transaction is None:
        if check_answer is not None or check_wait is not None:
            fail("--check-answer and --check-wait go with --transaction")
        return None
    states = {"commit", "rollback", "unknown"}
    local = transaction.lower()
    check = (check_answer or "commit").lower()
    if local not in states:
        fail(f"bad --transaction {transaction!r}", hint="use commit, rollback or unknown")
    if check not in states:
        fail(f"bad --check-answer {check_answer!r}", hint="use commit, rollback or unknown")
    if other:
        fail(
            "transactional messages are sent one at a time without a delay; drop "
            "--async/--oneway/--batch/--delay/--deliver-at/--delay-for"
        )
    from mqcore.client.transaction import LocalTransactionState

    LocalTransactionState.coerce(local)  # the client's own spelling check
    wait = check_wait if check_wait is not None else (90.0 if local == "unknown" else 0.0)
    return local, check, wait


def register(app: typer.Typer) -> None:
    app.command("produce")(produce)

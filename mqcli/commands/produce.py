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
import random
import re
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import typer

from mqcli.commands.admin_util import check_group, complete_topic
from mqcli.connect import NamesrvOpt, resolve_namesrv, run_async
from mqcli.credentials import client_config
from mqcli.output import err_console, fail
from mqcore.client import (
    LocalTransactionState,
    Producer,
    SendResult,
    SendStatus,
    TransactionProducer,
    TransactionSendResult,
    make_message,
    select_by_hash,
)
from mqcore.client.errors import (
    InvalidMessageError,
    NameServerUnreachableError,
    TopicRouteNotFoundError,
)
from mqcore.errors import MQError
from mqcore.message import Message

if TYPE_CHECKING:  # the progress bar loads only on a terminal, when sending many
    from rich.progress import Progress, TaskID

DEFAULT_GROUP = "mq-cli-producer"
ASYNC_WINDOW = 64
"""Sends in flight at once with ``--async``."""
ROW_FORMAT = "{:<10} {:<32} {:<16} {:>5} {:>10}"
HEADERS = ("STATUS", "MSG-ID", "BROKER", "QUEUE", "OFFSET")
_TEMPLATE = re.compile(r"\{\{\s*(\w+)((?:\s+[^\s}]+)*)\s*\}\}")


class TemplateError(ValueError):
    pass


def expand(text: str, count: int) -> str:
    """Replace natscli-style ``{{Name args}}`` placeholders; unknown names raise."""
    if "{{" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        name, args = m.group(1), m.group(2).split()
        if name == "Count":
            return str(count)
        if name == "Time":
            return datetime.now().isoformat(timespec="milliseconds")
        if name == "Unix":
            return str(int(time.time()))
        if name in ("UnixMs", "TimeStamp"):
            return str(time.time_ns() // 1_000_000)
        if name == "ID":
            return uuid.uuid4().hex
        if name == "Random":
            try:
                low, high = (int(a) for a in args) if args else (0, 1_000_000)
            except ValueError:
                raise TemplateError("use {{Random LOW HIGH}} with two integers") from None
            return str(random.randint(low, high))
        raise TemplateError(
            f"unknown template {{{{{name}}}}}: use Count, Time, Unix, UnixMs, ID, Random A B"
        )

    return _TEMPLATE.sub(one, text)


def parse_props(items: list[str]) -> dict[str, str]:
    props: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            fail(f"bad --prop {item!r}", hint="use --prop name=value (repeat for more)")
        props[name.strip()] = value
    return props


@dataclass(slots=True)
class Spec:
    """What every message of this run carries (the interactive prompt changes it)."""

    topic: str
    tag: str | None = None
    keys: list[str] = field(default_factory=list)
    props: dict[str, str] = field(default_factory=dict)
    delay: int = 0
    order_key: str | None = None

    def build(self, body: bytes, n: int, *, template: bool = True) -> Message:
        if template and b"{{" in body:
            body = expand(body.decode("utf-8", errors="surrogateescape"), n).encode(
                "utf-8", errors="surrogateescape"
            )
        try:
            return make_message(
                self.topic,
                body,
                tags=self.tag,
                keys=[expand(k, n) for k in self.keys],
                properties={k: expand(v, n) for k, v in self.props.items()},
                delay_level=self.delay,
            )
        except ValueError as exc:  # reserved characters in a property
            raise InvalidMessageError(str(exc)) from exc


class Printer:
    """Rows on stdout: an aligned table (header once) or NDJSON."""

    def __init__(self, *, as_json: bool, quiet: bool) -> None:
        self.as_json = as_json
        self.quiet = quiet
        self._header = False
        self._reasons: set[str] = set()

    def _write(self, line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def result(self, n: int, msg: Message, result: SendResult | None, error: str | None) -> None:
        if self.quiet:
            if error and error not in self._reasons:  # the exit code alone does not say why
                self._reasons.add(error)
                err_console.print(f"[red]send {n} failed:[/] {error}", markup=True, highlight=False)
            return
        mq = result.message_queue if result else None
        status = (
            "FAILED" if error else (result.status.name if result else "ONEWAY")
        )  # ONEWAY: sent, no answer expected
        if self.as_json:
            obj: dict[str, Any] = {
                "index": n,
                "sendStatus": status,
                "msgId": result.msg_id if result else msg.unique_key,
                "topic": msg.topic,
            }
            if result is not None:
                obj.update(
                    offsetMsgId=result.offset_msg_id,
                    brokerName=mq.broker_name if mq else None,
                    queueId=mq.queue_id if mq else None,
                    queueOffset=result.queue_offset,
                )
                if isinstance(result, TransactionSendResult):
                    obj["transactionState"] = result.local_transaction_state.name
            if error:
                obj["error"] = error
            self._write(orjson.dumps(obj).decode())
            return
        if not self._header:
            self._header = True
            self._write(ROW_FORMAT.format(*HEADERS))
        if error:
            self._write(ROW_FORMAT.format(status, msg.unique_key or "-", "-", "-", "-"))
            err_console.print(f"[red]send {n} failed:[/] {error}", markup=True, highlight=False)
            return
        self._write(
            ROW_FORMAT.format(
                status,
                (result.msg_id if result else msg.unique_key) or "-",
                mq.broker_name if mq else "-",
                str(mq.queue_id) if mq else "-",
                str(result.queue_offset) if result else "-",
            )
        )

    def batch(self, first: int, msgs: list[Message], result: SendResult) -> None:
        """A batch answer covers consecutive offsets; print one row per message."""
        ids = result.msg_id.split(",")
        for i, msg in enumerate(msgs):
            one = SendResult(
                result.status,
                ids[i] if i < len(ids) else msg.unique_key or "",
                result.offset_msg_id,
                result.message_queue,
                result.queue_offset + i,
            )
            self.result(first + i, msg, one, None)


@dataclass(slots=True)
class Stats:
    sent: int = 0
    failed: int = 0
    skipped: int = 0
    started: float = field(default_factory=time.monotonic)

    def line(self, topic: str) -> str:
        took = max(time.monotonic() - self.started, 1e-6)
        done = self.sent + self.failed
        text = f"{self.sent} sent to {topic} in {took:.2f} s ({done / took:,.1f} msg/s)"
        if self.failed:
            text += f", [red]{self.failed} failed[/]"
        if self.skipped:
            text += f", {self.skipped} empty line(s) skipped"
        return text


FATAL = (NameServerUnreachableError, TopicRouteNotFoundError, InvalidMessageError)
"""Errors every further send would repeat: stop at once with one line."""


async def send_one(
    producer: Producer, spec: Spec, msg: Message, n: int, *, oneway: bool
) -> tuple[SendResult | None, str | None]:
    """Send ``msg`` (by order key when set); (result, None) or (None, error text)."""
    kwargs: dict[str, Any] = {}
    if spec.order_key is not None:
        kwargs = {"selector": select_by_hash, "arg": expand(spec.order_key, n)}
    try:
        if oneway:
            await producer.send_oneway(msg, **kwargs)
            return None, None
        if isinstance(producer, TransactionProducer):
            result: SendResult = await producer.send_message_in_transaction(msg)
        else:
            result = await producer.send(msg, **kwargs)
    except FATAL:
        raise
    except MQError as exc:
        return None, str(exc)
    return result, None


async def _bodies(
    body: str | None, file: Path | None, count: int, stats: Stats
) -> AsyncIterator[tuple[bytes, bool]]:
    """(body, templated?) pairs: the flag or file ``count`` times, else stdin lines."""
    if body is not None or file is not None:
        data, templated = (body.encode(), True) if body is not None else (b"", False)
        if file is not None:
            try:
                data = sys.stdin.buffer.read() if str(file) == "-" else file.read_bytes()
            except OSError as exc:
                fail(f"cannot read {file}: {exc.strerror or exc}")
        if not data:
            fail("the message body is empty", hint="RocketMQ refuses empty bodies")
        for _ in range(count):
            yield data, templated
        return
    lines = _stdin_lines()
    while True:
        line = await lines.get()
        if line is None:
            return
        line = line.rstrip(b"\r\n")
        if not line:
            stats.skipped += 1
            continue
        for _ in range(count):
            yield line, True


class _StdinLines:
    """stdin lines (None at the end) read by a daemon thread: a blocked read never keeps
    the process from exiting on Ctrl-C, and a slow broker slows the reader down (at most
    ``buffered`` lines wait). The thread hands lines over with ``call_soon_threadsafe``,
    never a coroutine, so a loop that closes first leaves nothing unawaited behind."""

    def __init__(self, buffered: int = 1024) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._slots = threading.Semaphore(buffered)
        threading.Thread(target=self._read, name="mq-produce-stdin", daemon=True).start()

    def _put(self, item: bytes | None) -> None:
        self._slots.acquire()
        self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    def _read(self) -> None:
        try:
            for line in sys.stdin.buffer:
                self._put(line)
            self._put(None)
        except (RuntimeError, OSError, ValueError):
            pass  # the loop is closed or stdin is gone: we are exiting

    async def get(self) -> bytes | None:
        item = await self._queue.get()
        self._slots.release()
        return item


def _stdin_lines(buffered: int = 1024) -> _StdinLines:
    return _StdinLines(buffered)


def _progress(total: int | None) -> Progress | None:
    if not err_console.is_terminal or (total is not None and total <= 1):
        return None
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn("[bold]sending"),
        BarColumn(),
        MofNCompleteColumn() if total else TextColumn("{task.completed}"),
        TextColumn("{task.fields[rate]} msg/s"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        redirect_stdout=sys.stdout.isatty(),
        redirect_stderr=False,
    )


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
    progress = _progress(total)
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
    if transaction is not None:
        local, check, _ = transaction
        producer = TransactionProducer.answering(
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
        created = not await producer.instance.update_route(spec.topic)
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
        if isinstance(producer, TransactionProducer) and transaction and transaction[2] > 0:
            err_console.print(
                f"waiting up to {transaction[2]:g} s for the broker to check back "
                f"{stats.sent} transaction(s)...",
                highlight=False,
            )
            if not await producer.wait_checks_answered(stats.sent, transaction[2]):
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
        help="Delay level (1 = 1s ... 18 = 2h with the default messageDelayLevel); the "
        "broker clamps a level above its highest to that highest level. 0: no delay.",
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
    tx = _transaction_options(
        transaction,
        check_answer,
        check_wait,
        use_async or oneway or batch > 0 or delay > 0 or order_key is not None,
    )
    spec = Spec(topic, tag, list(key), parse_props(list(prop)), delay, order_key)
    addr = resolve_namesrv(namesrv)
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
    except TemplateError as exc:
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
                lambda st: _bodies(body, file, count, st),
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
            "--async/--oneway/--batch/--delay"
        )
    LocalTransactionState.coerce(local)  # the client's own spelling check
    wait = check_wait if check_wait is not None else (90.0 if local == "unknown" else 0.0)
    return local, check, wait


def register(app: typer.Typer) -> None:
    app.command("produce")(produce)

"""`mq consume --pop`: consume as RocketMQ 5's simple consumer, by POP.

No rebalance and no offsets on the client: each receive asks a broker for up to
``--batch`` messages, which it hands out invisible to the rest of the group for
``--invisible``. What the command prints it then acknowledges, unless ``--nack`` (never)
or ``--fail-rate`` (that often): a message not acknowledged comes back once its invisible
time is over, through ``%RETRY%<group>_<topic>`` with its reconsume times raised, and
after the group's retry maximum goes to ``%DLQ%<group>`` (``--fifo``: in its queue's
order, the queue held until then).

With ``--interactive`` each message waits for a key: Enter or ``a`` acknowledges it,
``s`` skips it (it stays invisible until its time is over, then comes back), ``i 2m``
gives it a new invisible time from now (``i 0``: visible again at once), ``q`` stops.
It receives one message at a time unless ``--batch`` says otherwise: the others of a
batch would stay invisible, their time running, while the operator thinks.

Nothing the command did not print stays hidden: messages received beyond ``--count``, or
after Ctrl-C, a closed pipe or ``q``, are made visible again at once (invisible time 0),
so the group's next consumer gets them without waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import random
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from mqcli.commands.consume_look import PipeClosed
from mqcli.commands.consume_sink import Sink
from mqcli.credentials import client_config
from mqcli.output import err_console, fail
from mqcli.timespec import TimespecError, parse_duration
from mqcore.client import Admin, SimpleConsumer
from mqcore.client.simple_consumer import receipt
from mqcore.errors import MQBrokerError, MQError
from mqcore.message import MessageExt
from mqcore.protocol import ResponseCode
from mqcore.protocol.extra_info import PROPERTY_FIRST_POP_TIME, PROPERTY_POP_CK
from mqcore.protocol.headers.pop import ConsumeInitMode

__all__ = ["PopSpec", "Tally", "parse_invisible", "pop_consume"]

FOLLOW_AWAIT = 2.0
"""Seconds the broker holds a receive when nothing is there, while following; Ctrl-C
waits for a held receive to end (to give back what it got), so this stays short."""
_RECEIPT_KEYS = frozenset({PROPERTY_POP_CK, PROPERTY_FIRST_POP_TIME})
MAX_BATCH = 32
"""The most one POP may ask for (the broker refuses more)."""
HELP = "Enter/a: ack   s: skip (back after its invisible time)   i 2m: new invisible time   q: quit"


def parse_invisible(text: str, *, allow_zero: bool = False) -> float:
    """``30s``, ``2m``, ``1h30m``, ``500ms`` or a number of seconds -> seconds; a
    TimespecError that says what is accepted."""
    text = text.strip()
    try:
        ms = int(float(text) * 1000) if text.replace(".", "", 1).isdigit() else parse_duration(text)
    except TimespecError:
        raise TimespecError(
            f"bad invisible time {text!r}: use e.g. 30s, 2m, 1h30m, 500ms or seconds"
        ) from None
    if ms <= 0 and not allow_zero:
        raise TimespecError("the invisible time must be more than 0 (e.g. 30s)")
    return ms / 1000


@dataclass(frozen=True, slots=True)
class PopSpec:
    """What to receive and how to answer."""

    topic: str
    group: str
    tag: str | None = None
    invisible: float = 30.0
    batch: int = 16
    fifo: bool = False
    from_first: bool = False
    """A group new to a queue starts at its oldest message (else at its end)."""
    follow: bool = True
    nack_rate: float = 0.0
    """1.0: never acknowledge (``--nack``); between: ``--fail-rate``."""
    interactive: bool = False


@dataclass(slots=True)
class Tally:
    """What became of the messages printed (and of those given back unprinted)."""

    acked: int = 0
    not_acked: int = 0
    skipped: int = 0
    delayed: int = 0
    released: int = 0
    failed: list[str] = field(default_factory=list)
    """One line per ack or change the broker refused."""

    def summary(self) -> str:
        parts = [f"{self.acked} acked"]
        for n, what in (
            (self.not_acked, "not acked"),
            (self.skipped, "skipped"),
            (self.delayed, "given a new invisible time"),
            (self.released, "given back"),
            (len(self.failed), "failed"),
        ):
            if n:
                parts.append(f"{n} {what}")
        return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class Decision:
    """``ack``, ``skip``, ``nack`` (auto mode's no-ack), ``delay`` (by ``seconds``) or
    ``quit``."""

    action: str
    seconds: float = 0.0


def parse_answer(line: str) -> Decision:
    """One interactive answer; ValueError with a helpful text."""
    word, _, arg = line.strip().partition(" ")
    word = word.lower()
    if word in ("", "a", "ack"):
        return Decision("ack")
    if word in ("s", "skip"):
        return Decision("skip")
    if word in ("q", "quit", "exit"):
        return Decision("quit")
    if word in ("i", "invisible"):
        if not arg.strip():
            raise ValueError("i takes a duration: i 60s, i 2m (i 0: visible again at once)")
        try:
            return Decision("delay", parse_invisible(arg, allow_zero=True))
        except TimespecError as exc:
            raise ValueError(str(exc)) from None
    raise ValueError(f"unknown answer {line.strip()!r}; {HELP}")


Decide = Callable[[MessageExt], Awaitable[Decision]]


def auto_decider(rate: float) -> Decide:
    """Acknowledge everything, nothing (rate 1.0) or all but ``rate`` of it."""

    async def decide(msg: MessageExt) -> Decision:
        return Decision("nack" if rate > 0 and random.random() < rate else "ack")

    return decide


def prompt_decider(spec: PopSpec) -> Decide:
    """Ask on the terminal (prompt-toolkit) what to do with each message."""
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        fail(
            "mq consume --pop --interactive needs a terminal",
            hint="without -i each message printed is acknowledged (--nack: none)",
        )
    from prompt_toolkit import PromptSession

    session: PromptSession[str] = PromptSession()
    err_console.print(f"[dim]{HELP}[/]", highlight=False)

    async def decide(msg: MessageExt) -> Decision:
        while True:
            try:
                line = await session.prompt_async("ack? [a/s/i DURATION/q] ")
            except (EOFError, KeyboardInterrupt):
                return Decision("quit")
            try:
                return parse_answer(line)
            except ValueError as exc:
                err_console.print(f"[red]{exc}[/]", highlight=False)

    return decide


async def _give_back(consumer: SimpleConsumer, msgs: list[MessageExt], tally: Tally) -> None:
    """Make ``msgs`` visible again at once: they were not printed."""
    for msg in msgs:
        with contextlib.suppress(MQError):  # else they come back after their time anyway
            await consumer.change_invisible_duration(msg, 0)
            tally.released += 1


async def _answer(
    consumer: SimpleConsumer, msg: MessageExt, decision: Decision, spec: PopSpec, tally: Tally
) -> None:
    try:
        if decision.action == "ack":
            await consumer.ack(msg)
            tally.acked += 1
        elif decision.action == "delay":
            await consumer.change_invisible_duration(msg, decision.seconds)
            tally.delayed += 1
        elif decision.action == "skip":
            tally.skipped += 1
        else:
            tally.not_acked += 1
    except MQError as exc:
        line = f"{decision.action} of {msg.msg_id} failed: {exc}"
        tally.failed.append(line)
        err_console.print(f"[red]{line}[/]", highlight=False)
        return
    if spec.interactive:
        err_console.print(_said(decision), highlight=False)


def _said(decision: Decision) -> str:
    if decision.action == "ack":
        return "acked"
    if decision.action == "skip":
        return "skipped: it comes back once its invisible time is over"
    if decision.seconds == 0:
        return "visible again now"
    return f"invisible for {decision.seconds:g}s from now"


async def pop_consume(
    namesrv: str, spec: PopSpec, sink: Sink, stop: asyncio.Event, decide: Decide
) -> Tally:
    """Receive and answer until ``--count``, the end (``--no-follow``: every broker of
    the topic answered nothing in a row), ``q`` or ``stop``."""
    async with Admin(namesrv, client_config=client_config()) as admin:
        queues = await admin.topic_queues(spec.topic)  # an unknown topic fails here, clearly
    brokers = len({mq.broker_name for mq in queues}) or 1
    consumer = SimpleConsumer(
        spec.group,
        namesrv,
        await_duration=FOLLOW_AWAIT if spec.follow else 0.0,
        invisible_duration=spec.invisible,
        init_mode=ConsumeInitMode.MIN if spec.from_first else ConsumeInitMode.MAX,
        fifo=spec.fifo,
        client_config=client_config(),
    )
    consumer.subscribe(spec.topic, spec.tag or "*")
    tally = Tally()
    quit_ = False
    async with consumer:
        empty = 0
        while not stop.is_set() and not sink.full and not quit_:
            want = min(spec.batch, MAX_BATCH)
            if sink.limit is not None:
                want = min(want, sink.limit - sink.count)
            # A stop meanwhile lets a held receive end: what it got is given back below.
            msgs = await _receive(consumer, want)
            if not msgs:
                empty += 1
                if not spec.follow and empty >= brokers:
                    break
                continue
            empty = 0
            for i, msg in enumerate(msgs):
                if sink.full or stop.is_set() or quit_:
                    await _give_back(consumer, msgs[i:], tally)
                    break
                decision = None if spec.interactive else await decide(msg)
                try:
                    _show(sink, msg, decision)
                except PipeClosed:
                    stop.set()
                    await _give_back(consumer, msgs[i:], tally)
                    break
                if decision is None:  # interactive: asked once the message is shown
                    decision = await decide(msg)
                if decision.action == "quit":
                    quit_ = True
                    await _give_back(consumer, msgs[i:], tally)
                    break
                await _answer(consumer, msg, decision, spec, tally)
    return tally


async def _receive(consumer: SimpleConsumer, want: int) -> list[MessageExt]:
    """One receive; a broker that does not know POP (RocketMQ 4.x) says what to do."""
    try:
        return await consumer.receive(want)
    except MQBrokerError as exc:
        if exc.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            exc.hint = (
                "this broker does not serve POP (RocketMQ 4.x): drop --pop to consume "
                "with the push or pull consumer"
            )
        raise


def _show(sink: Sink, msg: MessageExt, decision: Decision | None) -> None:
    """Print ``msg`` with its receipt's pop time and invisible time (JSON), and the
    answer it is about to get (RESULT, when answers vary) unless it is not decided yet."""
    r = receipt(msg)
    result = None if decision is None else ("ACK" if decision.action == "ack" else "NACK")
    extra = {"popTime": r.pop_time, "invisibleTime": r.invisible_time}
    if sink.fmt != "json" and sink.template is None:
        # the receipt is the client's bookkeeping: a table row shows the message's own
        msg = copy.copy(msg)
        msg.properties = {k: v for k, v in msg.properties.items() if k not in _RECEIPT_KEYS}
    sink.emit(msg, r.broker_name, result=result, extra=extra)


def check_pop_flags(given: dict[str, bool]) -> None:
    """Refuse, in one line each, the flags of the push and pull consumers with --pop."""
    hints = {
        "--no-ack": "use --nack: with --pop it never acknowledges",
        "--sql": "use --tag: the simple consumer filters by tag",
        "--from": "with --pop --from takes first or last (a group new to a queue starts there)",
    }
    for name, on in given.items():
        if on:
            fail(f"{name} does not go with --pop", hint=hints.get(name, "drop one of them"))


def run_pop(namesrv: str, spec: PopSpec, sink: Sink) -> None:
    """The whole of ``mq consume --pop``: receive until done, then one summary line on
    stderr (when interrupted, ``-q``, interactive or on a terminal); exit 1 when the
    broker refused an ack or a change."""
    from mqcli.commands.consume_stop import install_stop
    from mqcli.connect import run_async

    decide = prompt_decider(spec) if spec.interactive else auto_decider(spec.nack_rate)

    async def run() -> tuple[Tally, bool]:
        stop = asyncio.Event()
        hits = [0]
        remove = install_stop(stop, hits)
        try:
            return await pop_consume(namesrv, spec, sink, stop, decide), hits[0] > 0
        finally:
            remove()

    tally, interrupted = run_async(run())
    line = f"{sink.count} message(s) from {spec.topic}; {tally.summary()}"
    if sink.pipe_closed:
        err_console.print(f"{line} (the output closed)", highlight=False)
    elif interrupted or sink.quiet or spec.interactive or err_console.is_terminal:
        err_console.print(line, highlight=False)
    if tally.failed:
        raise SystemExit(1)

"""`mq consume`: print a topic's messages as they arrive, with a push or a pull consumer.

Stops after ``--count``, at the end with ``--no-follow`` (end offsets pinned at start,
like ``kcat -e``), or on Ctrl-C / SIGTERM; in every case offsets are committed before the
process exits (exit 0), unless ``--no-ack``. Messages the command did not print (beyond
``--count``) are never acknowledged, so the group's next consumer gets them.

Without ``-g`` it is a quick look that leaves nothing behind (:mod:`.consume_look`):
no group is created or moved and nothing is committed; ``--queue`` and ``--until`` pick
queues and a time to stop at.

When standard output's reader goes away (``| head``), the message being written is not
counted as printed: the command stops, commits what was printed, and exits 0.

Modes with a group:

* push (default): ``PushConsumer`` with a listener that prints; ``--fail-rate`` /
  ``--nack`` make it answer RECONSUME_LATER, which shows retries and the DLQ.
* pull: ``LitePullConsumer`` subscribed with the group (``--pull``), or, when ``--from``
  is ``last``, an offset or a time, assigned every queue and seeked there (the group's
  committed offsets are then ignored for reading, and overwritten unless ``--no-ack``).
  ``--from last`` is "only messages sent from now on" (kcat's ``-o end``); without
  ``--from`` a new group follows RocketMQ, whose broker answers offset 0 for a young
  queue, so it may read that queue's history.
* pop (``--pop``): RocketMQ 5's simple consumer, in :mod:`.consume_pop`; the broker keeps
  the group's place, each printed message is acknowledged (``--nack``: none; ``-i``: the
  operator decides), and what was received but not printed is given back at once.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import random
import time
from typing import Any

import typer

from mqcli.commands.admin_util import check_group, complete_group, complete_topic
from mqcli.commands.consume_look import Look, PipeClosed, look, parse_queue_pick
from mqcli.commands.consume_pop import PopSpec, check_pop_flags, parse_invisible, run_pop
from mqcli.commands.consume_sink import Sink
from mqcli.commands.consume_stop import install_stop
from mqcli.connect import NamesrvOpt, config_dir, resolve_namesrv, run_async
from mqcli.credentials import client_config
from mqcli.output import err_console, fail
from mqcli.reachability import BrokerReachability
from mqcli.render import (
    broker_of,
)
from mqcli.template import Template, TemplateError, compile_template
from mqcli.timespec import Kind, Position, TimespecError, parse_position
from mqcore.client import (
    Admin,
    ConsumeContext,
    ConsumeFromWhere,
    ConsumeStatus,
    LitePullConsumer,
    MessageModel,
    MessageQueue,
    MessageSelector,
    PushConsumer,
)
from mqcore.client.consumer_base import PULL_RETRY_DELAY
from mqcore.client.rebalance import compute_pull_from_where
from mqcore.errors import FilterSyntaxError, MQError
from mqcore.filter import compile_sql, compile_tags
from mqcore.message import MessageExt

FORMATS = ("table", "json", "wide")
IDLE_ASSIGNMENT_GRACE = 5.0
"""Seconds ``--no-follow`` waits for rebalance to hand this member a queue."""
CHECK_INTERVAL = 0.2


class ClientFilter:
    """Tag / SQL92 checks for assigned queues (the broker only filters subscriptions)."""

    def __init__(self, tag: str | None, sql: str | None) -> None:
        self.tags = compile_tags(tag) if tag else None
        self.sql = compile_sql(sql) if sql else None

    def __call__(self, msg: MessageExt) -> bool:
        if self.tags is not None and not self.tags.match_tag(msg.tags):
            return False
        return self.sql is None or self.sql.evaluate(msg.properties)


def _seeks(position: Position | None) -> bool:
    """Whether ``--from`` overrides the group's committed offsets (assign + seek): any
    offset or time, and ``last`` (only messages sent from now on, like ``kcat -o end``).
    Without ``--from``, and with ``first``, the group's own offsets decide."""
    return position is not None and (position.explicit or position.kind is Kind.LAST)


def _positions(consumer: Any, topic: str) -> dict[MessageQueue, int]:
    """Each owned queue's next offset, as the consumer's offset table has it."""
    store = getattr(consumer, "_offset_store", None)
    return dict(store.offsets(topic)) if store is not None else {}


def _assigned(consumer: Any, topic: str) -> set[MessageQueue]:
    if isinstance(consumer, LitePullConsumer):
        return {mq for mq in consumer.assignment() if mq.topic == topic}
    rebalance = getattr(consumer, "_rebalance", None)
    table = getattr(rebalance, "process_queues", {}) if rebalance is not None else {}
    return {mq for mq, pq in table.items() if mq.topic == topic and not pq.dropped}


class EndWatch:
    """``--no-follow``: done once every queue this member owns reached its pinned end."""

    def __init__(
        self, consumer: Any, topic: str, ends: dict[MessageQueue, int], start_of: Any
    ) -> None:
        self.consumer = consumer
        self.topic = topic
        self.ends = ends
        self.start_of = start_of
        self.started = time.monotonic()
        self._starts: dict[MessageQueue, int] = {}

    async def done(self) -> bool:
        mine = _assigned(self.consumer, self.topic)
        if not mine:
            return time.monotonic() - self.started > IDLE_ASSIGNMENT_GRACE
        positions = _positions(self.consumer, self.topic)
        for mq in mine:
            pos = positions.get(mq)
            if pos is None:
                if mq not in self._starts:
                    self._starts[mq] = await self.start_of(mq)
                pos = self._starts[mq]
            if pos < self.ends.get(mq, 0):
                return False
        return True


async def _wait(stop: asyncio.Event, watch: EndWatch | None) -> None:
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CHECK_INTERVAL):
                await stop.wait()
        if watch is not None and not stop.is_set() and await watch.done():
            stop.set()


async def _consume(opts: dict[str, Any], sink: Sink) -> tuple[int, bool]:
    """Run until a stop condition; returns (messages printed, interrupted?)."""
    topic: str = opts["topic"]
    group: str = opts["group"]
    stop = asyncio.Event()
    signals = [0]
    remove_handlers = install_stop(stop, signals)
    admin = Admin(opts["namesrv"], client_config=client_config())
    await admin.start()
    consumer: PushConsumer | LitePullConsumer | None = None
    try:
        queues = await admin.topic_queues(topic)  # unknown topic?
        ends = {mq: await admin.max_offset(mq) for mq in queues} if not opts["follow"] else {}
        position: Position | None = opts["position"]
        where = (
            ConsumeFromWhere.FIRST
            if position is not None and position.kind is Kind.FIRST
            else ConsumeFromWhere.LAST
        )
        model = MessageModel.BROADCASTING if opts["broadcast"] else MessageModel.CLUSTERING
        selector = MessageSelector.by_sql(opts["sql"]) if opts["sql"] else opts["tag"] or "*"
        common: dict[str, Any] = {
            "namesrv": opts["namesrv"],
            "message_model": model,
            "consume_from_where": where,
            "offset_store_dir": str(config_dir() / "offsets"),
            "client_config": client_config(),
            "trace": opts["trace"],
        }
        if opts["broadcast"]:
            # Local offsets live under the client id; a stable one lets the next run resume.
            common["instance_name"] = f"mq-cli-{group}"
        if opts["mode"] == "push":
            consumer = PushConsumer(
                group,
                max_reconsume_times=opts["max_reconsume"],
                await_termination=1.0,
                **common,
            )
            consumer.subscribe(topic, selector)
            consumer.register_listener(_push_listener(sink, stop, opts["fail_rate"]))
        else:
            consumer = LitePullConsumer(
                group, auto_commit=opts["ack"], pull_batch_size=32, **common
            )
            if _seeks(position):
                consumer.assign(queues)
                consumer.pause(queues)
            else:
                consumer.subscribe(topic, selector)
        await consumer.start()
        if isinstance(consumer, PushConsumer):  # it retries quietly: say when a broker is away
            BrokerReachability(err_console, PULL_RETRY_DELAY).observe(consumer.api)
        watch = None
        if not opts["follow"]:

            async def start_of(mq: MessageQueue) -> int:
                assert consumer is not None
                store: Any = getattr(consumer, "_offset_store", None)
                return await compute_pull_from_where(mq, store, admin, where, 0)

            watch = EndWatch(consumer, topic, ends, start_of)
        if isinstance(consumer, PushConsumer):
            await _wait(stop, watch)
        else:
            await _pull_loop(consumer, sink, stop, watch, opts, queues)
        interrupted = signals[0] > 0
        if isinstance(consumer, LitePullConsumer) and opts["ack"]:
            await consumer.commit_sync()
        elif isinstance(consumer, PushConsumer):
            await _pin_unset_positions(consumer, topic, admin, where)
        return sink.count, interrupted
    finally:
        remove_handlers()
        if consumer is not None:
            await consumer.shutdown()
            tracer = consumer.trace_dispatcher
            if tracer is not None and tracer.dropped:
                err_console.print(
                    f"{tracer.dropped} trace record(s) dropped: "
                    f"{tracer.last_error or 'trace queue full'}",
                    style="yellow", markup=False, highlight=False,
                )  # fmt: skip
        await admin.shutdown()


async def _pin_unset_positions(
    consumer: PushConsumer, topic: str, api: Any, where: ConsumeFromWhere
) -> None:
    """Give queues that returned nothing yet (their first long poll still held) their
    start offset, so shutdown commits it: a group that started at ``first`` must not
    jump to the end of those queues next time (a new group's queues start at ``last``)."""
    store: Any = getattr(consumer, "_offset_store", None)
    if store is None:
        return
    known = store.offsets(topic)
    for mq in _assigned(consumer, topic):
        if mq not in known:
            with contextlib.suppress(MQError):
                store.update(mq, await compute_pull_from_where(mq, store, api, where, 0))


def _check_tags(tag: str) -> None:
    """Refuse up front what the subscription would (``'||'``, ``' || '``): one line."""
    tags = compile_tags(tag)
    if not tags.is_all and not tags.tags and tag.strip():
        raise FilterSyntaxError(
            f"invalid tag expression {tag!r}: no tag between the '||' separators",
            expression=tag,
            position=0,
        )


def _push_listener(sink: Sink, stop: asyncio.Event, fail_rate: float) -> Any:
    async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        if sink.full or stop.is_set():
            # Not printed, so not consumed: leave it for the group's next consumer.
            raise asyncio.CancelledError
        nack = False
        for msg in msgs:
            nack = fail_rate > 0 and random.random() < fail_rate
            try:
                sink.emit(msg, ctx.message_queue.broker_name, nack)
            except PipeClosed:
                stop.set()  # not printed, so not consumed
                raise asyncio.CancelledError from None
        if sink.full:
            stop.set()
        return ConsumeStatus.RECONSUME_LATER if nack else ConsumeStatus.CONSUME_SUCCESS

    return listener


async def _pull_loop(
    consumer: LitePullConsumer,
    sink: Sink,
    stop: asyncio.Event,
    watch: EndWatch | None,
    opts: dict[str, Any],
    queues: list[MessageQueue],
) -> None:
    position: Position | None = opts["position"]
    check: ClientFilter | None = None
    not_before = 0
    if _seeks(position):
        assert position is not None
        check = ClientFilter(opts["tag"], opts["sql"])
        api = consumer.api
        for mq in queues:
            await consumer.seek(mq, await position.offset_in(api, mq))
        if position.kind is Kind.TIME:
            not_before = position.value
        consumer.resume(queues)
    addrs = consumer.broker_addrs()
    last_check = time.monotonic()
    while not stop.is_set():
        msgs = await consumer.poll(timeout=CHECK_INTERVAL)
        for msg in msgs:
            broker = broker_of(addrs, msg.store_host)
            if sink.full or stop.is_set():
                # Put the rest back: what was not printed must not be committed.
                if broker is not None:
                    mq = MessageQueue(msg.topic, broker, msg.queue_id)
                    await consumer.seek(mq, msg.queue_offset)
                break
            if msg.store_timestamp < not_before or (check is not None and not check(msg)):
                continue
            try:
                sink.emit(msg, broker)
            except PipeClosed:
                stop.set()
                if broker is not None:
                    await consumer.seek(
                        MessageQueue(msg.topic, broker, msg.queue_id), msg.queue_offset
                    )
                break
        if sink.full or stop.is_set():
            break
        if watch is not None and (not msgs or time.monotonic() - last_check > 1.0):
            last_check = time.monotonic()
            if await watch.done():
                break


def consume(
    topic: str = typer.Option(
        ..., "--topic", "-t", help="Topic to read.", autocompletion=complete_topic
    ),
    group: str | None = typer.Option(
        None,
        "--group",
        "-g",
        help="Consumer group. Without one: a quick look that creates no group and commits "
        "nothing (kcat -C without -G), from the first message unless --from says otherwise.",
        autocompletion=complete_group,
    ),
    queue: list[str] = typer.Option(
        [],
        "--queue",
        help="Without -g: read only queue N of every broker, or BROKER:N (repeatable).",
    ),
    until: str | None = typer.Option(
        None,
        "--until",
        help="Without -g: stop each queue at its first message stored at or after this "
        "time (@-10m, @2026-01-02T10:00, @<epoch ms>, now).",
    ),
    push: bool = typer.Option(False, "--push", help="Push consumer (the default)."),
    pull: bool = typer.Option(False, "--pull", help="Lite pull consumer."),
    tag: str | None = typer.Option(None, "--tag", help="Tag expression: 'TagA || TagB'."),
    sql: str | None = typer.Option(None, "--sql", help="SQL92 filter on properties."),
    broadcast: bool = typer.Option(False, "--broadcast", help="BROADCASTING model."),
    start: str | None = typer.Option(
        None,
        "--from",
        help="Where to start. Without --from: the group's committed offsets; a group "
        "without any starts at each queue's end (RocketMQ's CONSUME_FROM_LAST_OFFSET), "
        "except that the broker answers offset 0 for a queue whose first message is still "
        "in memory, so a new group reads a young queue from its start. first: the same, "
        "but a group without committed offsets starts at the oldest message. last: only "
        "messages sent from now on, whatever the group committed (like kcat -o end). An "
        "offset (42), +N, -N, or a time (@-1h, @2026-01-02T10:00, @<epoch ms>): read "
        "every queue from there whatever the group committed. last, offsets and times "
        "use the pull consumer (assign + seek).",
    ),
    count: int | None = typer.Option(None, "--count", "-c", min=1, help="Stop after N."),
    follow: bool = typer.Option(
        True, "--follow/--no-follow", help="Keep waiting, or exit at the end (pinned at start)."
    ),
    fmt: str = typer.Option(
        "table", "--format", "-o", metavar="FORMAT", help="table | json | wide."
    ),
    template: str | None = typer.Option(
        None, "-f", "--template", help="kcat-style template: '%t %q %o %T %k %b\\n'."
    ),
    as_json: bool = typer.Option(False, "--json", "-j", help="Same as --format json."),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No messages, only the final count line (as produce -q)."
    ),
    ack: bool = typer.Option(
        True, "--ack/--no-ack", help="Commit offsets (--no-ack never does; pull mode)."
    ),
    charset: str = typer.Option("utf-8", "--charset", help="Decode bodies with this charset."),
    fail_rate: float = typer.Option(
        0.0,
        "--fail-rate",
        min=0.0,
        max=1.0,
        help="Answer RECONSUME_LATER this often (push); with --pop, leave that many unacked.",
    ),
    nack: bool = typer.Option(
        False,
        "--nack",
        help="Answer RECONSUME_LATER always (push); with --pop, never ack: the messages come "
        "back once their invisible time is over.",
    ),
    pop: bool = typer.Option(
        False,
        "--pop",
        help="Simple consumer (RocketMQ 5's POP): the broker hands each message out "
        "invisible to the rest of the group; what is printed is acked (see --nack, -i).",
    ),
    invisible: str | None = typer.Option(
        None,
        "--invisible",
        metavar="DURATION",
        help="With --pop: how long a received message stays invisible (30s, 2m; default 30s).",
    ),
    batch: int | None = typer.Option(
        None,
        "--batch",
        min=1,
        max=32,
        help="With --pop: messages per receive (default 16; 1 with -i).",
    ),
    fifo: bool = typer.Option(
        False,
        "--fifo",
        help="With --pop: FIFO, each queue in order; a message not acked holds its queue "
        "until its invisible time is over.",
    ),
    interactive: bool = typer.Option(
        False,
        "--interactive",
        "-i",
        help="With --pop: for each message, ask: ack, skip (it stays invisible), a new "
        "invisible time, or quit.",
    ),
    max_reconsume: int = typer.Option(
        -1, "--max-reconsume-times", help="Retries before the DLQ (default 16)."
    ),
    trace: bool = typer.Option(
        False,
        "--trace",
        help="Write a trace record of each consumption to RMQ_SYS_TRACE_TOPIC; see "
        "mq message trace MSG_ID.",
    ),
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Print messages of TOPIC as they arrive.

    Stops after --count, at the end with --no-follow, or on Ctrl-C, committing offsets
    first (exit 0). Messages beyond --count are not acknowledged. With --pop the broker
    keeps the group's place: printed messages are acked one by one, and the ones received
    but not printed are made visible again at once.

    Examples:
      mq consume -t Orders --no-follow | head
      mq consume -t Orders --queue 3 --from @-1h --until @-30m
      mq consume -t Orders -g audit --from first --no-follow
      mq consume -t Orders -g audit --pull --from @-1h -f '%d %T %b\\n'
      mq consume -t Orders -g audit --nack --max-reconsume-times 2
      mq consume -t Orders -g audit --trace
      mq consume -t Orders -g drain --from first --no-follow -q
      mq consume -t Orders -g workers --pop --invisible 1m --batch 8
      mq consume -t Orders -g workers --pop --nack --invisible 5s --count 3
      mq consume -t Orders -g workers --pop --fifo -i
    """
    if group is not None:
        check_group(group)
    if push and pull:
        fail("choose --push or --pull, not both")
    if tag and sql:
        fail("--tag and --sql exclude each other (SQL92 can test TAGS itself)")
    if as_json:
        fmt = "json"
    if fmt not in FORMATS:
        fail(f"unknown --format {fmt!r}", hint=f"use one of {', '.join(FORMATS)}")
    try:
        codecs.lookup(charset)
    except LookupError:
        fail(f"unknown charset {charset!r}", hint="e.g. utf-8, gbk, latin-1")
    try:
        tmpl = compile_template(template) if template is not None else None
        position = parse_position(start) if start is not None else None
        if sql:
            compile_sql(sql)
        if tag:
            _check_tags(tag)
    except (TemplateError, TimespecError, FilterSyntaxError) as exc:
        fail(str(exc))
    failing = nack or fail_rate > 0
    pop_only = {
        "--invisible": invisible is not None, "--batch": batch is not None,
        "--fifo": fifo, "--interactive": interactive,
    }  # fmt: skip
    for name, given in pop_only.items():
        if given and not pop:
            fail(f"{name} goes with --pop", hint="add --pop (RocketMQ 5's simple consumer)")
    if group is None:
        grouped = {
            "--push": push, "--pull": pull, "--broadcast": broadcast, "--no-ack": not ack,
            "--nack/--fail-rate": failing, "--max-reconsume-times": max_reconsume != -1,
            "--trace": trace, "--pop": pop,
        }  # fmt: skip
        for name, given in grouped.items():
            if given:
                fail(f"{name} needs a consumer group", hint="add -g GROUP")
        _quick_look(topic, position, follow, queue, until, tag, sql, namesrv, fmt, tmpl,
                    charset, count, quiet)  # fmt: skip
        return
    if queue or until:
        fail(
            "--queue and --until read without a group",
            hint="drop -g (a quick look commits nothing), or use --from with the group",
        )
    if pop:
        check_pop_flags({
            "--push": push, "--pull": pull, "--broadcast": broadcast, "--no-ack": not ack,
            "--sql": sql is not None, "--trace": trace,
            "--max-reconsume-times": max_reconsume != -1,
            "--from": position is not None and position.kind not in (Kind.FIRST, Kind.LAST),
        })  # fmt: skip
        if interactive and (failing or quiet):
            fail("-i answers for each message itself", hint="drop --nack/--fail-rate/-q")
        try:
            seconds = parse_invisible(invisible) if invisible is not None else 30.0
        except TimespecError as exc:
            fail(str(exc))
        spec = PopSpec(
            topic, group, tag, seconds, batch or (1 if interactive else 16), fifo,
            from_first=position is not None and position.kind is Kind.FIRST, follow=follow,
            nack_rate=1.0 if nack else fail_rate, interactive=interactive,
        )  # fmt: skip
        run_pop(resolve_namesrv(namesrv), spec, Sink(fmt, tmpl, charset, count, failing, quiet))
        return
    needs_pull = (not ack) or _seeks(position)
    if failing and (pull or needs_pull):
        fail("--fail-rate/--nack need the push consumer (its listener answers RECONSUME_LATER)")
    if push and needs_pull:
        why = "--no-ack" if not ack else f"--from {start}"
        fail(f"{why} needs the pull consumer", hint="drop --push (or use --pull)")
    mode = "pull" if pull or needs_pull else "push"
    opts: dict[str, Any] = {
        "topic": topic,
        "group": group,
        "namesrv": resolve_namesrv(namesrv),
        "mode": mode,
        "tag": tag,
        "sql": sql,
        "broadcast": broadcast,
        "position": position,
        "follow": follow,
        "ack": ack,
        "fail_rate": 1.0 if nack else fail_rate,
        "max_reconsume": max_reconsume,
        "trace": trace,
    }
    sink = Sink(fmt, tmpl, charset, count, show_result=failing, quiet=quiet)
    printed, interrupted = run_async(_consume(opts, sink))
    what = "not committed (--no-ack)" if not ack else "offsets committed"
    if sink.pipe_closed:
        # a pipe's reader may drop what it had not read yet: say how many were written
        err_console.print(
            f"{printed} message(s) from {topic} written before the output closed; {what}",
            highlight=False,
        )
    elif interrupted or quiet or err_console.is_terminal:
        err_console.print(f"{printed} message(s) from {topic}; {what}", highlight=False)


def _quick_look(
    topic: str,
    position: Position | None,
    follow: bool,
    queue: list[str],
    until: str | None,
    tag: str | None,
    sql: str | None,
    namesrv: str | None,
    fmt: str,
    tmpl: Template | None,
    charset: str,
    count: int | None,
    quiet: bool,
) -> None:
    """``mq consume`` without a group: :func:`.consume_look.look`, stopped by
    ``--count``, the end, ``--until``, a closed pipe or Ctrl-C."""
    try:
        picks = [parse_queue_pick(q) for q in queue]
        until_ms = parse_position(until).time_ms() if until is not None else None
    except (ValueError, TimespecError) as exc:
        fail(str(exc))
    spec = Look(topic, position or parse_position("first"), follow, picks, until_ms, tag, sql)
    sink = Sink(fmt, tmpl, charset, count, show_result=False, quiet=quiet)
    addr = resolve_namesrv(namesrv)

    async def run() -> bool:
        stop = asyncio.Event()
        hits = [0]
        remove = install_stop(stop, hits)
        try:
            await look(addr, spec, sink, stop)
        finally:
            remove()
        return hits[0] > 0

    interrupted = run_async(run())
    if interrupted or quiet or err_console.is_terminal:
        err_console.print(
            f"{sink.count} message(s) from {topic}; nothing committed (no group)",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    app.command("consume")(consume)

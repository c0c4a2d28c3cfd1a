"""`mq store ...`: offline tools over a store directory. They never write to the store."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn
from rich.table import Table

from mqcli import output
from mqcli.commands.broker_timer import render_timer_files
from mqcli.output import console, fail, print_json, print_json_line
from mqcli.render import fmt_ts, message_json, message_line
from mqcli.tables import FormatOpt, delay_table, fmt_perm, print_table, resolve_format
from mqcore.errors import CorruptRecordError, StoreError
from mqcore.message import decode_record
from mqcore.message.const import BLANK_MAGIC_CODE
from mqcore.message.record import peek_header
from mqcore.store.consume_queue import ENTRY as CQ_ENTRY
from mqcore.store.consume_queue import is_filler
from mqcore.store.index_file import IndexFile
from mqcore.store.mapped_file import MappedFile
from mqcore.store.offline import OfflineStore
from mqcore.store.summary import StoreSummary, load_config, summarize
from mqcore.store.verify import CONFIG_FILES, Problem, verify_scope, verify_store

store_app = typer.Typer(
    help="Read and check store files offline (never writes to them).", no_args_is_help=True
)
dump_app = typer.Typer(help="Print the entries of one kind of store file.", no_args_is_help=True)
store_app.add_typer(dump_app, name="dump")

DEFAULT_ROOT = Path.home() / "store"

StoreOpt = typer.Option(None, "--store", "-s", help="Store root directory (default ~/store).")
JsonOpt = typer.Option(False, "--json", "-j", help="One JSON object per line.")
FromOpt = typer.Option(None, "--from", help="Start at this offset.", min=0)
LimitOpt = typer.Option(None, "--limit", "-n", help="Print at most N entries.", min=0)


def _root(positional: Path | None, option: Path | None) -> Path:
    if positional is not None and option is not None and positional != option:
        fail("give the store directory either as DIR or as --store, not both")
    return (positional or option or DEFAULT_ROOT).expanduser()


def _open(root: Path) -> OfflineStore:
    try:
        return OfflineStore(root)
    except StoreError as exc:
        # The hint only when DIR is not a store root: a damaged store needs another one.
        is_root = (root / "commitlog").is_dir() or (root / "config").is_dir()
        hint = None if is_root else "pass the store root (the directory holding commitlog/)"
        fail(str(exc), hint=hint)


# -- inspect ---------------------------------------------------------------------------


@store_app.command()
def inspect(
    directory: Path | None = typer.Argument(None, help="Store root (default ~/store)."),
    store: Path | None = StoreOpt,
    fmt: str | None = FormatOpt,
    as_json: bool = typer.Option(False, "--json", "-j", help="One JSON document."),
) -> None:
    """Show one screen about a store: files, topics and queues, index, checkpoint,
    consumer offsets with lag, and delay-level progress.

    Examples:
      mq store inspect ~/store
      mq store inspect --store /data/rocketmq/store -o wide
      mq store inspect ~/store --json | jq .queues
    """
    fmt = resolve_format(fmt, as_json)
    with _open(_root(directory, store)) as st:
        summary = summarize(st)
    if fmt == "json":
        print_json(summary.to_json())
    else:
        _render_summary(summary, fmt)
    if summary.problems:
        raise typer.Exit(1)


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold", header_style="cyan")
    for col in columns:
        justify = (
            "right" if col.isupper() and col not in ("TOPIC", "GROUP", "NAME", "FILE") else "left"
        )
        table.add_column(col, justify=justify, no_wrap=col in ("FILE", "TOPIC"))  # type: ignore[arg-type]
    return table


def _render_summary(s: StoreSummary, fmt: str) -> None:
    state = (
        "[red]abnormal stop (abort file present) — recovery will run[/]"
        if s.abnormal_stop
        else "[green]clean stop[/]"
    )
    if s.lock_holder_pid:
        state += f" · [yellow]in use by process {s.lock_holder_pid}[/]"
    console.print(f"[bold]store[/] {escape(s.root)} · {state}")
    t = _table(
        f"Commit log · {s.records} records · "
        f"offsets {s.commit_log_min_offset}..{s.commit_log_max_offset}",
        "FILE",
        "START",
        "SIZE",
        "USED",
    )
    for f in s.commit_log_files:
        t.add_row(f.name, str(f.start_offset), str(f.size), str(f.used))
    print_table(t, fmt, section=True)
    if s.records:
        console.print(
            f"  stored {fmt_ts(s.first_store_timestamp)} .. {fmt_ts(s.last_store_timestamp)}; "
            + ", ".join(f"{escape(k)}: {v}" for k, v in s.records_per_topic.items())
        )
    t = _table(f"Consume queues · {len(s.queues)}", "TOPIC", "QUEUE", "MIN", "MAX", "LAST-STORED")
    for q in s.queues:
        t.add_row(
            escape(q.topic),
            str(q.queue_id),
            str(q.min_offset),
            str(q.max_offset),
            fmt_ts(q.last_store_timestamp),
        )
    print_table(t, fmt, section=True)
    if s.group_offsets:
        t = _table(
            "Consumer offsets (config/consumerOffset.json)",
            "GROUP",
            "TOPIC",
            "QUEUE",
            "OFFSET",
            "MAX",
            "LAG",
        )
        for g in s.group_offsets:
            t.add_row(
                escape(g.group),
                escape(g.topic),
                str(g.queue_id),
                str(g.consumer_offset),
                "-" if g.max_offset is None else str(g.max_offset),
                "-" if g.lag is None else str(g.lag),
            )
        print_table(t, fmt, section=True)
    if s.delay_levels:
        levels = delay_table(
            s.delay_levels,
            "Delay levels (SCHEDULE_TOPIC_XXXX, config/delayOffset.json)",
            rates={},  # offline: no rate, the RATE column says "-"
        )
        print_table(levels, fmt, section=True)
    t = _table(
        f"Index files · {len(s.index_files)}",
        "FILE",
        "KEYS",
        "SLOTS-USED",
        "FROM",
        "TO",
        "PHY-RANGE",
    )
    for i in s.index_files:
        t.add_row(
            i.name,
            str(i.index_count),
            str(i.hash_slot_count),
            fmt_ts(i.begin_timestamp),
            fmt_ts(i.end_timestamp),
            f"{i.begin_phy_offset}..{i.end_phy_offset}",
        )
    print_table(t, fmt, section=True)
    if s.checkpoint:
        console.print(
            "[bold]Checkpoint[/] physic "
            + fmt_ts(s.checkpoint["physicMsgTimestamp"])
            + " · logics "
            + fmt_ts(s.checkpoint["logicsMsgTimestamp"])
            + " · index "
            + fmt_ts(s.checkpoint["indexMsgTimestamp"])
        )
    if s.timer is not None:
        render_timer_files(s.timer, fmt)
    if s.topic_configs:
        t = _table(
            f"Topic configs (config/topics.json) · {len(s.topic_configs)}",
            "TOPIC",
            "READ",
            "WRITE",
            "PERM",
            "ORDER",
        )
        for name, cfg in s.topic_configs.items():
            t.add_row(
                escape(name),
                str(cfg.get("readQueueNums", "-")),
                str(cfg.get("writeQueueNums", "-")),
                fmt_perm(int(cfg.get("perm", 0))),
                "yes" if cfg.get("order") else "",
            )
        print_table(t, fmt, section=True)
    for p in s.problems:
        output.err_console.print(f"[red]problem:[/] {escape(p)}")


# -- verify ----------------------------------------------------------------------------


@store_app.command()
def verify(
    directory: Path | None = typer.Argument(None, help="Store root (default ~/store)."),
    store: Path | None = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Check that commit log, consume queues, index and checkpoint agree (exit 1 if not).

    Examples:
      mq store verify ~/store
      mq store verify --store /data/rocketmq/store --json
    """
    problems: list[Problem] = []
    with _open(_root(directory, store)) as st:
        scope = verify_scope(st)
        if scope.in_use_by is not None:
            output.err_console.print(
                f"store in use by pid {scope.in_use_by}: checking the records up to offset "
                f"{scope.end} (flushed and dispatched at the last checkpoint); newer ones are "
                "being written and are left out",
                style="yellow",
                markup=False,
                highlight=False,
            )
        show = sys.stderr.isatty() and not as_json
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            transient=True,
            console=output.err_console,
            disable=not show,
        ) as bar:
            tasks: dict[str, TaskID] = {}

            def progress(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(stage, total=total or 1)
                bar.update(tasks[stage], completed=done)

            for problem in verify_store(st, progress, scope):
                problems.append(problem)
                if as_json:
                    print_json_line(
                        {
                            "kind": problem.kind,
                            "path": problem.path,
                            "offset": problem.offset,
                            "message": problem.message,
                        }
                    )
                else:
                    output.err_console.print(f"[red]{problem.kind}[/] {escape(str(problem))}")
        scan = st.scan()
    if not as_json:
        verdict = "[red]problems found[/]" if problems else "[green]clean[/]"
        console.print(f"{scan.records} records checked · {len(problems)} problem(s) · {verdict}")
    if problems:
        raise typer.Exit(1)


# -- query -----------------------------------------------------------------------------


@store_app.command()
def query(
    topic: str = typer.Argument(..., help="Topic of the message."),
    key: str = typer.Argument(..., help="A message key (KEYS) or unique key (UNIQ_KEY)."),
    store: Path | None = StoreOpt,
    begin: int = typer.Option(0, "--begin", help="Earliest store time, ms since the epoch."),
    end: int = typer.Option(2**63 - 1, "--end", help="Latest store time, ms since the epoch."),
    max_num: int = typer.Option(64, "--max", help="At most this many results.", min=1),
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Find messages by key through the index files, offline (exit 1 when none), shown
    as `mq query` shows them (one JSON object per line with --json).

    Examples:
      mq store query Orders order-42
      mq store query Orders order-42 --store /data/rocketmq/store -o wide
      mq store query Orders order-42 --json | jq .body
    """
    from mqcli.commands.query import print_messages

    fmt = resolve_format(fmt, as_json)
    with _open(_root(None, store)) as st:
        found = st.query_key(topic, key, max_num=max_num, begin=begin, end=end)
    if fmt == "json":
        for msg in found:
            print_json_line(message_json(msg))
    elif found:
        print_messages(found, {}, fmt=fmt, charset="utf-8", template=None)
    if fmt != "json":
        output.err_console.print(f"[dim]{len(found)} message(s)[/]")
    if not found:
        raise typer.Exit(1)


# -- dump ------------------------------------------------------------------------------


def _resolve(name: str, root: Path, sub: str) -> Path:
    """A path that exists as given, else a bare file name under ``root/sub``."""
    given = Path(name).expanduser()
    if given.exists():
        return given
    candidate = root / sub / name
    if candidate.exists():
        return candidate
    fail(
        f"no such file: {name} (also looked for {candidate})",
        hint=f"pass a path, or the store root with --store so {sub}/{name} can be found",
    )


@dump_app.command("commitlog")
def dump_commitlog(
    file: str = typer.Argument(..., help="A commit log file, or its bare name under --store."),
    store: Path | None = StoreOpt,
    start: int | None = FromOpt,
    limit: int | None = LimitOpt,
    topic: str | None = typer.Option(None, "--topic", "-t", help="Only records of this topic."),
    as_json: bool = JsonOpt,
) -> None:
    """Print the records of one commit log file (--from is a commit log offset).

    Examples:
      mq store dump commitlog 00000000000000000000
      mq store dump commitlog 00000000000000000000 -t Orders --json
    """
    path = _resolve(file, _root(None, store), "commitlog")
    try:
        mf = MappedFile(path, path.stat().st_size, readonly=True)
    except (StoreError, OSError) as exc:
        fail(str(exc))
    shown = 0
    try:
        pos = 0 if start is None else max(0, start - mf.file_from_offset)
        if pos >= mf.file_size and start is not None:
            fail(
                f"--from {start} is beyond this file ({mf.file_from_offset}..{mf.file_end_offset})"
            )
        view = mf.view
        while limit is None or shown < limit:
            size, magic = peek_header(view, pos)
            if magic == BLANK_MAGIC_CODE or (size == 0 and magic == 0):
                break
            try:
                msg = decode_record(view, pos, strict=True)
            except CorruptRecordError as exc:
                raise CorruptRecordError(
                    exc.detail, path=str(path), offset=mf.file_from_offset + pos
                ) from None
            pos += msg.store_size
            if topic is not None and msg.topic != topic:
                continue
            shown += 1
            if as_json:
                print_json_line(message_json(msg))
            else:
                console.print(message_line(msg), soft_wrap=True)
    finally:
        mf.close()
    if not as_json:
        output.err_console.print(f"[dim]{shown} record(s)[/]")


@dump_app.command("consumequeue")
def dump_consumequeue(
    topic_or_file: str = typer.Argument(..., help="A topic (with QUEUE), or a consume queue file."),
    queue: int | None = typer.Argument(None, help="Queue id.", min=0),
    store: Path | None = StoreOpt,
    start: int | None = FromOpt,
    limit: int | None = LimitOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Print consume queue entries: queue offset, commit log offset, size, tag slot.

    Examples:
      mq store dump consumequeue Orders 0
      mq store dump consumequeue ~/store/consumequeue/Orders/0/00000000000000000000
    """
    root = _root(None, store)
    given = Path(topic_or_file).expanduser()
    if queue is None:
        if not given.is_file():
            fail(f"{topic_or_file} is not a file; give TOPIC and QUEUE, or a consume queue file")
        entries = _file_entries(given, start, limit)
    else:
        with _open(root) as st:
            if topic_or_file not in st.queue_ids() or queue not in st.queue_ids()[topic_or_file]:
                fail(
                    f"no consume queue {topic_or_file}:{queue} in {root}",
                    hint="`mq store inspect` lists the queues",
                )
            cq = st.consume_queue(topic_or_file, queue)
            entries = list(cq.iter_entries(start, limit))
    for index, phy, size, tags in entries:
        if as_json:
            print_json_line(
                {
                    "queueOffset": index,
                    "commitLogOffset": phy,
                    "size": size,
                    "tagsCode": tags,
                    **({"filler": True} if is_filler(phy, size) else {}),
                }
            )
        else:
            note = " [dim](filler)[/]" if is_filler(phy, size) else ""
            console.print(f"[cyan]#{index}[/] phy={phy} size={size} tagsCode={tags}{note}")
    if not as_json:
        output.err_console.print(f"[dim]{len(entries)} entries[/]")


def _file_entries(
    path: Path, start: int | None, limit: int | None
) -> list[tuple[int, int, int, int]]:
    size = path.stat().st_size
    if size % 20:
        fail(f"{path} is {size} bytes, not a multiple of the 20-byte entry")
    try:
        base = int(path.name) // 20
    except ValueError:
        fail(f"{path.name} is not a consume queue file name (20-digit offset)")
    mf = MappedFile(path, size, readonly=True)
    out: list[tuple[int, int, int, int]] = []
    try:
        i = max(0, (start or base) - base)
        while i * 20 < size and (limit is None or len(out) < limit):
            phy, sz, tags = CQ_ENTRY.unpack_from(mf.view, i * 20)
            if phy < 0 or sz <= 0:
                if phy == 0 and sz == 0 and tags == 0:
                    break
                raise CorruptRecordError(
                    f"invalid entry (offset {phy}, size {sz})", path=str(path), offset=i * 20
                )
            out.append((base + i, phy, sz, tags))
            i += 1
    finally:
        mf.close()
    return out


@dump_app.command("index")
def dump_index(
    file: str = typer.Argument(..., help="An index file, or its bare name under --store."),
    store: Path | None = StoreOpt,
    start: int | None = FromOpt,
    limit: int | None = LimitOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Print an index file's header and entries (--from is an entry number).

    Examples:
      mq store dump index 20260102100000000
      mq store dump index 20260102100000000 --json
    """
    path = _resolve(file, _root(None, store), "index")
    f = IndexFile.open(path, readonly=True)
    try:
        header = {
            "beginTimestamp": f.begin_timestamp,
            "endTimestamp": f.end_timestamp,
            "beginPhyOffset": f.begin_phy_offset,
            "endPhyOffset": f.end_phy_offset,
            "hashSlotCount": f.hash_slot_count,
            "indexCount": f.index_count,
            "maxHashSlotNum": f.max_hash_slot_num,
            "maxIndexNum": f.max_index_num,
        }
        if as_json:
            print_json_line({"header": header})
        else:
            console.print("[bold]header[/] " + " ".join(f"{k}={v}" for k, v in header.items()))
        shown = 0
        for e in f.iter_entries():
            if start is not None and e.index_no < start:
                continue
            if limit is not None and shown >= limit:
                break
            shown += 1
            item = {
                "index": e.index_no,
                "keyHash": e.key_hash,
                "commitLogOffset": e.phy_offset,
                "timeDiff": e.time_diff,
                "prevIndex": e.prev_index,
            }
            if as_json:
                print_json_line(item)
            else:
                console.print(
                    f"[cyan]#{e.index_no}[/] hash={e.key_hash} phy={e.phy_offset} "
                    f"timeDiff={e.time_diff}s prev={e.prev_index}"
                )
    finally:
        f.close()


@dump_app.command("config")
def dump_config(
    name: str | None = typer.Argument(
        None,
        help="topics, consumerOffset, delayOffset, "
        "subscriptionGroup or consumerFilter (default: all).",
    ),
    store: Path | None = StoreOpt,
) -> None:
    """Print config/*.json as strict JSON (RocketMQ's bare integer keys are accepted).

    Examples:
      mq store dump config topics
      mq store dump config consumerOffset | jq .offsetTable
    """
    with _open(_root(None, store)) as st:
        names = list(CONFIG_FILES)
        if name is not None:
            wanted = name if name.endswith(".json") else name + ".json"
            if wanted not in names:
                fail(f"unknown config {name!r}", hint="one of: " + ", ".join(n[:-5] for n in names))
            names = [wanted]
        out: dict[str, Any] = {}
        for n in names:
            doc = load_config(st, n)
            if doc is not None:
                out[n[:-5]] = doc
    if name is not None:
        if not out:
            fail(f"{st.root / 'config' / names[0]} does not exist")
        print_json(next(iter(out.values())))
    else:
        print_json(out)


def register(app: typer.Typer) -> None:
    from mqcli.commands import store_generate

    store_generate.register(store_app)
    app.add_typer(store_app, name="store")

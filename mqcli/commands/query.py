"""`mq query`: find messages by key, msg id, unique key, or a store-time range.

What mqadmin spreads over queryMsgByKey / queryMsgById / queryMsgByUniqueKey / printMsg,
in one command with one output contract. ``--max`` caps the total across all brokers
(not per broker, apache/rocketmq#7526), and ``--from/--to`` bound key queries too
(apache/rocketmq#2156). A time range is :meth:`Admin.query_by_time`: each queue's
offsets for ``--from`` and ``--to`` bound what is pulled (apache/rocketmq#4710).
"""

from __future__ import annotations

import codecs
import contextlib
import sys
import time
from typing import Any

import orjson
import typer
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from mqcli.commands.admin_util import complete_topic
from mqcli.connect import NamesrvOpt, resolve_namesrv, run_async
from mqcli.credentials import client_config
from mqcli.output import console, err_console, fail
from mqcli.render import (
    MESSAGE_HEADERS,
    MESSAGE_HEADERS_WIDE,
    broker_of,
    fmt_ts,
    message_detail,
    message_json,
    message_row,
)
from mqcli.tables import PLAIN, plain_lines, print_table
from mqcli.template import Template, TemplateError, compile_template
from mqcli.timespec import Position, TimespecError, parse_position
from mqcore.client import Admin
from mqcore.errors import MQBrokerError, MQClientError, MQError
from mqcore.message import MessageExt
from mqcore.message.ids import decode_offset_msg_id

FORMATS = ("table", "wide", "json", "detail")


def check_output(fmt: str, as_json: bool, charset: str, template: str | None) -> Template | None:
    """Validate the output flags shared by query and message view."""
    if fmt not in FORMATS and fmt != PLAIN:
        fail(f"unknown --format {fmt!r}", hint=f"use one of {', '.join(FORMATS)}")
    try:
        codecs.lookup(charset)
    except LookupError:
        fail(f"unknown charset {charset!r}", hint="e.g. utf-8, gbk, latin-1")
    try:
        return compile_template(template) if template is not None else None
    except TemplateError as exc:
        fail(str(exc))


def print_messages(
    msgs: list[MessageExt],
    brokers: dict[str, dict[int, str]],
    *,
    fmt: str,
    charset: str,
    template: Template | None,
) -> None:
    """Messages as a table, wide table, NDJSON, detail cards, a template, or (``PLAIN``,
    in a pipe) the wide table's columns as plain text."""
    names = [broker_of(brokers, m.store_host) for m in msgs]
    if template is not None:
        for msg, broker in zip(msgs, names, strict=True):
            sys.stdout.write(template.render(msg, charset=charset, broker=broker))
        sys.stdout.flush()
        return
    if fmt == "json":
        for msg, broker in zip(msgs, names, strict=True):
            obj = message_json(msg, charset=charset)
            obj["brokerName"] = broker
            sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode() + "\n")
        sys.stdout.flush()
        return
    if fmt == "detail":
        for i, (msg, broker) in enumerate(zip(msgs, names, strict=True)):
            grid = message_detail(msg, broker=broker, charset=charset)
            if not console.is_terminal:  # in a pipe: one whole line per field
                if i:
                    console.out("")
                console.out("\n".join(plain_lines(grid, header=False)), highlight=False)
                continue
            if i:
                console.print(Rule(style="dim"))
            console.print(grid)
        return
    wide = fmt in ("wide", PLAIN)
    table = Table(box=None, header_style="cyan", pad_edge=False)
    headers = list(MESSAGE_HEADERS_WIDE if wide else ("STORE-TIME", *MESSAGE_HEADERS))
    for h in headers:
        table.add_column(h, overflow="fold" if h in ("BODY", "PROPERTIES") else "ellipsis")
    for msg, broker in zip(msgs, names, strict=True):
        cells = message_row(msg, broker=broker, wide=wide, charset=charset)
        if not wide:
            cells.insert(0, fmt_ts(msg.store_timestamp))
        table.add_row(*(Text(c) for c in cells))
    print_table(table, fmt)


async def find_message(admin: Admin, msg_id: str, topic: str | None) -> MessageExt:
    """:meth:`Admin.find_message`, with the broker's "can not find message by the offset"
    turned into what to check, and the message's topic route loaded so its broker has a
    name (``broker-a/3``, like every other path, not ``127.0.0.1:10911/3``)."""
    try:
        msg = await admin.find_message(msg_id, topic)
    except MQBrokerError as exc:
        if "can not find message" not in exc.remark:
            raise
        ip, port, offset = decode_offset_msg_id(msg_id)
        addr = f"{ip}:{port}"
        with contextlib.suppress(MQError):
            addr = next((n for n, a in (await admin.master_addrs()).items() if a == addr), addr)
        raise MQClientError(
            f"no message at commit log offset {offset} on broker {addr}: was it deleted by "
            "retention, or is the id from another cluster?"
        ) from exc
    await admin.refresh_route(topic or msg.topic)
    return msg


def _time(pos: Position | None, default: int, flag: str) -> int:
    if pos is None:
        return default
    try:
        return pos.time_ms()
    except TimespecError as exc:
        fail(f"{flag}: {exc}")


async def _run(opts: dict[str, Any]) -> tuple[list[MessageExt], bool, dict[str, dict[int, str]]]:
    topic: str | None = opts["topic"]
    limit: int = opts["max"]
    async with Admin(opts["namesrv"], client_config=client_config()) as admin:
        truncated = False
        if opts["id"]:
            msgs = [await find_message(admin, opts["id"], topic)]
        elif opts["unique_key"]:
            assert topic is not None
            msgs = await admin.query_by_unique_key(topic, opts["unique_key"])
        elif opts["key"]:
            assert topic is not None
            msgs = await admin.query_by_key(
                topic, opts["key"], max_num=limit + 1, begin_ms=opts["begin"], end_ms=opts["end"]
            )
        else:
            assert topic is not None
            msgs = await admin.query_by_time(topic, opts["begin"], opts["end"], max_num=limit + 1)
        if len(msgs) > limit:
            msgs, truncated = msgs[:limit], True
        if topic is not None:
            await admin.refresh_route(topic)
        return msgs, truncated, admin.broker_addrs()


def query(
    topic: str | None = typer.Option(
        None, "--topic", "-t", help="Topic to search.", autocompletion=complete_topic
    ),
    key: str | None = typer.Option(None, "--key", "-k", help="A message key (KEYS)."),
    msg_id: str | None = typer.Option(
        None, "--id", "-i", help="An offset msg id (with -t, a unique key works too)."
    ),
    unique_key: str | None = typer.Option(
        None, "--unique-key", "-u", help="The producer's msg id (UNIQ_KEY); needs -t."
    ),
    start: str | None = typer.Option(
        None, "--from", help="Stored at or after: @2026-01-02T10:00, @<epoch ms>, @-1h, first."
    ),
    end: str | None = typer.Option(None, "--to", help="Stored at or before (default now)."),
    max_num: int = typer.Option(64, "--max", "-m", min=1, help="At most N, over all brokers."),
    fmt: str | None = typer.Option(
        None,
        "--format",
        "-o",
        metavar="FORMAT",
        help="table | wide | json | detail (default: detail for one id; in a pipe, the wide "
        "columns as plain text).",
    ),
    template: str | None = typer.Option(None, "-f", "--template", help="kcat-style template."),
    as_json: bool = typer.Option(False, "--json", "-j", help="Same as --format json."),
    charset: str = typer.Option("utf-8", "--charset", help="Decode bodies with this charset."),
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Find messages by key, msg id, unique key, or store time.

    Exactly one of: --key K -t T [--from/--to], --id MSGID [-t T], --unique-key K -t T,
    or -t T --from T1 [--to T2] (scans every queue).

    Examples:
      mq query -t Orders --key order-42
      mq query -t Orders --from @-10m --max 500 --format wide
      mq query -t Orders --from @-1h | grep order-42
      mq query --id 7F00000100002A9F0000000000000A1B
    """
    modes = [m for m in (key, msg_id, unique_key) if m is not None]
    if len(modes) > 1:
        fail("give one of --key, --id and --unique-key")
    if not modes and start is None:
        fail(
            "nothing to look for",
            hint="use --key K -t T, --id MSGID, --unique-key K -t T, or -t T --from @-1h",
        )
    if (key or unique_key or not modes) and not topic:
        fail("this query needs the topic: add -t TOPIC")
    if msg_id and (start or end):
        fail("--from/--to do not apply to --id")
    try:
        begin_pos = parse_position(start) if start is not None else None
        end_pos = parse_position(end) if end is not None else None
    except TimespecError as exc:
        fail(str(exc))
    now = int(time.time() * 1000)
    begin, finish = _time(begin_pos, 0, "--from"), _time(end_pos, now, "--to")
    if finish < begin:
        fail(f"--to ({fmt_ts(finish)}) is before --from ({fmt_ts(begin)})")
    if as_json:
        fmt = "json"
    single = bool(msg_id or unique_key)
    if fmt is None:
        fmt = "detail" if single else "table" if console.is_terminal else PLAIN
    tmpl = check_output(fmt, as_json, charset, template)
    opts = {
        "namesrv": resolve_namesrv(namesrv),
        "topic": topic,
        "key": key,
        "id": msg_id,
        "unique_key": unique_key,
        "begin": begin,
        "end": finish,
        "max": max_num,
    }
    msgs, truncated, brokers = run_async(_run(opts))
    if not msgs:
        if single:
            fail(f"no message {msg_id or unique_key} in {topic}")
        err_console.print("no message matched")
        return
    print_messages(msgs, brokers, fmt=fmt, charset=charset, template=tmpl)
    if truncated:
        err_console.print(
            f"showing the first {len(msgs)}; there are more: raise --max or narrow --from/--to",
            highlight=False,
        )
    elif fmt in ("table", "wide", PLAIN):
        err_console.print(f"{len(msgs)} message(s)", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("query")(query)

"""Turning messages and store entries into JSON objects and terminal lines.

Field names follow RocketMQ's MessageExt so scripts written against mqadmin output
recognise them.
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

from rich.markup import escape
from rich.table import Table

from mqcore.message import MessageExt
from mqcore.message.const import SysFlag


def fmt_host(host: tuple[str, int]) -> str:
    ip, port = host
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def fmt_ts(ms: int) -> str:
    """Local time with milliseconds, or '-' for 0 (never set)."""
    if ms <= 0:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000).isoformat(sep=" ", timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def body_fields(body: bytes, charset: str = "utf-8") -> dict[str, Any]:
    """``body`` as text when it decodes with ``charset``, else base64 with ``bodyEncoding``."""
    try:
        return {"body": body.decode(charset)}
    except UnicodeDecodeError:
        return {"body": base64.b64encode(body).decode("ascii"), "bodyEncoding": "base64"}


def decode_body(body: bytes, charset: str = "utf-8") -> str:
    """Body text for people: undecodable bytes become U+FFFD rather than an error."""
    return body.decode(charset, errors="replace")


def message_json(
    msg: MessageExt, *, with_body: bool = True, charset: str = "utf-8"
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "msgId": msg.msg_id,
        "topic": msg.topic,
        "queueId": msg.queue_id,
        "queueOffset": msg.queue_offset,
        "commitLogOffset": msg.commit_log_offset,
        "storeSize": msg.store_size,
        "bodyCRC": msg.body_crc,
        "flag": msg.flag,
        "sysFlag": msg.sys_flag,
        "bornTimestamp": msg.born_timestamp,
        "bornHost": fmt_host(msg.born_host),
        "storeTimestamp": msg.store_timestamp,
        "storeHost": fmt_host(msg.store_host),
        "reconsumeTimes": msg.reconsume_times,
        "preparedTransactionOffset": msg.prepared_transaction_offset,
        "properties": msg.properties,
        "tags": msg.tags,
        "keys": " ".join(msg.keys) or None,
        "bodyLength": len(msg.body) if with_body else msg.stored_body_length,
    }
    if msg.sys_flag & SysFlag.COMPRESSED_FLAG:
        obj["compressed"] = True
        obj["storedBodyLength"] = msg.stored_body_length
    if msg.unique_key:
        obj["uniqKey"] = msg.unique_key
    if with_body:
        obj.update(body_fields(msg.body, charset))
    return obj


def preview(body: bytes, limit: int = 60, charset: str = "utf-8") -> str:
    """A one-line, printable preview of a body (``limit`` 0: the whole body)."""
    try:
        text = body.decode(charset)
    except UnicodeDecodeError:
        half = limit // 2 if limit > 0 else 32
        head = body[:half].hex()
        return f"<{len(body)} bytes> {head}" + ("…" if len(body) > half else "")
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    return text if limit <= 0 or len(text) <= limit else text[: limit - 1] + "…"


def message_line(msg: MessageExt) -> str:
    """One rich-markup line per record for `mq store dump commitlog`."""
    parts = [
        f"[cyan]@{msg.commit_log_offset}[/]",
        f"size={msg.store_size}",
        f"[bold]{escape(msg.topic)}[/]:{msg.queue_id}#{msg.queue_offset}",
    ]
    if msg.tags:
        parts.append(f"tags={escape(msg.tags)}")
    if msg.keys:
        parts.append(f"keys={escape(' '.join(msg.keys))}")
    tran = msg.sys_flag & SysFlag.TRANSACTION_MASK
    if tran:
        parts.append(f"tx={ {4: 'PREPARED', 8: 'COMMIT', 12: 'ROLLBACK'}[tran] }")
    if msg.reconsume_times:
        parts.append(f"reconsume={msg.reconsume_times}")
    parts.append(f"stored={fmt_ts(msg.store_timestamp)}")
    parts.append(f"id={msg.msg_id}")
    parts.append(f"body={escape(repr(preview(msg.body)))}")
    return " ".join(parts)


def fmt_props(props: dict[str, str]) -> str:
    """``k=v,k=v`` or ``-`` (kcat's header style)."""
    return ",".join(f"{k}={v}" for k, v in props.items()) or "-"


def broker_of(broker_addrs: dict[str, dict[int, str]], host: tuple[str, int]) -> str | None:
    """The broker name whose registered address is ``host`` (a record's store host)."""
    addr = fmt_host(host)
    for name, by_id in broker_addrs.items():
        if addr in by_id.values():
            return name
    return None


MESSAGE_HEADERS = ("QUEUE", "OFFSET", "TAGS", "KEYS", "PROPERTIES", "BODY")
MESSAGE_HEADERS_WIDE = (
    "QUEUE", "OFFSET", "STORE-TIME", "TAGS", "KEYS", "RETRY", "UNIQ-KEY", "MSG-ID",
    "PROPERTIES", "BODY",
)  # fmt: skip


def message_row(
    msg: MessageExt, *, broker: str | None = None, wide: bool = False, charset: str = "utf-8"
) -> list[str]:
    """The cells of one message under MESSAGE_HEADERS (or _WIDE); ``-`` for n/a, like rpk.
    Wide shows every property and the whole body; narrow user properties and a preview."""
    queue = f"{broker or fmt_host(msg.store_host)}/{msg.queue_id}"
    keys = " ".join(msg.keys) or "-"
    if not wide:
        return [
            queue,
            str(msg.queue_offset),
            msg.tags or "-",
            keys,
            fmt_props(msg.user_properties),
            preview(msg.body, 80, charset),
        ]
    return [
        queue,
        str(msg.queue_offset),
        fmt_ts(msg.store_timestamp),
        msg.tags or "-",
        keys,
        str(msg.reconsume_times),
        msg.unique_key or "-",
        msg.msg_id,
        fmt_props(msg.properties),
        preview(msg.body, 0, charset),
    ]


def message_detail(msg: MessageExt, *, broker: str | None = None, charset: str = "utf-8") -> Table:
    """Every field of one message, mqadmin ``queryMsgById`` style, as a two-column grid."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold cyan", no_wrap=True)
    grid.add_column(overflow="fold")
    rows: list[tuple[str, str]] = [
        ("Topic", msg.topic),
        ("Msg ID", msg.msg_id),
        ("Unique Key", msg.unique_key or "-"),
        ("Tags", msg.tags or "-"),
        ("Keys", " ".join(msg.keys) or "-"),
        ("Queue", f"{broker or fmt_host(msg.store_host)}/{msg.queue_id}"),
        ("Queue Offset", str(msg.queue_offset)),
        ("CommitLog Offset", str(msg.commit_log_offset)),
        ("Reconsume Times", str(msg.reconsume_times)),
        ("Born Time", f"{fmt_ts(msg.born_timestamp)} ({msg.born_timestamp})"),
        ("Born Host", fmt_host(msg.born_host)),
        ("Store Time", f"{fmt_ts(msg.store_timestamp)} ({msg.store_timestamp})"),
        ("Store Host", fmt_host(msg.store_host)),
        ("Sys Flag", str(msg.sys_flag)),
        ("Body CRC", str(msg.body_crc)),
        ("Body Length", str(len(msg.body))),
    ]
    for name, value in rows:
        grid.add_row(name, escape(value))
    for i, (name, value) in enumerate(sorted(msg.properties.items())):
        grid.add_row("Properties" if i == 0 else "", escape(f"{name}={value}"))
    try:
        body = escape(msg.body.decode(charset))
    except UnicodeDecodeError:
        body = f"[dim]<{len(msg.body)} bytes, not {escape(charset)}>[/] {msg.body[:256].hex()}"
    grid.add_row("Body", body)
    return grid

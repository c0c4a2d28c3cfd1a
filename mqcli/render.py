"""Turning messages and store entries into JSON objects and terminal lines.

Field names follow RocketMQ's MessageExt so scripts written against mqadmin output
recognise them.
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

from rich.markup import escape

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


def body_fields(body: bytes) -> dict[str, Any]:
    """``body`` as UTF-8 text when it decodes, else base64 with ``bodyEncoding``."""
    try:
        return {"body": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"body": base64.b64encode(body).decode("ascii"), "bodyEncoding": "base64"}


def message_json(msg: MessageExt, *, with_body: bool = True) -> dict[str, Any]:
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
        obj.update(body_fields(msg.body))
    return obj


def preview(body: bytes, limit: int = 60) -> str:
    """A one-line, printable preview of a body."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        head = body[: limit // 2].hex()
        return f"<{len(body)} bytes> {head}" + ("…" if len(body) > limit // 2 else "")
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    return text if len(text) <= limit else text[: limit - 1] + "…"


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

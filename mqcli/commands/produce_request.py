"""`mq produce --request`: send one message as a request and print the reply.

RocketMQ 4.6+ request/reply (:meth:`mqcore.client.producer.Producer.request`): a consumer
of the topic answers with a reply message that the broker pushes straight back here.
``--timeout`` covers the send and the wait. The reply is shown as a card (topic,
correlation id, who answered, round trip, properties, body) or, with ``--json``, one JSON
object with MessageExt's field names plus ``elapsedMs``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from mqcli.commands.produce_input import read_file
from mqcli.commands.produce_spec import Spec, expand
from mqcli.connect import run_async
from mqcli.credentials import client_config
from mqcli.output import console, fail, print_json_line
from mqcli.render import body_fields, fmt_host, fmt_ts
from mqcore.client import Producer, select_by_hash
from mqcore.client.request_reply import RequestTimeoutError
from mqcore.message import Message, MessageExt
from mqcore.message.const import PROPERTY_CORRELATION_ID

__all__ = ["print_reply", "reply_json", "run_request", "send_request"]


async def send_request(
    namesrv: str, group: str, msg: Message, timeout: float, order_key: str | None = None
) -> tuple[MessageExt, float]:
    """The reply to ``msg`` and the seconds it took; a timeout is one error line."""
    producer = Producer(group, namesrv, send_timeout=timeout, client_config=client_config())
    kwargs: dict[str, Any] = {}
    if order_key is not None:
        kwargs = {"selector": select_by_hash, "arg": order_key}
    await producer.start()
    try:
        begin = time.monotonic()
        try:
            reply = await producer.request(msg, timeout, **kwargs)
        except RequestTimeoutError as exc:
            fail(
                f"no reply: {exc}",
                hint=f"is a consumer of {msg.topic} answering requests? Raise --timeout if slow",
            )
        return reply, time.monotonic() - begin
    finally:
        await producer.shutdown()


def reply_json(reply: MessageExt, elapsed: float, charset: str = "utf-8") -> dict[str, Any]:
    """The reply with MessageExt's field names (those a pushed reply has)."""
    obj: dict[str, Any] = {
        "topic": reply.topic,
        "queueId": reply.queue_id,
        "flag": reply.flag,
        "bornTimestamp": reply.born_timestamp,
        "bornHost": fmt_host(reply.born_host),
        "storeTimestamp": reply.store_timestamp,
        "storeHost": fmt_host(reply.store_host),
        "reconsumeTimes": reply.reconsume_times,
        "properties": reply.properties,
        "correlationId": reply.properties.get(PROPERTY_CORRELATION_ID),
        "elapsedMs": round(elapsed * 1000, 3),
        "bodyLength": len(reply.body),
    }
    obj.update(body_fields(reply.body, charset))
    return obj


def print_reply(reply: MessageExt, elapsed: float, *, as_json: bool) -> None:
    if as_json:
        print_json_line(reply_json(reply, elapsed))
        return
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold cyan", no_wrap=True)
    grid.add_column(overflow="fold")
    rows = [
        ("Reply Topic", reply.topic),
        ("Correlation ID", reply.properties.get(PROPERTY_CORRELATION_ID, "-")),
        ("Replied By", fmt_host(reply.born_host)),
        ("Born Time", f"{fmt_ts(reply.born_timestamp)} ({reply.born_timestamp})"),
        ("Broker", fmt_host(reply.store_host)),
        ("Round Trip", f"{elapsed * 1000:.1f} ms"),
        ("Body Length", str(len(reply.body))),
    ]
    for name, value in rows:
        grid.add_row(name, escape(value))
    for i, (name, value) in enumerate(sorted(reply.properties.items())):
        grid.add_row("Properties" if i == 0 else "", escape(f"{name}={value}"))
    try:
        body = escape(reply.body.decode("utf-8"))
    except UnicodeDecodeError:
        body = f"[dim]<{len(reply.body)} bytes, not utf-8>[/] {reply.body[:256].hex()}"
    grid.add_row("Body", body)
    console.print(grid)


def run_request(
    namesrv: str,
    group: str,
    spec: Spec,
    body: str | None,
    file: Path | None,
    timeout: float,
    as_json: bool,
    conflicts: list[str],
) -> None:
    """``mq produce --request``; ``conflicts`` are the given flags a request cannot take."""
    if conflicts:
        fail(f"--request sends one message and waits for its reply; drop {', '.join(conflicts)}")
    if body is not None:
        msg = spec.build(body.encode(), 1)
    elif file is not None:
        msg = spec.build(read_file(file), 1, template=False)
    else:
        fail("--request needs a body", hint="give --body TEXT or --file F")
    if not msg.body:
        fail("the message body is empty", hint="RocketMQ refuses empty bodies")
    order_key = expand(spec.order_key, 1) if spec.order_key is not None else None
    reply, elapsed = run_async(send_request(namesrv, group, msg, timeout, order_key))
    print_reply(reply, elapsed, as_json=as_json)

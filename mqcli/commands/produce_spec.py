"""What each message of `mq produce` carries and how one is sent: natscli's templates
(``{{Count}}``, ``{{Time}}``, ``{{Unix}}``, ``{{UnixMs}}``, ``{{ID}}``, ``{{Random A B}}``),
``--prop`` pairs, the :class:`Spec` every message is built from, and one send.

Shared by the command, its interactive prompt (:mod:`mqcli.interactive`) and
``--request`` (:mod:`mqcli.commands.produce_request`), which import it rather than the
command module, so none of them imports another's.
"""

from __future__ import annotations

import random
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from mqcli.output import fail
from mqcore.client import (
    Producer,
    SendResult,
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

if TYPE_CHECKING:
    from mqcore.client.transaction import TransactionProducer

__all__ = [
    "DEFAULT_GROUP",
    "FATAL",
    "PlaceholderError",
    "Spec",
    "expand",
    "parse_props",
    "send_one",
]

DEFAULT_GROUP = "mq-cli-producer"
_TEMPLATE = re.compile(r"\{\{\s*(\w+)((?:\s+[^\s}]+)*)\s*\}\}")


class PlaceholderError(ValueError):
    """A ``{{Name}}`` placeholder in a message that is unknown or has bad arguments (the
    ``-f`` output templates have their own :class:`mqcli.template.TemplateError`)."""


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
                raise PlaceholderError("use {{Random LOW HIGH}} with two integers") from None
            return str(random.randint(low, high))
        raise PlaceholderError(
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
    transactional: bool = False
    """Sent as half messages by a ``TransactionProducer`` (``--transaction``)."""

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
        if spec.transactional:
            tx = cast("TransactionProducer", producer)
            result: SendResult = await tx.send_message_in_transaction(msg)
        else:
            result = await producer.send(msg, **kwargs)
    except FATAL:
        raise
    except MQError as exc:
        return None, str(exc)
    return result, None

"""`-f` output templates for messages, in the style of kcat's ``-f``.

Fields: ``%t`` topic, ``%k`` keys (space separated), ``%T`` tags, ``%b`` body, ``%l`` body
length, ``%o`` queue offset, ``%q`` queue id, ``%B`` broker, ``%i`` msg id (offset id),
``%u`` unique key, ``%s`` store time (epoch ms), ``%d`` store time (local, readable),
``%r`` reconsume times, ``%p`` user properties ``k=v,k=v``, ``%P`` all properties,
``%%`` a percent sign. Escapes: ``\\n``, ``\\t``, ``\\r``, ``\\\\``. As in kcat, nothing is
added at the end: write ``\\n`` yourself (``-f '%t %o %b\\n'``).

A template is compiled once (:func:`compile_template`, which raises
:class:`TemplateError` naming the bad field) and then applied to every message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mqcli.render import decode_body, fmt_ts
from mqcore.message import MessageExt

__all__ = ["FIELDS", "Template", "TemplateError", "compile_template"]


class TemplateError(ValueError):
    """A template with an unknown field or escape."""


@dataclass(frozen=True, slots=True)
class Ctx:
    """What a field may need besides the message."""

    charset: str = "utf-8"
    broker: str | None = None


def _props(props: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in props.items())


FIELDS: dict[str, tuple[str, Callable[[MessageExt, Ctx], str]]] = {
    "t": ("topic", lambda m, c: m.topic),
    "k": ("keys", lambda m, c: " ".join(m.keys)),
    "T": ("tags", lambda m, c: m.tags or ""),
    "b": ("body", lambda m, c: decode_body(m.body, c.charset)),
    "l": ("body length", lambda m, c: str(len(m.body))),
    "o": ("queue offset", lambda m, c: str(m.queue_offset)),
    "q": ("queue id", lambda m, c: str(m.queue_id)),
    "B": ("broker", lambda m, c: c.broker or "-"),
    "i": ("msg id", lambda m, c: m.msg_id),
    "u": ("unique key", lambda m, c: m.unique_key or ""),
    "s": ("store time, epoch ms", lambda m, c: str(m.store_timestamp)),
    "d": ("store time, local", lambda m, c: fmt_ts(m.store_timestamp)),
    "r": ("reconsume times", lambda m, c: str(m.reconsume_times)),
    "p": ("user properties", lambda m, c: _props(m.user_properties)),
    "P": ("all properties", lambda m, c: _props(m.properties)),
}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "0": "\0"}

Part = str | Callable[[MessageExt, Ctx], str]


@dataclass(frozen=True, slots=True)
class Template:
    source: str
    parts: tuple[Part, ...]

    def render(self, msg: MessageExt, *, charset: str = "utf-8", broker: str | None = None) -> str:
        ctx = Ctx(charset, broker)
        return "".join(p if isinstance(p, str) else p(msg, ctx) for p in self.parts)


def _known() -> str:
    return " ".join(f"%{k}" for k in FIELDS)


def compile_template(source: str) -> Template:
    """Parse ``source`` into literal runs and field getters."""
    parts: list[Part] = []
    buf: list[str] = []
    i = 0
    while i < len(source):
        ch = source[i]
        nxt = source[i + 1] if i + 1 < len(source) else ""
        if ch == "%":
            if nxt == "%":
                buf.append("%")
            elif nxt in FIELDS:
                if buf:
                    parts.append("".join(buf))
                    buf = []
                parts.append(FIELDS[nxt][1])
            else:
                what = f"%{nxt}" if nxt else "a lone % at the end"
                raise TemplateError(
                    f"unknown template field {what} at column {i + 1}; known: {_known()} %%"
                )
            i += 2
            continue
        if ch == "\\" and nxt in _ESCAPES:
            buf.append(_ESCAPES[nxt])
            i += 2
            continue
        buf.append(ch)
        i += 1
    if buf:
        parts.append("".join(buf))
    return Template(source, tuple(parts))

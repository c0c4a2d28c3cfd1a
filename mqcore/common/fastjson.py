"""The JSON dialect of RocketMQ 4.x (fastjson 1.2.69), read and written.

Java brokers and name servers write map keys that are not strings in two non-standard
ways: integer keys bare (``{0:5}``) and MessageQueue keys as whole objects
(``{{"brokerName":"b","queueId":0,"topic":"t"}:{...}}``). :func:`loads` accepts both; it
tries orjson first, so strict JSON costs nothing extra.

:func:`dumps_pretty` writes the byte-identical pretty form of the broker's config files
(tabs, ``"key":value``, bare integer keys on one line, no trailing newline);
:func:`dumps` writes the strict compact JSON every client accepts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Mapping
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

import orjson

from mqcore.errors import MQError

__all__ = [
    "FastjsonError",
    "Rendered",
    "dumps",
    "dumps_pretty",
    "dumps_pretty_at",
    "loads",
    "pretty_member",
    "pretty_object",
]


class FastjsonError(MQError, ValueError):
    """Text that is not JSON even in fastjson's dialect."""


ObjectKeyHook = Callable[[dict[Any, Any]], Hashable]


def _default_object_key(obj: dict[Any, Any]) -> Hashable:
    return tuple(sorted(obj.items(), key=lambda kv: str(kv[0])))


_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?")
_WS = re.compile(r"[ \t\n\r]*")


class _Parser:
    __slots__ = ("object_key", "pos", "text")

    def __init__(self, text: str, object_key: ObjectKeyHook):
        self.text = text
        self.pos = 0
        self.object_key = object_key

    def fail(self, what: str) -> FastjsonError:
        return FastjsonError(f"invalid JSON at char {self.pos}: {what}")

    def ws(self) -> None:
        m = _WS.match(self.text, self.pos)
        assert m is not None
        self.pos = m.end()

    def value(self) -> Any:
        self.ws()
        text, pos = self.text, self.pos
        if pos >= len(text):
            raise self.fail("unexpected end")
        ch = text[pos]
        if ch == "{":
            return self.obj()
        if ch == "[":
            return self.arr()
        if ch == '"':
            try:
                s, self.pos = scanstring(text, pos + 1, True)
            except ValueError as exc:
                raise self.fail(str(exc)) from None
            return s
        for word, val in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, pos):
                self.pos = pos + len(word)
                return val
        m = _NUMBER.match(text, pos)
        if m is None:
            raise self.fail(f"unexpected {ch!r}")
        self.pos = m.end()
        if m.group(1) or m.group(2):
            return float(m.group(0))
        try:
            return int(m.group(0))
        except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
            raise self.fail("integer too long") from None

    def key(self) -> Hashable:
        self.ws()
        text, pos = self.text, self.pos
        if pos < len(text) and text[pos] == "{":
            key = self.object_key(self.obj())
            try:
                hash(key)
            except TypeError:  # the default hook's tuple holds a list or an object
                raise self.fail("unhashable object key") from None
            return key
        value = self.value()
        if isinstance(value, (str, int, float, bool)) or value is None:
            return value
        raise self.fail("unhashable object key")

    def obj(self) -> dict[Any, Any]:
        self.pos += 1
        out: dict[Any, Any] = {}
        self.ws()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            return out
        while True:
            k = self.key()
            self.ws()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected ':'")
            self.pos += 1
            out[k] = self.value()
            self.ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("}", self.pos):
                self.pos += 1
                return out
            raise self.fail("expected ',' or '}'")

    def arr(self) -> list[Any]:
        self.pos += 1
        out: list[Any] = []
        self.ws()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            return out
        while True:
            out.append(self.value())
            self.ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return out
            raise self.fail("expected ',' or ']'")


def loads(
    data: bytes | bytearray | memoryview | str, *, object_key: ObjectKeyHook | None = None
) -> Any:
    """Parse strict JSON or fastjson's dialect (bare integer keys, object keys).

    Bare integer keys become ``int``; object keys go through ``object_key`` (default: a
    sorted tuple of the key object's items). Raises :class:`FastjsonError`.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FastjsonError(f"not UTF-8: {exc}") from None
    parser = _Parser(text, object_key or _default_object_key)
    try:
        result = parser.value()
    except RecursionError:
        raise FastjsonError("JSON nested too deeply") from None
    parser.ws()
    if parser.pos != len(text):
        raise parser.fail("trailing data")
    return result


def _default(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"cannot serialize {type(obj).__name__}")


def dumps(obj: Any) -> bytes:
    """Strict compact JSON (keys as strings), the form both Java and ali-ons accept."""
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS, default=_default)


_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f\\"]')


def _scalar(value: Any) -> str:
    """One value as ``json.dumps(value, ensure_ascii=False)`` writes it; the common
    cases (plain strings, integers, booleans) skip json.dumps, which costs a
    microsecond per call: ``topics.json`` of 10,000 topics has 80,000 of them."""
    kind = type(value)
    if kind is str:
        return (
            json.dumps(value, ensure_ascii=False) if _NEEDS_ESCAPE.search(value) else f'"{value}"'
        )
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if value is None:
        return "null"
    return json.dumps(value, ensure_ascii=False)


def _int_keys(value: Mapping[Any, Any]) -> bool:
    """Every key an int (not a bool): fastjson writes such a map on one line, bare."""
    if type(next(iter(value))) is str:
        return False  # the common case, decided by the first key
    return all(isinstance(k, int) and not isinstance(k, bool) for k in value)


class Rendered(str):
    """Text :func:`dumps_pretty_at` made for a value at some nesting level, written as is
    where it stands in a document: a big config file re-renders only the entries that
    changed since its last write (the caller keeps the level right)."""

    __slots__ = ()


def _pretty(value: Any, level: int, out: list[str]) -> None:
    if type(value) is Rendered:
        out.append(value)
        return
    if type(value) is dict or isinstance(value, Mapping):
        if not value:
            out.append("{}")
            return
        if _int_keys(value):
            if all(type(v) is int for v in value.values()):
                # queue id -> offset (consumerOffset.json holds 10,000s of these): each
                # is written as _scalar would write it, without a call per number
                body = ",".join([f"{k}:{v}" for k, v in value.items()])
                out.append("{" + body + "\n" + "\t" * level + "}")
                return
            out.append("{")
            parts: list[str] = []
            for k, v in value.items():
                sub: list[str] = []
                _pretty(v, level + 1, sub)
                parts.append(f"{k}:{''.join(sub)}")
            out.append(",".join(parts))
            out.append("\n" + "\t" * level + "}")
            return
        out.append("{")
        first = True
        indent = "\t" * (level + 1)
        for k, v in value.items():
            lead = "\n" if first else ",\n"
            first = False
            key = _scalar(k if type(k) is str else str(k))
            kind = type(v)
            if kind is str or kind is int or kind is bool or v is None:
                out.append(f"{lead}{indent}{key}:{_scalar(v)}")  # flat: one append
                continue
            out.append(f"{lead}{indent}{key}:")
            _pretty(v, level + 1, out)
        out.append("\n" + "\t" * level + "}")
        return
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        if not items:
            out.append("[]")
            return
        out.append("[")
        for i, item in enumerate(items):
            out.append("\n" if i == 0 else ",\n")
            out.append("\t" * (level + 1))
            _pretty(item, level + 1, out)
        out.append("\n" + "\t" * level + "]")
        return
    out.append(_scalar(value))


def dumps_pretty(obj: Any) -> str:
    """fastjson's ``prettyFormat`` output, as the broker writes ``config/*.json``."""
    out: list[str] = []
    _pretty(obj, 0, out)
    return "".join(out)


def dumps_pretty_at(obj: Any, level: int) -> Rendered:
    """``obj`` as :func:`dumps_pretty` writes it when nested ``level`` objects deep."""
    out: list[str] = []
    _pretty(obj, level, out)
    return Rendered("".join(out))


def pretty_member(key: str, value: Any, level: int) -> Rendered:
    """One ``"key":value`` line (and what follows) of an object nested ``level`` deep,
    for :func:`pretty_object`."""
    return Rendered(f"{chr(9) * (level + 1)}{_scalar(key)}:{dumps_pretty_at(value, level + 1)}")


def pretty_object(members: list[Rendered], level: int) -> Rendered:
    """An object of :func:`pretty_member` lines, as :func:`dumps_pretty_at` writes the
    object they came from: a big table is joined from its members' kept text."""
    if not members:
        return Rendered("{}")
    return Rendered("{\n" + ",\n".join(members) + "\n" + "\t" * level + "}")

"""Typed views of ``extFields``: dataclasses that read and write the text map.

A header class is a frozen dataclass deriving from :class:`CommandHeader`. Attribute names
are snake_case; the wire name is the camelCase form unless a field says otherwise with
:func:`wire` (SEND_MESSAGE_V2's one-letter names, ``clientID``). Types are ``str``, ``int``
or ``bool`` (optionally ``| None``); a field without a default is required, as Java's
``@CFNotNull``. Conversion follows Java: ``Long.parseLong`` for numbers and
``Boolean.parseBoolean`` for flags, written back as ``"true"``/``"false"`` (never Python's
``"True"``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self

from mqcore.common.properties import camel
from mqcore.errors import MQError

__all__ = ["CommandHeader", "HeaderError", "camel", "wire"]


class HeaderError(MQError, ValueError):
    """A request's header lacks a required field or has a value of the wrong type.

    Servers answer it with SYSTEM_ERROR and this message as remark (the connection stays).
    """


def wire(name: str, default: Any = dataclasses.MISSING) -> Any:
    """A dataclass field whose extFields key is ``name`` instead of the camelCase default."""
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata={"wire": name})
    return dataclasses.field(default=default, metadata={"wire": name})


def _parse_int(text: str) -> int:
    return int(text)


def _parse_bool(text: str) -> bool:
    return text.lower() == "true"


def _write_bool(value: Any) -> str:
    return "true" if value else "false"


_PARSERS: dict[type, Callable[[str], Any]] = {int: _parse_int, bool: _parse_bool, str: str}
_WRITERS: dict[type, Callable[[Any], str]] = {int: str, bool: _write_bool, str: str}

_Spec = tuple[tuple[str, str, Callable[[str], Any], Callable[[Any], str], bool], ...]


def _base_type(hint: Any) -> type:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = args[0]
    if hint not in _PARSERS:
        raise TypeError(f"header fields must be str, int or bool, not {hint!r}")
    return typing.cast(type, hint)


class CommandHeader:
    """Base of every typed header; subclasses are frozen slotted dataclasses."""

    __slots__ = ()
    _spec: ClassVar[_Spec | None] = None

    @classmethod
    def _fields_spec(cls) -> _Spec:
        spec = cls.__dict__.get("_spec")
        if spec is None:
            hints = typing.get_type_hints(cls)
            items = []
            for f in dataclasses.fields(cls):  # type: ignore[arg-type]
                base = _base_type(hints[f.name])
                required = (
                    f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                )
                items.append(
                    (
                        f.name,
                        f.metadata.get("wire", camel(f.name)),
                        _PARSERS[base],
                        _WRITERS[base],
                        required,
                    )
                )
            spec = tuple(items)
            cls._spec = spec
        return spec

    @classmethod
    def from_ext_fields(cls, ext: Mapping[str, str]) -> Self:
        """Build from a command's extFields. Raises HeaderError; unknown keys are ignored."""
        return cls._build(ext, cls._fields_spec())

    @classmethod
    def _build(cls, ext: Mapping[str, str], spec: _Spec) -> Self:
        # ``spec`` may come from a sibling class with the same attributes under other wire
        # names (SEND_MESSAGE_V2's letters -> SendMessageRequestHeader), saving a copy.
        kwargs: dict[str, Any] = {}
        get = ext.get
        for attr, key, parse, _, required in spec:
            text = get(key)
            if text is None:
                if required:
                    raise HeaderError(f"the custom field <{key}> is null")
                continue
            try:
                kwargs[attr] = text if parse is str else parse(text)
            except ValueError:
                raise HeaderError(f"the custom field <{key}> is not valid: {text!r}") from None
        return cls(**kwargs)

    @classmethod
    def from_command(cls, cmd: Any) -> Self:
        """``from_ext_fields(cmd.ext_fields)``, for handlers that receive a command."""
        return cls.from_ext_fields(cmd.ext_fields)

    def to_ext_fields(self) -> dict[str, str]:
        """The text map to put on the wire; ``None`` fields are left out."""
        out: dict[str, str] = {}
        for attr, key, _, write, _ in self._fields_spec():
            value = getattr(self, attr)
            if value is not None:
                out[key] = write(value)
        return out

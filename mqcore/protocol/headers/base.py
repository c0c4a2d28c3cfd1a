"""Typed views of ``extFields``: dataclasses that read and write the text map.

A header class is a frozen dataclass deriving from :class:`CommandHeader`. Attribute names
are snake_case; the wire name is the camelCase form unless a field says otherwise with
:func:`wire` (SEND_MESSAGE_V2's one-letter names, ``clientID``). Types are ``str``, ``int``
(Java ``long``), :data:`JavaInt` (Java ``int``) or ``bool`` (optionally ``| None``); a field
without a default is required, as Java's ``@CFNotNull``. Conversion follows Java:
``Integer.parseInt``/``Long.parseLong`` for numbers, so a number outside the Java type's
range is a :class:`HeaderError` here, not a ``struct`` error deep in the store; and
``Boolean.parseBoolean`` for flags, written back as ``"true"``/``"false"`` (never Python's
``"True"``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Self

from mqcore.common.core import load
from mqcore.common.properties import camel
from mqcore.errors import MQError
from mqcore.protocol.fastbuild import compile_function, construct, mutable_twin

__all__ = [
    "CommandHeader",
    "HeaderError",
    "JavaInt",
    "camel",
    "parse_java_int",
    "parse_java_long",
    "wire",
]


class HeaderError(MQError, ValueError):
    """A request's header lacks a required field or has a value of the wrong type.

    Servers answer it with SYSTEM_ERROR and this message as remark (the connection stays).
    """


def wire(name: str, default: Any = dataclasses.MISSING) -> Any:
    """A dataclass field whose extFields key is ``name`` instead of the camelCase default."""
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata={"wire": name})
    return dataclasses.field(default=default, metadata={"wire": name})


def _parse_bool(text: str) -> bool:
    return text.lower() == "true"


def _write_bool(value: Any) -> str:
    return "true" if value else "false"


class _JavaNumber:
    """The range of a Java integral type; the metadata of :data:`JavaInt`."""

    __slots__ = ("bits", "name")

    def __init__(self, name: str, bits: int) -> None:
        self.name = name
        self.bits = bits

    @property
    def bounds(self) -> tuple[int, int]:
        return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1


_INT = _JavaNumber("int", 32)
_LONG = _JavaNumber("long", 64)

JavaInt = Annotated[int, _INT]
"""A field Java declares ``int``/``Integer`` (32 bits); plain ``int`` fields are ``long``."""


def _parse_java(text: str, kind: _JavaNumber) -> int:
    value = int(text)
    lo, hi = kind.bounds
    if not lo <= value <= hi:
        raise ValueError(f"{value} is out of the range of a Java {kind.name}")
    return value


def parse_java_int(text: str) -> int:
    """``Integer.parseInt``: ValueError for text that is not a number in 32 bits."""
    return _parse_java(text, _INT)


def parse_java_long(text: str) -> int:
    """``Long.parseLong``: ValueError for text that is not a number in 64 bits."""
    return _parse_java(text, _LONG)


_NUMBER_KINDS: dict[Callable[[str], int], _JavaNumber] = {
    parse_java_int: _INT,
    parse_java_long: _LONG,
}
_PARSERS: dict[type, Callable[[str], Any]] = {int: parse_java_long, bool: _parse_bool, str: str}
# The texts most values are (queue ids, flags, counts, booleans), parsed once: a dict
# lookup costs a third of parsing. Anything else is parsed as usual.
_SMALL_INTS = {str(n): n for n in range(-1, 1025)}  # within every Java integral type
_PARSED: dict[Callable[[str], Any], dict[str, Any]] = {
    parse_java_int: _SMALL_INTS,
    parse_java_long: _SMALL_INTS,
    _parse_bool: {"true": True, "false": False},
}
_WRITERS: dict[Callable[[str], Any], Callable[[Any], str]] = {
    parse_java_int: str,
    parse_java_long: str,
    _parse_bool: _write_bool,
    str: str,
}

_Spec = tuple[tuple[str, str, Callable[[str], Any], Callable[[Any], str], bool], ...]
_Reader = Callable[[Mapping[str, str]], Any]


def _parser(hint: Any) -> Callable[[str], Any]:
    """The text parser of a field annotated ``hint`` (``X | None`` parses as ``X``)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = args[0]
    if typing.get_origin(hint) is Annotated and _INT in hint.__metadata__:
        return parse_java_int
    if hint not in _PARSERS:
        raise TypeError(f"header fields must be str, int, JavaInt or bool, not {hint!r}")
    return _PARSERS[hint]


def _missing(key: str) -> HeaderError:
    return HeaderError(f"the custom field <{key}> is null")


def invalid(key: str, text: str, parse: Callable[[str], Any] | None = None) -> HeaderError:
    """The error for a value ``parse`` refused (the remark says when it is a range)."""
    kind = _NUMBER_KINDS.get(parse) if parse is not None else None
    if kind is not None:
        try:
            _parse_java(text, kind)
        except ValueError as exc:
            if "range" in str(exc):
                return HeaderError(f"the custom field <{key}> is not valid: {exc}")
    return HeaderError(f"the custom field <{key}> is not valid: {text!r}")


_compiled = load("mqcore.protocol.headers._reader")
"""The compiled twin of the readers (None: the generated pure ones run)."""


class CommandHeader:
    """Base of every typed header; subclasses are frozen slotted dataclasses.

    Reading and writing extFields run code generated once per class (one straight-line
    function per direction, see :mod:`mqcore.protocol.fastbuild`): a loop over the fields
    that builds keyword arguments for the frozen ``__init__`` cost three times as much, on
    every request.
    """

    __slots__ = ()
    _spec: ClassVar[_Spec | None] = None
    _readers: ClassVar[dict[type, _Reader] | None] = None
    _read: ClassVar[_Reader | None] = None  # _readers[cls], one lookup away
    _writer: ClassVar[Callable[[Any], dict[str, str]] | None] = None
    _copier: ClassVar[Callable[[Any], Any] | None] = None

    @classmethod
    def _fields_spec(cls) -> _Spec:
        spec = cls.__dict__.get("_spec")
        if spec is None:
            hints = typing.get_type_hints(cls, include_extras=True)
            items = []
            for f in dataclasses.fields(cls):  # type: ignore[arg-type]
                parse = _parser(hints[f.name])
                required = (
                    f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                )
                items.append(
                    (
                        f.name,
                        f.metadata.get("wire", camel(f.name)),
                        parse,
                        _WRITERS[parse],
                        required,
                    )
                )
            spec = tuple(items)
            cls._spec = spec
        return spec

    @classmethod
    def from_ext_fields(cls, ext: Mapping[str, str]) -> Self:
        """Build from a command's extFields. Raises HeaderError; unknown keys are ignored."""
        read = cls.__dict__.get("_read")
        if read is None:
            read = cls._read = cls._reader(cls)
        return read(ext)  # type: ignore[no-any-return]

    @classmethod
    def _reader(cls, wire_cls: type[CommandHeader]) -> _Reader:
        """``ext -> cls`` with the keys of ``wire_cls``, a class with the same attributes
        (SEND_MESSAGE_V2's letters -> SendMessageRequestHeader)."""
        readers = cls.__dict__.get("_readers")
        if readers is None:
            readers = cls._readers = {}
        reader = readers.get(wire_cls)
        if reader is None:
            reader = readers[wire_cls] = cls._compile_reader(wire_cls._fields_spec())
        return reader

    @classmethod
    def _compile_reader(cls, spec: _Spec) -> _Reader:
        fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        namespace: dict[str, Any] = {"_missing": _missing, "_invalid": invalid, "_int": int}
        body = ["get = ext.get"]
        for i, (attr, key, parse, _, required) in enumerate(spec):
            kind = _NUMBER_KINDS.get(parse)
            if parse is str:
                store = [f"v_{attr} = text"]
            elif kind is not None:
                # parse_java_*, inlined: a Python-level call per number costs as much again.
                namespace[f"_parse{i}"] = parse
                namespace[f"_parsed{i}"] = _PARSED[parse].get
                lo, hi = kind.bounds
                store = [
                    f"v_{attr} = _parsed{i}(text)",
                    f"if v_{attr} is None:",
                    "    try:",
                    f"        v_{attr} = _int(text)",
                    "    except ValueError:",
                    f"        raise _invalid({key!r}, text, _parse{i}) from None",
                    f"    if not {lo} <= v_{attr} <= {hi}:",
                    f"        raise _invalid({key!r}, text, _parse{i})",
                ]
            else:
                namespace[f"_parse{i}"] = parse
                namespace[f"_parsed{i}"] = _PARSED[parse].get
                store = [
                    f"v_{attr} = _parsed{i}(text)",
                    f"if v_{attr} is None:",
                    "    try:",
                    f"        v_{attr} = _parse{i}(text)",
                    "    except ValueError:",
                    f"        raise _invalid({key!r}, text, _parse{i}) from None",
                ]
            body += [f"text = get({key!r})", "if text is None:"]
            if required:
                body += [f"    raise _missing({key!r})", *store]
                continue
            f = fields[attr]
            if f.default_factory is dataclasses.MISSING:
                namespace[f"_default{i}"] = f.default
                body.append(f"    v_{attr} = _default{i}")
            else:
                namespace[f"_factory{i}"] = f.default_factory
                body.append(f"    v_{attr} = _factory{i}()")
            body += ["else:", *(f"    {line}" for line in store)]
        body += construct(cls, {attr: f"v_{attr}" for attr, *_ in spec}, namespace)
        pure = compile_function(f"read_{cls.__name__}", "ext", body, namespace)
        if _compiled is None or mutable_twin(cls) is None:
            return pure
        fast: _Reader | None = _compiled.reader(cls, cls._reader_rows(spec), pure)
        return pure if fast is None else fast

    @classmethod
    def _reader_rows(cls, spec: _Spec) -> list[tuple[Any, ...]]:
        """The fields of ``spec`` as the compiled twin's ``reader`` takes them."""
        fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        rows: list[tuple[Any, ...]] = []
        for attr, key, parse, _, required in spec:
            kind = _NUMBER_KINDS.get(parse)
            f = fields[attr]
            factory = None if f.default_factory is dataclasses.MISSING else f.default_factory
            rows.append(
                (
                    attr,
                    key,
                    "text" if parse is str else "parsed" if kind is None else "number",
                    _PARSED.get(parse),
                    parse,
                    *(kind.bounds if kind is not None else (0, 0)),
                    required,
                    None if required or factory is not None else f.default,
                    factory,
                )
            )
        return rows

    @classmethod
    def from_header(cls, other: CommandHeader) -> Self:
        """A ``cls`` with the attribute values of ``other`` (same attribute names)."""
        copier = cls.__dict__.get("_copier")
        if copier is None:
            namespace: dict[str, Any] = {}
            values = {attr: f"other.{attr}" for attr, *_ in cls._fields_spec()}
            body = construct(cls, values, namespace)
            copier = compile_function(f"copy_{cls.__name__}", "other", body, namespace)
            cls._copier = copier
        return copier(other)  # type: ignore[no-any-return]

    @classmethod
    def from_command(cls, cmd: Any) -> Self:
        """``from_ext_fields(cmd.ext_fields)``, for handlers that receive a command."""
        read = cls.__dict__.get("_read")
        if read is None:
            read = cls._read = cls._reader(cls)
        return read(cmd.ext_fields)  # type: ignore[no-any-return]

    def to_ext_fields(self) -> dict[str, str]:
        """The text map to put on the wire; ``None`` fields are left out."""
        writer = type(self).__dict__.get("_writer")
        if writer is None:
            writer = type(self)._compile_writer()
        out: dict[str, str] = writer(self)
        return out

    @classmethod
    def _compile_writer(cls) -> Callable[[Any], dict[str, str]]:
        namespace: dict[str, Any] = {}
        body = ["out = {}"]
        for i, (attr, key, _, write, _) in enumerate(cls._fields_spec()):
            namespace[f"_write{i}"] = write
            body += [
                f"value = header.{attr}",
                "if value is not None:",
                f"    out[{key!r}] = _write{i}(value)",
            ]
        body.append("return out")
        writer = compile_function(f"write_{cls.__name__}", "header", body, namespace)
        cls._writer = writer
        return writer

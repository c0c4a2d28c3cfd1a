"""Message properties: ``name\\x01value\\x02name\\x01value`` in UTF-8.

Java writes no trailing separator; ali-ons and 3.x-era brokers do. Reading follows Java:
a pair is kept only with a non-empty name and value, so trailing or empty segments are
harmless (and no phantom ``"" -> ""`` entry appears, unlike ali-ons).

The functions here are the reference; ``_properties.pyx`` is their compiled twin, taken at
import when built (see :mod:`mqcore.common.core`): a send's properties are read once per
message on the broker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from mqcore.common.core import load
from mqcore.errors import CorruptRecordError

_NV = "\x01"
_SEP = "\x02"


def encode_properties(props: Mapping[str, str | None]) -> bytes:
    """Encode a property map; ``None`` values are skipped, as Java does."""
    if not props:
        return b""
    parts = [f"{k}{_NV}{v}" for k, v in props.items() if v is not None]
    return _SEP.join(parts).encode("utf-8")


def decode_properties(data: bytes | bytearray | memoryview) -> dict[str, str]:
    """Decode a properties field; raises :class:`CorruptRecordError` on invalid UTF-8."""
    if not data:
        return {}
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptRecordError(f"properties are not UTF-8: {exc}") from None
    return _pure_parse(text)


def parse_properties_text(text: str | None) -> dict[str, str]:
    """``name\x01value\x02...`` as text (a send header's ``properties``), read by Java's
    rules: a segment without a name or a value is skipped."""
    out: dict[str, str] = {}
    if text:
        for segment in text.split(_SEP):
            name, sep, value = segment.partition(_NV)
            if sep and name and value:
                out[name] = value
    return out


_pure_parse = parse_properties_text  # what decode_properties calls, whichever core runs


def validate_property(name: str, value: str) -> None:
    """Names and values may not contain the separators (they would split the record)."""
    for text in (name, value):
        if _NV in text or _SEP in text:
            raise ValueError(f"property {name!r} contains a reserved separator character")


PURE: Final[dict[str, Callable[..., Any]]] = {
    "encode_properties": encode_properties,
    "decode_properties": decode_properties,
    "parse_properties_text": parse_properties_text,
}
"""The pure functions, kept for the parity tests whichever core runs."""

_compiled = load("mqcore.message._properties")
if _compiled is not None:
    encode_properties, decode_properties, parse_properties_text = _compiled.functions(
        encode_properties, decode_properties, parse_properties_text
    )

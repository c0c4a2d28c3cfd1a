"""The JSON header form (serialize type 0), as fastjson writes and ali-ons sends it.

Reading is lenient where real peers differ (spec §2): ``extFields`` values may be JSON
numbers, booleans or null (ali-ons); they become the text Java would hold (``"4"``,
``"true"``; null = absent). Unknown top-level fields and ``language`` names are ignored.
Writing is strict: every ext value must already be text.

The functions here are the reference; ``_header_json.pyx`` is their compiled twin, taken
at import when built (see :mod:`mqcore.common.core`). orjson does the JSON in both; the
twin compiles the per-request work around it (field checks, the command, the header
object), about a third of a header's decoding and encoding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson

from mqcore.common.core import load
from mqcore.errors import LocalProtocolError, RemoteProtocolError
from mqcore.protocol.codes import LanguageCode, SerializeType
from mqcore.protocol.command import Body, RemotingCommand, make_command

__all__ = ["decode_json_header", "encode_json_header"]

_LANGUAGE_BY_NAME = {lang.name: lang for lang in LanguageCode}
_NAME_OF_LANGUAGE = {lang: lang.name for lang in LanguageCode}  # Enum.name is a Python call


def _ext_text(value: Any) -> str | None:
    # Convert as Java/JS would: str(True) is "True" in Python but "true" on the wire.
    if isinstance(value, str):
        return value
    if value is None:
        return None
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return orjson.dumps(value).decode()


def _int_field(obj: dict[str, Any], name: str, default: int | None = None) -> int:
    value = obj.get(name, default)
    if value is None:
        raise RemoteProtocolError(f"JSON header lacks {name!r}")
    if type(value) is not int:
        raise RemoteProtocolError(f"JSON header field {name!r} is not an integer: {value!r}")
    return value


def decode_json_header(data: bytes | bytearray | memoryview, body: Body) -> RemotingCommand:
    """Parse a JSON header (``body`` is attached as is). Raises RemoteProtocolError."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise RemoteProtocolError(f"header is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise RemoteProtocolError("JSON header is not an object")
    raw_ext = obj.get("extFields")
    ext: dict[str, str]
    if raw_ext is None:
        ext = {}
    elif isinstance(raw_ext, dict):
        ext = raw_ext
        for value in raw_ext.values():
            if type(value) is not str:  # only ali-ons gets here; Java always sends text
                ext = {}
                for k, v in raw_ext.items():
                    text = _ext_text(v)
                    if text is not None:
                        ext[k] = text
                break
    else:
        raise RemoteProtocolError("JSON header extFields is not an object")
    remark = obj.get("remark")
    if remark is not None and type(remark) is not str:
        remark = _ext_text(remark)
    code: Any = obj.get("code")
    opaque = obj.get("opaque", 0)
    flag = obj.get("flag", 0)
    version = obj.get("version", 0)
    # One combined type check on the hot path; the helper names the culprit on failure.
    if (
        type(code) is not int
        or type(opaque) is not int
        or type(flag) is not int
        or type(version) is not int
    ):
        for name in ("code", "opaque", "flag", "version"):
            _int_field(obj, name, None if name == "code" else 0)
    language = obj.get("language")
    return make_command(
        code,
        opaque,
        flag,
        remark,
        ext,
        body,
        _LANGUAGE_BY_NAME.get(language, LanguageCode.OTHER)
        if type(language) is str
        else LanguageCode.OTHER,
        version,
        SerializeType.JSON,
    )


def encode_json_header(cmd: RemotingCommand) -> bytes:
    """Compact JSON with fastjson's alphabetical field order; null fields omitted."""
    obj: dict[str, Any] = {"code": cmd.code}
    ext = cmd.ext_fields
    if ext:
        for key, value in ext.items():
            if type(value) is not str or type(key) is not str:
                raise LocalProtocolError(
                    f"extFields must map text to text, got {key!r}: {value!r}"
                    " (use a header's to_ext_fields())"
                )
        obj["extFields"] = ext if type(ext) is dict else dict(ext)
    obj["flag"] = cmd.flag
    language = cmd.language
    obj["language"] = _NAME_OF_LANGUAGE.get(language) or language.name
    obj["opaque"] = cmd.opaque
    if cmd.remark is not None:
        obj["remark"] = cmd.remark
    obj["serializeTypeCurrentRPC"] = "JSON"
    obj["version"] = cmd.version
    return orjson.dumps(obj)


PURE: Final[dict[str, Callable[..., Any]]] = {
    "decode_json_header": decode_json_header,
    "encode_json_header": encode_json_header,
}
"""The pure functions, kept for the parity tests whichever core runs."""

_compiled = load("mqcore.protocol._header_json")
if _compiled is not None:
    decode_json_header, encode_json_header = _compiled.codec(_ext_text, _int_field)

# cython: language_level=3, cdivision=True
"""Compiled twin of :mod:`mqcore.protocol.header_json` (the pure module is the reference).

orjson does the JSON either way; what is compiled is the work around it, once per
request: the checks of the decoded object's fields and the building of the command on
the way in, the header object on the way out. Non-text ext values (only ali-ons sends
them) and a field of the wrong type are handed to the pure helpers passed to
:func:`codec`, so the conversions and error texts are theirs.
"""

from mqcore.common._wire cimport MQ_SOURCE_STAMP

import orjson

from mqcore.errors import LocalProtocolError, RemoteProtocolError
from mqcore.protocol.codes import LanguageCode, SerializeType
from mqcore.protocol.command import make_command


cdef extern from "Python.h":
    bint PyLong_CheckExact(object o)
    bint PyUnicode_CheckExact(object o)
    bint PyDict_CheckExact(object o)

SOURCE_STAMP = MQ_SOURCE_STAMP.decode("ascii")
"""sha256 of this file when it was compiled (checked by mqcore.common.core)."""

cdef object _loads = orjson.loads
cdef object _dumps = orjson.dumps
cdef object _JSONDecodeError = orjson.JSONDecodeError
cdef dict _LANGUAGE_BY_NAME = {lang.name: lang for lang in LanguageCode}
cdef dict _NAME_OF_LANGUAGE = {lang: lang.name for lang in LanguageCode}
cdef object _OTHER = LanguageCode.OTHER
cdef object _JSON = SerializeType.JSON
cdef object _make_command = make_command


def codec(ext_text, int_field):
    """``(decode_json_header, encode_json_header)`` compiled, with the pure module's
    ``_ext_text`` and ``_int_field`` for the rare cases."""

    def decode_json_header(data, body):
        """Parse a JSON header (``body`` is attached as is). Raises RemoteProtocolError."""
        cdef dict ext
        try:
            obj = _loads(data)
        except _JSONDecodeError as exc:
            raise RemoteProtocolError(f"header is not JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise RemoteProtocolError("JSON header is not an object")
        raw_ext = (<dict> obj).get("extFields")
        if raw_ext is None:
            ext = {}
        elif isinstance(raw_ext, dict):
            ext = <dict> raw_ext
            for value in (<dict> raw_ext).values():
                if not PyUnicode_CheckExact(value):
                    ext = {}
                    for k, v in (<dict> raw_ext).items():
                        text = ext_text(v)
                        if text is not None:
                            ext[k] = text
                    break
        else:
            raise RemoteProtocolError("JSON header extFields is not an object")
        remark = (<dict> obj).get("remark")
        if remark is not None and not PyUnicode_CheckExact(remark):
            remark = ext_text(remark)
        code = (<dict> obj).get("code")
        opaque = (<dict> obj).get("opaque", 0)
        flag = (<dict> obj).get("flag", 0)
        version = (<dict> obj).get("version", 0)
        if not (PyLong_CheckExact(code) and PyLong_CheckExact(opaque)
                and PyLong_CheckExact(flag) and PyLong_CheckExact(version)):
            for name in ("code", "opaque", "flag", "version"):
                int_field(obj, name, None if name == "code" else 0)
        language = (<dict> obj).get("language")
        if PyUnicode_CheckExact(language):
            language = _LANGUAGE_BY_NAME.get(language, _OTHER)
        else:
            language = _OTHER
        return _make_command(code, opaque, flag, remark, ext, body, language, version, _JSON)

    def encode_json_header(cmd):
        """Compact JSON with fastjson's alphabetical field order; null fields omitted."""
        cdef dict obj = {"code": cmd.code}
        ext = cmd.ext_fields
        if ext:
            for key, value in ext.items():
                if not isinstance(value, str) or not isinstance(key, str):
                    raise LocalProtocolError(
                        f"extFields must map text to text, got {key!r}: {value!r}"
                        " (use a header's to_ext_fields())"
                    )
            obj["extFields"] = ext if PyDict_CheckExact(ext) else dict(ext)
        obj["flag"] = cmd.flag
        language = cmd.language
        obj["language"] = _NAME_OF_LANGUAGE.get(language) or language.name
        obj["opaque"] = cmd.opaque
        remark = cmd.remark
        if remark is not None:
            obj["remark"] = remark
        obj["serializeTypeCurrentRPC"] = "JSON"
        obj["version"] = cmd.version
        return _dumps(obj)

    return decode_json_header, encode_json_header

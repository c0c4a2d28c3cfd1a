# cython: language_level=3, cdivision=True
"""Compiled twin of :mod:`mqcore.protocol.header_binary` (the pure module is the reference).

One pass over the header's bytes with a C pointer: every length is checked before it is
used, in the order the pure ``_read_checked`` checks them, so bad input raises the same
:class:`RemoteProtocolError` with the same text. Text fields are decoded straight from the
buffer (no slice objects). Encoding measures the whole header first, then writes it into
one ``bytes`` (no list of parts, no join).
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.dict cimport PyDict_Next, PyDict_SetItem
from cpython.number cimport PyNumber_Index
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int8_t, int16_t, int32_t, uint8_t, uint16_t, uint32_t
from libc.string cimport memcpy
from mqcore.common._wire cimport MQ_SOURCE_STAMP, get_i16, get_i32, put_i16, put_i32

from mqcore.errors import LocalProtocolError, RemoteProtocolError
from mqcore.protocol.codes import LanguageCode, SerializeType
from mqcore.protocol.command import make_command


cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object text, Py_ssize_t *size) except NULL

SOURCE_STAMP = MQ_SOURCE_STAMP.decode("ascii")
"""sha256 of this file when it was compiled (checked by mqcore.common.core)."""

cdef dict _LANGUAGES = {lang.value: lang for lang in LanguageCode}
cdef object _OTHER = LanguageCode.OTHER
cdef object _ROCKETMQ = SerializeType.ROCKETMQ
cdef object _make_command = make_command


cdef object _text(const uint8_t *p, Py_ssize_t n):
    try:
        return PyUnicode_DecodeUTF8(<const char *> p, n, NULL)
    except UnicodeDecodeError as exc:
        raise RemoteProtocolError(f"binary header text is not UTF-8: {exc}") from None


cdef object _truncated():
    return RemoteProtocolError("binary header truncated")


cdef object _decode(const uint8_t *buf, Py_ssize_t end, object body):
    cdef Py_ssize_t pos, ext_end
    cdef int32_t remark_len, ext_len, vlen
    cdef int16_t klen
    cdef object remark = None
    cdef object key
    cdef dict ext = {}
    if end < 17:
        raise _truncated()
    cdef int code = get_i16(buf)
    cdef int lang = <int8_t> buf[2]
    cdef int version = get_i16(buf + 3)
    cdef int32_t opaque = get_i32(buf + 5)
    cdef int32_t flag = get_i32(buf + 9)
    remark_len = get_i32(buf + 13)
    pos = 17
    if remark_len < 0 or pos + remark_len > end:
        raise RemoteProtocolError(f"binary header remark length {remark_len} out of range")
    if remark_len:
        remark = _text(buf + pos, remark_len)
    pos += remark_len
    if pos + 4 > end:
        raise _truncated()
    ext_len = get_i32(buf + pos)
    pos += 4
    if ext_len < 0 or pos + ext_len > end:
        raise RemoteProtocolError(f"binary header ext length {ext_len} out of range")
    ext_end = pos + ext_len
    while pos < ext_end:
        if pos + 2 > end:
            raise _truncated()
        klen = get_i16(buf + pos)
        pos += 2
        if klen < 0 or pos + klen > ext_end:
            raise RemoteProtocolError("binary header ext key overruns the ext block")
        key = _text(buf + pos, klen)
        pos += klen
        if pos + 4 > end:
            raise _truncated()
        vlen = get_i32(buf + pos)
        pos += 4
        if vlen < 0 or pos + vlen > ext_end:
            raise RemoteProtocolError("binary header ext value overruns the ext block")
        if vlen:
            PyDict_SetItem(ext, key, _text(buf + pos, vlen))
        pos += vlen
    language = _LANGUAGES.get(lang, _OTHER)
    return _make_command(code, opaque, flag, remark, ext, body, language, version, _ROCKETMQ)


def decode_binary_header(data, body):
    """Parse a binary header. Raises RemoteProtocolError on truncated or bad fields."""
    cdef Py_buffer view
    if type(data) is bytes:
        return _decode(<const uint8_t *> PyBytes_AS_STRING(data), len(<bytes> data), body)
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return _decode(<const uint8_t *> view.buf, view.len, body)
    finally:
        PyBuffer_Release(&view)


cdef object _not_text(object value):
    return LocalProtocolError(
        f"cannot encode binary header: '{type(value).__name__}' object has no attribute"
        " 'encode'"
    )


def encode_binary_header(cmd):
    """Encode ``cmd``'s header in the binary form. Raises LocalProtocolError on overflow."""
    cdef int16_t code
    cdef int8_t lang
    cdef int16_t version
    cdef int32_t opaque, flag
    cdef const char *remark_p = NULL
    cdef Py_ssize_t remark_len = 0, klen, vlen, total, ext_len = 0, pos = 0
    cdef const char *kp
    cdef const char *vp
    cdef Py_ssize_t i = 0
    cdef PyObject *k
    cdef PyObject *v
    cdef object key, value
    try:
        # as struct.pack: integers (and whatever has __index__), never a float
        code = PyNumber_Index(cmd.code)
        lang = PyNumber_Index(cmd.language)
        version = PyNumber_Index(cmd.version)
        opaque = PyNumber_Index(cmd.opaque)
        flag = PyNumber_Index(cmd.flag)
    except (OverflowError, TypeError) as exc:
        raise LocalProtocolError(f"cannot encode binary header: {exc}") from None
    remark = cmd.remark
    if remark:
        if not isinstance(remark, str):
            raise _not_text(remark)
        remark_p = PyUnicode_AsUTF8AndSize(remark, &remark_len)
    ext = cmd.ext_fields
    if type(ext) is not dict:
        ext = dict(ext.items())
    # First pass: check every entry and measure (the UTF-8 form is cached on each str,
    # so the second pass only copies).
    while PyDict_Next(<dict> ext, &i, &k, &v):
        key = <object> k
        value = <object> v
        if not isinstance(key, str):
            raise _not_text(key)
        PyUnicode_AsUTF8AndSize(key, &klen)
        if klen > 32767:
            raise LocalProtocolError(
                "cannot encode binary header: 'h' format requires -32768 <= number <= 32767"
            )
        if not isinstance(value, str):
            raise _not_text(value)
        PyUnicode_AsUTF8AndSize(value, &vlen)
        if vlen > 0x7FFFFFFF:
            raise LocalProtocolError("cannot encode binary header: value too long")
        ext_len += 6 + klen + vlen
    total = 13 + 4 + remark_len + 4 + ext_len
    out = PyBytes_FromStringAndSize(NULL, total)
    cdef uint8_t *p = <uint8_t *> PyBytes_AS_STRING(out)
    put_i16(p, <uint32_t> <uint16_t> code)
    p[2] = <uint8_t> lang
    put_i16(p + 3, <uint32_t> <uint16_t> version)
    put_i32(p + 5, <uint32_t> opaque)
    put_i32(p + 9, <uint32_t> flag)
    put_i32(p + 13, <uint32_t> remark_len)
    pos = 17
    if remark_len:
        memcpy(p + pos, remark_p, remark_len)
        pos += remark_len
    put_i32(p + pos, <uint32_t> ext_len)
    pos += 4
    i = 0
    while PyDict_Next(<dict> ext, &i, &k, &v):
        kp = PyUnicode_AsUTF8AndSize(<object> k, &klen)
        vp = PyUnicode_AsUTF8AndSize(<object> v, &vlen)
        put_i16(p + pos, <uint32_t> klen)
        pos += 2
        memcpy(p + pos, kp, klen)
        pos += klen
        put_i32(p + pos, <uint32_t> vlen)
        pos += 4
        memcpy(p + pos, vp, vlen)
        pos += vlen
    return out

# cython: language_level=3, cdivision=True
"""Compiled twin of :mod:`mqcore.message.properties` (the pure module is the reference).

A send's properties arrive as text in its header (``name\\x01value\\x02...``) and are read
into a dict once per message; a stored record's are read from bytes. Both are split here
on the separator bytes of the UTF-8 form in one pass (the separators are ASCII, so they
never sit inside a multi-byte character), each name and value made once, no list of
segments, no partition tuples. Anything the fast path does not take (text that has no
UTF-8 form, bytes that are not UTF-8, values that are not plain str) goes to the pure
function passed to :func:`functions`, so results and errors are the reference's.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.dict cimport PyDict_Next, PyDict_SetItem
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_DecodeASCII, PyUnicode_DecodeUTF8
from libc.stdint cimport uint8_t
from libc.string cimport memcpy
from mqcore.common._wire cimport MQ_SOURCE_STAMP, split_properties
from mqcore.common._wire cimport decode_properties as decode_field


cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object text, Py_ssize_t *size) except NULL
    bint PyUnicode_CheckExact(object o)
    bint PyDict_CheckExact(object o)
    bint PyUnicode_IS_ASCII(object o)

SOURCE_STAMP = MQ_SOURCE_STAMP.decode("ascii")
"""sha256 of this file when it was compiled (checked by mqcore.common.core)."""


def functions(pure_encode, pure_decode, pure_parse):
    """``(encode_properties, decode_properties, parse_properties_text)`` compiled, each
    handing what it does not take to the pure function given."""

    def encode_properties(props):
        """Encode a property map; ``None`` values are skipped, as Java does."""
        cdef Py_ssize_t i = 0, n = 0, klen, vlen, count = 0, pos = 0
        cdef PyObject *k
        cdef PyObject *v
        cdef const char *kp
        cdef const char *vp
        if not props:
            return b""
        if not PyDict_CheckExact(props):
            return pure_encode(props)
        try:
            while PyDict_Next(props, &i, &k, &v):
                if <object> v is None:
                    continue
                if not PyUnicode_CheckExact(<object> k) or not PyUnicode_CheckExact(<object> v):
                    return pure_encode(props)
                PyUnicode_AsUTF8AndSize(<object> k, &klen)
                PyUnicode_AsUTF8AndSize(<object> v, &vlen)
                n += klen + 1 + vlen + (1 if count else 0)
                count += 1
        except UnicodeEncodeError:
            return pure_encode(props)
        out = PyBytes_FromStringAndSize(NULL, n)
        cdef char *p = PyBytes_AS_STRING(out)
        i = 0
        count = 0
        while PyDict_Next(props, &i, &k, &v):
            if <object> v is None:
                continue
            kp = PyUnicode_AsUTF8AndSize(<object> k, &klen)
            vp = PyUnicode_AsUTF8AndSize(<object> v, &vlen)
            if count:
                p[pos] = 0x02
                pos += 1
            memcpy(p + pos, kp, klen)
            pos += klen
            p[pos] = 0x01
            pos += 1
            memcpy(p + pos, vp, vlen)
            pos += vlen
            count += 1
        return out

    def decode_properties(data):
        """Decode a properties field; raises CorruptRecordError on invalid UTF-8."""
        cdef Py_buffer view
        if not data:
            return {}
        if type(data) is bytes:
            found = decode_field(<const uint8_t *> PyBytes_AS_STRING(data), len(<bytes> data))
        else:
            PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
            try:
                found = decode_field(<const uint8_t *> view.buf, view.len)
            finally:
                PyBuffer_Release(&view)
        if found is None:
            return pure_decode(data)
        return found

    def parse_properties_text(text):
        """``name\\x01value\\x02...`` as text, read by Java's rules."""
        cdef Py_ssize_t n
        cdef const char *p
        if not text:
            return {}
        if not PyUnicode_CheckExact(text):
            return pure_parse(text)
        try:
            p = PyUnicode_AsUTF8AndSize(text, &n)
        except UnicodeEncodeError:  # lone surrogates: the pure split keeps them as they are
            return pure_parse(text)
        return split_properties(<const uint8_t *> p, n, PyUnicode_IS_ASCII(text))

    return encode_properties, decode_properties, parse_properties_text

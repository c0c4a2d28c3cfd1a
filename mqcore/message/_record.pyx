# cython: language_level=3, cdivision=True
"""Compiled twin of the record decoder of :mod:`mqcore.message.record` (``_decode``).

What a consumer spends its CPU on: every pulled message is one commit log record to turn
into a :class:`MessageExt`. This reads a well-formed v1/v2 record with IPv4 hosts in one
pass over a C pointer: fields read in place, hosts formatted once per address (cached),
properties split on their separator bytes without an intermediate str, the MessageExt
filled slot by slot without its keyword ``__init__``.

Anything else (a bad length, text that is not UTF-8, an IPv6 host, a compressed body to
inflate, a CRC to check) is handed to the pure reference, which the module passes to
:func:`decoder`: the twin never decides an error itself, so it raises exactly the
reference's errors, and the rare cases share one implementation.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.ref cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM
from cpython.unicode cimport PyUnicode_DecodeASCII, PyUnicode_DecodeUTF8
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from mqcore.common._wire cimport MQ_SOURCE_STAMP, get_i32, get_i64, mq_fill_slot, mq_slot_offset
from mqcore.common._wire cimport decode_properties as decode_field

from mqcore.message.const import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    SysFlag,
)
from mqcore.message.model import MessageExt


cdef extern from "Python.h":
    object PyUnicode_FromFormat(const char *format, ...)


SOURCE_STAMP = MQ_SOURCE_STAMP.decode("ascii")
"""sha256 of this file when it was compiled (checked by mqcore.common.core)."""

cdef int32_t _MAGIC_V1 = MESSAGE_MAGIC_CODE
cdef int32_t _MAGIC_V2 = MESSAGE_MAGIC_CODE_V2
cdef int32_t _BLANK = BLANK_MAGIC_CODE
cdef int32_t _COMPRESSED = SysFlag.COMPRESSED_FLAG
cdef int32_t _V6 = SysFlag.BORNHOST_V6_FLAG | SysFlag.STOREHOSTADDRESS_V6_FLAG
cdef object _MessageExt = MessageExt
cdef object _new = object.__new__
cdef tuple _FIELDS = (
    "topic", "body", "flag", "properties", "queue_id", "store_size", "queue_offset",
    "sys_flag", "born_timestamp", "born_host", "store_timestamp", "store_host",
    "commit_log_offset", "body_crc", "reconsume_times", "prepared_transaction_offset",
    "magic_code", "stored_body_length",
)
cdef Py_ssize_t _OFFSETS[18]
cdef bint _DIRECT = True
"""Every field of MessageExt is a plain slot: fill a fresh object's slots directly instead
of 18 attribute stores through the type (what a keyword __init__ costs three times over)."""
for _i, _name in enumerate(_FIELDS):
    _OFFSETS[_i] = mq_slot_offset(getattr(MessageExt, _name))
    if _OFFSETS[_i] < 0:
        _DIRECT = False
if len(_FIELDS) != len(getattr(MessageExt, "__dataclass_fields__", ())):
    _DIRECT = False  # a field this file does not know: the ordinary way sets the defaults
cdef dict _hosts = {}
"""(ip << 32 | port) -> ("a.b.c.d", port): a consumer sees a few producers and brokers."""


cdef object _host(const uint8_t *p):
    """An IPv4 host and port as the pure ``(host_from_bytes(ip), port)``."""
    cdef uint32_t ip = <uint32_t> get_i32(p)
    cdef int32_t port = get_i32(p + 4)
    key = (<uint64_t> ip << 32) | <uint32_t> port
    cdef PyObject *found = PyDict_GetItem(_hosts, key)
    if found is not NULL:
        return <object> found
    host = (PyUnicode_FromFormat("%u.%u.%u.%u", <unsigned int> p[0], <unsigned int> p[1],
                                <unsigned int> p[2], <unsigned int> p[3]), port)
    if len(_hosts) >= 4096:
        _hosts.clear()
    _hosts[key] = host
    return host


cdef object _fast(const uint8_t *buf, Py_ssize_t end, Py_ssize_t pos, bint strict,
                  bint read_body, bint decompress):
    """The decoded (MessageExt, end) of a regular record, or None for the reference."""
    if pos < 0 or end - pos < 48:
        return None
    cdef const uint8_t *h = buf + pos
    cdef int32_t total = get_i32(h)
    cdef int32_t magic = get_i32(h + 4)
    cdef int32_t sys_flag = get_i32(h + 36)
    if magic != _MAGIC_V1 and magic != _MAGIC_V2:
        return None
    if total <= 0 or (strict and total > end - pos):
        return None
    if sys_flag & _V6:
        return None
    cdef Py_ssize_t p = pos + 48
    if p + 8 + 8 + 8 + 12 + 4 > end:
        return None
    born_host = _host(buf + p)
    cdef int64_t store_ts = get_i64(buf + p + 8)
    store_host = _host(buf + p + 16)
    p += 24
    cdef int32_t reconsume = get_i32(buf + p)
    cdef int64_t prepared = get_i64(buf + p + 4)
    cdef int32_t body_len = get_i32(buf + p + 12)
    p += 16
    if body_len < 0 or p + body_len > end:
        return None
    cdef Py_ssize_t body_at = p
    p += body_len
    cdef Py_ssize_t topic_len
    if magic == _MAGIC_V1:
        if p >= end:
            return None
        topic_len = buf[p]
        p += 1
    else:
        if p + 2 > end:
            return None
        topic_len = <int16_t> ((buf[p] << 8) | buf[p + 1])
        p += 2
    if topic_len < 0 or p + topic_len > end:
        return None
    try:
        topic = PyUnicode_DecodeUTF8(<const char *> buf + p, topic_len, NULL)
    except UnicodeDecodeError:
        return None
    p += topic_len
    if p + 2 > end:
        return None
    cdef Py_ssize_t props_len = <int16_t> ((buf[p] << 8) | buf[p + 1])
    p += 2
    if props_len < 0 or p + props_len > end:
        return None
    properties = decode_field(buf + p, props_len)
    if properties is None:
        return None
    p += props_len
    if strict and p - pos != total:
        return None
    if read_body:
        if decompress and sys_flag & _COMPRESSED:
            return None
        body = PyBytes_FromStringAndSize(<const char *> buf + body_at, body_len)
    else:
        body = b""
    values = (
        topic, body, get_i32(h + 16), properties, get_i32(h + 12), total, get_i64(h + 20), sys_flag,
        get_i64(h + 40), born_host, store_ts, store_host, get_i64(h + 28), get_i32(h + 8), reconsume,
        prepared, magic, body_len,
    )
    msg = _new(_MessageExt)
    cdef Py_ssize_t i
    if _DIRECT:
        for i in range(18):
            mq_fill_slot(msg, _OFFSETS[i], <object> PyTuple_GET_ITEM(values, i))
    else:
        for i in range(18):
            setattr(msg, _FIELDS[i], <object> PyTuple_GET_ITEM(values, i))
    return msg, p


def decoder(reference):
    """``_decode(buf, pos, strict, check_crc, read_body, decompress)`` compiled, handing
    every record it does not read itself to ``reference`` (the pure ``_decode``)."""

    def _decode(buf, Py_ssize_t pos, bint strict, bint check_crc, bint read_body,
                bint decompress):
        cdef Py_buffer view
        if check_crc:  # the store's verification path: zlib's CRC, not worth a twin
            return reference(buf, pos, strict, check_crc, read_body, decompress)
        if type(buf) is bytes:
            found = _fast(<const uint8_t *> PyBytes_AS_STRING(buf), len(<bytes> buf), pos,
                          strict, read_body, decompress)
        else:
            PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
            try:
                found = None
                if view.len == len(buf):  # not a view of wider items (len() counts those)
                    found = _fast(<const uint8_t *> view.buf, view.len, pos, strict,
                                  read_body, decompress)
            finally:
                PyBuffer_Release(&view)
        if found is None:
            return reference(buf, pos, strict, check_crc, read_body, decompress)
        return found

    return _decode


cdef object _batch(const uint8_t *buf, Py_ssize_t end):
    """The entries of a SEND_BATCH_MESSAGE body, or None for the reference."""
    cdef list out = []
    cdef Py_ssize_t pos = 0, p
    cdef int32_t total, body_len
    cdef Py_ssize_t props_len
    while pos < end:
        if end - pos < 22:
            return None
        total = get_i32(buf + pos)
        body_len = get_i32(buf + pos + 16)
        p = pos + 20
        if body_len < 0 or p + body_len + 2 > end:
            return None
        body = PyBytes_FromStringAndSize(<const char *> buf + p, body_len)
        p += body_len
        props_len = <int16_t> ((buf[p] << 8) | buf[p + 1])
        p += 2
        if props_len < 0 or p + props_len > end:
            return None
        properties = decode_field(buf + p, props_len)
        if properties is None:
            return None
        p += props_len
        if total != p - pos:
            return None
        out.append((get_i32(buf + pos + 12), body, properties))
        pos = p
    return out


def batch_decoder(reference):
    """``decode_batch_body(buf)`` compiled, handing a body it does not read (errors
    included) to ``reference`` (the pure function)."""

    def decode_batch_body(buf):
        cdef Py_buffer view
        if type(buf) is bytes:
            found = _batch(<const uint8_t *> PyBytes_AS_STRING(buf), len(<bytes> buf))
        else:
            PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
            try:
                found = None
                if view.len == len(buf):
                    found = _batch(<const uint8_t *> view.buf, view.len)
            finally:
                PyBuffer_Release(&view)
        if found is None:
            return reference(buf)
        return found

    return decode_batch_body

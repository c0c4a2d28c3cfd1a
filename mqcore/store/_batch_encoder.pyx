# cython: language_level=3, cdivision=True
"""Compiled twin of :mod:`mqcore.store.batch_encoder` (``prepare`` and ``encode``).

The send path's per-message work in the store: properties encoded once, the CRC, the
position-independent parts (``prepare``, before the put lock), then every record written
with its final offsets (``encode``, under the lock). Here ``prepare`` writes the
``TOPICLEN TOPIC PROPLEN PROPERTIES`` tail straight from the property dict's UTF-8 into
one ``bytes``, and ``encode`` writes each record's fields big-endian into one buffer the
size of the batch: no struct calls, no list of parts, no join.

Both build exactly what the pure twin builds (the same :class:`PreparedBatch`, the same
bytes). Anything irregular (a message the store refuses, a value that is not the exact
type the fast path reads, a number out of range) is handed to the pure function the
module passes in (:func:`encoders`), which raises its own errors: the twin decides none.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.dict cimport PyDict_Next
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_AsLongLong
from cpython.ref cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy
from mqcore.common._wire cimport MQ_SOURCE_STAMP, put_i32, put_i64

import zlib

from mqcore.message.const import (
    MESSAGE_MAGIC_CODE,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    SysFlag,
)
from mqcore.message.record import encode_host


cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object text, Py_ssize_t *size) except NULL
    bint PyLong_CheckExact(object o)
    bint PyUnicode_CheckExact(object o)
    bint PyDict_CheckExact(object o)
    bint PyBytes_CheckExact(object o)

SOURCE_STAMP = MQ_SOURCE_STAMP.decode("ascii")
"""sha256 of this file when it was compiled (checked by mqcore.common.core)."""

cdef int32_t _MAGIC = MESSAGE_MAGIC_CODE
cdef int32_t _BORN_V6 = SysFlag.BORNHOST_V6_FLAG
cdef int32_t _STORE_V6 = SysFlag.STOREHOSTADDRESS_V6_FLAG
cdef int32_t _PREPARED = SysFlag.TRANSACTION_PREPARED_TYPE
cdef int32_t _ROLLBACK = SysFlag.TRANSACTION_ROLLBACK_TYPE
cdef object _crc32 = zlib.crc32
cdef object _encode_host = encode_host
cdef str _TAGS = PROPERTY_TAGS
cdef str _KEYS = PROPERTY_KEYS
cdef str _UNIQ = PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX

cdef int64_t _I32_MIN = -0x80000000
cdef int64_t _I32_MAX = 0x7FFFFFFF
cdef int64_t _I64_MIN = -0x7FFFFFFFFFFFFFFF - 1
cdef int64_t _I64_MAX = 0x7FFFFFFFFFFFFFFF


cdef object _Irregular = ValueError
"""Raised inside to stop the fast path: the pure twin then takes the batch (whatever is
raised on the way, this or another error, ends in the pure function)."""


cdef inline int64_t _int(object value, int64_t low, int64_t high) except? -1:
    """An exact int within [low, high], or _Irregular."""
    if not PyLong_CheckExact(value):
        raise _Irregular()
    cdef int64_t v
    try:
        v = PyLong_AsLongLong(value)
    except OverflowError:
        raise _Irregular() from None
    if v < low or v > high:
        raise _Irregular()
    return v


cdef bytes _tail(bytes topic_field, object props):
    """``topic_field + i16 len + encode_properties(props)`` from exact str pairs (None
    values skipped, as Java does); _Irregular for anything else."""
    cdef Py_ssize_t i = 0, n = 0, klen, vlen, count = 0, pos
    cdef PyObject *k
    cdef PyObject *v
    cdef const char *kp
    cdef const char *vp
    if props:
        while PyDict_Next(props, &i, &k, &v):
            if <object> v is None:
                continue
            if not PyUnicode_CheckExact(<object> k) or not PyUnicode_CheckExact(<object> v):
                raise _Irregular()
            PyUnicode_AsUTF8AndSize(<object> k, &klen)  # UnicodeEncodeError: the pure twin
            PyUnicode_AsUTF8AndSize(<object> v, &vlen)
            n += klen + 1 + vlen + (1 if count else 0)
            count += 1
    if n > 32767:
        raise _Irregular()  # PROPERTIES_SIZE_EXCEEDED, said by the pure twin
    cdef Py_ssize_t head = len(topic_field)
    out = PyBytes_FromStringAndSize(NULL, head + 2 + n)
    cdef uint8_t *p = <uint8_t *> PyBytes_AS_STRING(out)
    memcpy(p, PyBytes_AS_STRING(topic_field), head)
    p[head] = <uint8_t> (n >> 8)
    p[head + 1] = <uint8_t> n
    pos = head + 2
    i = 0
    count = 0
    if n:
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


cdef object _prepare(object batch, Py_ssize_t max_body, object prepared_batch):
    first = batch[0]
    topic = first.topic
    queue_id = first.queue_id
    if not PyUnicode_CheckExact(topic):
        raise _Irregular()
    cdef Py_ssize_t topic_len
    cdef const char *topic_p = PyUnicode_AsUTF8AndSize(topic, &topic_len)
    if topic_len == 0 or topic_len > 127:
        raise _Irregular()
    topic_field = PyBytes_FromStringAndSize(NULL, topic_len + 1)
    (<uint8_t *> PyBytes_AS_STRING(topic_field))[0] = <uint8_t> topic_len
    memcpy(PyBytes_AS_STRING(topic_field) + 1, topic_p, topic_len)
    out = prepared_batch(topic, queue_id)
    cdef list heads = out.heads, hosts = out.hosts, bodies = out.bodies, tails = out.tails
    cdef list tags = out.tags, keys = out.keys, uniqs = out.uniq_keys
    cdef Py_ssize_t total = 0, size, body_len
    cdef int64_t sys_flag
    for msg in batch:
        if msg.topic != topic or msg.queue_id != queue_id:
            raise _Irregular()
        props = msg.properties
        if not PyDict_CheckExact(props):
            raise _Irregular()
        body = msg.body
        body_len = len(body)
        if body_len > max_body:
            raise _Irregular()
        tail = _tail(topic_field, props)
        born = _encode_host(msg.born_host)
        store = _encode_host(msg.store_host)
        sys_flag = _int(msg.sys_flag, _I32_MIN, _I32_MAX) & ~(_BORN_V6 | _STORE_V6)
        if len(born) == 20:
            sys_flag |= _BORN_V6
        if len(store) == 20:
            sys_flag |= _STORE_V6
        size = 84 - 16 + len(born) + len(store) + 4 + body_len + len(tail)
        heads.append(
            (
                size,
                _crc32(body) & 0x7FFFFFFF,
                msg.flag,
                sys_flag,
                msg.born_timestamp,
                msg.reconsume_times,
                msg.prepared_transaction_offset,
                body_len,
            )
        )
        hosts.append((born, store))
        bodies.append(body)
        tails.append(tail)
        if props:
            tags.append(props.get(_TAGS))
            keys.append(props.get(_KEYS))
            uniqs.append(props.get(_UNIQ))
        else:
            tags.append(None)
            keys.append(None)
            uniqs.append(None)
        total += size
    out.total = total
    return out


cdef object _encode(object batch, int64_t phy, int64_t next_queue_offset, object store_ts_obj):
    cdef int64_t store_ts = _int(store_ts_obj, _I64_MIN, _I64_MAX)
    cdef int64_t qid = _int(batch.queue_id, _I32_MIN, _I32_MAX)
    cdef list heads = batch.heads, hosts = batch.hosts, bodies = batch.bodies
    cdef list tails = batch.tails
    cdef Py_ssize_t count = PyList_GET_SIZE(heads), i, j, total = 0
    if phy < 0 or phy > (1 << 62) or next_queue_offset > (1 << 62):
        raise _Irregular()
    if (PyList_GET_SIZE(hosts) != count or PyList_GET_SIZE(bodies) != count
            or PyList_GET_SIZE(tails) != count):
        raise _Irregular()  # zip(strict=True) says which
    cdef tuple head, pair
    cdef int64_t size, crc, flag, sys_flag, born_ts, reconsume, prepared, body_len, rec_qo
    cdef Py_ssize_t born_len, store_len, tail_len
    # Check and measure first: an irregular record must leave nothing half done.
    for i in range(count):
        head = <tuple> PyList_GET_ITEM(heads, i)
        pair = <tuple> PyList_GET_ITEM(hosts, i)
        if PyTuple_GET_SIZE(head) != 8 or PyTuple_GET_SIZE(pair) != 2:
            raise _Irregular()
        born = <object> PyTuple_GET_ITEM(pair, 0)
        store = <object> PyTuple_GET_ITEM(pair, 1)
        body = <object> PyList_GET_ITEM(bodies, i)
        tail = <object> PyList_GET_ITEM(tails, i)
        if not (PyBytes_CheckExact(born) and PyBytes_CheckExact(store)
                and PyBytes_CheckExact(tail)):
            raise _Irregular()
        if len(<bytes> born) not in (8, 20) or len(<bytes> store) not in (8, 20):
            raise _Irregular()
        size = _int(<object> PyTuple_GET_ITEM(head, 0), _I32_MIN, _I32_MAX)
        body_len = _int(<object> PyTuple_GET_ITEM(head, 7), _I32_MIN, _I32_MAX)
        for j in (1, 2, 3, 5):  # crc, flag, sys_flag, reconsume: i32
            _int(<object> PyTuple_GET_ITEM(head, j), _I32_MIN, _I32_MAX)
        for j in (4, 6):  # born timestamp, prepared transaction offset: i64
            _int(<object> PyTuple_GET_ITEM(head, j), _I64_MIN, _I64_MAX)
        if body_len != len(body):
            raise _Irregular()
        if size != 72 + len(<bytes> born) + len(<bytes> store) + body_len + len(<bytes> tail):
            raise _Irregular()
        total += size
    if phy + total > (1 << 62):
        raise _Irregular()
    data = PyBytes_FromStringAndSize(NULL, total)
    cdef uint8_t *out = <uint8_t *> PyBytes_AS_STRING(data)
    cdef uint8_t *p
    cdef list offsets = [], qoffsets = []
    cdef int64_t pos = phy, qo = next_queue_offset
    cdef Py_buffer view
    for i in range(count):
        head = <tuple> PyList_GET_ITEM(heads, i)
        pair = <tuple> PyList_GET_ITEM(hosts, i)
        born = <object> PyTuple_GET_ITEM(pair, 0)
        store = <object> PyTuple_GET_ITEM(pair, 1)
        tail = <object> PyList_GET_ITEM(tails, i)
        size = PyLong_AsLongLong(<object> PyTuple_GET_ITEM(head, 0))
        crc = PyLong_AsLongLong(<object> PyTuple_GET_ITEM(head, 1))
        flag = PyLong_AsLongLong(<object> PyTuple_GET_ITEM(head, 2))
        sys_flag = PyLong_AsLongLong(<object> PyTuple_GET_ITEM(head, 3))
        born_ts = PyLong_AsLongLong(<object> PyTuple_GET_ITEM(head, 4))
        reconsume = PyLong_AsLongLong(<object> PyTuple_GET_ITEM(head, 5))
        prepared = PyLong_AsLongLong(<object> PyTuple_GET_ITEM(head, 6))
        body_len = PyLong_AsLongLong(<object> PyTuple_GET_ITEM(head, 7))
        if (sys_flag & 0xC) == _PREPARED or (sys_flag & 0xC) == _ROLLBACK:
            rec_qo = 0
            qoffsets.append(-1)
        else:
            rec_qo = qo
            qoffsets.append(qo)
            qo += 1
        p = out + (pos - phy)
        put_i32(p, <uint32_t> size)
        put_i32(p + 4, <uint32_t> _MAGIC)
        put_i32(p + 8, <uint32_t> crc)
        put_i32(p + 12, <uint32_t> qid)
        put_i32(p + 16, <uint32_t> flag)
        put_i64(p + 20, <uint64_t> rec_qo)
        put_i64(p + 28, <uint64_t> pos)
        put_i32(p + 36, <uint32_t> sys_flag)
        put_i64(p + 40, <uint64_t> born_ts)
        born_len = len(<bytes> born)
        memcpy(p + 48, PyBytes_AS_STRING(born), born_len)
        p += 48 + born_len
        put_i64(p, <uint64_t> store_ts)
        store_len = len(<bytes> store)
        memcpy(p + 8, PyBytes_AS_STRING(store), store_len)
        p += 8 + store_len
        put_i32(p, <uint32_t> reconsume)
        put_i64(p + 4, <uint64_t> prepared)
        put_i32(p + 12, <uint32_t> body_len)
        p += 16
        PyObject_GetBuffer(<object> PyList_GET_ITEM(bodies, i), &view, PyBUF_SIMPLE)
        try:
            if view.len != body_len:  # a view of wider items: len() is not its bytes
                raise _Irregular()
            memcpy(p, view.buf, body_len)
        finally:
            PyBuffer_Release(&view)
        p += body_len
        tail_len = len(<bytes> tail)
        memcpy(p, PyBytes_AS_STRING(tail), tail_len)
        offsets.append(pos)
        pos += size
    return data, offsets, qoffsets, qo


def encoders(pure_prepare, pure_encode, prepared_batch):
    """``(prepare, encode)`` compiled; each hands whatever it does not take (any
    exception on the way) to the pure function given, which then raises its own error.
    ``prepared_batch`` is the :class:`PreparedBatch` class to fill."""

    def prepare(batch, max_body):
        try:
            return _prepare(batch, max_body, prepared_batch)
        except Exception:
            return pure_prepare(batch, max_body)

    def encode(batch, phy, next_queue_offset, store_timestamp):
        try:
            return _encode(batch, phy, next_queue_offset, store_timestamp)
        except Exception:
            return pure_encode(batch, phy, next_queue_offset, store_timestamp)

    return prepare, encode

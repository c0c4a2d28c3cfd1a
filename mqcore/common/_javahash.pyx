# cython: language_level=3, cdivision=True
"""Compiled twin of :mod:`mqcore.common.javahash` (the pure module is the reference).

Java's ``String.hashCode`` over UTF-16 code units, computed straight from the str's own
storage (Latin-1, UCS-2 or UCS-4; a code point past U+FFFF counts as its two surrogate
units): no encoding, no per-character Python object. The pure twin needs an
``lru_cache`` to be cheap for repeated tags; the index hashes a fresh unique key per
message, which the cache never helps, and which this makes a few nanoseconds.
"""

from cpython.unicode cimport (
    PyUnicode_1BYTE_KIND,
    PyUnicode_2BYTE_KIND,
    PyUnicode_DATA,
    PyUnicode_GET_LENGTH,
    PyUnicode_KIND,
)
from libc.stdint cimport int32_t, uint8_t, uint16_t, uint32_t
from mqcore.common._wire cimport MQ_SOURCE_STAMP


SOURCE_STAMP = MQ_SOURCE_STAMP.decode("ascii")
"""sha256 of this file when it was compiled (checked by mqcore.common.core)."""


cdef inline int32_t _hash(str value) noexcept:
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(value)
    cdef int kind = PyUnicode_KIND(value)
    cdef void *data = PyUnicode_DATA(value)
    cdef uint32_t h = 0
    cdef uint32_t cp
    cdef Py_ssize_t i
    if kind == PyUnicode_1BYTE_KIND:
        for i in range(n):
            h = 31 * h + (<uint8_t *> data)[i]
    elif kind == PyUnicode_2BYTE_KIND:
        for i in range(n):
            h = 31 * h + (<uint16_t *> data)[i]
    else:
        for i in range(n):
            cp = (<uint32_t *> data)[i]
            if cp > 0xFFFF:  # a surrogate pair in UTF-16
                cp -= 0x10000
                h = 31 * h + (0xD800 + (cp >> 10))
                h = 31 * h + (0xDC00 + (cp & 0x3FF))
            else:
                h = 31 * h + cp
    return <int32_t> h


def java_string_hash(str value not None) -> int:
    """Signed 32-bit ``String.hashCode`` of ``value``."""
    return _hash(value)


def tags_hash_code(str tags) -> int:
    """Consume queue tag slot value for ``tags`` (0 when there is no tag)."""
    if not tags:
        return 0
    return _hash(tags)


def index_key_hash(str key not None) -> int:
    """Non-negative key hash used by index files (Java's ``abs`` quirk included)."""
    cdef int32_t h = _hash(key)
    if h == -0x80000000:
        return 0
    return -h if h < 0 else h

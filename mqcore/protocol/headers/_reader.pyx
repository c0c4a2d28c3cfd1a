# cython: language_level=3
"""Compiled twin of the typed header readers of :mod:`mqcore.protocol.headers.base` (the
generated pure functions are the reference).

Every request is read into its typed header once: a dict lookup per field, the numbers
parsed, a frozen dataclass built. The pure reader is already straight-line generated code;
what is left there is the interpreter's cost per field (14 fields for a send, 16 for a
pull). Here the same steps run as C over a table of the fields, and the object's slots are
filled directly, as the pure builder's mutable twin does in Python.

Only the regular case is taken: a plain dict of str values, each number found in the
parsed-text cache or read by ``int()`` within its Java range, each flag in its cache.
Anything else (a missing required field, text that is not a number, a value out of range,
a mapping that is not a dict, a value that is not a str) goes to the pure reader, so
results and errors are the reference's, word for word.
"""

from cpython.ref cimport PyObject
from mqcore.common._wire cimport MQ_SOURCE_STAMP, mq_fill_slot, mq_slot_offset


from libc.stdint cimport int64_t


cdef extern from "Python.h":
    bint PyDict_CheckExact(object o)
    bint PyUnicode_CheckExact(object o)
    bint PyUnicode_IS_ASCII(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    const char *PyUnicode_DATA(object o)
    # the variant that does not save and restore the error state on every call
    PyObject *PyDict_GetItemWithError(object d, object key) except? NULL
    long long PyLong_AsLongLongAndOverflow(object o, int *overflow) except? -1

cdef extern from *:
    """
    /* A fresh instance the way object.__new__ makes one, without the call machinery. */
    static PyObject *mq_alloc(PyObject *cls) {
        return ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
    }
    """
    object mq_alloc(object cls)

SOURCE_STAMP = MQ_SOURCE_STAMP.decode("ascii")
"""sha256 of this file when it was compiled (checked by mqcore.common.core)."""

cdef enum:
    TEXT = 0
    NUMBER = 1
    PARSED = 2


cdef inline bint _decimal(object text, int64_t *out) noexcept:
    """``[-]digits`` of at most 18 digits, ASCII: the value, without int()'s general
    parser (whitespace, signs, underscores, other scripts' digits: those go to int())."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    if not PyUnicode_IS_ASCII(text) or n == 0 or n > 19:
        return False
    cdef const char *p = PyUnicode_DATA(text)
    cdef Py_ssize_t i = 0
    cdef bint negative = p[0] == 45  # '-'
    if negative:
        i = 1
        if n == 1:
            return False
    if n - i > 18:
        return False
    cdef int64_t value = 0
    while i < n:
        if p[i] < 48 or p[i] > 57:  # not '0'..'9'
            return False
        value = value * 10 + (p[i] - 48)
        i += 1
    out[0] = -value if negative else value
    return True


cdef class _Field:
    cdef object key
    cdef int kind
    cdef Py_ssize_t offset
    cdef dict parsed
    cdef object parse
    cdef int64_t low
    cdef int64_t high
    cdef bint required
    cdef object default
    cdef object factory


cdef class HeaderReader:
    """``ext -> header``: the compiled reader of one header class; ``pure`` is the
    generated reader it hands the irregular cases to."""

    cdef tuple _fields
    cdef object _cls
    cdef readonly object pure

    def __call__(self, ext):
        if not PyDict_CheckExact(ext):
            return self.pure(ext)
        cdef _Field field
        cdef PyObject *found
        cdef PyObject *cached
        cdef long long number
        cdef int64_t parsed
        cdef int overflow = 0
        # Filled as it goes: an irregular field drops it half-filled (empty slots are
        # NULL, which its deallocation skips) for the pure reader.
        obj = mq_alloc(self._cls)
        for field in self._fields:
            found = PyDict_GetItemWithError(ext, field.key)
            if found is NULL or <object> found is None:  # a None value is absent too
                if field.required:
                    return self.pure(ext)  # raises the reference's HeaderError
                if field.factory is None:
                    mq_fill_slot(obj, field.offset, field.default)
                else:
                    mq_fill_slot(obj, field.offset, field.factory())
                continue
            text = <object> found
            if field.kind == TEXT:
                mq_fill_slot(obj, field.offset, text)
                continue
            if not PyUnicode_CheckExact(text):
                return self.pure(ext)
            cached = PyDict_GetItemWithError(field.parsed, text)
            if cached is not NULL:
                mq_fill_slot(obj, field.offset, <object> cached)
                continue
            if field.kind == PARSED:
                return self.pure(ext)
            if _decimal(text, &parsed):
                if not field.low <= parsed <= field.high:
                    return self.pure(ext)
                mq_fill_slot(obj, field.offset, parsed)
                continue
            try:
                value = int(text)
            except ValueError:
                return self.pure(ext)
            number = PyLong_AsLongLongAndOverflow(value, &overflow)
            if overflow or not field.low <= number <= field.high:
                return self.pure(ext)
            mq_fill_slot(obj, field.offset, value)
        return obj


def reader(cls, rows, pure):
    """The compiled reader of ``cls``, or None where this twin cannot build one (a field
    that is not a plain slot: the pure reader then runs).

    ``rows``: per field, in the pure reader's order, ``(attr, key, kind, parsed, parse,
    low, high, required, default, factory)``: ``kind`` "text", "number" (``low``/``high``
    its Java range) or "parsed" (only the texts in ``parsed``, e.g. booleans; anything
    else is the pure reader's), ``factory`` None or the default's factory."""
    cdef _Field field
    fields = []
    for attr, key, kind, parsed, parse, low, high, required, default, factory in rows:
        field = _Field()
        field.offset = mq_slot_offset(getattr(cls, attr, None))
        if field.offset < 0:
            return None
        field.key = key
        field.kind = {"text": TEXT, "number": NUMBER, "parsed": PARSED}[kind]
        field.parsed = dict(parsed) if parsed is not None else {}
        field.parse = parse
        field.low = low
        field.high = high
        field.required = required
        field.default = default
        field.factory = factory
        fields.append(field)
    made = HeaderReader()
    made._fields = tuple(fields)
    made._cls = cls
    made.pure = pure
    return made

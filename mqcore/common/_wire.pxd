# cython: language_level=3
"""What the compiled twins share: big-endian reads and writes of RocketMQ's fixed-width
fields, the split of a ``name\x01value\x02...`` properties field, filling the slots of a
fresh slotted object directly (a decoded message, a typed header), and the source stamp
each extension is built with.

Inline declarations only (nothing here is compiled on its own). Every extension's stamp
covers this file as well as its own ``.pyx`` (see ``hatch_build.source_stamp`` and
``mqcore.common.core.check_stamp``): an edit here makes every twin stale until rebuilt.
"""

from cpython.dict cimport PyDict_SetItem
from cpython.unicode cimport PyUnicode_DecodeASCII, PyUnicode_DecodeUTF8
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t


cdef extern from *:
    """
    #ifndef MQ_SOURCE_STAMP
    #define MQ_SOURCE_STAMP ""
    #endif
    """
    const char *MQ_SOURCE_STAMP

cdef extern from *:
    """
    #include "structmember.h"
    /* Where a slotted class keeps a field: the offset of its member descriptor, or -1
       when the attribute is anything else (then the field is set the ordinary way). */
    static Py_ssize_t mq_slot_offset(PyObject *descr) {
        if (Py_TYPE(descr) != &PyMemberDescr_Type) return -1;
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & READONLY)) return -1;
        return member->offset;
    }
    /* Store a new reference in an empty slot of a fresh object. */
    static void mq_fill_slot(PyObject *obj, Py_ssize_t offset, PyObject *value) {
        Py_INCREF(value);
        *(PyObject **)((char *)obj + offset) = value;
    }
    """
    Py_ssize_t mq_slot_offset(object descr)
    void mq_fill_slot(object obj, Py_ssize_t offset, object value)


cdef inline int16_t get_i16(const uint8_t *p) noexcept nogil:
    return <int16_t> ((<uint32_t> p[0] << 8) | <uint32_t> p[1])


cdef inline int32_t get_i32(const uint8_t *p) noexcept nogil:
    return <int32_t> ((<uint32_t> p[0] << 24) | (<uint32_t> p[1] << 16)
                      | (<uint32_t> p[2] << 8) | <uint32_t> p[3])


cdef inline int64_t get_i64(const uint8_t *p) noexcept nogil:
    return <int64_t> ((<uint64_t> <uint32_t> get_i32(p) << 32)
                      | <uint64_t> <uint32_t> get_i32(p + 4))


cdef inline void put_i16(uint8_t *p, uint32_t v) noexcept nogil:
    p[0] = <uint8_t> (v >> 8)
    p[1] = <uint8_t> v


cdef inline void put_i32(uint8_t *p, uint32_t v) noexcept nogil:
    p[0] = <uint8_t> (v >> 24)
    p[1] = <uint8_t> (v >> 16)
    p[2] = <uint8_t> (v >> 8)
    p[3] = <uint8_t> v


cdef inline void put_i64(uint8_t *p, uint64_t v) noexcept nogil:
    put_i32(p, <uint32_t> (v >> 32))
    put_i32(p + 4, <uint32_t> v)


cdef inline dict split_properties(const uint8_t *p, Py_ssize_t n, bint ascii):
    """``name\\x01value\\x02...`` by Java's rule: a pair needs a name and a value; the
    value runs to the next \\x02 (later \\x01 bytes are part of it). ``p`` is valid UTF-8
    (ASCII when ``ascii``)."""
    cdef dict out = {}
    cdef Py_ssize_t i, start = 0, sep = -1
    for i in range(n + 1):
        if i == n or p[i] == 0x02:
            if sep > start and sep + 1 < i:
                if ascii:
                    name = PyUnicode_DecodeASCII(<const char *> p + start, sep - start, NULL)
                    value = PyUnicode_DecodeASCII(<const char *> p + sep + 1, i - sep - 1, NULL)
                else:
                    name = PyUnicode_DecodeUTF8(<const char *> p + start, sep - start, NULL)
                    value = PyUnicode_DecodeUTF8(<const char *> p + sep + 1, i - sep - 1, NULL)
                PyDict_SetItem(out, name, value)
            start = i + 1
            sep = -1
        elif p[i] == 0x01 and sep < 0:
            sep = i
    return out


cdef inline object decode_properties(const uint8_t *p, Py_ssize_t n):
    """The pairs of a stored properties field, or None when its bytes are not UTF-8 (the
    pure ``decode_properties`` then raises its error: it decodes the whole field first,
    so this checks the whole field first too)."""
    cdef Py_ssize_t i
    cdef bint ascii = True
    for i in range(n):
        if p[i] >= 0x80:
            ascii = False
            break
    if not ascii:
        try:
            PyUnicode_DecodeUTF8(<const char *> p, n, NULL)
        except UnicodeDecodeError:
            return None
    return split_properties(p, n, ascii)

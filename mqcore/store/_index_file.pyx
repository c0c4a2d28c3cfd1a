# cython: language_level=3, cdivision=True
"""Compiled twin of :meth:`mqcore.store.index_file.IndexFile.put_key` (the pure method is
the reference).

The dispatcher indexes every message's unique key (and its KEYS) in the hash index: one
slot read, one 20-byte entry and one slot write in the mapped file, and the in-memory
header. Here that is done with C reads and writes on the map, the header fields as C
integers. Whatever is not the everyday case (a read-only or closed file, a file whose
blocks must be reserved first, numbers that are not plain ints in range) is handed, before
anything changed, to the pure method passed to :func:`put_key_method`, which then does
the whole call and raises its own errors.
"""

from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from mqcore.common._wire cimport MQ_SOURCE_STAMP, get_i32, put_i32


cdef extern from "Python.h":
    bint PyLong_CheckExact(object o)
    bint PyUnicode_CheckExact(object o)

SOURCE_STAMP = MQ_SOURCE_STAMP.decode("ascii")
"""sha256 of this file when it was compiled (checked by mqcore.common.core)."""

cdef enum:
    HEADER_SIZE = 40
    ENTRY_SIZE = 20
    INT_MAX = 0x7FFFFFFF


cdef inline bint _small(object value):
    """An exact int that fits an int64 with room to spare (no overflow in sums)."""
    return PyLong_CheckExact(value) and -(1 << 62) < value < (1 << 62)


def put_key_method(pure_put_key, index_key_hash):
    """``IndexFile.put_key`` compiled, falling back to ``pure_put_key``; hashes with the
    ``index_key_hash`` the pure module chose."""

    def put_key(self, key, phy_offset, store_timestamp, *, write_header=True):
        """Add one key (``putKey``); False when the file is full and a new one is needed."""
        cdef Py_buffer view
        cdef int64_t index_count, max_index_num, max_slots, entries_base, slot_pos, entry_pos
        cdef int64_t key_hash, phy, store_ts, begin_ts, time_diff, slot_value
        cdef uint8_t *mm
        mm_obj = self._mm
        count_obj = self.index_count
        if (self.readonly or mm_obj is None or not PyUnicode_CheckExact(key)
                or not _small(phy_offset) or not _small(store_timestamp)
                or not _small(count_obj)):
            return pure_put_key(self, key, phy_offset, store_timestamp,
                                write_header=write_header)
        index_count = count_obj
        max_index_num = self.max_index_num
        if index_count >= max_index_num:
            return False
        max_slots = self.max_hash_slot_num
        entries_base = self._entries_base
        entry_pos = entries_base + index_count * ENTRY_SIZE
        if max_slots <= 0 or entry_pos + ENTRY_SIZE > self._reserved:
            return pure_put_key(self, key, phy_offset, store_timestamp,
                                write_header=write_header)
        key_hash = index_key_hash(key)
        slot_pos = HEADER_SIZE + (key_hash % max_slots) * 4
        PyObject_GetBuffer(mm_obj, &view, PyBUF_WRITABLE)
        try:
            if slot_pos + 4 > view.len or entry_pos + ENTRY_SIZE > view.len:
                mm = NULL
            else:
                mm = <uint8_t *> view.buf
                phy = phy_offset
                store_ts = store_timestamp
                slot_value = get_i32(mm + slot_pos)
                if slot_value <= 0 or slot_value >= index_count:
                    slot_value = 0
                if index_count <= 1:
                    self.begin_phy_offset = phy_offset
                    self.begin_timestamp = store_timestamp
                begin_ts = self.begin_timestamp
                if begin_ts <= 0 or store_ts <= begin_ts:
                    time_diff = 0
                else:
                    time_diff = (store_ts - begin_ts) // 1000
                    if time_diff > INT_MAX:
                        time_diff = INT_MAX
                put_i32(mm + entry_pos, <uint32_t> key_hash)
                put_i32(mm + entry_pos + 4, <uint32_t> (<uint64_t> phy >> 32))
                put_i32(mm + entry_pos + 8, <uint32_t> <uint64_t> phy)
                put_i32(mm + entry_pos + 12, <uint32_t> time_diff)
                put_i32(mm + entry_pos + 16, <uint32_t> slot_value)
                put_i32(mm + slot_pos, <uint32_t> index_count)
        finally:
            PyBuffer_Release(&view)
        if mm == NULL:  # a map shorter than its geometry: the pure method's struct.error
            return pure_put_key(self, key, phy_offset, store_timestamp,
                                write_header=write_header)
        if slot_value == 0:
            self.hash_slot_count += 1
        self.index_count = index_count + 1
        self.end_phy_offset = phy_offset
        self.end_timestamp = store_timestamp
        if write_header:
            self.write_header()
        return True

    return put_key

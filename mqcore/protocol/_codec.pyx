# cython: language_level=3, cdivision=True
"""Compiled twin of :mod:`mqcore.protocol.codec`: :class:`FrameDecoder` and
:func:`encode_buffers` (the pure module is the reference).

Every request passes through here twice (its frame split off the stream, its answer
framed), so the pure versions' attribute loads, ``struct`` calls and bound-method calls
were a fixed cost per request. The logic, checks and error texts are the pure twin's, line
for line; :func:`bind` hands in the header codecs the pure module chose and its NEED_DATA
sentinel, so callers cannot tell the two apart.
"""

from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport int32_t, uint8_t, uint32_t
from libc.string cimport memcpy
from mqcore.common._wire cimport MQ_SOURCE_STAMP, get_i32, put_i32

import struct

from mqcore.errors import LocalProtocolError, RemoteProtocolError


SOURCE_STAMP = MQ_SOURCE_STAMP.decode("ascii")
"""sha256 of this file when it was compiled (checked by mqcore.common.core)."""

cdef Py_ssize_t _COMPACT_AT = 64 * 1024
cdef object _pack_i32 = struct.Struct(">i").pack
cdef object _decode_json = None
cdef object _decode_binary = None
cdef object _encode_json = None
cdef object _encode_binary = None
cdef object _NEED_DATA = None
cdef object _DEFAULT_MAX_FRAME = 16 * 1024 * 1024


def bind(decode_json, decode_binary, encode_json, encode_binary, need_data, default_max_frame):
    """The header codecs and the sentinel of :mod:`mqcore.protocol.codec` (once, at its
    import)."""
    global _decode_json, _decode_binary, _encode_json, _encode_binary, _NEED_DATA
    global _DEFAULT_MAX_FRAME
    _decode_json = decode_json
    _decode_binary = decode_binary
    _encode_json = encode_json
    _encode_binary = encode_binary
    _NEED_DATA = need_data
    _DEFAULT_MAX_FRAME = default_max_frame


cdef class FrameDecoder:
    """Incremental frame decoder for one connection (see the pure twin's docstring)."""

    cdef public object max_frame
    cdef object _buf
    cdef Py_ssize_t _pos
    cdef bint _eof
    cdef object _error

    def __init__(self, max_frame=None):
        self.max_frame = _DEFAULT_MAX_FRAME if max_frame is None else max_frame
        self._buf = b""
        self._pos = 0
        self._eof = False
        self._error = None

    @property
    def buffered(self):
        """Bytes received but not yet returned as a command."""
        return len(self._buf) - self._pos

    def receive_data(self, data):
        """Add bytes from the peer; ``b""`` signals end of stream."""
        if not data:
            self._eof = True
            return
        if self._eof:
            raise RuntimeError("receive_data after EOF")
        if self._error is not None:
            return
        buf = self._buf
        if self._pos == len(buf):  # nothing buffered: take the chunk as it is
            self._buf = data if type(data) is bytes else bytearray(data)
            self._pos = 0
        elif type(buf) is bytes:  # a frame spans chunks: from now on, a buffer of our own
            self._buf = bytearray(memoryview(buf)[self._pos:])
            self._buf += data
            self._pos = 0
        else:
            buf += data

    def next_command(self):
        """The next whole command, or NEED_DATA. Raises RemoteProtocolError on bad input,
        including EOF in the middle of a frame."""
        if self._error is not None:
            raise self._error
        try:
            return self._next()
        except RemoteProtocolError as exc:
            self._error = exc
            raise

    cdef object _next(self):
        buf = self._buf
        cdef Py_ssize_t pos = self._pos
        cdef Py_ssize_t size = len(buf)
        cdef Py_ssize_t available = size - pos
        cdef const uint8_t *data
        cdef bint is_bytes = type(buf) is bytes
        if is_bytes:
            data = <const uint8_t *> PyBytes_AS_STRING(buf)
        else:
            data = <const uint8_t *> PyByteArray_AS_STRING(buf)
        if available < 8:
            if self._eof and available:
                raise RemoteProtocolError(f"connection closed inside a frame ({available} B)")
            if available >= 4:
                self._check_length(get_i32(data + pos))
            return _NEED_DATA
        cdef int32_t length = get_i32(data + pos)
        cdef uint32_t word = <uint32_t> get_i32(data + pos + 4)
        if length < 4 or <Py_ssize_t> length + 4 > self.max_frame:
            self._check_length(length)
        if available < 4 + <Py_ssize_t> length:
            if self._eof:
                raise RemoteProtocolError(f"connection closed inside a frame ({available} B)")
            return _NEED_DATA
        cdef Py_ssize_t header_len = word & 0xFFFFFF
        cdef int kind = (word >> 24) & 0xFF
        if header_len > length - 4:
            raise RemoteProtocolError(
                f"header length {header_len} exceeds frame length {length}"
            )
        if kind > 1:
            raise RemoteProtocolError(f"unknown serialize type {kind}")
        cdef Py_ssize_t start = pos + 8
        cdef Py_ssize_t body_start = start + header_len
        cdef Py_ssize_t end = pos + 4 + length
        header = PyBytes_FromStringAndSize(<const char *> data + start, header_len)
        body = b""
        if end > body_start:
            body = PyBytes_FromStringAndSize(<const char *> data + body_start, end - body_start)
        if kind == 0:
            cmd = _decode_json(header, body)
        else:
            cmd = _decode_binary(header, body)
        if end == size:
            self._buf = b""
            self._pos = 0
        elif end > _COMPACT_AT and not is_bytes:
            del buf[:end]
            self._pos = 0
        else:
            self._pos = end
        return cmd

    def _check_length(self, length):
        if length < 4:
            raise RemoteProtocolError(f"frame length {length} is smaller than 4")
        if length + 4 > self.max_frame:
            raise RemoteProtocolError(
                f"frame of {length + 4} bytes exceeds the maximum of {self.max_frame}"
            )


def encode_buffers(cmd, *, max_frame=None):
    """The frame as ``[prefix+header, body]``: the body is passed through, not copied."""
    if max_frame is None:
        max_frame = _DEFAULT_MAX_FRAME
    kind = cmd.serialize_type
    if kind == 1:
        header = _encode_binary(cmd)
    else:
        header = _encode_json(cmd)
    cdef Py_ssize_t header_len = len(header)
    body = cmd.body
    cdef Py_ssize_t body_len = len(body) if type(body) is not memoryview else body.nbytes
    length = 4 + header_len + body_len
    if header_len > 0xFFFFFF:
        raise LocalProtocolError(f"header of {header_len} bytes does not fit 24 bits")
    if length + 4 > max_frame:
        raise LocalProtocolError(f"frame of {length + 4} bytes exceeds the maximum {max_frame}")
    if length > 0x7FFFFFFF:
        _pack_i32(length)  # the pure twin's struct.error, for a max_frame past 2 GiB
    cdef int kind_value = kind
    head = PyBytes_FromStringAndSize(NULL, 8 + header_len)
    cdef uint8_t *p = <uint8_t *> PyBytes_AS_STRING(head)
    put_i32(p, <uint32_t> length)
    put_i32(p + 4, (<uint32_t> kind_value << 24) | <uint32_t> header_len)
    memcpy(p + 8, PyBytes_AS_STRING(header), header_len)
    if body_len:
        return [head, body]
    return [head]

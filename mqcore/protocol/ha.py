"""The master/slave replication wire format of RocketMQ 4.x (HAService), sans-IO.

Two byte streams on one TCP connection to the master's ``haListenPort``::

    slave -> master:  [ maxPhyOffset: int64 ]                       every report
    master -> slave:  [ phyOffset: int64 | size: int32 ][ size raw commit log bytes ]

All big-endian. A report says "I hold the commit log up to here": the first one on a
connection is where the master starts streaming, later ones acknowledge. A transfer with
``size == 0`` is the master's heartbeat. There is no handshake, version or framing
beyond this, so both readers below take bytes as they come and keep partial input.

In controller mode (mq to mq) a slave first names itself: a report of ``-(brokerId + 1)``
(no 4.x slave reports a negative offset), so the master knows which replica each
connection is and can keep the in-sync set. Only a reader built with ``identities``
accepts it; elsewhere a negative report is still a protocol error.
"""

from __future__ import annotations

import struct

from mqcore.errors import ProtocolError

__all__ = [
    "MAX_TRANSFER_BODY",
    "REPORT",
    "TRANSFER_HEADER",
    "HAProtocolError",
    "ReportReader",
    "TransferReader",
    "encode_identity",
    "encode_report",
    "encode_transfer_header",
]

REPORT = struct.Struct(">q")
TRANSFER_HEADER = struct.Struct(">qi")
MAX_TRANSFER_BODY = 4 * 1024 * 1024
"""A RocketMQ slave's whole read buffer; a larger announced body is a broken master."""


class HAProtocolError(ProtocolError, ValueError):
    """Input no honest peer sends (the connection is closed, nothing else is harmed)."""


def encode_report(offset: int) -> bytes:
    return REPORT.pack(offset)


def encode_identity(broker_id: int) -> bytes:
    """Controller mode: the report that names the slave (its controller broker id)."""
    if broker_id < 0:
        raise ValueError(f"a broker id is >= 0, not {broker_id}")
    return REPORT.pack(-(broker_id + 1))


def encode_transfer_header(offset: int, size: int) -> bytes:
    return TRANSFER_HEADER.pack(offset, size)


class ReportReader:
    """Slave reports as seen by the master.

    Like RocketMQ's ReadSocketService only the newest complete report of what has
    arrived counts: several reports read at once are one acknowledgement.
    """

    __slots__ = ("_identities", "_partial", "identity")

    def __init__(self, *, identities: bool = False) -> None:
        self._partial = b""
        self._identities = identities
        self.identity: int | None = None
        """The broker id the slave named (controller mode), once it did."""

    def feed(self, data: bytes) -> int | None:
        """The newest complete offset in ``data`` (with earlier partial input), or None."""
        buf = self._partial + data if self._partial else data
        whole = len(buf) - len(buf) % REPORT.size
        self._partial = bytes(buf[whole:])
        if not whole:
            return None
        (offset,) = REPORT.unpack_from(buf, whole - REPORT.size)
        if offset >= 0 and not self._identities:
            return int(offset)
        newest: int | None = None
        for (value,) in REPORT.iter_unpack(buf[:whole]):
            if value >= 0:
                newest = int(value)
            elif self._identities and self.identity is None:
                self.identity = -int(value) - 1
            else:
                raise HAProtocolError(f"negative offset {value} reported")
        return newest


class TransferReader:
    """Master transfers as seen by the slave: yields ``(offset, body)`` per frame."""

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        buf = self._buf
        buf += data
        frames: list[tuple[int, bytes]] = []
        pos = 0
        head = TRANSFER_HEADER.size
        while len(buf) - pos >= head:
            offset, size = TRANSFER_HEADER.unpack_from(buf, pos)
            if offset < 0 or not 0 <= size <= MAX_TRANSFER_BODY:
                raise HAProtocolError(f"bad transfer header (offset {offset}, size {size})")
            if len(buf) - pos - head < size:
                break
            frames.append((offset, bytes(buf[pos + head : pos + head + size])))
            pos += head + size
        if pos:
            del buf[:pos]
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buf)

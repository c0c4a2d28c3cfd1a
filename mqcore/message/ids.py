"""Message ids: the offset msg id (where a record lives) and the client unique key.

Offset msg id = hex(store ip ‖ i32 port ‖ i64 commit log offset), 32 chars for IPv4,
56 for IPv6. Unique key (``UNIQ_KEY``) = hex(client ip ‖ u16 pid ‖ i32 random ‖
i32 ms since start of month ‖ u16 counter), as RocketMQ's MessageClientIDSetter.
"""

from __future__ import annotations

import ipaddress
import itertools
import os
import random
import socket
import struct
import threading
import time
from datetime import datetime
from functools import lru_cache

from mqcore.common.net import local_ip
from mqcore.errors import MessageIdError

_Q = struct.Struct(">q")
_I = struct.Struct(">i")
_IH = struct.Struct(">IH")


@lru_cache(maxsize=256)
def host_bytes(ip: str) -> bytes:
    """4 bytes for IPv4 (IPv4-mapped IPv6 included, as Java does), else 16."""
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.packed


def host_from_bytes(raw: bytes) -> str:
    return str(ipaddress.ip_address(raw))


@lru_cache(maxsize=256)
def _host_hex(host: tuple[str, int]) -> str:
    return (host_bytes(host[0]) + _I.pack(host[1])).hex().upper()


def create_offset_msg_id(host: tuple[str, int], commit_log_offset: int) -> str:
    """The id of the record at ``commit_log_offset`` of the broker at ``host`` (once per
    stored message: the host part is formatted once per host)."""
    return _host_hex(host) + _Q.pack(commit_log_offset).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """Return ``(ip, port, commit_log_offset)``; raises :class:`MessageIdError`."""
    try:
        raw = bytes.fromhex(msg_id.strip())
    except ValueError:
        raise MessageIdError(f"message id {msg_id!r} is not hexadecimal") from None
    if len(raw) == 16:
        ip_len = 4
    elif len(raw) == 28:
        ip_len = 16
    else:
        raise MessageIdError(
            f"message id {msg_id!r} has {len(raw) * 2} hex chars; an offset msg id has 32 "
            "(IPv4) or 56 (IPv6)"
        )
    ip = host_from_bytes(raw[:ip_len])
    (port,) = _I.unpack_from(raw, ip_len)
    (offset,) = _Q.unpack_from(raw, ip_len + 4)
    return ip, port, offset


def _local_ip() -> bytes:
    return socket.inet_aton(local_ip())


def _start_of_month_ms(now_ms: int) -> int:
    now = datetime.fromtimestamp(now_ms / 1000)
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return int(start.timestamp() * 1000)


class UniqKeyGenerator:
    """Thread-safe generator of unique keys for one process.

    As Java's: the counter is atomic (``itertools.count`` under the GIL) and only the
    monthly change of the time base takes the lock; the fixed prefix is formatted once.
    """

    def __init__(self, ip: bytes | None = None, pid: int | None = None) -> None:
        ip = ip if ip is not None else _local_ip()
        pid = os.getpid() if pid is None else pid
        prefix = ip + struct.pack(">Hi", pid & 0xFFFF, random.getrandbits(31))
        self._prefix_hex = prefix.hex().upper()
        self._lock = threading.Lock()
        self._counter = itertools.count()
        self._month = (0, 0)  # (start, next start) in ms, swapped as one

    def next(self) -> str:
        now = int(time.time() * 1000)
        month_start, next_month = self._month
        if now >= next_month:
            with self._lock:
                month_start, next_month = self._month
                if now >= next_month:
                    month_start = _start_of_month_ms(now)
                    self._month = (month_start, month_start + 31 * 86400 * 1000)
        diff = (now - month_start) & 0xFFFFFFFF
        counter = next(self._counter) & 0xFFFF
        return self._prefix_hex + _IH.pack(diff, counter).hex().upper()


_default_generator: UniqKeyGenerator | None = None


def create_uniq_key() -> str:
    global _default_generator
    if _default_generator is None:
        _default_generator = UniqKeyGenerator()
    return _default_generator.next()


def decode_uniq_key(key: str, now_ms: int | None = None) -> tuple[str, int, int]:
    """Return ``(client_ip, pid_low16, approx_born_ms)`` of a unique key."""
    try:
        raw = bytes.fromhex(key.strip())
    except ValueError:
        raise MessageIdError(f"unique key {key!r} is not hexadecimal") from None
    if len(raw) not in (16, 28):
        raise MessageIdError(f"unique key {key!r} has {len(raw) * 2} hex chars (need 32 or 56)")
    ip_len = len(raw) - 12
    ip = host_from_bytes(raw[:ip_len])
    pid, _loader, diff, _counter = struct.unpack_from(">HiIH", raw, ip_len)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    month = _start_of_month_ms(now_ms)
    born = month + diff
    if born > now_ms + 60_000:  # from the previous month
        prev = datetime.fromtimestamp(month / 1000 - 1)
        born = _start_of_month_ms(int(prev.timestamp() * 1000)) + diff
    return ip, pid, born

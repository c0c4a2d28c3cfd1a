"""The local address other hosts reach this one at (RocketMQ's
``RemotingUtil.getLocalAddress``): the broker's ``brokerIP1`` default, the client's id and
the address inside message ids all use it."""

from __future__ import annotations

import socket

__all__ = ["local_ip"]


def local_ip() -> str:
    """The source address of the default route ("127.0.0.1" with no network)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))  # no packet is sent; picks the route's address
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"

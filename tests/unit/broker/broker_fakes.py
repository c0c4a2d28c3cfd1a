"""A stand-in for a client connection, for calling processors directly."""

from __future__ import annotations

from typing import Any


class FakeChannel:
    """What processors read of a connection: its address, its attributes (long polling
    keeps per-connection state there) and how much of its output is still queued."""

    def __init__(self, remote_address: str = "127.0.0.1:50001") -> None:
        self.remote_address = remote_address
        self.attrs: dict[str, Any] = {}
        self.write_buffered = 0

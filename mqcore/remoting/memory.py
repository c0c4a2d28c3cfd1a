"""The in-memory transport seam (anchors §B4.5): channels without sockets.

:class:`InMemoryNetwork` maps addresses to dispatchers; :class:`InMemoryRemotingClient` is a
:class:`RemotingClient` whose connections are pairs of ordinary :class:`Channel` objects
joined by a pipe that hands bytes to the other side on the next loop iteration. Framing,
opaque matching, oneway and server-initiated requests therefore behave exactly as over TCP,
so client, CLI and TUI tests can run a name server or broker in-process without ports.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from mqcore.remoting.channel import Channel
from mqcore.remoting.client import RemotingClient
from mqcore.remoting.dispatcher import RequestDispatcher
from mqcore.remoting.errors import RemotingConnectError

__all__ = ["InMemoryNetwork", "InMemoryRemotingClient"]


class _Pipe(asyncio.Transport):
    """One direction of an in-memory connection."""

    def __init__(self, loop: asyncio.AbstractEventLoop, local: Channel, peername: Any) -> None:
        super().__init__()
        self._loop = loop
        self._local = local
        self._peername = peername
        self.peer: _Pipe | None = None
        self._closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._peername if name == "peername" else default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing or self.peer is None or self.peer._closing:
            return
        self._loop.call_soon(self.peer._local.data_received, bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._loop.call_soon(self._local.connection_lost, None)
        if self.peer is not None:
            self.peer.close()

    def abort(self) -> None:
        self.close()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_reading(self) -> bool:
        return not self._closing


class InMemoryNetwork:
    """Addresses served in this process."""

    def __init__(self) -> None:
        self._servers: dict[str, tuple[RequestDispatcher, Callable[[Channel], None] | None]] = {}
        self._port = 40000

    def serve(
        self,
        addr: str,
        dispatcher: RequestDispatcher,
        on_close: Callable[[Channel], None] | None = None,
    ) -> None:
        """Accept connections to ``addr``; ``on_close`` runs for each closed server channel."""
        self._servers[addr] = (dispatcher, on_close)

    def stop(self, addr: str) -> None:
        self._servers.pop(addr, None)

    def connect(self, addr: str, client_channel: Channel) -> Channel:
        """Join ``client_channel`` to a new server channel of ``addr``."""
        try:
            dispatcher, on_close = self._servers[addr]
        except KeyError:
            raise RemotingConnectError(f"cannot connect to {addr}: nothing serves it") from None
        loop = asyncio.get_running_loop()
        self._port += 1
        server_channel = Channel(dispatcher, on_close=on_close)
        host, _, port = addr.rpartition(":")
        to_server = _Pipe(loop, client_channel, (host, int(port)))
        to_client = _Pipe(loop, server_channel, ("127.0.0.1", self._port))
        to_server.peer, to_client.peer = to_client, to_server
        server_channel.connection_made(to_client)
        client_channel.connection_made(to_server)
        return server_channel


class InMemoryRemotingClient(RemotingClient):
    """A RemotingClient whose connections go through an :class:`InMemoryNetwork`."""

    def __init__(self, network: InMemoryNetwork, dispatcher: RequestDispatcher | None = None):
        super().__init__(dispatcher)
        self.network = network

    async def _connect(self, addr: str) -> Channel:
        channel = Channel(self.dispatcher, on_close=lambda ch: self._forget(addr, ch))
        self.network.connect(addr, channel)
        self._channels[addr] = channel
        return channel

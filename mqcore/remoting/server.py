"""`RemotingServer`: accepts connections and dispatches their requests by code.

Usage::

    server = RemotingServer(host="127.0.0.1", port=0)
    server.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, processor)
    server.add_close_listener(lambda channel: ...)
    await server.start()
    print(server.port)           # the real port when 0 was asked
    ...
    await server.close()
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from mqcore.protocol import DEFAULT_MAX_FRAME
from mqcore.remoting.channel import DEFAULT_HIGH_WATER, DEFAULT_LOW_WATER, Channel
from mqcore.remoting.dispatcher import Processor, RequestDispatcher

__all__ = ["RemotingServer"]

log = logging.getLogger("mq.remoting")


class RemotingServer:
    """A TCP server of remoting channels; processors see each request's :class:`Channel`."""

    def __init__(
        self,
        dispatcher: RequestDispatcher | None = None,
        *,
        host: str = "0.0.0.0",
        port: int = 0,
        max_frame: int = DEFAULT_MAX_FRAME,
        high_water: int = DEFAULT_HIGH_WATER,
        low_water: int = DEFAULT_LOW_WATER,
    ) -> None:
        if not 0 <= low_water <= high_water:
            raise ValueError(f"need 0 <= low_water ({low_water}) <= high_water ({high_water})")
        self.dispatcher = dispatcher or RequestDispatcher()
        self.host = host
        self.port = port
        self.max_frame = max_frame
        self.high_water = high_water
        self.low_water = low_water
        self.channels: set[Channel] = set()
        self._close_listeners: list[Callable[[Channel], None]] = []
        self._server: asyncio.Server | None = None

    def register(self, code: int, processor: Processor) -> None:
        self.dispatcher.register(code, processor)

    def register_default(self, processor: Processor) -> None:
        self.dispatcher.register_default(processor)

    def add_close_listener(self, listener: Callable[[Channel], None]) -> None:
        """``listener(channel)`` runs when any connection closes (either side)."""
        self._close_listeners.append(listener)

    def _channel_closed(self, channel: Channel) -> None:
        self.channels.discard(channel)
        log.debug("connection from %s closed", channel.remote_address)
        for listener in self._close_listeners:
            try:
                listener(channel)
            except Exception:
                log.exception("close listener failed for %s", channel)

    def _make_channel(self) -> Channel:
        channel = Channel(
            self.dispatcher,
            max_frame=self.max_frame,
            high_water=self.high_water,
            low_water=self.low_water,
            on_close=self._channel_closed,
        )
        self.channels.add(channel)
        return channel

    async def start(self) -> None:
        """Bind and listen; afterwards ``port`` is the bound port."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._make_channel, self.host, self.port, reuse_address=True
        )
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]
        log.info("remoting server listening on %s:%d", self.host, self.port)

    @property
    def listen_address(self) -> str:
        return f"{self.host}:{self.port}"

    async def close(self) -> None:
        """Stop listening and close every connection."""
        if self._server is not None:
            self._server.close()
        for channel in list(self.channels):
            channel.close()
        waits = [c.closed_future for c in list(self.channels)]
        if waits:
            await asyncio.wait(waits, timeout=2.0)
        for channel in list(self.channels):
            channel.abort()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> RemotingServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

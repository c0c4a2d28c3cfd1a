"""`RemotingClient`: one connection per address, opened on demand, reopened when closed.

Usage::

    client = RemotingClient()
    client.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notify)  # server-initiated
    response = await client.invoke("127.0.0.1:9876", request, timeout=3.0)
    await client.invoke_oneway(addr, request)
    await client.close()

Failures: :class:`~mqcore.errors.MQTimeoutError` (no answer in time),
:class:`RemotingConnectError` (cannot connect), :class:`ChannelClosedError` (connection
lost mid-request). All three are ``retriable``.
"""

from __future__ import annotations

import asyncio
import logging
import ssl

from mqcore.protocol import DEFAULT_MAX_FRAME, RemotingCommand
from mqcore.remoting.channel import DEFAULT_HIGH_WATER, DEFAULT_LOW_WATER, Channel
from mqcore.remoting.dispatcher import Processor, RequestDispatcher, RpcHook
from mqcore.remoting.errors import RemotingConnectError
from mqcore.remoting.tls import describe_tls_error

__all__ = ["RemotingClient", "RpcHook", "split_address"]

log = logging.getLogger("mq.remoting")


def split_address(addr: str) -> tuple[str, int]:
    """``"host:port"`` (also ``"[::1]:port"``) -> (host, port)."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"not a host:port address: {addr!r}")
    return host.strip("[]"), int(port)


class RemotingClient:
    """Async RPC over remoting channels, keyed by ``host:port``."""

    def __init__(
        self,
        dispatcher: RequestDispatcher | None = None,
        *,
        connect_timeout: float = 3.0,
        max_frame: int = DEFAULT_MAX_FRAME,
        high_water: int = DEFAULT_HIGH_WATER,
        low_water: int = DEFAULT_LOW_WATER,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """``ssl_context``: connect over TLS with this context (see :mod:`mqcore.remoting.tls`)."""
        if not 0 <= low_water <= high_water:
            raise ValueError(f"need 0 <= low_water ({low_water}) <= high_water ({high_water})")
        self.dispatcher = dispatcher or RequestDispatcher()
        self.connect_timeout = connect_timeout
        self.ssl_context = ssl_context
        self.max_frame = max_frame
        self.high_water = high_water
        self.low_water = low_water
        self._channels: dict[str, Channel] = {}
        self._connecting: dict[str, asyncio.Future[Channel]] = {}
        self._closed = False
        self.rpc_hook: RpcHook | None = None
        """Rewrites each request before it is sent (the ACL signature); set by the owner."""

    def register(self, code: int, processor: Processor) -> None:
        """Handle a request the server sends us (e.g. NOTIFY_CONSUMER_IDS_CHANGED)."""
        self.dispatcher.register(code, processor)

    async def channel(self, addr: str) -> Channel:
        """The open channel to ``addr``, connecting (once, even if many ask) if needed."""
        channel = self._channels.get(addr)
        if channel is not None and not channel.closed:
            return channel
        if self._closed:
            raise RemotingConnectError("client is closed")
        pending = self._connecting.get(addr)
        if pending is None:
            pending = asyncio.ensure_future(self._connect(addr))
            self._connecting[addr] = pending
            pending.add_done_callback(lambda _: self._connecting.pop(addr, None))
        return await asyncio.shield(pending)

    async def _connect(self, addr: str) -> Channel:
        host, port = split_address(addr)
        loop = asyncio.get_running_loop()

        def factory() -> Channel:
            return Channel(
                self.dispatcher,
                max_frame=self.max_frame,
                high_water=self.high_water,
                low_water=self.low_water,
                on_close=lambda ch: self._forget(addr, ch),
            )

        try:
            async with asyncio.timeout(self.connect_timeout):
                _, channel = await loop.create_connection(factory, host, port, ssl=self.ssl_context)
        except ssl.SSLError as exc:
            reason = describe_tls_error(exc)
            raise RemotingConnectError(f"cannot connect to {addr}: {reason}") from None
        except (OSError, TimeoutError) as exc:
            raise RemotingConnectError(f"cannot connect to {addr}: {exc or 'timed out'}") from None
        self._channels[addr] = channel
        log.debug("connected to %s", addr)
        return channel

    def _forget(self, addr: str, channel: Channel) -> None:
        if self._channels.get(addr) is channel:
            del self._channels[addr]

    async def invoke(
        self, addr: str, request: RemotingCommand, timeout: float = 3.0
    ) -> RemotingCommand:
        """Send ``request`` to ``addr`` and return the response command (any code)."""
        channel = await self.channel(addr)
        if self.rpc_hook is not None:
            request = self.rpc_hook(addr, request)
        return await channel.invoke(request, timeout)

    async def invoke_oneway(self, addr: str, request: RemotingCommand) -> None:
        channel = await self.channel(addr)
        if self.rpc_hook is not None:
            request = self.rpc_hook(addr, request)
        await channel.invoke_oneway(request)

    def close_channel(self, addr: str) -> None:
        channel = self._channels.pop(addr, None)
        if channel is not None:
            channel.close()

    async def close(self) -> None:
        self._closed = True
        channels = list(self._channels.values())
        self._channels.clear()
        for channel in channels:
            channel.close()
        if channels:
            await asyncio.wait([c.closed_future for c in channels], timeout=2.0)

    async def __aenter__(self) -> RemotingClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

"""`RemotingServer`: accepts connections and dispatches their requests by code.

Usage::

    server = RemotingServer(host="127.0.0.1", port=0)
    server.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, processor)
    server.add_close_listener(lambda channel: ...)
    await server.start()
    print(server.port)           # the real port when 0 was asked
    ...
    await server.close()

Connections are bounded (:class:`ChannelLimits`): one sweep every few seconds closes
channels idle past ``idle_timeout`` (RocketMQ's ``serverChannelMaxIdleTimeSeconds``; a
request in progress, such as a held pull, is not idle) and peers that leave a frame
half-sent past ``frame_timeout``. A cap of open connections per host
(``max_per_address``) is off by default, as RocketMQ has none: every client behind one
NAT or proxy shares an address, so a cap there refuses healthy clients. An operator may
set one; past it a host has its next connections dropped at once. Clients heartbeat
every 30 s, so the timeouts never touch a healthy one; a client whose connection was
closed reconnects on its next request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mqcore.errors import ConfigError
from mqcore.protocol import DEFAULT_MAX_FRAME
from mqcore.remoting.channel import DEFAULT_HIGH_WATER, DEFAULT_LOW_WATER, Channel
from mqcore.remoting.dispatcher import Processor, RequestDispatcher
from mqcore.remoting.tls import ServerTls, TlsListener

__all__ = [
    "DEFAULT_FRAME_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_PER_ADDRESS",
    "ChannelLimits",
    "RemotingServer",
]

log = logging.getLogger("mq.remoting")

DEFAULT_IDLE_TIMEOUT = 120.0
"""RocketMQ's ``serverChannelMaxIdleTimeSeconds`` default."""
DEFAULT_FRAME_TIMEOUT = 30.0
"""Far longer than any frame up to the size limit takes on a working link."""
DEFAULT_MAX_PER_ADDRESS = 0
"""No cap, as RocketMQ: clients behind one NAT or proxy all share its address."""


class _LimitKeys(Protocol):
    """The config keys of the limits (NamesrvConfig and BrokerConfig both have them)."""

    server_channel_max_idle_time_seconds: float
    server_frame_read_timeout_seconds: float
    server_max_connections_per_address: int


@dataclass(frozen=True, slots=True)
class ChannelLimits:
    """How long a connection may idle or hold half a frame, and how many one host may
    open. 0 turns a limit off."""

    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    """Seconds without a byte from the peer and no request in progress."""
    frame_timeout: float = DEFAULT_FRAME_TIMEOUT
    """Seconds a frame may take from its first byte to its last."""
    max_per_address: int = DEFAULT_MAX_PER_ADDRESS
    """Open connections per remote host (IP); the next one is closed at once (0: none)."""

    def __post_init__(self) -> None:
        if self.idle_timeout < 0 or self.frame_timeout < 0 or self.max_per_address < 0:
            raise ValueError(f"channel limits must be >= 0 (0 = off): {self}")

    @classmethod
    def from_config(cls, config: _LimitKeys) -> ChannelLimits:
        """The limits a server config's keys ask for (one mapping for every server).
        Raises ConfigError for a negative value."""
        keys = {
            "serverChannelMaxIdleTimeSeconds": config.server_channel_max_idle_time_seconds,
            "serverFrameReadTimeoutSeconds": config.server_frame_read_timeout_seconds,
            "serverMaxConnectionsPerAddress": config.server_max_connections_per_address,
        }
        for key, value in keys.items():
            if value < 0:
                raise ConfigError(f"{key} must be >= 0 (0 turns it off), got {value}")
        return cls(
            idle_timeout=config.server_channel_max_idle_time_seconds,
            frame_timeout=config.server_frame_read_timeout_seconds,
            max_per_address=config.server_max_connections_per_address,
        )

    @property
    def sweep_interval(self) -> float | None:
        """A quarter of the shorter timeout (closing is at most that late), or None."""
        timeouts = [t for t in (self.idle_timeout, self.frame_timeout) if t > 0]
        return min(timeouts) / 4 if timeouts else None


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
        limits: ChannelLimits | None = None,
        tls: ServerTls | None = None,
    ) -> None:
        """``tls``: None serves plain TCP; see :mod:`mqcore.remoting.tls` for the modes."""
        if not 0 <= low_water <= high_water:
            raise ValueError(f"need 0 <= low_water ({low_water}) <= high_water ({high_water})")
        self.dispatcher = dispatcher or RequestDispatcher()
        self.host = host
        self.port = port
        self.max_frame = max_frame
        self.high_water = high_water
        self.low_water = low_water
        self.limits = limits or ChannelLimits()
        """Read at ``start()`` and by each sweep; set it before starting."""
        self.channels: set[Channel] = set()
        self._per_host: dict[str, int] = {}
        self._refused: dict[str, int] = {}
        self._close_listeners: list[Callable[[Channel], None]] = []
        self.tls = tls
        self._server: asyncio.Server | TlsListener | None = None
        self._sweeper: asyncio.Task[None] | None = None

    def register(self, code: int, processor: Processor) -> None:
        self.dispatcher.register(code, processor)

    def register_default(self, processor: Processor) -> None:
        self.dispatcher.register_default(processor)

    def add_close_listener(self, listener: Callable[[Channel], None]) -> None:
        """``listener(channel)`` runs when any connection closes (either side)."""
        self._close_listeners.append(listener)

    def _channel_opened(self, channel: Channel) -> bool:
        """Count the peer's host; False (the connection is dropped) past the cap."""
        host = channel.remote_host
        count = self._per_host.get(host, 0)
        cap = self.limits.max_per_address
        if cap and count >= cap:
            self.channels.discard(channel)
            refused = self._refused[host] = self._refused.get(host, 0) + 1
            if refused & (refused - 1) == 0:  # 1, 2, 4, 8...: a flood logs a few lines
                log.warning(
                    "refused a connection from %s: %d open, the limit per address "
                    "(serverMaxConnectionsPerAddress); %d refused so far",
                    host,
                    count,
                    refused,
                )
            return False
        self._per_host[host] = count + 1
        return True

    def _channel_closed(self, channel: Channel) -> None:
        if channel not in self.channels:
            return  # refused at once: never counted, never seen by listeners
        self.channels.discard(channel)
        host = channel.remote_host
        count = self._per_host.pop(host, 0) - 1
        if count > 0:
            self._per_host[host] = count
        else:
            self._refused.pop(host, None)
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
            on_open=self._channel_opened,
        )
        self.channels.add(channel)
        return channel

    def connections_from(self, host: str) -> int:
        """Open connections from ``host`` (as counted against ``max_per_address``)."""
        return self._per_host.get(host, 0)

    def sweep(self, now: float | None = None) -> int:
        """Close idle connections and those stuck inside a frame; how many were closed."""
        now = time.monotonic() if now is None else now
        limits = self.limits
        closed = 0
        for channel in list(self.channels):
            reason = channel.stale(now, limits.idle_timeout, limits.frame_timeout)
            if reason is None:
                continue
            log.info("closing the connection from %s: %s", channel.remote_address, reason)
            closed += 1
            if channel.write_buffered:
                channel.abort()  # a peer that does not read: a FIN would wait behind it
            else:
                channel.close()
        return closed

    async def _sweep_loop(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                self.sweep()
            except Exception:  # never let one odd channel stop the sweeping
                log.exception("connection sweep failed")

    async def start(self) -> None:
        """Bind and listen; afterwards ``port`` is the bound port."""
        loop = asyncio.get_running_loop()
        if self.tls is not None:  # permissive or enforcing: the listener peeks first
            self._server = TlsListener(self._make_channel, self.host, self.port, self.tls)
            await self._server.start()
        else:
            self._server = await loop.create_server(
                self._make_channel, self.host, self.port, reuse_address=True
            )
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]
        interval = self.limits.sweep_interval
        if interval is not None:
            self._sweeper = asyncio.create_task(self._sweep_loop(interval), name="channel-sweep")
        log.info(
            "remoting server listening on %s:%d%s",
            self.host,
            self.port,
            f" (tls.server.mode={self.tls.mode.value})" if self.tls is not None else "",
        )

    @property
    def listen_address(self) -> str:
        return f"{self.host}:{self.port}"

    async def close(self) -> None:
        """Stop listening and close every connection."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
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

"""`Channel`: one remoting connection as an ``asyncio.Protocol``, used by both ends.

Both ends may send requests on a connection (spec §1), so every channel can both answer
requests (through a :class:`RequestDispatcher`) and send its own, matched to responses by
``opaque``. Back-pressure: when the transport's write buffer passes the high-water mark
the channel stops reading from the peer (a client that does not read its answers cannot
make us buffer unbounded responses) and :meth:`Channel.invoke` waits before writing.
A frame that does not parse closes this connection only.

Liveness costs the hot path one clock read per received chunk (and per finished async
request): ``last_active`` and ``frame_since`` (when the half-received frame, if any,
began) are all a server's periodic sweep needs to close idle connections and peers that
never finish a frame (:meth:`Channel.stale`), with no timer per frame or per request.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import typing
from collections.abc import Awaitable, Callable
from typing import Any

from mqcore.errors import MQTimeoutError, ProtocolError
from mqcore.protocol import (
    DEFAULT_MAX_FRAME,
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    NEED_DATA,
    FrameDecoder,
    RemotingCommand,
    encode_buffers,
)
from mqcore.remoting.dispatcher import ProcessorResult, RequestDispatcher
from mqcore.remoting.errors import ChannelClosedError

__all__ = ["DEFAULT_HIGH_WATER", "DEFAULT_LOW_WATER", "Channel"]

log = logging.getLogger("mq.remoting")

DEFAULT_HIGH_WATER = 4 * 1024 * 1024
DEFAULT_LOW_WATER = 1 * 1024 * 1024


class Channel(asyncio.Protocol):
    """A connection to a peer. ``attrs`` is free space for processors (e.g. which broker
    registered over this channel) so they need no side tables keyed by channel."""

    def __init__(
        self,
        dispatcher: RequestDispatcher,
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        high_water: int = DEFAULT_HIGH_WATER,
        low_water: int = DEFAULT_LOW_WATER,
        on_close: Callable[[Channel], None] | None = None,
        on_open: Callable[[Channel], bool] | None = None,
    ) -> None:
        """``on_open(channel)`` runs once the peer is known; False drops the connection."""
        self.dispatcher = dispatcher
        self.max_frame = max_frame
        self.attrs: dict[str, Any] = {}
        self.remote_address = "?"
        self.remote_host = "?"
        self.last_active = time.monotonic()
        """Monotonic time of the last bytes from the peer or of the last answer to a
        request that took a while (a held pull): the peer may be silent until then."""
        self.frame_since = self.last_active
        """When the frame still incomplete in the decoder began (meaningless without one)."""
        self._on_open = on_open
        self._decoder = FrameDecoder(max_frame)
        self._high_water = high_water
        self._low_water = low_water
        self._on_close = on_close
        self._transport: asyncio.Transport | None = None
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._tasks: set[asyncio.Task[ProcessorResult]] = set()
        self._writable: asyncio.Event | None = None
        self._closed = False
        self._write_paused = False
        self._out: list[bytes | bytearray | memoryview] = []
        self._out_size = 0
        self._flush_scheduled = False
        self.closed_future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    # -- asyncio.Protocol -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only look-alikes.
        transport = typing.cast(asyncio.Transport, transport)
        self._transport = transport
        transport.set_write_buffer_limits(self._high_water, self._low_water)
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            host = peer[0]
            if host.startswith("::ffff:"):  # IPv4-mapped: keep clients' IPv4 view
                host = host[7:]
            self.remote_host = host
            self.remote_address = f"{host}:{peer[1]}"
        if self._on_open is not None and not self._on_open(self):
            transport.abort()

    def data_received(self, data: bytes) -> None:
        now = self.last_active = time.monotonic()
        decoder = self._decoder
        held = decoder.buffered
        decoder.receive_data(data)
        self._process()
        left = decoder.buffered
        # A frame completed here (bytes were consumed) or none was pending: what is left
        # is a frame that began in this chunk. Otherwise the pending one goes on.
        if left and (not held or left < held + len(data)):
            self.frame_since = now
        if self._out:
            # The answers of this chunk's requests go out now, in one write, instead of
            # one loop pass later (the flush queued by send() then finds nothing to do).
            self._flush()

    def _process(self) -> None:
        # While the write buffer is above high water, leave further frames in the decoder:
        # a chunk may hold many requests, and answering them all would defeat the limit.
        decoder = self._decoder
        try:
            while not self._write_paused and not self._closed:
                cmd = decoder.next_command()
                if cmd is NEED_DATA:
                    return
                if cmd.flag & FLAG_RESPONSE:
                    fut = self._pending.pop(cmd.opaque, None)
                    if fut is None:
                        log.debug("%s: response for unknown opaque %d", self, cmd.opaque)
                    elif not fut.done():
                        fut.set_result(cmd)
                else:
                    self._handle_request(cmd)
        except ProtocolError as exc:
            log.warning("%s: closing connection: %s", self, exc)
            self.abort()

    def eof_received(self) -> bool | None:
        return None  # close the transport

    def pause_writing(self) -> None:
        self._write_paused = True
        if self._writable is None:
            self._writable = asyncio.Event()
        self._writable.clear()
        if self._transport is not None and not self._closed:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._writable is not None:
            self._writable.set()
        if self._transport is not None and not self._closed:
            self._transport.resume_reading()
            self.frame_since = time.monotonic()  # the peer could not send while paused
            self._process()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(ChannelClosedError(f"connection to {self.remote_address} closed"))
        if self._writable is not None:
            self._writable.set()
        if not self.closed_future.done():
            self.closed_future.set_result(None)
        if self._on_close is not None:
            try:
                self._on_close(self)
            except Exception:
                log.exception("%s: close callback failed", self)

    # -- requests from the peer ---------------------------------------------------------

    def _handle_request(self, request: RemotingCommand) -> None:
        result = self.dispatcher.dispatch(self, request)
        if result is None:
            return
        if isinstance(result, RemotingCommand):
            self._reply(result)
            return
        task = asyncio.ensure_future(result)
        self._tasks.add(task)
        task.add_done_callback(self._request_done)

    def _request_done(self, task: asyncio.Task[ProcessorResult]) -> None:
        self._tasks.discard(task)
        self.last_active = time.monotonic()
        if task.cancelled():
            return
        response = task.result()  # the dispatcher never raises
        if response is not None:
            self._reply(response)

    def _reply(self, response: RemotingCommand) -> None:
        if self._closed or self._transport is None or self._transport.is_closing():
            return  # the peer is gone; nobody is waiting for this answer
        try:
            self.send(response)
        except ProtocolError as exc:  # e.g. a processor built a frame over the limit
            log.error("%s: cannot send response to code %d: %s", self, response.code, exc)
            self._reply(
                RemotingCommand(
                    code=1,
                    opaque=response.opaque,
                    flag=response.flag,
                    remark=f"cannot encode response: {exc}",
                    serialize_type=response.serialize_type,
                )
            )

    # -- sending ------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def busy(self) -> bool:
        """A request is in progress either way (e.g. a held long-polling pull)."""
        return bool(self._tasks or self._pending)

    def stale(self, now: float, idle_timeout: float, frame_timeout: float) -> str | None:
        """Why a server should drop this connection at ``now``, or None.

        Idle: nothing read or answered for ``idle_timeout`` s and nothing in progress.
        Half a frame:
        a frame begun ``frame_timeout`` s ago still incomplete. 0 disables either check.
        While we stop reading (the peer does not read our answers) a frame cannot finish,
        so only the idle rule applies."""
        if self._closed or self._transport is None or self._transport.is_closing():
            return None  # gone, or already on its way out
        if (
            frame_timeout
            and not self._write_paused
            and self._decoder.buffered
            and now - self.frame_since > frame_timeout
        ):
            return (
                f"a frame incomplete for {now - self.frame_since:.1f} s "
                f"({self._decoder.buffered} B received)"
            )
        if idle_timeout and now - self.last_active > idle_timeout and not self.busy:
            return f"idle for {now - self.last_active:.1f} s"
        return None

    @property
    def write_buffered(self) -> int:
        """Bytes queued for the peer and not yet taken by the kernel."""
        transport = self._transport
        size = self._out_size
        if transport is not None and not transport.is_closing():
            size += transport.get_write_buffer_size()
        return size

    def send(self, cmd: RemotingCommand) -> None:
        """Queue a command for writing (no waiting). Raises ChannelClosedError when closed.

        Commands queued during one pass of the event loop go out in one write at the end
        of the pass: a burst of pipelined answers costs one syscall, not one each.
        """
        if self._closed or self._transport is None or self._transport.is_closing():
            raise ChannelClosedError(f"connection to {self.remote_address} is closed")
        buffers = encode_buffers(cmd, max_frame=self.max_frame)
        out = self._out
        size = self._out_size
        for buffer in buffers:
            out.append(buffer)
            size += len(buffer)
        self._out_size = size
        if size >= self._high_water:
            self._flush()  # now, so the transport's back-pressure sees these bytes
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        out, self._out = self._out, []
        size, self._out_size = self._out_size, 0
        transport = self._transport
        if not out or transport is None or transport.is_closing():
            return
        if len(out) == 1:
            transport.write(out[0])
        elif size <= self._high_water:
            transport.write(b"".join(out))
        else:
            transport.writelines(out)

    async def drain(self) -> None:
        """Wait while the write buffer is above the high-water mark."""
        if self._writable is not None and not self._writable.is_set():
            await self._writable.wait()
            if self._closed:
                raise ChannelClosedError(f"connection to {self.remote_address} closed")

    async def invoke(self, request: RemotingCommand, timeout: float = 3.0) -> RemotingCommand:
        """Send a request and wait for its response. Raises MQTimeoutError or
        ChannelClosedError."""
        await self.drain()
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[RemotingCommand] = loop.create_future()
        opaque = request.opaque
        if opaque in self._pending:
            raise ValueError(f"opaque {opaque} already in flight on {self}")
        self._pending[opaque] = fut
        # A timer that fails the future, not asyncio.timeout(): that context manager costs
        # a tenth of a whole round trip's instructions (client and server).
        timer = loop.call_later(timeout, _expire, fut, self.remote_address, request.code, timeout)
        try:
            self.send(request)
            return await fut
        finally:
            timer.cancel()
            self._pending.pop(opaque, None)

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        """Send a request that must not be answered (the oneway bit is set if missing)."""
        if not request.is_oneway:
            request = dataclasses.replace(request, flag=request.flag | FLAG_ONEWAY)
        await self.drain()
        self.send(request)

    def close(self) -> None:
        if self._transport is not None and not self._closed:
            self._flush()  # what was queued still goes out before the FIN
            self._transport.close()

    def abort(self) -> None:
        if self._transport is not None and not self._closed:
            self._transport.abort()

    def wait_closed(self) -> Awaitable[None]:
        return asyncio.shield(self.closed_future)

    def __repr__(self) -> str:
        return f"<Channel {self.remote_address}{' closed' if self._closed else ''}>"


def _expire(fut: asyncio.Future[RemotingCommand], peer: str, code: int, timeout: float) -> None:
    if not fut.done():
        fut.set_exception(
            MQTimeoutError(f"no answer from {peer} to request code {code} within {timeout:g} s")
        )

"""`TraceDispatcher`: trace records written in batches, off the send path.

RocketMQ's ``AsyncTraceDispatcher``: hooks ``append`` trace contexts to a bounded queue
and never wait; a background task drains it, encodes each context
(:func:`~mqcore.protocol.bodies.trace.encode_trace_context`) and sends the records as
one trace message once they are ``batch_wait`` seconds old or near ``max_msg_size``,
through a producer of its own (group ``_INNER_TRACE_PRODUCER-<group>-<type>-<n>``), which
the traced client builds (:func:`mqcore.client.producer.trace_producer`) and hands in.
A full queue or a failed trace send drops records and counts them (``dropped``); the
user's sends and consumption are never slowed or failed by tracing.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import deque
from typing import Any, Protocol

from mqcore.client.errors import ClientStateError
from mqcore.message import Message
from mqcore.message.const import KEY_SEPARATOR, PROPERTY_KEYS
from mqcore.protocol.bodies.trace import (
    RMQ_SYS_TRACE_TOPIC,
    TraceContext,
    TraceTransfer,
    encode_trace_context,
    join_transfers,
)

__all__ = [
    "MAX_TRACE_MESSAGE_SIZE",
    "TRACE_INSTANCE_NAME",
    "TraceDispatcher",
    "trace_producer_group",
]

log = logging.getLogger("mq.client.trace")

GROUP_NAME_PREFIX = "_INNER_TRACE_PRODUCER"
TRACE_INSTANCE_NAME = "PID_CLIENT_INNER_TRACE_PRODUCER"
MAX_TRACE_MESSAGE_SIZE = 128_000
_COUNTER = itertools.count(1)


def trace_producer_group(group: str, kind: str) -> str:
    """The trace producer's own group (4.9.8's ``_INNER_TRACE_PRODUCER-<group>-<type>``,
    numbered so two tracing clients of one group in a process never share it)."""
    return f"{GROUP_NAME_PREFIX}-{group}-{kind}-{next(_COUNTER)}"


class TraceSender(Protocol):
    """What the dispatcher needs of its producer (a :class:`~mqcore.client.Producer`)."""

    async def start(self) -> None: ...

    async def shutdown(self) -> None: ...

    async def send(self, msg: Message) -> Any: ...


class TraceDispatcher:
    """Collects trace contexts and writes them to the trace topic; see the module doc."""

    def __init__(
        self,
        sender: TraceSender,
        *,
        trace_topic: str | None = None,
        queue_size: int = 1024,
        batch_wait: float = 0.5,
        poll_interval: float = 0.1,
        max_msg_size: int = MAX_TRACE_MESSAGE_SIZE,
    ) -> None:
        self.trace_topic = trace_topic or RMQ_SYS_TRACE_TOPIC
        self.batch_wait = batch_wait
        self.poll_interval = poll_interval
        self.max_msg_size = max_msg_size
        self.queue_size = queue_size
        self._queue: deque[TraceContext] = deque()
        self._arrived = asyncio.Event()
        self._segment: list[TraceTransfer] = []
        self._segment_size = 0
        self._first_added = 0.0
        self._sends: set[asyncio.Task[None]] = set()
        self._worker: asyncio.Task[None] | None = None
        self._producer: TraceSender | None = sender
        """The trace producer (``mqcore.client.producer.trace_producer``), stopped with this."""
        self._closed = False
        self.appended = 0
        """Contexts accepted into the queue."""
        self.sent = 0
        """Trace records the broker stored."""
        self.dropped = 0
        """Contexts refused by a full queue plus records whose trace send failed."""
        self.last_error: str | None = None

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the trace producer and the draining task (on the running loop)."""
        if self._worker is not None:
            return
        if self._producer is None:
            raise ClientStateError("this trace dispatcher has been shut down")
        await self._producer.start()
        self._worker = asyncio.create_task(self._run(), name="mq-trace-dispatcher")

    async def shutdown(self, timeout: float = 3.0) -> None:
        """Write what is queued (for up to ``timeout`` s), then stop the trace producer."""
        if self._closed:
            return
        self._closed = True
        self._arrived.set()
        if self._worker is not None:
            await self._worker  # it drains the queue and returns once closed
        self._drain()
        self._flush()
        if self._sends:
            _, pending = await asyncio.wait(set(self._sends), timeout=timeout)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)  # counts them dropped
        if self._producer is not None:
            await self._producer.shutdown()
            self._producer = None

    # -- the hooks' side ------------------------------------------------------------------

    def append(self, ctx: TraceContext) -> bool:
        """Queue a context without waiting; False (and counted) when the queue is full."""
        if self._closed:
            self.dropped += 1
            return False
        if len(self._queue) >= self.queue_size:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.info("trace queue full: %d context(s) dropped so far", self.dropped)
            return False
        self._queue.append(ctx)
        self.appended += 1
        self._arrived.set()
        return True

    @property
    def pending(self) -> int:
        """Contexts queued or encoded but not yet handed to a send."""
        return len(self._queue) + len(self._segment)

    @property
    def idle(self) -> bool:
        return not self.pending and not self._sends

    # -- the draining task ----------------------------------------------------------------

    async def _run(self) -> None:
        # Stopped by ``_closed`` rather than cancelled: nothing queued is lost in a cancel.
        while not self._closed:
            try:
                async with asyncio.timeout(self.poll_interval):
                    await self._arrived.wait()
            except TimeoutError:
                pass
            self._arrived.clear()
            self._drain()
            if self._segment and time.monotonic() - self._first_added >= self.batch_wait:
                self._flush()

    def _drain(self) -> None:
        while self._queue:
            self._add(self._queue.popleft())

    def _add(self, ctx: TraceContext) -> None:
        if not ctx.beans:
            return
        transfer = encode_trace_context(ctx)
        if not self._segment:
            self._first_added = time.monotonic()
        self._segment.append(transfer)
        self._segment_size += len(transfer.data.encode("utf-8"))  # bytes: the size limit
        if self._segment_size >= self.max_msg_size - 10_000:
            self._flush()

    def _flush(self) -> None:
        if not self._segment:
            return
        batch, self._segment, self._segment_size = self._segment, [], 0
        task = asyncio.ensure_future(self._send(batch))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    async def _send(self, batch: list[TraceTransfer]) -> None:
        body, keys = join_transfers(batch)
        records = sum(t.data.count("\x02") for t in batch)
        msg = Message(self.trace_topic, body.encode("utf-8"))
        if keys:
            msg.properties[PROPERTY_KEYS] = KEY_SEPARATOR.join(keys)
        try:
            if self._producer is None:
                raise RuntimeError("the trace producer is not running")
            await self._producer.send(msg)
        except asyncio.CancelledError:
            self.dropped += records
            raise
        except Exception as exc:  # tracing never fails the user's work
            self.dropped += records
            first = self.last_error is None
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.log(
                logging.WARNING if first else logging.DEBUG,
                "trace data to %s dropped (%d record(s)): %s",
                self.trace_topic,
                records,
                self.last_error,
            )
            return
        self.sent += records

    def __repr__(self) -> str:
        return (
            f"<TraceDispatcher {self.trace_topic} sent={self.sent} dropped={self.dropped}"
            f" pending={self.pending}>"
        )

"""Blocking facade for scripts: ``SyncProducer``, ``SyncAdmin`` (and any async client).

::

    with SyncProducer("pg", namesrv="127.0.0.1:9876") as producer:
        result = producer.send(make_message("TopicTest", "hello", tags="TagA"))
        answer = producer.request(make_message("TopicTest", "ping"), timeout=3.0)

    with SyncAdmin() as admin:
        print(admin.topic_status("TopicTest"))

Why a background thread: the clients are asyncio objects whose connections, timers
(heartbeats, route refresh, rebalance) and server-initiated requests need an event loop
that keeps running *between* calls. ``asyncio.run`` per call would stop the heartbeats and
drop the connections each time, and a script's own loop may not exist (or may be a
Jupyter loop already running). So by default each facade owns one daemon thread running
one loop; every method submits a coroutine to it and waits for the result, with the same
exceptions the async API raises.

That costs two thread hand-offs per call (about 100 µs of CPU and twice that in wall
time on a small machine, more than the send itself). A script that calls in a tight loop
and needs nothing between calls passes ``background=False``: the loop then runs in the
calling thread during each call only (:class:`CallerLoop`). Connections stay open; timers
that fell due in between (heartbeats, route refresh) run at the start of the next call;
requests a broker sends meanwhile (a transaction check-back) wait until then. So keep the
default for transactional producers and for consumers.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Callable, Coroutine, Iterable, Sequence
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from mqcore.client.admin import Admin
from mqcore.client.api import SendResult
from mqcore.client.producer import Producer
from mqcore.client.selectors import MessageQueueSelector
from mqcore.client.simple_consumer import SimpleConsumer
from mqcore.message import Message, MessageExt
from mqcore.protocol.bodies import MessageQueue

__all__ = [
    "CallerLoop",
    "LoopThread",
    "SyncAdmin",
    "SyncClient",
    "SyncProducer",
    "SyncSimpleConsumer",
]

T = TypeVar("T")
C = TypeVar("C")


class LoopThread:
    """An event loop in a daemon thread; :meth:`run` executes a coroutine on it."""

    def __init__(self, name: str = "mq-sync") -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)
        self.thread.start()
        self._ready.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if threading.current_thread() is self.thread:
            raise RuntimeError("a blocking call from the client's own loop would deadlock")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


async def _within(coro: Coroutine[Any, Any, T], timeout: float) -> T:
    """``coro`` bounded by ``timeout`` in the task that runs it: ``asyncio.wait_for``
    (3.11) runs it in a second task, which costs a blocking call three more passes of
    the loop (a sync send went from 5 to 8 passes)."""
    async with asyncio.timeout(timeout):
        return await coro


class CallerLoop:
    """An event loop that runs in the calling thread, during calls only (no hand-off).

    Callers from several threads take turns; a call from inside a running event loop is
    refused (``run_until_complete`` cannot nest), use :class:`LoopThread` there.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._turn = threading.Lock()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coro.close()
            raise RuntimeError("background=False cannot block inside a running event loop")
        with self._turn:
            if timeout is not None:
                return self.loop.run_until_complete(_within(coro, timeout))
            return self.loop.run_until_complete(coro)

    def stop(self) -> None:
        with self._turn:
            if self.loop.is_closed():
                return
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            if pending:
                gathered = asyncio.gather(*pending, return_exceptions=True)
                self.loop.run_until_complete(gathered)
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()


class SyncClient(Generic[C]):
    """Wraps an async client built *inside* the loop thread (its asyncio objects must be
    created there). Coroutine methods become blocking methods; other attributes pass
    through. ``start``/``shutdown`` and the context manager manage both client and thread.
    """

    def __init__(self, factory: Callable[[], C], *, background: bool = True) -> None:
        self._thread: LoopThread | CallerLoop = LoopThread() if background else CallerLoop()

        async def build() -> C:
            return factory()

        self.client: C = self._thread.run(build())

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._thread.run(coro)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.client, name)
        if inspect.iscoroutinefunction(attr):

            @functools.wraps(attr)
            def blocking(*args: Any, **kwargs: Any) -> Any:
                return self._call(attr(*args, **kwargs))

            return blocking
        return attr

    def start(self) -> None:
        self._call(self.client.start())  # type: ignore[attr-defined]

    def shutdown(self) -> None:
        try:
            self._call(self.client.shutdown())  # type: ignore[attr-defined]
        finally:
            self._thread.stop()

    def __enter__(self) -> SyncClient[C]:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


class SyncProducer(SyncClient[Producer]):
    """A :class:`~mqcore.client.producer.Producer` with blocking methods."""

    def __init__(
        self,
        group: str = "DEFAULT_PRODUCER",
        namesrv: str | None = None,
        *,
        background: bool = True,
        **options: Any,
    ):
        super().__init__(lambda: Producer(group, namesrv, **options), background=background)

    def __enter__(self) -> SyncProducer:
        self.start()
        return self

    def send(
        self,
        msg: Message,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        timeout: float | None = None,
    ) -> SendResult:
        return self._call(
            self.client.send(msg, queue=queue, selector=selector, arg=arg, timeout=timeout)
        )

    def send_oneway(self, msg: Message, **kwargs: Any) -> None:
        self._call(self.client.send_oneway(msg, **kwargs))

    def request(self, msg: Message, timeout: float | None = None, **kwargs: Any) -> MessageExt:
        """Send a request and block until its reply (see ``Producer.request``)."""
        return self._call(self.client.request(msg, timeout, **kwargs))

    def send_batch(self, messages: Iterable[Message], **kwargs: Any) -> list[SendResult]:
        return self._call(self.client.send_batch(messages, **kwargs))

    def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        return self._call(self.client.fetch_publish_queues(topic))


class SyncAdmin(SyncClient[Admin]):
    """An :class:`~mqcore.client.admin.Admin` whose coroutine methods block
    (``SyncAdmin().topic_status("T")`` returns the list)."""

    def __init__(
        self,
        namesrv: str | Sequence[str] | None = None,
        *,
        background: bool = True,
        **options: Any,
    ):
        super().__init__(lambda: Admin(namesrv, **options), background=background)

    def __enter__(self) -> SyncAdmin:
        self.start()
        return self


class SyncSimpleConsumer(SyncClient[SimpleConsumer]):
    """A :class:`~mqcore.client.simple_consumer.SimpleConsumer` with blocking methods::

    with SyncSimpleConsumer("billing", namesrv="127.0.0.1:9876") as consumer:
        consumer.subscribe("Orders")
        for msg in consumer.receive(16, invisible_duration=30.0):
            consumer.ack(msg)
    """

    def __init__(
        self,
        group: str,
        namesrv: str | Sequence[str] | None = None,
        *,
        background: bool = True,
        **options: Any,
    ):
        super().__init__(lambda: SimpleConsumer(group, namesrv, **options), background=background)

    def __enter__(self) -> SyncSimpleConsumer:
        self.start()
        return self

    def subscribe(self, topic: str, expression: str = "*") -> None:
        self.client.subscribe(topic, expression)

    def receive(
        self,
        max_messages: int = 16,
        invisible_duration: float | None = None,
        *,
        await_duration: float | None = None,
    ) -> list[MessageExt]:
        return self._call(
            self.client.receive(max_messages, invisible_duration, await_duration=await_duration)
        )

    def ack(self, msg: MessageExt) -> None:
        self._call(self.client.ack(msg))

    def ack_batch(self, messages: Iterable[MessageExt]) -> None:
        self._call(self.client.ack_batch(list(messages)))

    def change_invisible_duration(self, msg: MessageExt, duration: float) -> None:
        self._call(self.client.change_invisible_duration(msg, duration))

"""The Prometheus endpoint of a server process: :class:`MetricsHttpServer` and the
:class:`LoopCollector` it serves.

A broker serves every client on one event loop, so a scrape must neither run long on
it nor read its tables from another thread while the loop changes them. The split:

* the HTTP server (prometheus_client's WSGI app) runs in threads of its own, so
  accepting a scrape, rendering the text format and writing it never touch the loop;
* at each scrape the collector hands the loop one job, :func:`run_in_slices
  <mqcore.common.aio.run_in_slices>` over the process's collection steps, which read the
  figures the server already keeps (counters, offsets, table sizes) into a
  :class:`~mqcore.metrics.families.MetricSet`, giving the loop back every
  ``SLICE_SECONDS``; the thread waits for the set and renders it.

So the loop spends the reading alone (no text), in slices a request waits at most one
of, and every figure is read where it is written.

A scrape makes a few short-lived objects per series (prometheus_client's samples, the
text); counted by the garbage collector they set off full collections that walk the
whole broker heap with the GIL held (30 ms at 1,000 topics and groups,
bench/metrics_scrape.py). They die by reference counting when the answer is written, so
automatic collection is paused while a scrape runs (:class:`GcPause`).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import Metric
from prometheus_client.exposition import ThreadingWSGIServer

from mqcore.common.aio import run_all, run_in_slices
from mqcore.errors import ConfigError
from mqcore.metrics.families import MetricSet

__all__ = ["CollectSteps", "Collector", "GcPause", "LoopCollector", "MetricsHttpServer"]

log = logging.getLogger("mq.metrics")

CollectSteps = Callable[[MetricSet], Iterator[None]]
"""A process's collection: fills the set, yielding between units of work (a topic, a
group) so the loop can be given back."""

SCRAPE_TIMEOUT = 10.0
"""Seconds a scrape waits for the loop (Prometheus's own default timeout is 10 s)."""
_POLL_INTERVAL = 0.05
"""Seconds between the HTTP thread's checks for a stop (its ``serve_forever`` poll)."""


class Collector(Protocol):
    """What an endpoint serves: prometheus_client's collector shape."""

    def collect(self) -> Iterable[Metric]: ...


class LoopCollector:
    """A prometheus_client collector whose ``collect`` runs ``steps`` on ``loop``.

    Called from the loop's own thread (a test, an in-process use) it runs the steps at
    once instead of waiting for the loop it is blocking."""

    def __init__(
        self,
        steps: CollectSteps,
        labels: Mapping[str, str] | Callable[[], Mapping[str, str]],
        loop: asyncio.AbstractEventLoop | None = None,
        *,
        timeout: float = SCRAPE_TIMEOUT,
    ) -> None:
        """``labels``: on every sample (``cluster``, ``node_type``, ``node_id``, ...), or a
        function giving them at each scrape (a name server's address is known once it
        listens)."""
        self._steps = steps
        self._labels = labels
        self.loop = loop
        self.timeout = timeout

    @property
    def labels(self) -> dict[str, str]:
        labels = self._labels
        return dict(labels() if callable(labels) else labels)

    def collect_now(self) -> MetricSet:
        """Every family, read at once on the calling thread."""
        metrics = MetricSet(self.labels)
        run_all(self._steps(metrics))
        return metrics

    async def collect_sliced(self) -> MetricSet:
        """Every family, read on the running loop a slice at a time."""
        metrics = MetricSet(self.labels)
        await run_in_slices(self._steps(metrics))
        return metrics

    def collect(self) -> Iterable[Metric]:
        loop = self.loop
        if loop is None or _running_in(loop):
            return self.collect_now().drain()
        future = asyncio.run_coroutine_threadsafe(self.collect_sliced(), loop)
        return future.result(self.timeout).drain()


def _running_in(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class GcPause:
    """Automatic garbage collection off while any scrape runs (scrapes may overlap),
    back on after the last, unless it was off before the first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._was_enabled = False

    def __enter__(self) -> None:
        with self._lock:
            if self._running == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._running += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0 and self._was_enabled:
                gc.enable()


_GC_PAUSE = GcPause()


def _paused(app: Callable[..., Any]) -> Callable[..., Any]:
    """The WSGI ``app`` with collection paused while it answers (it renders the whole
    text before it returns)."""

    def answer(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        with _GC_PAUSE:
            return app(environ, start_response)

    return answer


class _QuietHandler(WSGIRequestHandler):
    """No access log line per scrape on stderr."""

    def log_message(self, format: str, *args: object) -> None:
        pass


class MetricsHttpServer:
    """``/metrics`` in Prometheus's text format on ``host:port`` (port 0: any free
    one), served from threads of its own. :meth:`bind` takes the port before the server
    starts anything else, so a taken port fails its start; :meth:`serve` answers."""

    def __init__(self, host: str, port: int, collector: Collector) -> None:
        self.host = host
        self.requested_port = port
        self.collector = collector
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self._server: ThreadingWSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (the requested one until started)."""
        if self._server is None:
            return self.requested_port
        return int(self._server.server_address[1])

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}/metrics"

    @property
    def running(self) -> bool:
        """Answering scrapes (between :meth:`serve` and :meth:`close`)."""
        return self._thread is not None

    def bind(self) -> None:
        """Take the port now (connections wait in the backlog until :meth:`serve`).
        Raises ConfigError naming the address when it cannot be bound."""
        if self._server is not None:
            return
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET

        class Server(ThreadingWSGIServer):
            address_family = family

        try:
            self._server = make_server(
                self.host,
                self.requested_port,
                _paused(make_wsgi_app(self.registry)),
                Server,
                handler_class=_QuietHandler,
            )
        except OSError as exc:
            raise ConfigError(
                f"cannot serve metrics on {self.address} (metricsPromExporterHost/Port): "
                f"{exc.strerror or exc}"
            ) from None

    def serve(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Bind unless bound, and answer scrapes from now on; a :class:`LoopCollector`
        reads on ``loop`` (the running one by default)."""
        if self._thread is not None:
            return
        if isinstance(self.collector, LoopCollector):
            self.collector.loop = loop or asyncio.get_running_loop()
        self.bind()
        server = self._server
        assert server is not None
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": _POLL_INTERVAL},
            name=f"metrics-http-{self.port}",
            daemon=True,
        )
        self._thread.start()
        log.info("serving Prometheus metrics on %s", self.url)

    def close(self) -> None:
        """Stop serving and release the port (blocks up to one poll interval)."""
        server, thread, self._server, self._thread = self._server, self._thread, None, None
        if server is None:
            return
        if thread is not None:
            server.shutdown()
            thread.join()
        server.server_close()

    async def stop(self) -> None:
        """:meth:`close` off the loop (a scrape in progress may be waiting for it)."""
        await asyncio.to_thread(self.close)

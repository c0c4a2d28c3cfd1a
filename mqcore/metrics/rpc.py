"""`RpcLatency`: the ``rocketmq_rpc_latency`` histogram of one server's requests.

RocketMQ 5 times every request from its arrival to the write of its answer, labelled by
request code, response code (their constant names in lower case), whether it was a
long-polling pull and how the write went. Here a remoting dispatcher calls the
observer once per answered request (:attr:`RequestDispatcher.observer
<mqcore.remoting.dispatcher.RequestDispatcher.observer>`): one bucket found by bisection
and two additions, on the event loop, nothing formatted. The names are looked up at
scrape time.
"""

from __future__ import annotations

import bisect
import time

from mqcore.metrics import names
from mqcore.metrics.families import MetricSet
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode

__all__ = ["RpcLatency"]

_REQUEST_NAMES = {int(code): code.name.lower() for code in RequestCode}
_RESPONSE_NAMES = {int(code): code.name.lower() for code in ResponseCode}
_BOUNDS = names.RPC_LATENCY_BUCKETS
_LABELS = (
    names.PROTOCOL_TYPE,
    names.REQUEST_CODE,
    names.RESPONSE_CODE,
    names.IS_LONG_POLLING,
    names.RESULT,
)


class _Cell:
    """The histogram of one label set: per-bucket counts and the sum in ms."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(_BOUNDS) + 1)
        self.total = 0.0


class RpcLatency:
    """Request latencies of one process (every port of a broker shares one)."""

    def __init__(self) -> None:
        self._cells: dict[tuple[int, int, bool], _Cell] = {}

    def __call__(
        self,
        request: RemotingCommand,
        response: RemotingCommand | None,
        started: float,
        deferred: bool,
    ) -> None:
        """``request`` was answered with ``response`` (None: a oneway request, not
        answered, which RocketMQ does not time either); it arrived at ``started``
        (``time.monotonic``).
        ``deferred``: the processor answered later, from a task; a pull is answered so
        only when the broker held it (long polling)."""
        if response is None:
            return
        elapsed = (time.monotonic() - started) * 1000.0
        held = deferred and request.code == RequestCode.PULL_MESSAGE
        key = (request.code, response.code, held)
        cell = self._cells.get(key)
        if cell is None:
            cell = self._cells[key] = _Cell()
        cell.counts[bisect.bisect_left(_BOUNDS, elapsed)] += 1
        cell.total += elapsed

    def collect(self, metrics: MetricSet) -> None:
        histogram = metrics.histogram(
            names.RPC_LATENCY, "Rpc latency (milliseconds)", _BOUNDS, _LABELS
        )
        for (code, response_code, held), cell in list(self._cells.items()):
            histogram.add(
                list(cell.counts),
                cell.total,
                names.PROTOCOL_TYPE_REMOTING,
                _REQUEST_NAMES.get(code) or str(code),
                _RESPONSE_NAMES.get(response_code) or str(response_code),
                names.bool_label(held),
                "success",  # written to the transport: a failed write is not seen here
            )

"""Routing of incoming requests to processors by request code.

A processor is ``fn(channel, request) -> response | None`` or a coroutine function with
that shape. Synchronous processors (the name server's) answer without a task switch;
coroutines (the broker's, long polling) run as tasks. Whatever a processor does, the
dispatcher turns it into a proper answer (spec §4): unknown code -> 3 with Java's remark,
bad header/body -> SYSTEM_ERROR with the reason, a bug -> SYSTEM_ERROR (logged), and a
oneway request is never answered.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeAlias

from mqcore.errors import MQError
from mqcore.protocol import FLAG_ONEWAY, RemotingCommand, ResponseCode

if TYPE_CHECKING:
    from mqcore.remoting.channel import Channel

__all__ = [
    "PreDispatch",
    "Processor",
    "ProcessorResult",
    "RequestDispatcher",
    "RequestObserver",
    "RpcHook",
]

log = logging.getLogger("mq.remoting")

ProcessorResult: TypeAlias = RemotingCommand | None
Processor: TypeAlias = Callable[
    ["Channel", RemotingCommand], ProcessorResult | Awaitable[ProcessorResult]
]
PreDispatch: TypeAlias = Callable[["Channel", RemotingCommand], RemotingCommand | None]
"""A check before any processor (ACL): None lets the request through, a command answers it."""
RequestObserver: TypeAlias = Callable[[RemotingCommand, RemotingCommand | None, float, bool], None]
"""``observer(request, response, started, deferred)`` once a request is answered:
``started`` is its arrival (``time.monotonic``), ``deferred`` whether the processor
answered from a task (the metrics' request latency, :mod:`mqcore.metrics.rpc`)."""
RpcHook: TypeAlias = Callable[[str, RemotingCommand], RemotingCommand]
"""A client's ``hook(addr, request) -> request to send`` (RocketMQ's RPCHook, e.g. the
ACL signature)."""


class RequestDispatcher:
    """Request code -> processor table, shared by servers, clients and in-memory peers."""

    def __init__(self) -> None:
        self._processors: dict[int, Processor] = {}
        self._default: Processor | None = None
        self.pre_dispatch: PreDispatch | None = None
        """Set by a server's owner (the ACL guard); its refusal is the answer and no
        processor runs."""
        self.observer: RequestObserver | None = None
        """Set by a server's owner to time its requests (metrics); None costs nothing."""

    def register(self, code: int, processor: Processor) -> None:
        self._processors[int(code)] = processor

    def register_default(self, processor: Processor) -> None:
        """Called for codes without a processor of their own (instead of answering 3)."""
        self._default = processor

    def processor_for(self, code: int) -> Processor | None:
        return self._processors.get(code, self._default)

    def unsupported(self, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(
            request,
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
            f" request type {request.code} not supported",
        )

    def failure(self, request: RemotingCommand, exc: BaseException) -> RemotingCommand:
        if isinstance(exc, (MQError, ValueError)):
            log.info("request code %d failed: %s", request.code, exc)
            remark = str(exc)
        else:
            log.exception("processor for code %d raised", request.code, exc_info=exc)
            remark = f"{type(exc).__name__}: {exc}"
        return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR, remark)

    def dispatch(
        self, channel: Channel, request: RemotingCommand
    ) -> ProcessorResult | Awaitable[ProcessorResult]:
        """The answer, or an awaitable of it (for coroutine processors). Never raises."""
        observer = self.observer
        if observer is None:
            return self._dispatch(channel, request)
        started = time.monotonic()
        result = self._dispatch(channel, request)
        if result is None or isinstance(result, RemotingCommand):
            observer(request, result, started, False)
            return result
        return self._observed(request, result, observer, started)

    async def _observed(
        self,
        request: RemotingCommand,
        pending: Awaitable[ProcessorResult],
        observer: RequestObserver,
        started: float,
    ) -> ProcessorResult:
        result = await pending
        observer(request, result, started, True)
        return result

    def _dispatch(
        self, channel: Channel, request: RemotingCommand
    ) -> ProcessorResult | Awaitable[ProcessorResult]:
        if self.pre_dispatch is not None:
            try:
                refusal = self.pre_dispatch(channel, request)
            except Exception as exc:  # a failing check refuses: closed, not open
                return None if request.is_oneway else self.failure(request, exc)
            if refusal is not None:
                return None if request.is_oneway else refusal
        processor = self._processors.get(request.code, self._default)
        if processor is None:
            return None if request.is_oneway else self.unsupported(request)
        try:
            result = processor(channel, request)
        except Exception as exc:
            return None if request.is_oneway else self.failure(request, exc)
        # A command is not awaitable: answer it without asking inspect (the common case).
        if type(result) is not RemotingCommand and inspect.isawaitable(result):
            return self._finish(request, result)
        return None if request.flag & FLAG_ONEWAY else result

    async def _finish(
        self, request: RemotingCommand, pending: Awaitable[ProcessorResult]
    ) -> ProcessorResult:
        try:
            result = await pending
        except Exception as exc:
            return None if request.is_oneway else self.failure(request, exc)
        return None if request.is_oneway else result

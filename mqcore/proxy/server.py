"""`GrpcServer`: ``apache.rocketmq.v2.MessagingService`` on a grpc.aio server.

The server runs on the caller's event loop (the broker's, uvloop or not: grpc.aio binds
to the running loop). Every method of the service is served: those of
:class:`~mqcore.proxy.service.MessagingService` and of its consumer part
(:mod:`mqcore.proxy.consumer`: receiving, acknowledging), and the rest (pulling and
offsets by queue, lite subscriptions) with a response whose status is
NOT_IMPLEMENTED.
Each call's metadata names its client (``x-mq-client-id``, required, as RocketMQ 5
requires it) and may carry the ACL signature, checked before the call runs.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from grpc import aio

from mqcore.acl.config import PlainAclConfig
from mqcore.proxy.acl import authenticate
from mqcore.proxy.context import CallContext
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.proxy.service import MessagingService
from mqcore.proxy.status import ProxyError, status

__all__ = ["SERVICE_NAME", "GrpcServer", "call_context", "peer_address"]

log = logging.getLogger("mq.proxy")

SERVICE_NAME = "apache.rocketmq.v2.MessagingService"
_CLIENT_ID = "x-mq-client-id"
_LANGUAGE = "x-mq-language"
_CLIENT_VERSION = "x-mq-client-version"
_NAMESPACE = "x-mq-namespace"
_SERVED = {
    "QueryRoute": "query_route",
    "Heartbeat": "heartbeat",
    "SendMessage": "send_message",
    "QueryAssignment": "query_assignment",
    "EndTransaction": "end_transaction",
    "NotifyClientTermination": "notify_client_termination",
    "RecallMessage": "recall_message",
}
"""Unary methods and the service's coroutine for each; Telemetry is the stream."""
_CONSUMER_SERVED = {
    "AckMessage": "ack_message",
    "ChangeInvisibleDuration": "change_invisible_duration",
    "ForwardMessageToDeadLetterQueue": "forward_message_to_dead_letter_queue",
}
"""Unary methods of the service's consumer part (:mod:`mqcore.proxy.consumer`)."""
_MAX_MESSAGE_BYTES = 130 * 1024 * 1024
"""Largest gRPC message either way (a SendMessageRequest of a few large bodies)."""


def peer_address(peer: str) -> str:
    """``host:port`` of grpc's peer string (``ipv4:1.2.3.4:5``, ``ipv6:[::1]:5``)."""
    kind, _, address = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        return address
    return peer


def call_context(metadata: dict[str, str], peer: str, acl: PlainAclConfig | None) -> CallContext:
    """Who calls; ProxyError when the client id is missing or the ACL refuses the call."""
    client_id = metadata.get(_CLIENT_ID, "")
    if not client_id.strip():
        raise ProxyError(pb.Code.CLIENT_ID_REQUIRED, "client id cannot be empty")
    remote = peer_address(peer)
    host = remote.rpartition(":")[0].strip("[]") if ":" in remote else remote
    return CallContext(
        client_id=client_id,
        remote_address=remote,
        language=metadata.get(_LANGUAGE, "JAVA"),
        client_version=metadata.get(_CLIENT_VERSION, ""),
        namespace=metadata.get(_NAMESPACE, ""),
        access_key=authenticate(acl, metadata, host),
    )


def _check_free(host: str, port: int, address: str) -> None:
    """OSError when another socket listens on ``host:port``, found before grpc tries: its
    core logs a failed bind on stderr in lines of its own, which a one-line refusal should
    not be preceded by. (Reusing a port in TIME_WAIT is allowed, as grpc allows it.)"""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise OSError(f"cannot listen on {address} (gRPC): {exc.strerror or exc}") from None


def _metadata(context: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in context.invocation_metadata() or ():
        if isinstance(value, str):
            out[key.lower()] = value
    return out


class GrpcServer:
    """A grpc.aio server of one :class:`MessagingService` on ``host:port`` (0: a free
    port; :attr:`port` is the real one once started)."""

    def __init__(
        self,
        service: MessagingService,
        host: str,
        port: int,
        *,
        acl: Callable[[], PlainAclConfig | None] = lambda: None,
        credentials: Any = None,
    ) -> None:
        """``credentials``: grpc server credentials for TLS, None for plaintext."""
        self.service = service
        self.host = host
        self.port = port
        self._acl = acl
        self._credentials = credentials
        self._server: Any = None

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        """Bind and serve. Raises OSError when the address cannot be bound."""
        server = aio.server(
            options=[
                ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
                ("grpc.so_reuseport", 0),
            ]
        )
        server.add_generic_rpc_handlers((self._handlers(),))
        address = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        _check_free(self.host, self.port, address)
        try:
            if self._credentials is None:
                bound = server.add_insecure_port(address)
            else:
                bound = server.add_secure_port(address, self._credentials)
        except RuntimeError as exc:  # grpc says it this way when the port is taken
            raise OSError(f"cannot listen on {address} (gRPC): {exc}") from None
        if not bound:
            raise OSError(f"cannot listen on {address} (gRPC)")
        await server.start()
        self.port = int(bound)
        self._server = server
        log.info("gRPC access point (MessagingService) listening on %s:%d", self.host, self.port)

    async def stop(self, grace: float | None = 1.0) -> None:
        """Stop accepting, let calls in flight end for ``grace`` seconds, end the clients."""
        server, self._server = self._server, None
        self.service.close()
        if server is not None:
            await server.stop(grace)

    @property
    def running(self) -> bool:
        return self._server is not None

    # -- handlers -------------------------------------------------------------------------
    def _handlers(self) -> Any:
        methods: dict[str, Any] = {}
        for method in spb.DESCRIPTOR.services_by_name["MessagingService"].methods:
            request_type = getattr(spb, method.input_type.name)
            response_type = getattr(spb, method.output_type.name)
            codec = {
                "request_deserializer": request_type.FromString,
                "response_serializer": response_type.SerializeToString,
            }
            if method.name == "Telemetry":
                methods[method.name] = grpc.stream_stream_rpc_method_handler(
                    self._telemetry, **codec
                )
            elif method.name == "ReceiveMessage":
                methods[method.name] = grpc.unary_stream_rpc_method_handler(self._receive, **codec)
            elif method.name in _SERVED or method.name in _CONSUMER_SERVED:
                if method.name in _SERVED:
                    serve = getattr(self.service, _SERVED[method.name])
                else:
                    serve = getattr(self.service.consumer, _CONSUMER_SERVED[method.name])
                methods[method.name] = grpc.unary_unary_rpc_method_handler(
                    self._unary(serve, response_type), **codec
                )
            elif method.server_streaming:
                methods[method.name] = grpc.unary_stream_rpc_method_handler(
                    self._not_served_stream(method.name, response_type), **codec
                )
            else:
                methods[method.name] = grpc.unary_unary_rpc_method_handler(
                    self._not_served(method.name, response_type), **codec
                )
        return grpc.method_handlers_generic_handler(SERVICE_NAME, methods)

    def _call(self, context: Any) -> CallContext:
        return call_context(_metadata(context), context.peer(), self._acl())

    def _unary(
        self, serve: Callable[[Any, CallContext], Awaitable[Any]], response_type: Any
    ) -> Callable[[Any, Any], Awaitable[Any]]:
        """A call whose refusals and failures are its response's status."""

        async def handle(request: Any, context: Any) -> Any:
            try:
                return await serve(request, self._call(context))
            except ProxyError as exc:
                return response_type(status=status(exc.code, exc.message))
            except Exception as exc:
                log.exception("gRPC call %s failed", type(request).__name__)
                return response_type(
                    status=status(pb.Code.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")
                )

        return handle

    def _not_served(self, name: str, response_type: Any) -> Callable[[Any, Any], Awaitable[Any]]:
        async def handle(request: Any, context: Any) -> Any:
            try:
                self._call(context)
            except ProxyError as exc:
                return response_type(status=status(exc.code, exc.message))
            return response_type(status=self.service.not_implemented(name))

        return handle

    def _not_served_stream(
        self, name: str, response_type: Any
    ) -> Callable[[Any, Any], AsyncIterator[Any]]:
        async def handle(request: Any, context: Any) -> AsyncIterator[Any]:
            try:
                self._call(context)
            except ProxyError as exc:
                yield response_type(status=status(exc.code, exc.message))
                return
            yield response_type(status=self.service.not_implemented(name))

        return handle

    async def _receive(
        self, request: spb.ReceiveMessageRequest, context: Any
    ) -> AsyncIterator[spb.ReceiveMessageResponse]:
        """ReceiveMessage: the consumer's stream, held no longer than the call's deadline."""
        try:
            call = self._call(context)
        except ProxyError as exc:
            yield spb.ReceiveMessageResponse(status=status(exc.code, exc.message))
            return
        remaining = context.time_remaining()
        remaining_ms = None if remaining is None else int(remaining * 1000)
        async for response in self.service.consumer.receive_message(request, call, remaining_ms):
            yield response

    async def _telemetry(
        self, requests: AsyncIterator[spb.TelemetryCommand], context: Any
    ) -> AsyncIterator[spb.TelemetryCommand]:
        """The stream; a refusal aborts it: INVALID_ARGUMENT for a bad request (a 4xxxx
        code), INTERNAL otherwise, as RocketMQ 5's proxy ends a telemetry stream."""
        try:
            call = self._call(context)
            async for command in self.service.telemetry(requests, call):
                yield command
        except ProxyError as exc:
            bad_request = pb.Code.BAD_REQUEST <= exc.code < pb.Code.INTERNAL_ERROR
            code = grpc.StatusCode.INVALID_ARGUMENT if bad_request else grpc.StatusCode.INTERNAL
            await context.abort(code, exc.message)

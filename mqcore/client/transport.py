"""`ClientTransport`: one client's connections to the name servers and brokers.

A :class:`~mqcore.remoting.RemotingClient` (one connection per address, TLS and request
signing as the :class:`~mqcore.client.config.ClientConfig` says), the dispatcher of what
servers send us, and the name-server list it fails over along. It builds requests with
our language (``language=PYTHON``, spec §2) and turns connection failures into the
client's errors. It knows nothing of routes, groups or timers: the
:class:`~mqcore.client.instance.ClientInstance` adds those, and
:class:`~mqcore.client.api.MQClientAPI` is given a transport and a route lookup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mqcore.client.config import ClientConfig, signing_hook
from mqcore.client.errors import (
    BrokerUnreachableError,
    ClientStateError,
    NameServerUnreachableError,
    NotANameServerError,
)
from mqcore.errors import MQBrokerError, MQTimeoutError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import TopicRouteData
from mqcore.protocol.headers import CommandHeader, GetRouteInfoRequestHeader
from mqcore.remoting import (
    ChannelClosedError,
    RemotingClient,
    RemotingConnectError,
    RequestDispatcher,
)

__all__ = ["Ask", "ClientTransport"]

_PROBE_TIMEOUT = 10.0
"""Seconds the GET_BROKER_RUNTIME_INFO probe of an address that refused a name server
request may take (at least; a longer request timeout stands)."""


class ClientTransport:
    """Requests to brokers and name servers for the client ``client_id``."""

    def __init__(self, namesrv_addrs: Sequence[str], client_id: str, config: ClientConfig) -> None:
        self.namesrv_addrs = list(namesrv_addrs)
        self.client_id = client_id
        self.config = config
        self.dispatcher = RequestDispatcher()
        """Handlers of the requests servers send this client."""
        if config.remoting_factory is not None:
            self.remoting = config.remoting_factory(self.dispatcher)
        else:
            self.remoting = RemotingClient(
                self.dispatcher,
                connect_timeout=config.connect_timeout,
                ssl_context=config.ssl_context(),
            )
        if config.credentials is not None:
            self.remoting.rpc_hook = signing_hook(config.credentials)
        self._ns_index = 0
        self._closed = False

    @property
    def request_timeout(self) -> float:
        return self.config.request_timeout

    @property
    def closed(self) -> bool:
        return self._closed

    async def close(self) -> None:
        self._closed = True
        await self.remoting.close()

    def request(
        self,
        code: int,
        header: CommandHeader | None = None,
        body: bytes | bytearray | memoryview = b"",
        *,
        oneway: bool = False,
        ext_fields: dict[str, str] | None = None,
        remark: str | None = None,
    ) -> RemotingCommand:
        """A request with our language; ``ext_fields`` adds to (or replaces) the header."""
        ext = header.to_ext_fields() if header is not None else {}
        if ext_fields:
            ext.update(ext_fields)
        return RemotingCommand.request(
            code, ext, body, oneway=oneway, language=self.config.language, remark=remark
        )

    def _check_open(self) -> None:
        if self._closed:
            raise ClientStateError("the client is shut down")

    async def invoke(
        self, addr: str, request: RemotingCommand, timeout: float | None = None
    ) -> RemotingCommand:
        """Send to a broker; an address that does not accept connections raises
        :class:`BrokerUnreachableError`, no answer in time :class:`MQTimeoutError`."""
        self._check_open()
        try:
            return await self.remoting.invoke(addr, request, timeout or self.config.request_timeout)
        except RemotingConnectError as exc:
            if isinstance(exc, BrokerUnreachableError):
                raise
            raise BrokerUnreachableError(addr, str(exc)) from None

    async def invoke_oneway(self, addr: str, request: RemotingCommand) -> None:
        self._check_open()
        try:
            await self.remoting.invoke_oneway(addr, request)
        except RemotingConnectError as exc:
            raise BrokerUnreachableError(addr, str(exc)) from None

    async def invoke_namesrv(
        self, request: RemotingCommand, timeout: float | None = None
    ) -> RemotingCommand:
        """Ask the name server we last reached, failing over to the others in turn. An
        address that turns out to be a broker's is skipped like an unreachable one; when
        no name server answers and one was a broker, :class:`NotANameServerError`."""
        self._check_open()
        addrs = self.namesrv_addrs
        errors: list[str] = []
        brokers: list[str] = []
        for i in range(len(addrs)):
            index = (self._ns_index + i) % len(addrs)
            addr = addrs[index]
            try:
                response = await self.remoting.invoke(
                    addr, request, timeout or self.config.request_timeout
                )
            except (RemotingConnectError, ChannelClosedError, MQTimeoutError) as exc:
                errors.append(f"{addr}: {exc}")
                self.remoting.close_channel(addr)
                continue
            if response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED and await self._is_broker(
                addr, timeout
            ):
                brokers.append(addr)
                continue
            self._ns_index = index
            return response
        if brokers:
            raise NotANameServerError(brokers[0])
        raise NameServerUnreachableError(addrs, "; ".join(errors))

    async def _is_broker(self, addr: str, timeout: float | None) -> bool:
        """Whether ``addr`` answers GET_BROKER_RUNTIME_INFO, which only brokers serve
        (asked only after it refused a name server request as not supported)."""
        probe = self.request(RequestCode.GET_BROKER_RUNTIME_INFO)
        # Generous: this path ends in an error anyway, and a broker's first runtime info
        # can take a loaded JVM broker longer than a request's timeout (the user then got
        # the raw "request type 206 not supported" instead of the address named).
        wait = max(timeout or self.config.request_timeout, _PROBE_TIMEOUT)
        try:
            answer = await self.remoting.invoke(addr, probe, wait)
        except (RemotingConnectError, ChannelClosedError, MQTimeoutError):
            return False
        return answer.code == ResponseCode.SUCCESS

    async def fetch_route(self, topic: str, timeout: float | None = None) -> TopicRouteData | None:
        """GET_ROUTEINFO_BY_TOPIC from the name servers; None if the topic has none."""
        request = self.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic)
        )
        response = await self.invoke_namesrv(request, timeout)
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError(response.code, response.remark)
        return TopicRouteData.decode(response.body)


class Ask(Protocol):
    """One request to ``addr`` and its answer, with its sender's default timeout (what
    the parts of :class:`~mqcore.client.admin.Admin` send through)."""

    async def __call__(
        self, addr: str, code: int, header: CommandHeader | None = None, *,
        timeout: float | None = None,
    ) -> RemotingCommand: ...  # fmt: skip

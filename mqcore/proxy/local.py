"""`LocalAccessPoint`: the gRPC access point of a broker running in this process, RocketMQ
5's proxy in "local mode".

It serves on the broker's own event loop and hands each call's requests to the broker's
handlers directly (a dispatcher of their table, no socket between), so a message sent over
gRPC takes exactly the path of a remoting send. Routes name this access point as the
broker's endpoint: ``brokerIP1`` and the gRPC port.
"""

from __future__ import annotations

import ipaddress

from mqcore.acl.config import PlainAclConfig
from mqcore.broker.controller import BrokerController
from mqcore.protocol import RemotingCommand
from mqcore.proxy.consumer import ReceiveLimits
from mqcore.proxy.context import BrokerSide, dispatch_in_process
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.server import GrpcServer
from mqcore.proxy.service import MessagingService
from mqcore.proxy.tls import server_credentials
from mqcore.remoting import Channel, RequestDispatcher

__all__ = ["LocalAccessPoint", "endpoints_of"]


def endpoints_of(host: str, port: int) -> pb.Endpoints:
    """One address as RocketMQ 5 describes it: IPv4, IPv6 or a domain name."""
    try:
        scheme = (
            pb.AddressScheme.IPv6
            if ipaddress.ip_address(host).version == 6
            else pb.AddressScheme.IPv4
        )
    except ValueError:
        scheme = pb.AddressScheme.DOMAIN_NAME
    return pb.Endpoints(scheme=scheme, addresses=[pb.Address(host=host, port=port)])


class LocalAccessPoint:
    """The gRPC access point of ``broker`` on ``port`` (0: a free one), listening where
    the broker's remoting port does (``bindAddress``) unless ``host`` says otherwise,
    with TLS when the broker's ``tls.server.mode`` asks for it (:mod:`mqcore.proxy.tls`;
    ConfigError when its files do not do)."""

    def __init__(
        self,
        broker: BrokerController,
        port: int,
        *,
        host: str | None = None,
        receive_limits: ReceiveLimits | None = None,
    ) -> None:
        """``receive_limits``: the bounds of a receive's invisible and polling times
        (RocketMQ 5's defaults when None)."""
        self.broker = broker
        dispatcher = RequestDispatcher()
        for code, handler in broker.handlers().items():
            dispatcher.register(code, handler)
        self.dispatcher = dispatcher

        async def dispatch(channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
            return await dispatch_in_process(dispatcher.dispatch, channel, request)

        side = BrokerSide(
            dispatch=dispatch,
            broker_name=broker.config.broker_name,
            topic_config=broker.topic_configs.select,
            group_config=broker.groups.find,
            channel_closed=broker.housekeeping.channel_closed,
            acl=self._acl,
        )
        self.service = MessagingService(side, self._endpoints, receive_limits=receive_limits)
        self.server = GrpcServer(
            self.service,
            host if host is not None else broker.config.bind_address,
            port,
            acl=self._acl,
            credentials=server_credentials(broker.config),
        )

    def _acl(self) -> PlainAclConfig | None:
        """The broker's accounts as they are now (the guard re-reads its file)."""
        guard = self.broker.acl_guard
        return guard.config if guard is not None else None

    def _endpoints(self) -> pb.Endpoints:
        return endpoints_of(self.broker.config.broker_ip1, self.server.port)

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def address(self) -> str:
        """``brokerIP1:<gRPC port>``: where the 5.x SDKs are told to connect."""
        return f"{self.broker.config.broker_ip1}:{self.server.port}"

    async def start(self) -> None:
        """Serve (the broker must be started). Raises OSError when the port is taken."""
        await self.server.start()

    async def stop(self) -> None:
        await self.server.stop()

"""`LocalAccessPoint`: the gRPC access point of a broker running in this process, RocketMQ
5's proxy in "local mode".

It serves on the broker's own event loop and hands each call's requests to the broker's
handlers directly (a dispatcher of their table, no socket between), so a message sent over
gRPC takes exactly the path of a remoting send. Routes name this access point as the
broker's endpoint: ``brokerIP1`` and the gRPC port. :class:`LocalBrokers` is the
:class:`~mqcore.proxy.brokers.Brokers` seam of this mode: one broker, in process.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

from mqcore.acl.config import PlainAclConfig
from mqcore.broker.controller import BrokerController
from mqcore.common.metadata import PERM_WRITE, SubscriptionGroupConfig
from mqcore.protocol import RemotingCommand
from mqcore.proxy.brokers import BrokerQueues, ClientRelay, TransactionCheck, WriteQueue
from mqcore.proxy.consumer import ReceiveLimits
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.routes import endpoints_of
from mqcore.proxy.server import GrpcServer
from mqcore.proxy.service import MessagingService
from mqcore.proxy.status import ProxyError
from mqcore.proxy.tls import server_credentials
from mqcore.remoting import Channel, RequestDispatcher

__all__ = ["DEFAULT_TOPIC_QUEUE_NUMS", "LocalAccessPoint", "LocalBrokers", "dispatch_in_process"]

DEFAULT_TOPIC_QUEUE_NUMS = 4
"""Queues of a topic a send creates (``defaultTopicQueueNums`` of the send header)."""


async def dispatch_in_process(
    dispatch: Callable[[Channel, RemotingCommand], object],
    channel: Channel,
    request: RemotingCommand,
) -> RemotingCommand | None:
    """A dispatcher's answer, awaited when its processor answers later."""
    result = dispatch(channel, request)
    if inspect.isawaitable(result):
        result = await result
    return result if isinstance(result, RemotingCommand) else None


class LocalBrokers:
    """One broker in this process: its handlers (past no ACL guard: the access point
    checks gRPC calls itself), its topic and group tables, and its reaction to a closed
    client connection. The gRPC client's channel is what the broker's tables hold, so a
    check-back reaches the client through it and :meth:`serve_checks` has nothing to do."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.broker_name = broker.config.broker_name
        dispatcher = RequestDispatcher()
        for code, handler in broker.handlers().items():
            dispatcher.register(code, handler)
        self.dispatcher = dispatcher

    async def queues(self, topic: str) -> list[BrokerQueues]:
        config = self.broker.topic_configs.select(topic)
        if config is None:
            return []
        return [
            BrokerQueues(
                self.broker_name, config.read_queue_nums, config.write_queue_nums, config.perm
            )
        ]

    async def write_queues(self, topic: str) -> list[WriteQueue]:
        config = self.broker.topic_configs.select(topic)
        if config is None:  # the broker creates it (autoCreateTopicEnable) or refuses
            nums = DEFAULT_TOPIC_QUEUE_NUMS
        else:
            nums = config.write_queue_nums if config.perm & PERM_WRITE else 0
        return [WriteQueue(self.broker_name, queue_id) for queue_id in range(nums)]

    async def invoke(
        self,
        broker_name: str,
        channel: Channel,
        request: RemotingCommand,
        *,
        timeout: float | None = None,
    ) -> RemotingCommand:
        """The broker's handler's answer (no timeout: nothing crosses a network, and a
        held POP is answered by the broker when its poll time ends)."""
        response = await dispatch_in_process(self.dispatcher.dispatch, channel, request)
        if response is None:  # only oneway requests go unanswered; none is sent here
            raise ProxyError(pb.Code.INTERNAL_SERVER_ERROR, "the broker gave no answer")
        return response

    async def invoke_each(
        self, topics: Sequence[str], channel: Channel, request: RemotingCommand
    ) -> list[RemotingCommand]:
        """The one broker, whether or not it has the topics yet (a producer may name a
        topic its first send creates)."""
        return [await self.invoke(self.broker_name, channel, request)]

    async def group_config(self, group: str) -> SubscriptionGroupConfig | None:
        return self.broker.groups.find(group)

    def client_closed(
        self, channel: Channel, producer_groups: Sequence[str], consumer_groups: Sequence[str]
    ) -> None:
        """The broker forgets the client's channel in every group, as a closed connection."""
        self.broker.housekeeping.channel_closed(channel)

    def serve_checks(self, check: TransactionCheck) -> None:
        return None

    def serve_client_requests(self, relay: ClientRelay) -> None:
        return None  # the broker asks the client's own channel

    def acl(self) -> PlainAclConfig | None:
        """The broker's accounts as they are now (the guard re-reads its file)."""
        guard = self.broker.acl_guard
        return guard.config if guard is not None else None


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
        (None: the broker config's RocketMQ 5 keys, ``minInvisibleTimeMillsForRecv``...)."""
        self.broker = broker
        self.brokers = LocalBrokers(broker)
        self.dispatcher = self.brokers.dispatcher
        self.service = MessagingService(
            self.brokers,
            self._endpoints,
            receive_limits=receive_limits or ReceiveLimits.of(broker.config),
        )
        self.server = GrpcServer(
            self.service,
            host if host is not None else broker.config.bind_address,
            port,
            acl=self.brokers.acl,
            credentials=server_credentials(broker.config),
        )

    def _endpoints(self, requested: pb.Endpoints) -> pb.Endpoints:
        """``brokerIP1`` and the gRPC port, whatever address the client used."""
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

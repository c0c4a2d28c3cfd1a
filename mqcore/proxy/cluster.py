"""`ClusterAccessPoint`: the gRPC access point as a process of its own in front of a
cluster, RocketMQ 5's proxy in "cluster mode" (``mq proxy``).

The same :class:`~mqcore.proxy.service.MessagingService` as local mode, over
:class:`ClusterBrokers`, the :class:`~mqcore.proxy.brokers.Brokers` seam of this mode: the
client machinery's route cache (GET_ROUTEINFO_BY_TOPIC at the name servers, refreshed every
30 s) and connections (:class:`~mqcore.client.transport.ClientTransport`) send each request
over remoting to the master of the broker that owns the chosen queue, so SDKs need one
address for the whole cluster. Routes name the proxy as every broker's endpoint, at the
address the client used (RocketMQ 5's ``ProxyTopicRouteData``).

The brokers see one client connection, the proxy's, carrying every gRPC client's
heartbeats under the client's own id. A transaction check-back therefore arrives on the
proxy's connection, and goes to a producer of the message's group that has a Telemetry
stream (:meth:`~mqcore.proxy.clients.ClientRegistry.check_transaction`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

from mqcore.acl.config import PlainAclConfig
from mqcore.acl.guard import AclGuard
from mqcore.client.config import ClientConfig
from mqcore.client.errors import TopicRouteNotFoundError
from mqcore.client.route import TopicPublishInfo, local_ip, split_namesrv
from mqcore.client.route_table import RouteTable
from mqcore.client.transport import ClientTransport
from mqcore.common.aio import cancel_and_wait
from mqcore.common.metadata import SubscriptionGroupConfig
from mqcore.errors import ConfigError, MQError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.stats import SubscriptionGroupWrapper
from mqcore.protocol.headers import UnregisterClientRequestHeader
from mqcore.proxy.brokers import BrokerQueues, ClientRelay, TransactionCheck, WriteQueue
from mqcore.proxy.config import CLUSTER_MODE, ProxyConfig
from mqcore.proxy.consumer import ReceiveLimits
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.routes import endpoints_of
from mqcore.proxy.server import GrpcServer
from mqcore.proxy.service import MessagingService
from mqcore.proxy.status import ProxyError
from mqcore.proxy.tls import server_credentials
from mqcore.remoting import Channel

__all__ = ["ClusterAccessPoint", "ClusterBrokers"]

log = logging.getLogger("mq.proxy")

ROUTE_REFRESH_INTERVAL = 30.0
"""Seconds between refreshes of every cached route (``pollNameServerInterval``)."""
CLIENT_IDLE = 120.0
"""Seconds a gRPC client may stay silent before the proxy forgets it (a broker's channel
expiry: the SDKs heartbeat every 10 s)."""
CLIENT_SCAN_INTERVAL = 10.0
GROUP_CONFIG_REFRESH = 20.0
"""Seconds a group's config read from the brokers is used before it is read again
(``subscriptionGroupConfigCacheRefreshSeconds``): receives read it, and must not ask every
master each time."""


def _no_route(topic: str) -> ProxyError:
    return ProxyError(
        pb.Code.TOPIC_NOT_FOUND, f"No topic route info in name server for the topic: {topic}"
    )


def _acl_guard(config: ProxyConfig) -> AclGuard | None:
    """The accounts ``enableACL`` checks the calls against; ConfigError when there is no
    file to name (no ``plainAclFile`` and no ``$ROCKETMQ_HOME``) or it does not parse."""
    if not config.enable_acl:
        return None
    if not config.plain_acl_file and not os.environ.get("ROCKETMQ_HOME"):
        raise ConfigError(
            "enableACL needs plainAclFile (or $ROCKETMQ_HOME/conf/plain_acl.yml) to check against"
        )
    return AclGuard.from_config(True, config.plain_acl_file, Path.cwd())


class ClusterBrokers:
    """The masters of a cluster, reached over remoting through the name servers' routes."""

    def __init__(
        self,
        namesrv_addrs: str | Sequence[str],
        *,
        client_config: ClientConfig | None = None,
        refresh_interval: float = ROUTE_REFRESH_INTERVAL,
        group_config_refresh: float = GROUP_CONFIG_REFRESH,
        acl_guard: AclGuard | None = None,
    ) -> None:
        """``acl_guard``: the accounts the gRPC calls are checked against (None: no ACL at
        the proxy)."""
        addrs = split_namesrv(namesrv_addrs)
        if not addrs:
            raise ConfigError("no name server address given (namesrvAddr, e.g. 127.0.0.1:9876)")
        config = client_config or ClientConfig()
        self.transport = ClientTransport(addrs, f"{config.client_ip}@proxy", config)
        self.routes = RouteTable(self.transport.fetch_route)
        self.refresh_interval = refresh_interval
        self.group_config_refresh = group_config_refresh
        self._group_configs: dict[str, tuple[float, SubscriptionGroupConfig | None]] = {}
        """group -> (when read, its config or None), for ``group_config_refresh`` s."""
        self.acl_guard = acl_guard
        self._check: TransactionCheck | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._refresher: asyncio.Task[None] | None = None
        self._relay: ClientRelay | None = None
        dispatcher = self.transport.dispatcher
        dispatcher.register(RequestCode.CHECK_TRANSACTION_STATE, self._on_check)
        dispatcher.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, self._on_client_request)
        dispatcher.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self._on_client_request)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Keep the cached routes fresh (the running loop's task)."""
        self._refresher = asyncio.get_running_loop().create_task(self._refresh_routes())

    async def close(self) -> None:
        refresher = [self._refresher] if self._refresher is not None else []
        await cancel_and_wait([*refresher, *self._tasks])
        await self.transport.close()

    async def _refresh_routes(self) -> None:
        while True:
            await asyncio.sleep(self.refresh_interval)
            await self.routes.refresh()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- routes ---------------------------------------------------------------------------
    async def _route_info(self, topic: str) -> TopicPublishInfo | None:
        """The topic's cached route (fetched when missing), None when it has none."""
        try:
            await self.routes.get(topic)
        except TopicRouteNotFoundError:
            return None
        return self.routes.publish_info[topic]

    async def queues(self, topic: str) -> list[BrokerQueues]:
        """Each broker with a master in the route (only masters take sends; RocketMQ 5
        lists slaves too, with the same queues)."""
        info = await self._route_info(topic)
        if info is None:
            return []
        masters = {b.broker_name for b in info.route.broker_datas if b.master_addr()}
        return sorted(
            BrokerQueues(qd.broker_name, qd.read_queue_nums, qd.write_queue_nums, qd.perm)
            for qd in info.route.queue_datas
            if qd.broker_name in masters
        )

    async def write_queues(self, topic: str) -> list[WriteQueue]:
        """The route's writable queues of the masters, sorted. A topic without a route is
        TOPIC_NOT_FOUND, as in RocketMQ 5's cluster proxy (no auto-creation from TBW102)."""
        info = await self._route_info(topic)
        if info is None:
            raise _no_route(topic)
        return sorted(WriteQueue(q.broker_name, q.queue_id) for q in info.queues)

    # -- requests -------------------------------------------------------------------------
    async def invoke(
        self,
        broker_name: str,
        channel: Channel,
        request: RemotingCommand,
        *,
        timeout: float | None = None,
    ) -> RemotingCommand:
        """Over the proxy's connection to the master (``channel``, the gRPC client's, is
        the proxy's concern only). A broker no cached route names (an ack whose receipt
        handle names it, after a restart of the proxy) is looked up by the route of the
        topic named after it, which every broker keeps (``brokerTopicEnable``), as RocketMQ
        5's cluster proxy finds a broker's address."""
        addr = self.routes.find_master_addr(broker_name)
        if addr is None:
            await self._route_info(broker_name)
            addr = self.routes.find_master_addr(broker_name)
        if addr is None:
            raise ProxyError(
                pb.Code.INTERNAL_SERVER_ERROR, f"broker {broker_name} has no master in any route"
            )
        return await self.transport.invoke(addr, request, timeout)

    async def invoke_each(
        self, topics: Sequence[str], channel: Channel, request: RemotingCommand
    ) -> list[RemotingCommand]:
        """To each master of the topics' routes at once (a topic without a route adds
        none: its first route brings the next heartbeat there)."""
        brokers: set[str] = set()
        for topic in topics:
            info = await self._route_info(topic)
            if info is not None:
                brokers.update(b.broker_name for b in info.route.broker_datas if b.master_addr())
        names = sorted(brokers)
        return list(await asyncio.gather(*(self.invoke(n, channel, request) for n in names)))

    async def group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config at the first master that has it (GET_ALL_SUBSCRIPTIONGROUP_
        CONFIG; a consumer's heartbeat brought its topics' brokers into the routes before
        its settings handshake asks); None, and the defaults, when none has it or none
        answers. What a master answered is kept ``group_config_refresh`` seconds, as
        RocketMQ 5's cluster proxy caches it: a receive and an assignment read it too."""
        now = time.monotonic()
        cached = self._group_configs.get(group)
        if cached is not None and now - cached[0] < self.group_config_refresh:
            return cached[1]
        answered = False
        config: SubscriptionGroupConfig | None = None
        request = self.transport.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        for addr in self.routes.heartbeat_addrs(slaves=False):
            try:
                response = await self.transport.invoke(addr, request)
                if response.code != ResponseCode.SUCCESS:
                    continue
                table = SubscriptionGroupWrapper.decode(response.body).subscription_group_table
            except (MQError, ValueError) as exc:
                log.info("the config of group %s at %s: %s", group, addr, exc)
                continue
            answered = True
            config = table.get(group)
            if config is not None:
                break
        if answered:
            self._group_configs[group] = (now, config)
        return config

    def client_closed(
        self, channel: Channel, producer_groups: Sequence[str], consumer_groups: Sequence[str]
    ) -> None:
        """UNREGISTER_CLIENT of each group only the client was in, to every master known:
        the brokers hold the proxy's connection in those groups for it alone."""
        client_id = getattr(channel, "client_id", "")
        headers = [
            UnregisterClientRequestHeader(client_id=client_id, producer_group=group)
            for group in producer_groups
        ] + [
            UnregisterClientRequestHeader(client_id=client_id, consumer_group=group)
            for group in consumer_groups
        ]
        addrs = self.routes.heartbeat_addrs(slaves=False)
        if headers and addrs and not self.transport.closed:
            self._spawn(self._unregister(addrs, headers))

    async def _unregister(
        self, addrs: list[str], headers: list[UnregisterClientRequestHeader]
    ) -> None:
        for addr in addrs:
            for header in headers:
                request = self.transport.request(RequestCode.UNREGISTER_CLIENT, header)
                try:
                    await self.transport.invoke(addr, request)
                except MQError as exc:
                    log.info("unregistering %s at %s failed: %s", header.client_id, addr, exc)

    # -- what brokers send ----------------------------------------------------------------
    def serve_checks(self, check: TransactionCheck) -> None:
        self._check = check

    def _on_check(self, channel: Channel, request: RemotingCommand) -> None:
        """A check-back on the proxy's connection: to a producer of the message's group,
        noting the broker it came from for the EndTransaction."""
        broker_name = self._broker_name_of(channel.remote_address)
        if self._check is not None:
            self._check(request, broker_name)

    def serve_client_requests(self, relay: ClientRelay) -> None:
        self._relay = relay

    async def _on_client_request(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        """An admin's request for one gRPC client, relayed by a broker to the proxy."""
        if self._relay is None:
            return RemotingCommand.response_to(
                request, ResponseCode.SYSTEM_ERROR, "the proxy serves no clients yet"
            )
        return await self._relay(request)

    def _broker_name_of(self, addr: str) -> str:
        for name, by_id in self.routes.broker_addrs.items():
            if addr in by_id.values():
                return name
        return ""

    def acl(self) -> PlainAclConfig | None:
        """The proxy's accounts as they are now (``enableACL``; the guard re-reads its
        file), None without ACL at the proxy."""
        return self.acl_guard.config if self.acl_guard is not None else None


class ClusterAccessPoint:
    """``mq proxy``: MessagingService on ``bindAddress:grpcServerPort`` in front of the
    cluster whose name servers ``namesrvAddr`` names."""

    def __init__(
        self,
        config: ProxyConfig,
        *,
        client_config: ClientConfig | None = None,
        client_idle: float = CLIENT_IDLE,
        client_scan_interval: float = CLIENT_SCAN_INTERVAL,
        receive_limits: ReceiveLimits | None = None,
    ) -> None:
        """``client_idle``: silence after which a gRPC client is forgotten (its groups
        unregistered at the brokers when no other client is in them), checked every
        ``client_scan_interval`` seconds; ``receive_limits``: the bounds of a receive's
        invisible and polling times (None: the config's RocketMQ 5 keys)."""
        if config.proxy_mode != CLUSTER_MODE:
            raise ConfigError(
                "proxyMode=local is a broker's own access point: set grpcServerPort in its"
                " broker.conf (mq broker) instead"
            )
        if not config.namesrv_addr:
            raise ConfigError("no name server address given (namesrvAddr, e.g. 127.0.0.1:9876)")
        if config.enable_acl_rpc_hook_for_cluster_mode and (
            client_config is None or client_config.credentials is None
        ):
            raise ConfigError(
                "enableAclRpcHookForClusterMode needs the proxy's own keys: --access-key/"
                "--secret-key, MQ_ACCESS_KEY/MQ_SECRET_KEY or $ROCKETMQ_HOME/conf/tools.yml"
            )
        self.config = config
        self.brokers = ClusterBrokers(
            config.namesrv_addr, client_config=client_config, acl_guard=_acl_guard(config)
        )
        self.service = MessagingService(
            self.brokers,
            self._endpoints,
            receive_limits=receive_limits or ReceiveLimits.of(config),
        )
        self.server = GrpcServer(
            self.service,
            config.bind_address,
            config.grpc_server_port,
            acl=self.brokers.acl,
            credentials=server_credentials(config),
        )
        self.host = (
            local_ip() if config.bind_address in ("0.0.0.0", "::", "") else config.bind_address
        )
        """Where clients are told to connect when they do not say where they did."""
        self.client_idle = client_idle
        self.client_scan_interval = client_scan_interval
        self._expiry: asyncio.Task[None] | None = None

    def _endpoints(self, requested: pb.Endpoints) -> pb.Endpoints:
        """The address the client connected to, at this proxy's gRPC port (RocketMQ 5's
        cluster proxy answers so, which works behind a name the proxy does not know)."""
        if not requested.addresses:
            return endpoints_of(self.host, self.server.port)
        keep_port = self.config.use_endpoint_port_from_request
        return pb.Endpoints(
            scheme=requested.scheme,
            addresses=[
                pb.Address(host=a.host, port=a.port if keep_port else self.server.port)
                for a in requested.addresses
            ],
        )

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def address(self) -> str:
        return f"{self.host}:{self.server.port}"

    async def start(self) -> None:
        """Serve. Raises OSError when the port is taken."""
        await self.server.start()
        self.brokers.start()
        if self.brokers.acl_guard is not None:
            self.brokers.acl_guard.start()
        self._expiry = asyncio.get_running_loop().create_task(self._expire_clients())

    async def stop(self) -> None:
        """The gRPC clients first, then the connections to the cluster."""
        if self._expiry is not None:
            await cancel_and_wait([self._expiry])
        await self.server.stop()
        await self.brokers.close()
        if self.brokers.acl_guard is not None:
            await self.brokers.acl_guard.close()

    async def _expire_clients(self) -> None:
        """The brokers see the proxy's connection only, which stays alive: the proxy
        itself forgets the gRPC clients that went silent, as a broker forgets those of its
        own access point."""
        while True:
            await asyncio.sleep(self.client_scan_interval)
            self.service.clients.expire(self.client_idle)

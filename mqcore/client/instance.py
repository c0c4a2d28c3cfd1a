"""`ClientInstance`: what producers, consumers and admins of one process share.

RocketMQ's ``MQClientInstance``. There is one per event loop, name-server list and
instance name (:meth:`ClientInstance.get`); it owns

* the **route cache** (a :class:`~mqcore.client.route_table.RouteTable`):
  ``GET_ROUTEINFO_BY_TOPIC`` per topic, asked of one live name server (failing over to
  the next), refreshed every 30 s and whenever a caller says the route failed; the broker
  address table (broker name -> id -> address) is derived from the cached routes;
* **one connection per broker** (a :class:`~mqcore.remoting.RemotingClient`), with
  handlers for what brokers send us (:mod:`mqcore.client.broker_requests`):
  NOTIFY_CONSUMER_IDS_CHANGED (rebalance that group now), CHECK_TRANSACTION_STATE (ask
  the producer of PGROUP), RESET_CONSUMER_CLIENT_OFFSET and GET_CONSUMER_RUNNING_INFO
  (ask the consumer); PUSH_REPLY_MESSAGE_TO_CLIENT (a reply to one of our producers'
  requests, :mod:`mqcore.client.request_reply`);
* **heartbeats**: HEART_BEAT with every producer and consumer group every 30 s to every
  broker it uses (masters only while it has no consumers), and at once on registration;
  UNREGISTER_CLIENT when a group leaves;
* the **rebalance timer** (every 20 s, calling each consumer's ``do_rebalance``) and,
  for consumers that have one, the 5 s offset-persistence timer.

The client id is RocketMQ's ``<ip>@<instanceName>``, the instance name defaulting to the
pid, so broker-side tools show our clients the way they show Java ones. Requests carry
``language=PYTHON`` (a member of 4.9.8's ``LanguageCode``; spec §2).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from mqcore.client.broker_requests import maybe_await, register_broker_requests
from mqcore.client.config import ClientConfig, ConsumerHandle, ProducerHandle, signing_hook
from mqcore.client.errors import (
    BrokerUnreachableError,
    ClientStateError,
    NameServerUnreachableError,
)
from mqcore.client.request_reply import RequestFutureTable, register_reply_handler
from mqcore.client.route import (
    AUTO_CREATE_TOPIC_KEY,
    TopicPublishInfo,
    local_ip,
    split_namesrv,
    subscribe_queues,
)
from mqcore.client.route_table import RouteTable
from mqcore.common.aio import cancel_and_wait
from mqcore.errors import MQBrokerError, MQClientError, MQTimeoutError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    HeartbeatData,
    MessageQueue,
    ProducerData,
    TopicRouteData,
)
from mqcore.protocol.bodies.route import MASTER_ID
from mqcore.protocol.headers import (
    CommandHeader,
    GetRouteInfoRequestHeader,
    UnregisterClientRequestHeader,
)
from mqcore.remoting import (
    ChannelClosedError,
    RemotingClient,
    RemotingConnectError,
    RequestDispatcher,
)

if TYPE_CHECKING:
    from mqcore.client.api import MQClientAPI

__all__ = [
    "AUTO_CREATE_TOPIC_KEY",
    "ClientConfig",
    "ClientInstance",
    "ConsumerHandle",
    "ProducerHandle",
    "TopicPublishInfo",
    "local_ip",
    "split_namesrv",
    "subscribe_queues",
]

log = logging.getLogger("mq.client")


_InstanceKey = tuple[int, tuple[str, ...], str, str | None]
"""(loop, name servers, instance name, access key): other keys get their own connections."""


class ClientInstance:
    """Shared routes, connections, heartbeats and timers; see the module docstring."""

    _instances: ClassVar[dict[_InstanceKey, ClientInstance]] = {}

    @classmethod
    def get(
        cls,
        namesrv_addrs: str | Sequence[str],
        *,
        instance_name: str | None = None,
        config: ClientConfig | None = None,
    ) -> ClientInstance:
        """The instance for this event loop, name-server list and instance name.

        Must be called with a running loop: an instance's connections and timers live on
        one loop (the blocking facade runs its own loop, hence its own instance).
        """
        addrs = split_namesrv(namesrv_addrs)
        if not addrs:
            raise MQClientError("no name server address given (e.g. 127.0.0.1:9876)")
        config = config or ClientConfig()
        name = instance_name or config.instance_name or "DEFAULT"
        if name == "DEFAULT":
            name = str(os.getpid())  # as Java's changeInstanceNameToPID
        signer = config.credentials.access_key if config.credentials is not None else None
        key = (id(asyncio.get_running_loop()), addrs, name, signer)
        instance = cls._instances.get(key)
        if instance is None or instance._closed:
            instance = cls(addrs, name, config)
            cls._instances[key] = instance
            instance._key = key
        return instance

    def __init__(self, namesrv_addrs: Sequence[str], instance_name: str, config: ClientConfig):
        from mqcore.client.api import MQClientAPI

        self.namesrv_addrs = list(namesrv_addrs)
        self.instance_name = instance_name
        self.config = config
        self.client_id = f"{config.client_ip}@{instance_name}"
        self.dispatcher = RequestDispatcher()
        register_broker_requests(self)
        self.request_futures = RequestFutureTable()
        """Requests of this client's producers waiting for their reply."""
        register_reply_handler(self.dispatcher, self.request_futures)
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
        self.api: MQClientAPI = MQClientAPI(self)
        self.route_table = RouteTable(self.fetch_route, self._on_new_brokers)
        self.broker_versions: dict[str, int] = {}
        self.producers: dict[str, ProducerHandle] = {}
        self.consumers: dict[str, ConsumerHandle] = {}
        self._admins = 0
        self._ns_index = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._heartbeat_lock = asyncio.Lock()
        self._started = False
        self._closed = False
        self._key: _InstanceKey | None = None

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the timers (idempotent). Registration calls it; so can tools."""
        if self._closed:
            raise ClientStateError(f"client instance {self.client_id} is shut down")
        if self._started:
            return
        self._started = True
        cfg = self.config
        self._every(cfg.poll_name_server_interval, self.refresh_routes, "route-refresh")
        self._every(cfg.heartbeat_broker_interval, self.send_heartbeat_to_all_brokers, "heartbeat")
        self._every(cfg.rebalance_interval, self.rebalance_all, "rebalance")
        self._every(cfg.persist_consumer_offset_interval, self._persist_offsets, "persist-offsets")
        log.info("client instance %s started (name servers %s)", self.client_id, self.namesrv_addrs)

    def _every(self, interval: float, fn: Callable[[], Awaitable[Any]], name: str) -> None:
        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                try:
                    await fn()
                except Exception:
                    log.exception("client timer %s failed", name)

        self._tasks.append(asyncio.create_task(loop(), name=f"mq-client-{name}"))

    async def shutdown(self) -> None:
        """Stop timers and close every connection (called when the last user leaves)."""
        if self._closed:
            return
        self._closed = True
        await cancel_and_wait([*self._tasks, *self._background])
        self._tasks.clear()
        await self.remoting.close()
        if self._key is not None and self._instances.get(self._key) is self:
            del self._instances[self._key]
        log.info("client instance %s shut down", self.client_id)

    @property
    def closed(self) -> bool:
        return self._closed

    def _users(self) -> int:
        return len(self.producers) + len(self.consumers) + self._admins

    async def _release_if_unused(self) -> None:
        if self._users() == 0:
            await self.shutdown()

    async def acquire(self) -> None:
        """An admin (or tool) starts using the instance."""
        await self.start()
        self._admins += 1

    async def release(self) -> None:
        """The admin is done; the last user shuts the instance down."""
        self._admins = max(0, self._admins - 1)
        await self._release_if_unused()

    # -- producers and consumers ----------------------------------------------------------

    async def register_producer(self, producer: ProducerHandle) -> None:
        """Add a producer group (one producer per group per instance, as RocketMQ)."""
        if producer.group in self.producers:
            raise ClientStateError(
                f"producer group {producer.group!r} is already used by a producer of this"
                " process; give each producer its own group or instance_name"
            )
        await self.start()
        self.producers[producer.group] = producer
        await self.send_heartbeat_to_all_brokers()

    async def unregister_producer(self, group: str) -> None:
        if self.producers.pop(group, None) is None:
            return
        await self._unregister_client(producer_group=group)
        await self._release_if_unused()

    async def register_consumer(self, consumer: ConsumerHandle) -> None:
        """Add a consumer group; routes of its subscriptions are fetched, then a heartbeat
        goes to every broker of them (the caller rebalances once that returns)."""
        if consumer.group in self.consumers:
            raise ClientStateError(
                f"consumer group {consumer.group!r} is already used by a consumer of this"
                " process; give each consumer its own group or instance_name"
            )
        await self.start()
        self.consumers[consumer.group] = consumer
        topics = [s.topic for s in consumer.consumer_data().subscription_data_set]
        await asyncio.gather(*(self.update_route(t) for t in topics), return_exceptions=True)
        await self.send_heartbeat_to_all_brokers()

    async def unregister_consumer(self, group: str) -> None:
        if self.consumers.pop(group, None) is None:
            return
        await self._unregister_client(consumer_group=group)
        await self._release_if_unused()

    async def _unregister_client(
        self, *, producer_group: str | None = None, consumer_group: str | None = None
    ) -> None:
        header = UnregisterClientRequestHeader(
            client_id=self.client_id, producer_group=producer_group, consumer_group=consumer_group
        )
        addrs = self.route_table.all_addrs()

        async def one(addr: str) -> None:
            try:
                response = await self.invoke(
                    addr, self.request(RequestCode.UNREGISTER_CLIENT, header)
                )
                if response.code != ResponseCode.SUCCESS:
                    log.info("unregister from %s: code %d %s", addr, response.code, response.remark)
            except MQClientError as exc:
                log.info("unregister from %s failed: %s", addr, exc)

        await asyncio.gather(*(one(a) for a in sorted(addrs)))

    # -- requests -------------------------------------------------------------------------

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

    async def invoke(
        self, addr: str, request: RemotingCommand, timeout: float | None = None
    ) -> RemotingCommand:
        """Send to a broker; an address that does not accept connections raises
        :class:`BrokerUnreachableError`, no answer in time :class:`MQTimeoutError`."""
        if self._closed:
            raise ClientStateError("the client is shut down")
        try:
            return await self.remoting.invoke(addr, request, timeout or self.config.request_timeout)
        except RemotingConnectError as exc:
            if isinstance(exc, BrokerUnreachableError):
                raise
            raise BrokerUnreachableError(addr, str(exc)) from None

    async def invoke_oneway(self, addr: str, request: RemotingCommand) -> None:
        if self._closed:
            raise ClientStateError("the client is shut down")
        try:
            await self.remoting.invoke_oneway(addr, request)
        except RemotingConnectError as exc:
            raise BrokerUnreachableError(addr, str(exc)) from None

    async def invoke_namesrv(
        self, request: RemotingCommand, timeout: float | None = None
    ) -> RemotingCommand:
        """Ask the name server we last reached, failing over to the others in turn."""
        if self._closed:
            raise ClientStateError("the client is shut down")
        addrs = self.namesrv_addrs
        errors: list[str] = []
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
            self._ns_index = index
            return response
        raise NameServerUnreachableError(addrs, "; ".join(errors))

    # -- routes (kept in self.route_table) -----------------------------------------------

    async def fetch_route(self, topic: str, timeout: float | None = None) -> TopicRouteData | None:
        """GET_ROUTEINFO_BY_TOPIC without touching the cache; None if the topic has none."""
        request = self.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic)
        )
        response = await self.invoke_namesrv(request, timeout)
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError(response.code, response.remark)
        return TopicRouteData.decode(response.body)

    def _on_new_brokers(self) -> None:
        # A broker we had no route to yet must learn our groups now, not at the next
        # 30 s heartbeat: it checks transactions back and notifies consumers by them.
        if self.producers or self.consumers:
            self.spawn(self.send_heartbeat_to_all_brokers())

    @property
    def routes(self) -> dict[str, TopicRouteData]:
        return self.route_table.routes

    @property
    def broker_addrs(self) -> dict[str, dict[int, str]]:
        """broker name -> broker id -> address, from every cached route."""
        return self.route_table.broker_addrs

    async def update_route(self, topic: str, *, use_default_topic: bool = False) -> bool:
        """See :meth:`RouteTable.update`."""
        return await self.route_table.update(topic, use_default_topic=use_default_topic)

    def forget_route(self, topic: str) -> None:
        self.route_table.forget(topic)

    async def refresh_routes(self) -> None:
        """Refresh every cached topic and every consumer subscription (the 30 s timer)."""
        await self.route_table.refresh(
            s.topic
            for consumer in list(self.consumers.values())
            for s in consumer.consumer_data().subscription_data_set
        )

    async def get_route(self, topic: str, *, refresh: bool = False) -> TopicRouteData:
        return await self.route_table.get(topic, refresh=refresh)

    async def find_publish_info(self, topic: str) -> TopicPublishInfo:
        return await self.route_table.find_publish_info(topic)

    async def subscribe_queues(self, topic: str, *, refresh: bool = False) -> list[MessageQueue]:
        return await self.route_table.subscribe_queues(topic, refresh=refresh)

    def find_broker_addr(self, broker_name: str, broker_id: int = MASTER_ID) -> str | None:
        return self.route_table.find_broker_addr(broker_name, broker_id)

    def find_master_addr(self, broker_name: str) -> str | None:
        return self.route_table.find_master_addr(broker_name)

    def find_broker_addr_in_subscribe(
        self, broker_name: str, broker_id: int = MASTER_ID, only_this_broker: bool = False
    ) -> tuple[str, bool] | None:
        """See :meth:`RouteTable.find_broker_addr_in_subscribe`."""
        return self.route_table.find_broker_addr_in_subscribe(
            broker_name, broker_id, only_this_broker
        )

    def find_any_broker_addr(self, broker_name: str) -> str | None:
        return self.route_table.find_any_broker_addr(broker_name)

    async def offset_broker_addr(self, mq: MessageQueue) -> str:
        """See :meth:`RouteTable.offset_broker_addr`."""
        return await self.route_table.offset_broker_addr(mq)

    async def master_addr_or_refresh(self, mq: MessageQueue) -> str:
        return await self.route_table.master_addr_or_refresh(mq)

    # -- heartbeats -----------------------------------------------------------------------

    def heartbeat_data(self) -> HeartbeatData:
        return HeartbeatData(
            self.client_id,
            [ProducerData(g) for g in self.producers],
            [c.consumer_data() for c in self.consumers.values()],
        )

    async def send_heartbeat_to_all_brokers(self) -> None:
        """HEART_BEAT to every master (and slaves too when there are consumers)."""
        if not self.producers and not self.consumers:
            return
        async with self._heartbeat_lock:
            data = self.heartbeat_data()
            body = data.encode()
            targets = self.route_table.heartbeat_addrs(slaves=bool(self.consumers))
            await asyncio.gather(*(self._heartbeat(a, body) for a in targets))

    async def _heartbeat(self, addr: str, body: bytes) -> None:
        try:
            response = await self.invoke(addr, self.request(RequestCode.HEART_BEAT, body=body))
        except MQClientError as exc:
            log.info("heartbeat to %s failed: %s", addr, exc)
            return
        if response.code == ResponseCode.SUCCESS:
            self.broker_versions[addr] = response.version
        else:
            log.warning("heartbeat to %s: code %d %s", addr, response.code, response.remark)

    # -- consumer timers ------------------------------------------------------------------

    async def rebalance_all(self) -> None:
        for consumer in list(self.consumers.values()):
            await self._rebalance(consumer)

    async def _rebalance(self, consumer: ConsumerHandle) -> None:
        try:
            await maybe_await(consumer.do_rebalance())
        except Exception:
            log.exception("rebalance of group %s failed", consumer.group)

    def rebalance_soon(self, group: str) -> None:
        """Rebalance one group in the background (NOTIFY_CONSUMER_IDS_CHANGED)."""
        consumer = self.consumers.get(group)
        if consumer is not None and not self._closed:
            self.spawn(self._rebalance(consumer))

    async def _persist_offsets(self) -> None:
        for consumer in list(self.consumers.values()):
            persist = getattr(consumer, "persist_consumer_offset", None)
            if persist is not None:
                try:
                    await maybe_await(persist())
                except Exception:
                    log.exception("persisting offsets of group %s failed", consumer.group)

    def spawn(self, coro: Awaitable[Any]) -> None:
        """Run ``coro`` in the background; shutdown does not wait for it."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("started" if self._started else "new")
        return f"<ClientInstance {self.client_id} {self.namesrv_addrs} {state}>"

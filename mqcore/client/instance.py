"""`ClientInstance`: what the producers, consumers and admins that share it share.

RocketMQ's ``MQClientInstance``, built explicitly: a producer, consumer or admin given
none (no ``instance=``) builds its own. It owns

* the **connections** (a :class:`~mqcore.client.transport.ClientTransport`: one
  connection per broker and name server), with handlers for what brokers send us
  (:mod:`mqcore.client.broker_requests`): NOTIFY_CONSUMER_IDS_CHANGED (rebalance that
  group now), CHECK_TRANSACTION_STATE (ask the producer of PGROUP),
  RESET_CONSUMER_CLIENT_OFFSET and GET_CONSUMER_RUNNING_INFO (ask the consumer);
  PUSH_REPLY_MESSAGE_TO_CLIENT (a reply to one of our producers' requests,
  :mod:`mqcore.client.request_reply`);
* the **route cache** (a :class:`~mqcore.client.route_table.RouteTable`):
  ``GET_ROUTEINFO_BY_TOPIC`` per topic, asked of one live name server (failing over to
  the next), refreshed every 30 s and whenever a caller says the route failed; the broker
  address table (broker name -> id -> address) is derived from the cached routes;
* the typed requests over both (``api``, a :class:`~mqcore.client.api.MQClientAPI`);
* **heartbeats**: HEART_BEAT with every producer and consumer group every 30 s to every
  broker it uses (masters only while it has no consumers), and at once on registration;
  UNREGISTER_CLIENT when a group leaves;
* the **rebalance timer** (every 20 s, calling each consumer's ``do_rebalance``) and,
  for consumers that have one, the 5 s offset-persistence timer.

The client id is RocketMQ's ``<ip>@<instanceName>``, the instance name defaulting to the
pid, so broker-side tools show our clients the way they show Java ones. Two instances of
one process with the same client id would look like one client to a broker (two consumers
of a group would both read every queue), so an instance without a given name takes the
pid only if it is the process's first, and ``<pid>#<n>`` after that (RocketMQ 5's Java
client makes its default name unique the same way); objects that should be one client
share an instance (``instance=``). Requests carry ``language=PYTHON`` (a member of 4.9.8's
``LanguageCode``; spec §2).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from mqcore.client.api import MQClientAPI
from mqcore.client.broker_requests import maybe_await, register_broker_requests
from mqcore.client.config import ClientConfig, ConsumerHandle, ProducerHandle
from mqcore.client.errors import ClientStateError
from mqcore.client.request_reply import RequestFutureTable, register_reply_handler
from mqcore.client.route import (
    AUTO_CREATE_TOPIC_KEY,
    TopicPublishInfo,
    local_ip,
    split_namesrv,
    subscribe_queues,
)
from mqcore.client.route_table import RouteTable
from mqcore.client.transport import ClientTransport
from mqcore.common.aio import cancel_and_wait
from mqcore.errors import MQClientError
from mqcore.protocol import RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    HeartbeatData,
    MessageQueue,
    ProducerData,
    TopicRouteData,
)
from mqcore.protocol.bodies.route import MASTER_ID
from mqcore.protocol.headers import UnregisterClientRequestHeader

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


_unnamed = itertools.count()
"""How many instances without a given name this process has built (not a registry: no
instance is kept or looked up)."""


def _default_instance_name() -> str:
    """The pid (Java's changeInstanceNameToPID), ``<pid>#<n>`` from the second one on."""
    n = next(_unnamed)
    return str(os.getpid()) if n == 0 else f"{os.getpid()}#{n}"


class ClientInstance:
    """Shared routes, connections, heartbeats and timers; see the module docstring.

    Built by whoever shares it: a producer, consumer or admin given none builds its own
    (and shuts it down with itself); one passed as ``instance=`` is the caller's to shut
    down (``async with ClientInstance(...)``, or :meth:`shutdown`).
    """

    def __init__(
        self,
        namesrv_addrs: str | Sequence[str],
        *,
        instance_name: str | None = None,
        config: ClientConfig | None = None,
    ) -> None:
        addrs = split_namesrv(namesrv_addrs)
        if not addrs:
            raise MQClientError("no name server address given (e.g. 127.0.0.1:9876)")
        config = config or ClientConfig()
        name = instance_name or config.instance_name or "DEFAULT"
        if name == "DEFAULT":
            name = _default_instance_name()
        self.instance_name = name
        self.config = config
        self.client_id = f"{config.client_ip}@{name}"
        self.transport = ClientTransport(addrs, self.client_id, config)
        register_broker_requests(self, self.transport.dispatcher)
        self.request_futures = RequestFutureTable()
        """Requests of this client's producers waiting for their reply."""
        register_reply_handler(self.transport.dispatcher, self.request_futures)
        self.request = self.transport.request
        self.invoke = self.transport.invoke
        self.invoke_oneway = self.transport.invoke_oneway
        self.invoke_namesrv = self.transport.invoke_namesrv
        self.fetch_route = self.transport.fetch_route
        """GET_ROUTEINFO_BY_TOPIC without touching the cache; None if the topic has none."""
        self.route_table = RouteTable(self.fetch_route, self._on_new_brokers)
        self.api = MQClientAPI(self.transport, self.route_table)
        self.broker_versions: dict[str, int] = {}
        self.producers: dict[str, ProducerHandle] = {}
        self.consumers: dict[str, ConsumerHandle] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._heartbeat_lock = asyncio.Lock()
        self._started = False
        self._closed = False

    @property
    def namesrv_addrs(self) -> list[str]:
        return self.transport.namesrv_addrs

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
        """Stop timers and close every connection."""
        if self._closed:
            return
        self._closed = True
        await cancel_and_wait([*self._tasks, *self._background])
        self._tasks.clear()
        await self.transport.close()
        log.info("client instance %s shut down", self.client_id)

    @property
    def closed(self) -> bool:
        return self._closed

    async def __aenter__(self) -> ClientInstance:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # -- producers and consumers ----------------------------------------------------------

    async def register_producer(self, producer: ProducerHandle) -> None:
        """Add a producer group (one producer per group per instance, as RocketMQ)."""
        if producer.group in self.producers:
            raise ClientStateError(
                f"producer group {producer.group!r} is already used by a producer of this"
                " client instance; give each producer its own group or instance"
            )
        await self.start()
        self.producers[producer.group] = producer
        await self.send_heartbeat_to_all_brokers()

    async def unregister_producer(self, group: str) -> None:
        if self.producers.pop(group, None) is None:
            return
        await self._unregister_client(producer_group=group)

    async def register_consumer(self, consumer: ConsumerHandle) -> None:
        """Add a consumer group; routes of its subscriptions are fetched, then a heartbeat
        goes to every broker of them (the caller rebalances once that returns)."""
        if consumer.group in self.consumers:
            raise ClientStateError(
                f"consumer group {consumer.group!r} is already used by a consumer of this"
                " client instance; give each consumer its own group or instance"
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

    # -- routes (kept in self.route_table) -----------------------------------------------

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

"""`RouteTable`: the route cache of a client instance (``MQClientInstance``'s
``topicRouteTable``, ``brokerAddrTable`` and the publish/subscribe views of them).

Split from :mod:`mqcore.client.instance` so that routes can be read and tested without
connections or timers: the table only knows how to ask for one topic's route (the
``fetch`` it is given, the instance's GET_ROUTEINFO_BY_TOPIC) and whom to tell when a
route names a broker it did not know (the instance heartbeats to it at once).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable

from mqcore.client.errors import TopicRouteNotFoundError
from mqcore.client.route import AUTO_CREATE_TOPIC_KEY, TopicPublishInfo, subscribe_queues
from mqcore.errors import MQClientError
from mqcore.protocol.bodies import MessageQueue, QueueData, TopicRouteData
from mqcore.protocol.bodies.route import MASTER_ID

__all__ = ["RouteFetcher", "RouteTable"]

log = logging.getLogger("mq.client")

RouteFetcher = Callable[[str], Awaitable[TopicRouteData | None]]
"""``topic -> route`` from the name servers, None when they have none."""

DEFAULT_TOPIC_QUEUE_NUMS = 4
"""Queues a producer assumes for a topic auto-created from TBW102 (``defaultTopicQueueNums``)."""


class RouteTable:
    """Cached routes per topic and what is derived from them; see the module docstring."""

    def __init__(self, fetch: RouteFetcher, on_new_brokers: Callable[[], None] | None = None):
        self.routes: dict[str, TopicRouteData] = {}
        self.publish_info: dict[str, TopicPublishInfo] = {}
        self.broker_addrs: dict[str, dict[int, str]] = {}
        """broker name -> broker id -> address, from every cached route."""
        self._fetch = fetch
        self._on_new_brokers = on_new_brokers
        self._locks: dict[str, asyncio.Lock] = {}

    # -- updates --------------------------------------------------------------------------

    async def update(self, topic: str, *, use_default_topic: bool = False) -> bool:
        """Refresh one topic's cached route; False when the name servers have none.

        With ``use_default_topic`` the route of ``TBW102`` stands in for a topic that does
        not exist yet (queues capped at ``defaultTopicQueueNums`` = 4), as Java's producer
        does so that the broker auto-creates the topic on the first send.
        """
        lock = self._locks.setdefault(topic, asyncio.Lock())
        async with lock:
            if use_default_topic:
                route = await self._fetch(AUTO_CREATE_TOPIC_KEY)
                if route is not None:
                    route.queue_datas = [_capped(q) for q in route.queue_datas]
            else:
                route = await self._fetch(topic)
            if route is None:
                return False
            self.store(topic, route)
            return True

    def store(self, topic: str, route: TopicRouteData) -> None:
        """Cache ``route`` for ``topic``, keeping the topic's round robin where it was."""
        old = self.routes.get(topic)
        self.routes[topic] = route
        if old is None or old.to_json() != route.to_json():
            log.info("route of %s is now %s", topic, route.encode().decode())
        info = self.publish_info.get(topic)
        new_info = TopicPublishInfo.from_route(topic, route)
        if info is not None:
            new_info._index = info._index  # keep the round robin going
        self.publish_info[topic] = new_info
        self._rebuild_broker_addrs()

    def forget(self, topic: str) -> None:
        self.routes.pop(topic, None)
        self.publish_info.pop(topic, None)
        self._rebuild_broker_addrs()

    def _rebuild_broker_addrs(self) -> None:
        table: dict[str, dict[int, str]] = {}
        for route in self.routes.values():
            for bd in route.broker_datas:
                table[bd.broker_name] = dict(bd.broker_addrs)
        known = self.all_addrs()
        self.broker_addrs = table
        if self.all_addrs() - known and self._on_new_brokers is not None:
            self._on_new_brokers()

    async def refresh(self, topics: Iterable[str] = ()) -> None:
        """Refresh every cached topic and ``topics`` too (the 30 s timer); a topic that
        has no route any more keeps its last one, a failure is logged."""
        for topic in sorted({*self.routes, *topics}):
            try:
                if not await self.update(topic) and topic in self.routes:
                    log.debug("topic %s has no route any more; keeping the last one", topic)
            except MQClientError as exc:
                log.warning("refreshing the route of %s failed: %s", topic, exc)

    # -- topics ---------------------------------------------------------------------------

    async def get(self, topic: str, *, refresh: bool = False) -> TopicRouteData:
        """The cached route (fetched if missing); raises TopicRouteNotFoundError."""
        if (refresh or topic not in self.routes) and not await self.update(topic):
            raise TopicRouteNotFoundError(topic)
        return self.routes[topic]

    async def find_publish_info(self, topic: str) -> TopicPublishInfo:
        """Writable queues of ``topic`` (``tryToFindTopicPublishInfo``): the cached route,
        else a fresh one, else TBW102's (auto-create); raises TopicRouteNotFoundError."""
        info = self.publish_info.get(topic)
        if info is not None and info.ok:
            return info
        for use_default_topic in (False, True):
            if await self.update(topic, use_default_topic=use_default_topic):
                info = self.publish_info[topic]
                if info.ok:
                    return info
        raise TopicRouteNotFoundError(topic)

    async def subscribe_queues(self, topic: str, *, refresh: bool = False) -> list[MessageQueue]:
        """Readable queues of ``topic`` from the cached route (fetched if missing)."""
        return subscribe_queues(topic, await self.get(topic, refresh=refresh))

    # -- broker addresses -----------------------------------------------------------------

    def all_addrs(self) -> set[str]:
        """Every broker address of every cached route."""
        return {a for by_id in self.broker_addrs.values() for a in by_id.values()}

    def heartbeat_addrs(self, *, slaves: bool) -> list[str]:
        """Masters, and slaves too when ``slaves`` (a client with consumers), sorted."""
        return sorted(
            {
                addr
                for by_id in self.broker_addrs.values()
                for bid, addr in by_id.items()
                if bid == MASTER_ID or slaves
            }
        )

    def find_broker_addr(self, broker_name: str, broker_id: int = MASTER_ID) -> str | None:
        return self.broker_addrs.get(broker_name, {}).get(broker_id)

    def find_master_addr(self, broker_name: str) -> str | None:
        return self.find_broker_addr(broker_name, MASTER_ID)

    def find_broker_addr_in_subscribe(
        self, broker_name: str, broker_id: int = MASTER_ID, only_this_broker: bool = False
    ) -> tuple[str, bool] | None:
        """``(addr, is_slave)`` of ``broker_id`` (the pull's ``suggestWhichBrokerId``); for
        a slave id that is gone, the next slave id; then, unless ``only_this_broker``, the
        lowest id there is (the master when it is in the route), as the Java client."""
        by_id = self.broker_addrs.get(broker_name)
        if not by_id:
            return None
        addr = by_id.get(broker_id)
        if addr is not None:
            return addr, broker_id != MASTER_ID
        if broker_id != MASTER_ID:
            addr = by_id.get(broker_id + 1)
            if addr is not None:
                return addr, True
        if only_this_broker:
            return None
        bid = min(by_id)
        return by_id[bid], bid != MASTER_ID

    def find_any_broker_addr(self, broker_name: str) -> str | None:
        """Master first, else any slave (admin reads such as offsets)."""
        found = self.find_broker_addr_in_subscribe(broker_name)
        return found[0] if found else None

    async def offset_broker_addr(self, mq: MessageQueue) -> str:
        """Where ``mq``'s consumer offsets are read and committed (``RemoteBrokerOffsetStore``):
        the master; without one in the cached route, the route is refreshed and the master
        or else a slave is used, so a group goes on committing while its master is down
        and returns to the master once the route has it again."""
        found = self.find_broker_addr_in_subscribe(mq.broker_name, MASTER_ID, True)
        if found is None:
            try:
                await self.update(mq.topic)
            except MQClientError as exc:
                log.debug("refreshing the route of %s failed: %s", mq.topic, exc)
            found = self.find_broker_addr_in_subscribe(mq.broker_name, MASTER_ID, False)
        if found is None:
            raise MQClientError(
                f"broker {mq.broker_name} of {mq.topic} is not in any route: is it running?"
            )
        return found[0]

    async def master_addr_or_refresh(self, mq: MessageQueue) -> str:
        """The master address of ``mq``'s broker, refreshing the route once if unknown."""
        addr = self.find_master_addr(mq.broker_name)
        if addr is None:
            await self.update(mq.topic)
            addr = self.find_master_addr(mq.broker_name)
        if addr is None:
            raise MQClientError(
                f"broker {mq.broker_name} has no master in the route of {mq.topic}:"
                " is it running and registered with the name server?"
            )
        return addr


def _capped(q: QueueData) -> QueueData:
    """TBW102's queue data for a new topic: at most ``defaultTopicQueueNums`` queues."""
    nums = min(DEFAULT_TOPIC_QUEUE_NUMS, q.read_queue_nums)
    return QueueData(q.broker_name, nums, nums, q.perm, q.topic_sys_flag)

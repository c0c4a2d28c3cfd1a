"""`RouteInfoManager`: the name server's registry of clusters, brokers, topics and liveness.

Pure state, no I/O and no asyncio (the controller owns sockets and timers), so every rule
below is unit-testable with a fake clock. Tables, as in RocketMQ 4.9.8::

    topic_queue_table   topic       -> {brokerName: QueueData}
    broker_addr_table   brokerName  -> BrokerData(cluster, brokerName, {brokerId: addr})
    cluster_addr_table  cluster     -> {brokerName}
    broker_live_table   brokerAddr  -> BrokerLiveInfo(last_update, data_version, channel, ha)
    filter_server_table brokerAddr  -> [filter server addr]

Rules: only a master's registration (id 0) updates queue data; a topic of its body is
taken when the broker is new, when its DataVersion changed, or when the topic has no
queue data of that broker yet (RocketMQ 5's ``isTopicConfigChanged``: the parts of a
split registration share one version). A body need not hold the whole table: topics it
does not name keep their queue data, so a registration of one changed topic (4.9.8's
``registerIncrementBrokerData``) adds to what the name server knows; topics go only with
DELETE_TOPIC_IN_NAMESRV or with their last broker (4.9.8). A
broker address goes away on UNREGISTER_BROKER, on its connection closing, or after
``expired`` seconds without registering; when a broker name loses its last address its
queue data, cluster membership and empty topics go too. Slaves are listed under their
master's broker name with their own id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from mqcore.protocol.bodies import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
)
from mqcore.protocol.bodies.route import MASTER_ID, PermName

__all__ = ["BrokerLiveInfo", "RegisterBrokerResult", "RouteInfoManager"]

log = logging.getLogger("mq.namesrv")

# TopicSysFlag bits used by the unit topic lists.
_FLAG_UNIT = 0x1
_FLAG_UNIT_SUB = 0x2


@dataclass(slots=True)
class BrokerLiveInfo:
    """When a broker address last registered, with what topic data version, over which
    connection (any hashable handle; the controller passes the remoting Channel)."""

    last_update: float
    data_version: DataVersion
    channel: Hashable | None
    ha_server_addr: str


@dataclass(frozen=True, slots=True)
class RegisterBrokerResult:
    """For a slave: its master's address and HA address (both None for masters)."""

    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclass(slots=True)
class _Tables:
    topic_queue_table: dict[str, dict[str, QueueData]] = field(default_factory=dict)
    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, set[str]] = field(default_factory=dict)
    broker_live_table: dict[str, BrokerLiveInfo] = field(default_factory=dict)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)


class RouteInfoManager:
    """The route registry. ``clock`` returns seconds (monotonic by default)."""

    def __init__(self, clock: Callable[[], float], expired: float = 120.0) -> None:
        self.clock = clock
        self.expired = expired
        self._t = _Tables()

    # -- registration ---------------------------------------------------------------------

    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        topic_config_wrapper: TopicConfigSerializeWrapper | None,
        filter_server_list: list[str] | None = None,
        channel: Hashable | None = None,
    ) -> RegisterBrokerResult:
        t = self._t
        t.cluster_addr_table.setdefault(cluster_name, set()).add(broker_name)
        broker_data = t.broker_addr_table.get(broker_name)
        register_first = broker_data is None
        if broker_data is None:
            broker_data = BrokerData(cluster_name, broker_name, {})
            t.broker_addr_table[broker_name] = broker_data
        broker_data.cluster = cluster_name
        addrs = broker_data.broker_addrs
        # The same address under another id: a slave became master (or the reverse).
        for other_id in [i for i, a in addrs.items() if a == broker_addr and i != broker_id]:
            del addrs[other_id]
        version = topic_config_wrapper.data_version if topic_config_wrapper else DataVersion()
        if self._stale_claim(addrs.get(broker_id), broker_addr, version):
            log.warning(
                "%s registers as %s id %d at state version %d; %s holds it at a higher "
                "one: ignored",
                broker_addr,
                broker_name,
                broker_id,
                version.state_version,
                addrs.get(broker_id),
            )
            t.broker_live_table.pop(broker_addr, None)
            return RegisterBrokerResult()
        register_first = register_first or addrs.get(broker_id) is None
        addrs[broker_id] = broker_addr

        if topic_config_wrapper is not None and broker_id == MASTER_ID:
            every = register_first or self.is_broker_topic_config_changed(broker_addr, version)
            for config in topic_config_wrapper.topic_config_table.values():
                queues = t.topic_queue_table.setdefault(config.topic_name, {})
                if every or broker_name not in queues:
                    queues[broker_name] = QueueData(
                        broker_name,
                        config.read_queue_nums,
                        config.write_queue_nums,
                        config.perm,
                        config.topic_sys_flag,
                    )
        previous = t.broker_live_table.get(broker_addr)
        if previous is None:
            log.info(
                "new broker registered %s (%s id %d, cluster %s)",
                broker_addr,
                broker_name,
                broker_id,
                cluster_name,
            )
        t.broker_live_table[broker_addr] = BrokerLiveInfo(
            self.clock(), version, channel, ha_server_addr
        )
        if filter_server_list:
            t.filter_server_table[broker_addr] = list(filter_server_list)
        else:
            t.filter_server_table.pop(broker_addr, None)

        if broker_id != MASTER_ID:
            master_addr = addrs.get(MASTER_ID)
            if master_addr is not None:
                master_live = t.broker_live_table.get(master_addr)
                if master_live is not None:
                    return RegisterBrokerResult(master_live.ha_server_addr, master_addr)
        return RegisterBrokerResult()

    def _stale_claim(self, holder: str | None, broker_addr: str, version: DataVersion) -> bool:
        """Another live broker holds this id with a higher ``stateVersion`` (RocketMQ 5:
        in controller mode, the master epoch): an old master back from a partition,
        not yet told of the new epoch, must not take the route back."""
        if holder is None or holder == broker_addr:
            return False
        live = self._t.broker_live_table.get(holder)
        return live is not None and live.data_version.state_version > version.state_version

    def is_broker_topic_config_changed(self, broker_addr: str, version: DataVersion) -> bool:
        live = self._t.broker_live_table.get(broker_addr)
        return live is None or live.data_version != version

    def query_data_version(self, broker_addr: str) -> DataVersion | None:
        live = self._t.broker_live_table.get(broker_addr)
        return None if live is None else live.data_version

    def touch(self, broker_addr: str) -> None:
        """Refresh liveness without a full registration (QUERY_DATA_VERSION, unchanged)."""
        live = self._t.broker_live_table.get(broker_addr)
        if live is not None:
            live.last_update = self.clock()

    def unregister_broker(
        self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        t = self._t
        t.broker_live_table.pop(broker_addr, None)
        t.filter_server_table.pop(broker_addr, None)
        log.info("broker unregistered %s (%s id %d)", broker_addr, broker_name, broker_id)
        broker_data = t.broker_addr_table.get(broker_name)
        if broker_data is not None:
            broker_data.broker_addrs.pop(broker_id, None)
            if not broker_data.broker_addrs:
                self._remove_broker_name(broker_name)

    # -- liveness -------------------------------------------------------------------------

    def scan_not_active_brokers(self) -> list[Hashable]:
        """Remove brokers silent for longer than ``expired``; return their channels so the
        caller can close them."""
        now = self.clock()
        expired = [
            (addr, live)
            for addr, live in self._t.broker_live_table.items()
            if live.last_update + self.expired < now
        ]
        channels: list[Hashable] = []
        for addr, live in expired:
            log.warning(
                "broker %s expired: no registration for %.0f s", addr, now - live.last_update
            )
            if live.channel is not None:
                channels.append(live.channel)
            self._remove_broker_addr(addr)
        return channels

    def on_channel_destroy(self, channel: Hashable) -> None:
        """A connection closed: remove whatever broker address registered over it."""
        for addr, live in list(self._t.broker_live_table.items()):
            if live.channel is not None and live.channel == channel:
                log.info("broker %s connection closed; removing it", addr)
                self._remove_broker_addr(addr)

    def _remove_broker_addr(self, broker_addr: str) -> None:
        t = self._t
        t.broker_live_table.pop(broker_addr, None)
        t.filter_server_table.pop(broker_addr, None)
        for name, data in list(t.broker_addr_table.items()):
            for broker_id in [i for i, a in data.broker_addrs.items() if a == broker_addr]:
                del data.broker_addrs[broker_id]
            if not data.broker_addrs:
                self._remove_broker_name(name)

    def _remove_broker_name(self, broker_name: str) -> None:
        t = self._t
        t.broker_addr_table.pop(broker_name, None)
        for cluster, names in list(t.cluster_addr_table.items()):
            names.discard(broker_name)
            if not names:
                del t.cluster_addr_table[cluster]
        for topic, queues in list(t.topic_queue_table.items()):
            queues.pop(broker_name, None)
            if not queues:
                del t.topic_queue_table[topic]

    # -- queries ----------------------------------------------------------------------------

    def pick_topic_route_data(self, topic: str) -> TopicRouteData | None:
        """The route, or None unless the topic has queue data and a live broker."""
        t = self._t
        queues = t.topic_queue_table.get(topic)
        if not queues:
            return None
        route = TopicRouteData()
        for broker_name, queue_data in sorted(queues.items()):
            route.queue_datas.append(
                QueueData(
                    queue_data.broker_name,
                    queue_data.read_queue_nums,
                    queue_data.write_queue_nums,
                    queue_data.perm,
                    queue_data.topic_sys_flag,
                )
            )
            data = t.broker_addr_table.get(broker_name)
            if data is None:
                continue
            route.broker_datas.append(
                BrokerData(data.cluster, data.broker_name, dict(data.broker_addrs))
            )
            for addr in data.broker_addrs.values():
                servers = t.filter_server_table.get(addr)
                if servers:
                    route.filter_server_table[addr] = list(servers)
        if not route.broker_datas:
            return None
        return route

    def get_all_cluster_info(self) -> ClusterInfo:
        t = self._t
        return ClusterInfo(
            {
                name: BrokerData(d.cluster, d.broker_name, dict(d.broker_addrs))
                for name, d in t.broker_addr_table.items()
            },
            {cluster: set(names) for cluster, names in t.cluster_addr_table.items()},
        )

    def get_all_topic_list(self) -> TopicList:
        return TopicList(set(self._t.topic_queue_table))

    def get_topics_by_cluster(self, cluster: str) -> TopicList:
        names = self._t.cluster_addr_table.get(cluster, set())
        return TopicList(
            {
                topic
                for topic, queues in self._t.topic_queue_table.items()
                if any(name in names for name in queues)
            }
        )

    def get_system_topic_list(self) -> TopicList:
        """Cluster names and broker names (RocketMQ's "system topics"), plus one master."""
        t = self._t
        result = TopicList(set(t.cluster_addr_table))
        for cluster_names in t.cluster_addr_table.values():
            result.topic_list |= cluster_names
        for data in t.broker_addr_table.values():
            if data.broker_addrs:
                result.broker_addr = next(iter(data.broker_addrs.values()))
                break
        return result

    def get_unit_topics(self, *, unit: bool, unit_sub: bool | None) -> TopicList:
        """Topics flagged unit / with unit subscriptions (codes 311-313)."""
        out = set()
        for topic, queues in self._t.topic_queue_table.items():
            flag = next(iter(queues.values())).topic_sys_flag if queues else 0
            if bool(flag & _FLAG_UNIT) != unit:
                continue
            if unit_sub is not None and bool(flag & _FLAG_UNIT_SUB) != unit_sub:
                continue
            out.add(topic)
        return TopicList(out)

    # -- admin ------------------------------------------------------------------------------

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        t = self._t
        if not cluster_name:
            t.topic_queue_table.pop(topic, None)
            return
        queues = t.topic_queue_table.get(topic)
        if queues is None:
            return
        for name in t.cluster_addr_table.get(cluster_name, set()):
            queues.pop(name, None)
        if not queues:
            del t.topic_queue_table[topic]

    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        return self._operate_write_perm(broker_name, wipe=True)

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        return self._operate_write_perm(broker_name, wipe=False)

    def _operate_write_perm(self, broker_name: str, *, wipe: bool) -> int:
        count = 0
        for queues in self._t.topic_queue_table.values():
            data = queues.get(broker_name)
            if data is not None:
                data.perm = data.perm & ~PermName.WRITE if wipe else data.perm | PermName.WRITE
                count += 1
        return count

    def live_broker_addrs(self) -> list[str]:
        return sorted(self._t.broker_live_table)

"""`Admin`: cluster administration (what ``mqadmin`` and the dashboard do), in asyncio.

::

    async with Admin(namesrv="127.0.0.1:9876") as admin:
        await admin.create_topic("Orders", queues=8)            # every master, all clusters
        for row in await admin.topic_status("Orders"): ...      # min/max offset per queue
        progress = await admin.consume_progress("g1")           # lag per queue, all brokers
        msgs = await admin.query_by_key("Orders", "order-42", max_num=64)
        msgs = await admin.query_by_time("Orders", begin_ms, end_ms, max_num=64)

Cluster-wide operations go to every master a cluster lists (GET_BROKER_CLUSTER_INFO);
topic-wide ones to the masters of the topic's route. Results are merged across brokers
and sorted by queue, so a caller never has to know how many brokers there are. Query
totals are capped across all brokers (``max_num``), not per broker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from mqcore.client.admin_acl import AclAdmin
from mqcore.client.admin_broker import BrokerAdmin
from mqcore.client.admin_groups import GroupAdmin, QueueProgress, ResetRow
from mqcore.client.admin_link import AdminLink
from mqcore.client.admin_messages import END_OF_TIME, TOOLS_GROUP, MessageLookup
from mqcore.client.admin_namesrv import NamesrvAdmin
from mqcore.client.errors import check_ok
from mqcore.client.instance import ClientConfig, ClientInstance
from mqcore.client.role import ClientRole
from mqcore.client.validators import validate_topic
from mqcore.common.metadata import PermName, TopicConfig
from mqcore.errors import MQClientError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    KVTable,
    MessageQueue,
    TopicList,
    TopicStatsTable,
)
from mqcore.protocol.bodies.topic_admin import CreateTopicListRequestBody
from mqcore.protocol.headers import (
    CreateTopicRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
    GetTopicStatsInfoRequestHeader,
)

if TYPE_CHECKING:
    pass

__all__ = [
    "END_OF_TIME",
    "TOOLS_GROUP",
    "TOPIC_LIST_BATCH",
    "Admin",
    "QueueProgress",
    "QueueStatus",
    "ResetRow",
]

T = TypeVar("T")
P = ParamSpec("P")
Part = TypeVar("Part")
TOPIC_LIST_BATCH = 1000
"""Topics per UPDATE_AND_CREATE_TOPIC_LIST request (about 150 KiB of JSON)."""


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """One queue of ``topic status``."""

    mq: MessageQueue
    min_offset: int
    max_offset: int
    last_update_timestamp: int

    @property
    def count(self) -> int:
        return max(0, self.max_offset - self.min_offset)


def _on(
    part: Callable[[Admin], Part], method: Callable[Concatenate[Part, P], T]
) -> Callable[Concatenate[Admin, P], T]:
    """An Admin method that calls ``method`` of the part ``part(admin)``."""

    def call(admin: Admin, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return method(part(admin), *args, **kwargs)

    call.__name__ = call.__qualname__ = method.__name__
    call.__doc__ = method.__doc__
    return call


def _topic_config(
    topic: str,
    queues: int,
    read_queue_nums: int | None,
    write_queue_nums: int | None,
    perm: int,
    order: bool,
) -> TopicConfig:
    return TopicConfig(
        topic,
        read_queue_nums=read_queue_nums or queues,
        write_queue_nums=write_queue_nums or queues,
        perm=perm,
        order=order,
    )


class Admin(ClientRole):
    """Admin operations over a :class:`ClientInstance` (its own, or a shared
    ``instance``); see the module docstring. Topics and the cluster views are the
    admin's own; the rest are its parts, each reaching the cluster through one
    :class:`~mqcore.client.admin_link.AdminLink`: ``groups`` (groups and offsets,
    :class:`~mqcore.client.admin_groups.GroupAdmin`), ``messages`` (lookups and queue
    reads, :class:`~mqcore.client.admin_messages.MessageLookup`), ``brokers`` (one
    broker's tables, :class:`~mqcore.client.admin_broker.BrokerAdmin`), ``acl``
    (:class:`~mqcore.client.admin_acl.AclAdmin`) and ``name_servers`` (write permission
    and KV config, :class:`~mqcore.client.admin_namesrv.NamesrvAdmin`). Their methods are
    the admin's too."""

    def __init__(
        self,
        namesrv: str | Sequence[str] | None = None,
        *,
        instance_name: str | None = None,
        timeout: float = 5.0,
        client_config: ClientConfig | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        instance: ClientInstance | None = None,
    ) -> None:
        super().__init__(namesrv, instance_name, client_config, access_key, secret_key, instance)
        self.timeout = timeout
        self._link = AdminLink(lambda: self.instance, lambda: self.timeout)
        self.groups = GroupAdmin(self._link)
        self.messages = MessageLookup(self._link)
        self.brokers = BrokerAdmin(self._link)
        self.acl = AclAdmin(self._link.ask)
        self.name_servers = NamesrvAdmin(self._link.ask, lambda: self.instance.transport)

    def _not_started(self) -> str:
        return "admin is not started: use `async with Admin(...)`"

    @property
    def namesrv_addrs(self) -> list[str]:
        """The name servers this admin asks, in their configured order."""
        return self.name_servers.namesrv_addrs

    # -- the parts' methods, on the admin ----------------------------------------------

    cluster_info = _on(lambda a: a._link, AdminLink.cluster_info)
    master_addrs = _on(lambda a: a._link, AdminLink.master_addrs)
    topic_route = _on(lambda a: a._link, AdminLink.topic_route)
    subscription_groups = _on(lambda a: a.groups, GroupAdmin.subscription_groups)
    groups_of_topic = _on(lambda a: a.groups, GroupAdmin.groups_of_topic)
    consume_progress = _on(lambda a: a.groups, GroupAdmin.consume_progress)
    consumer_connections = _on(lambda a: a.groups, GroupAdmin.consumer_connections)
    consumer_running_info = _on(lambda a: a.groups, GroupAdmin.consumer_running_info)
    create_subscription_group = _on(lambda a: a.groups, GroupAdmin.create_subscription_group)
    delete_subscription_group = _on(lambda a: a.groups, GroupAdmin.delete_subscription_group)
    reset_offset_by_time = _on(lambda a: a.groups, GroupAdmin.reset_offset_by_time)
    plan_reset = _on(lambda a: a.groups, GroupAdmin.plan_reset)
    apply_reset = _on(lambda a: a.groups, GroupAdmin.apply_reset)
    clone_group_offset = _on(lambda a: a.groups, GroupAdmin.clone_group_offset)
    consume_time_span = _on(lambda a: a.groups, GroupAdmin.consume_time_span)
    consumer_status = _on(lambda a: a.groups, GroupAdmin.consumer_status)
    query_by_key = _on(lambda a: a.messages, MessageLookup.query_by_key)
    query_by_unique_key = _on(lambda a: a.messages, MessageLookup.query_by_unique_key)
    query_by_time = _on(lambda a: a.messages, MessageLookup.query_by_time)
    view_message = _on(lambda a: a.messages, MessageLookup.view_message)
    find_message = _on(lambda a: a.messages, MessageLookup.find_message)
    topic_queues = _on(lambda a: a.messages, MessageLookup.topic_queues)
    min_offset = _on(lambda a: a.messages, MessageLookup.min_offset)
    max_offset = _on(lambda a: a.messages, MessageLookup.max_offset)
    search_offset = _on(lambda a: a.messages, MessageLookup.search_offset)
    read_queue = _on(lambda a: a.messages, MessageLookup.read_queue)
    peek = _on(lambda a: a.messages, MessageLookup.peek)
    broker_config = _on(lambda a: a.brokers, BrokerAdmin.broker_config)
    update_broker_config = _on(lambda a: a.brokers, BrokerAdmin.update_broker_config)
    broker_topic_configs = _on(lambda a: a.brokers, BrokerAdmin.broker_topic_configs)
    broker_consumer_offsets = _on(lambda a: a.brokers, BrokerAdmin.broker_consumer_offsets)
    broker_subscription_groups = _on(lambda a: a.brokers, BrokerAdmin.broker_subscription_groups)
    broker_topic_stats = _on(lambda a: a.brokers, BrokerAdmin.broker_topic_stats)
    clean_expired_consume_queue = _on(lambda a: a.brokers, BrokerAdmin.clean_expired_consume_queue)
    clean_unused_topic = _on(lambda a: a.brokers, BrokerAdmin.clean_unused_topic)
    delete_expired_commit_log = _on(lambda a: a.brokers, BrokerAdmin.delete_expired_commit_log)
    query_consume_queue = _on(lambda a: a.brokers, BrokerAdmin.query_consume_queue)
    broker_consume_stats = _on(lambda a: a.brokers, BrokerAdmin.broker_consume_stats)
    correction_offsets = _on(lambda a: a.brokers, BrokerAdmin.correction_offsets)
    producer_table = _on(lambda a: a.brokers, BrokerAdmin.producer_table)
    consume_message_directly = _on(lambda a: a.brokers, BrokerAdmin.consume_message_directly)
    broker_stats = _on(lambda a: a.brokers, BrokerAdmin.broker_stats)
    update_acl_account = _on(lambda a: a.acl, AclAdmin.update_acl_account)
    delete_acl_account = _on(lambda a: a.acl, AclAdmin.delete_acl_account)
    update_global_white_addresses = _on(lambda a: a.acl, AclAdmin.update_global_white_addresses)
    acl_version = _on(lambda a: a.acl, AclAdmin.acl_version)
    cluster_info_from = _on(lambda a: a.name_servers, NamesrvAdmin.cluster_info_from)
    wipe_write_perm = _on(lambda a: a.name_servers, NamesrvAdmin.wipe_write_perm)
    add_write_perm = _on(lambda a: a.name_servers, NamesrvAdmin.add_write_perm)
    topics_by_cluster = _on(lambda a: a.name_servers, NamesrvAdmin.topics_by_cluster)
    put_kv_config = _on(lambda a: a.name_servers, NamesrvAdmin.put_kv_config)
    delete_kv_config = _on(lambda a: a.name_servers, NamesrvAdmin.delete_kv_config)
    get_kv_config = _on(lambda a: a.name_servers, NamesrvAdmin.get_kv_config)
    kv_list = _on(lambda a: a.name_servers, NamesrvAdmin.kv_list)

    # -- name server views ----------------------------------------------------------------

    async def topic_list(self) -> set[str]:
        request = self.instance.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        response = check_ok(await self.instance.invoke_namesrv(request, self.timeout))
        return TopicList.decode(response.body).topic_list

    # -- topics ---------------------------------------------------------------------------

    async def create_topic(
        self,
        topic: str,
        *,
        queues: int = 8,
        read_queue_nums: int | None = None,
        write_queue_nums: int | None = None,
        perm: int = PermName.READ | PermName.WRITE,
        order: bool = False,
        cluster: str | None = None,
        brokers: Iterable[str] | None = None,
    ) -> list[str]:
        """UPDATE_AND_CREATE_TOPIC on every master of ``cluster`` (or of all clusters, or
        of the named ``brokers``); also updates an existing topic. Returns the broker
        names. Brokers re-register at once, so the route appears within a moment."""
        validate_topic(topic)
        masters = await self._create_targets(cluster, brokers)
        request = self._create_request(
            _topic_config(topic, queues, read_queue_nums, write_queue_nums, perm, order)
        )
        await self._link.each(masters.values(), lambda a: self._link.call_ok(a, request))
        self.instance.forget_route(topic)
        return sorted(masters)

    async def create_topics(
        self,
        topics: Sequence[str],
        *,
        queues: int = 8,
        read_queue_nums: int | None = None,
        write_queue_nums: int | None = None,
        perm: int = PermName.READ | PermName.WRITE,
        order: bool = False,
        cluster: str | None = None,
        brokers: Iterable[str] | None = None,
    ) -> list[str]:
        """Many topics alike, as :meth:`create_topic` makes one: RocketMQ 5's
        UPDATE_AND_CREATE_TOPIC_LIST, :data:`TOPIC_LIST_BATCH` topics a request (one
        write and one registration at the broker for each), to every master at once. A
        broker that does not know that code (RocketMQ 4.x answers
        REQUEST_CODE_NOT_SUPPORTED) gets one UPDATE_AND_CREATE_TOPIC per topic instead.
        Returns the broker names."""
        for topic in topics:
            validate_topic(topic)
        masters = await self._create_targets(cluster, brokers)
        configs = [
            _topic_config(t, queues, read_queue_nums, write_queue_nums, perm, order)
            for t in dict.fromkeys(topics)
        ]
        await self._link.each(masters.values(), lambda a: self._create_all(a, configs))
        for topic in topics:
            self.instance.forget_route(topic)
        return sorted(masters)

    async def _create_targets(
        self, cluster: str | None, brokers: Iterable[str] | None
    ) -> dict[str, str]:
        """Broker name -> master address of the brokers a create goes to."""
        masters = await self.master_addrs(cluster)
        if brokers is not None:
            wanted = set(brokers)
            missing = wanted - masters.keys()
            if missing:
                raise MQClientError(f"no master for broker(s) {', '.join(sorted(missing))}")
            masters = {n: a for n, a in masters.items() if n in wanted}
        if not masters:
            raise MQClientError("no broker is registered with the name server: is one running?")
        return masters

    def _create_request(self, config: TopicConfig) -> RemotingCommand:
        header = CreateTopicRequestHeader(
            topic=config.topic_name,
            default_topic="TBW102",
            read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums,
            perm=config.perm,
            topic_filter_type=str(config.topic_filter_type),
            order=config.order,
            topic_sys_flag=config.topic_sys_flag,
        )
        return self.instance.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header)

    async def _create_all(self, addr: str, configs: list[TopicConfig]) -> None:
        """``configs`` at one broker: in lists, or one by one where lists are unknown."""
        for begin in range(0, len(configs), TOPIC_LIST_BATCH):
            part = configs[begin : begin + TOPIC_LIST_BATCH]
            body = CreateTopicListRequestBody(part).encode()
            request = self.instance.request(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=body)
            response = await self._link.call(addr, request)
            if response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                for config in configs[begin:]:
                    await self._link.call_ok(addr, self._create_request(config))
                return
            check_ok(response)

    update_topic = create_topic

    async def _call_ok(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        return check_ok(await self._link.call(addr, request))

    async def delete_topic(self, topic: str, *, cluster: str | None = None) -> None:
        """DELETE_TOPIC_IN_BROKER on every master of ``cluster`` (all clusters if None),
        then DELETE_TOPIC_IN_NAMESRV on every name server."""
        masters = await self.master_addrs(cluster)
        request = self.instance.request(
            RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic)
        )
        await self._link.each(masters.values(), lambda a: self._link.call_ok(a, request))
        ns_request = self.instance.request(
            RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader(topic, cluster)
        )
        for addr in self.instance.namesrv_addrs:
            check_ok(await self.instance.invoke(addr, ns_request, self.timeout))
        self.instance.forget_route(topic)

    async def topic_status(self, topic: str) -> list[QueueStatus]:
        """GET_TOPIC_STATS_INFO from every master of the route, sorted by queue."""
        header = GetTopicStatsInfoRequestHeader(topic)
        request = self.instance.request(RequestCode.GET_TOPIC_STATS_INFO, header)
        tables = await self._link.each(
            (await self._link.topic_masters(topic)).values(),
            lambda a: self._link.call_ok(a, request),
        )
        rows = [
            QueueStatus(mq, o.min_offset, o.max_offset, o.last_update_timestamp)
            for response in tables
            for mq, o in TopicStatsTable.decode(response.body).offset_table.items()
        ]
        return sorted(rows, key=lambda r: r.mq)

    # -- brokers --------------------------------------------------------------------------

    async def broker_runtime_info(self, addr: str) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO: the broker's statistics table (values are text)."""
        request = self.instance.request(RequestCode.GET_BROKER_RUNTIME_INFO)
        return KVTable.decode(check_ok(await self._link.call(addr, request)).body).table

    async def masters_of(
        self, *, cluster: str | None = None, broker_name: str | None = None
    ) -> dict[str, str]:
        """Broker name -> master address: one broker, one cluster's, or every one."""
        masters = await self.master_addrs(cluster)
        if broker_name is not None:
            if broker_name not in masters:
                known = ", ".join(sorted(masters)) or "none"
                raise MQClientError(f"no master for broker {broker_name!r} (known: {known})")
            return {broker_name: masters[broker_name]}
        if not masters:
            raise MQClientError("no broker is registered with the name server: is one running?")
        return masters

    def __repr__(self) -> str:
        return f"<Admin {self.namesrv} {'started' if self._instance else 'new'}>"

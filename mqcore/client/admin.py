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

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from mqcore.client.admin_acl import AclAdmin
from mqcore.client.admin_namesrv import NamesrvAdmin
from mqcore.client.api import PULL_TIMEOUT, PullResult, PullStatus
from mqcore.client.errors import check_ok
from mqcore.client.instance import ClientConfig, ClientInstance, subscribe_queues
from mqcore.client.role import ClientRole
from mqcore.client.validators import validate_topic
from mqcore.common.metadata import PermName, SubscriptionGroupConfig, TopicConfig
from mqcore.common.properties import parse_properties
from mqcore.errors import MessageIdError, MQBrokerError, MQClientError
from mqcore.message import MessageExt
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    ClusterInfo,
    ConsumerConnection,
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    GroupList,
    KVTable,
    MessageQueue,
    QueryConsumeTimeSpanBody,
    QueueTimeSpan,
    ResetOffsetBody,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicOffset,
    TopicRouteData,
    TopicStatsTable,
    decode_json,
)
from mqcore.protocol.bodies.consumer_admin import (
    BrokerStatsData,
    GetConsumerStatusBody,
    ProducerTableInfo,
    QueryCorrectionOffsetBody,
)
from mqcore.protocol.bodies.store_admin import ConsumeStatsList, QueryConsumeQueueResponseBody
from mqcore.protocol.bodies.topic_admin import CreateTopicListRequestBody
from mqcore.protocol.headers import (
    CloneGroupOffsetRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerStatusRequestHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
    PullMessageRequestHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from mqcore.protocol.headers.consume import PullSysFlag
from mqcore.protocol.headers.store_admin import GetConsumeStatsInBrokerHeader

if TYPE_CHECKING:
    from mqcore.protocol.headers import CommandHeader

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
TOOLS_GROUP = "TOOLS_CONSUMER"  # RocketMQ's MixAll.TOOLS_CONSUMER_GROUP, for admin pulls
END_OF_TIME = 2**63 - 1
TOPIC_LIST_BATCH = 1000
"""Topics per UPDATE_AND_CREATE_TOPIC_LIST request (about 150 KiB of JSON)."""
_PULL_BATCH = 32


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


@dataclass(frozen=True, slots=True)
class QueueProgress:
    """One queue of a group's progress; ``lag`` is never negative. ``first_unconsumed_ts``
    (store time of the next message to consume) is filled when asked for (``with_age``)."""

    mq: MessageQueue
    broker_offset: int
    consumer_offset: int
    last_timestamp: int
    first_unconsumed_ts: int | None = None

    @property
    def lag(self) -> int:
        return max(0, self.broker_offset - self.consumer_offset)

    def age_ms(self, now_ms: int | None = None) -> int:
        """How long the oldest unconsumed message has waited (0 when caught up)."""
        if self.lag == 0 or self.first_unconsumed_ts is None:
            return 0
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        return max(0, now_ms - self.first_unconsumed_ts)


@dataclass(frozen=True, slots=True)
class ResetRow:
    """One queue of an offset reset: what it was, what it becomes."""

    mq: MessageQueue
    old_offset: int | None
    new_offset: int


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
    ``instance``); see the module docstring. Remote ACL changes are the part ``acl``
    (:class:`~mqcore.client.admin_acl.AclAdmin`), write permission and KV config the
    part ``name_servers`` (:class:`~mqcore.client.admin_namesrv.NamesrvAdmin`); their
    methods are the admin's too."""

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
        self.acl = AclAdmin(self._ask)
        self.name_servers = NamesrvAdmin(self._ask, lambda: self.instance.transport)

    def _not_started(self) -> str:
        return "admin is not started: use `async with Admin(...)`"

    @property
    def namesrv_addrs(self) -> list[str]:
        """The name servers this admin asks, in their configured order."""
        return self.name_servers.namesrv_addrs

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

    async def _call(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        return await self.instance.invoke(addr, request, self.timeout)

    async def _each(self, addrs: Iterable[str], fn: Callable[[str], Awaitable[T]]) -> list[T]:
        return list(await asyncio.gather(*(fn(a) for a in sorted(set(addrs)))))

    # -- name server views ----------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        """GET_BROKER_CLUSTER_INFO: clusters, broker names, addresses by broker id."""
        request = self.instance.request(RequestCode.GET_BROKER_CLUSTER_INFO)
        response = check_ok(await self.instance.invoke_namesrv(request, self.timeout))
        return ClusterInfo.decode(response.body)

    async def master_addrs(self, cluster: str | None = None) -> dict[str, str]:
        """Broker name -> master address, for one cluster or all of them."""
        info = await self.cluster_info()
        if cluster is not None and cluster not in info.cluster_addr_table:
            known = ", ".join(sorted(info.cluster_addr_table)) or "none"
            raise MQClientError(f"no cluster named {cluster!r} (known: {known})")
        names = (
            info.cluster_addr_table[cluster] if cluster is not None else set(info.broker_addr_table)
        )
        out = {}
        for name in sorted(names):
            data = info.broker_addr_table.get(name)
            if data is not None and data.master_addr():
                out[name] = data.master_addr() or ""
        return out

    async def topic_list(self) -> set[str]:
        request = self.instance.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        response = check_ok(await self.instance.invoke_namesrv(request, self.timeout))
        return TopicList.decode(response.body).topic_list

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The name servers' current route (raises TopicRouteNotFoundError)."""
        return await self.instance.get_route(topic, refresh=True)

    async def _topic_masters(self, topic: str) -> dict[str, str]:
        route = await self.topic_route(topic)
        return {b.broker_name: b.master_addr() or "" for b in route.broker_datas if b.master_addr()}

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
        await self._each(masters.values(), lambda a: self._call_ok(a, request))
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
        await self._each(masters.values(), lambda a: self._create_all(a, configs))
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
            response = await self._call(addr, request)
            if response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                for config in configs[begin:]:
                    await self._call_ok(addr, self._create_request(config))
                return
            check_ok(response)

    update_topic = create_topic

    async def _call_ok(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        return check_ok(await self._call(addr, request))

    async def delete_topic(self, topic: str, *, cluster: str | None = None) -> None:
        """DELETE_TOPIC_IN_BROKER on every master of ``cluster`` (all clusters if None),
        then DELETE_TOPIC_IN_NAMESRV on every name server."""
        masters = await self.master_addrs(cluster)
        request = self.instance.request(
            RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic)
        )
        await self._each(masters.values(), lambda a: self._call_ok(a, request))
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
        tables = await self._each(
            (await self._topic_masters(topic)).values(),
            lambda a: self._call_ok(a, request),
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
        return KVTable.decode(check_ok(await self._call(addr, request)).body).table

    # -- consumer groups ------------------------------------------------------------------

    async def subscription_groups(
        self, cluster: str | None = None
    ) -> dict[str, SubscriptionGroupConfig]:
        """GET_ALL_SUBSCRIPTIONGROUP_CONFIG from every master, merged by group name."""
        request = self.instance.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        responses = await self._each(
            (await self.master_addrs(cluster)).values(), lambda a: self._call_ok(a, request)
        )
        out: dict[str, SubscriptionGroupConfig] = {}
        for response in responses:
            out.update(SubscriptionGroupWrapper.decode(response.body).subscription_group_table)
        return dict(sorted(out.items()))

    async def groups_of_topic(self, topic: str) -> set[str]:
        """QUERY_TOPIC_CONSUME_BY_WHO on every master of the route."""
        header = QueryTopicConsumeByWhoRequestHeader(topic)
        request = self.instance.request(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, header)
        responses = await self._each(
            (await self._topic_masters(topic)).values(), lambda a: self._call_ok(a, request)
        )
        return {g for r in responses for g in GroupList.decode(r.body).group_list}

    async def consume_progress(
        self, group: str, topic: str | None = None, *, with_age: bool = False
    ) -> list[QueueProgress]:
        """GET_CONSUME_STATS from every master, merged and sorted by queue.

        ``with_age`` also reads the store time of each lagging queue's next message
        (one small pull per queue) so callers can show lag as an age.
        """
        header = GetConsumeStatsRequestHeader(group, topic)
        request = self.instance.request(RequestCode.GET_CONSUME_STATS, header)

        async def one(addr: str) -> ConsumeStats | None:
            response = await self._call(addr, request)
            if response.code != ResponseCode.SUCCESS:
                return None  # this broker knows nothing of the group
            return ConsumeStats.decode(response.body)

        stats = await self._each((await self.master_addrs()).values(), one)
        rows = [
            QueueProgress(mq, w.broker_offset, w.consumer_offset, w.last_timestamp)
            for s in stats
            if s is not None
            for mq, w in s.offset_table.items()
        ]
        if not rows and all(s is None for s in stats):
            raise MQClientError(
                f"no broker has consume stats for group {group}: does the group exist"
                " and has it consumed anything?"
            )
        rows.sort(key=lambda r: r.mq)
        if with_age:
            rows = list(await asyncio.gather(*(self._with_age(group, r) for r in rows)))
        return rows

    async def _with_age(self, group: str, row: QueueProgress) -> QueueProgress:
        if row.lag == 0:
            return row
        try:
            await self.instance.update_route(row.mq.topic)
            result = await self.instance.api.pull(
                row.mq, group=group, offset=max(0, row.consumer_offset), max_nums=1,
                suspend=False, timeout=self.timeout,
            )  # fmt: skip
        except MQClientError:
            return row
        if not result.messages:
            return row
        ts = result.messages[0].store_timestamp
        return QueueProgress(row.mq, row.broker_offset, row.consumer_offset, row.last_timestamp, ts)

    async def consumer_connections(self, group: str) -> ConsumerConnection:
        """GET_CONSUMER_CONNECTION_LIST: the group's live clients and subscriptions.
        Raises MQBrokerError(206) when no member is online."""
        header = GetConsumerConnectionListRequestHeader(group)
        request = self.instance.request(RequestCode.GET_CONSUMER_CONNECTION_LIST, header)
        last: RemotingCommand | None = None
        for addr in (await self.master_addrs()).values():
            last = await self._call(addr, request)
            if last.code == ResponseCode.SUCCESS:
                return ConsumerConnection.decode(last.body)
        code = last.code if last is not None else ResponseCode.CONSUMER_NOT_ONLINE
        raise MQBrokerError(code, f"the consumer group {group} is not online")

    async def create_subscription_group(
        self, group: SubscriptionGroupConfig | str, *, cluster: str | None = None
    ) -> list[str]:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP on every master; returns broker names."""
        config = (
            group if isinstance(group, SubscriptionGroupConfig) else SubscriptionGroupConfig(group)
        )
        request = self.instance.request(
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.encode()
        )
        masters = await self.master_addrs(cluster)
        await self._each(masters.values(), lambda a: self._call_ok(a, request))
        return sorted(masters)

    async def delete_subscription_group(
        self, group: str, *, cluster: str | None = None, remove_offset: bool = True
    ) -> None:
        header = DeleteSubscriptionGroupRequestHeader(group, remove_offset)
        request = self.instance.request(RequestCode.DELETE_SUBSCRIPTIONGROUP, header)
        await self._each(
            (await self.master_addrs(cluster)).values(), lambda a: self._call_ok(a, request)
        )

    # -- offsets --------------------------------------------------------------------------

    async def reset_offset_by_time(
        self, group: str, topic: str, timestamp_ms: int, *, force: bool = True
    ) -> dict[MessageQueue, int]:
        """INVOKE_BROKER_TO_RESET_OFFSET on every master of the topic (``timestamp_ms``
        -1 = to the end); online members are told by their broker. With no member online
        the offsets are written directly (as mqadmin's offline reset). Returns new offsets."""
        header = ResetOffsetRequestHeader(topic, group, timestamp_ms, force)
        request = self.instance.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)
        out: dict[MessageQueue, int] = {}
        offline = False
        for addr in (await self._topic_masters(topic)).values():
            response = await self._call(addr, request)
            if response.code == ResponseCode.CONSUMER_NOT_ONLINE:
                offline = True
                continue
            out.update(ResetOffsetBody.decode(check_ok(response).body).offset_table)
        if offline:
            plan = await self.plan_reset(group, topic, to_time_ms=timestamp_ms)
            await self.apply_reset(group, plan)
            out.update({row.mq: row.new_offset for row in plan})
        return dict(sorted(out.items()))

    async def plan_reset(
        self,
        group: str,
        topic: str,
        *,
        to_offset: int | None = None,
        to_time_ms: int | None = None,
        to_end: bool = False,
        to_begin: bool = False,
    ) -> list[ResetRow]:
        """Old -> new offset per queue for a reset (nothing is changed): an explicit
        offset (clamped to each queue's min..max), a time (-1 = end), the end or the start."""
        chosen = [to_offset is not None, to_time_ms is not None, to_end, to_begin]
        if sum(chosen) != 1:
            raise ValueError("give exactly one of to_offset, to_time_ms, to_end, to_begin")
        api = self.instance.api
        queues = subscribe_queues(topic, await self.topic_route(topic))

        async def row(mq: MessageQueue) -> ResetRow:
            old = await api.query_consumer_offset(group, mq)
            lo, hi = await api.min_offset(mq), await api.max_offset(mq)
            if to_end or to_time_ms == -1:
                new = hi
            elif to_begin:
                new = lo
            elif to_time_ms is not None:
                new = await api.search_offset(mq, to_time_ms)
            else:
                assert to_offset is not None
                new = min(max(to_offset, lo), hi)
            return ResetRow(mq, old, new)

        return list(await asyncio.gather(*(row(mq) for mq in queues)))

    async def apply_reset(
        self, group: str, rows: Iterable[ResetRow] | Mapping[MessageQueue, int]
    ) -> None:
        """Write offsets with UPDATE_CONSUMER_OFFSET (acknowledged). Members online keep
        their in-memory offsets and may overwrite these: stop them first, or use
        :meth:`reset_offset_by_time`, which tells them."""
        items = rows.items() if isinstance(rows, Mapping) else ((r.mq, r.new_offset) for r in rows)
        api = self.instance.api
        await asyncio.gather(
            *(api.update_consumer_offset(group, mq, off, oneway=False) for mq, off in items)
        )

    # -- messages -------------------------------------------------------------------------

    async def query_by_key(
        self,
        topic: str,
        key: str,
        *,
        max_num: int = 64,
        begin_ms: int = 0,
        end_ms: int = END_OF_TIME,
    ) -> list[MessageExt]:
        """Messages of ``topic`` whose KEYS include ``key`` (index lookup on every master),
        oldest first, at most ``max_num`` in total."""
        return await self._query(topic, key, max_num, begin_ms, end_ms, unique=False)

    async def query_by_unique_key(
        self, topic: str, key: str, *, begin_ms: int = 0, end_ms: int = END_OF_TIME
    ) -> list[MessageExt]:
        """Messages whose UNIQ_KEY (the producer's msg id) is ``key`` (retries share it)."""
        return await self._query(topic, key, 32, begin_ms, end_ms, unique=True)

    async def _query(
        self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int, *, unique: bool
    ) -> list[MessageExt]:
        api = self.instance.api
        masters = await self._topic_masters(topic)
        found = await self._each(
            masters.values(),
            lambda a: api.query_message(
                a,
                topic,
                key,
                max_num,
                begin_ms,
                end_ms,
                unique_key=unique,
                timeout=self.timeout * 3,
            ),
        )
        seen: set[tuple[tuple[str, int], int]] = set()
        out: list[MessageExt] = []
        for msg in sorted((m for batch in found for m in batch), key=lambda m: m.store_timestamp):
            # the index matches key hashes: re-check the real key
            real = msg.unique_key == key if unique else key in msg.keys
            ident = (msg.store_host, msg.commit_log_offset)
            if real and msg.topic == topic and ident not in seen:
                seen.add(ident)
                out.append(msg)
        return out[:max_num]

    async def query_by_time(
        self, topic: str, begin_ms: int, end_ms: int, *, max_num: int = 64
    ) -> list[MessageExt]:
        """Messages of ``topic`` stored in ``begin_ms..end_ms`` (both inclusive), oldest
        first, at most ``max_num`` in total across all brokers.

        Per queue of every broker, SEARCH_OFFSET_BY_TIMESTAMP bounds the range to pull,
        asked one millisecond outside the window on each side: mq answers the first
        message stored at or after the time, 4.9.8 the *nearest* one (any of several
        stored in that millisecond), so asking for ``begin_ms``/``end_ms`` themselves
        could start after, or stop before, messages stored in the window's first or last
        millisecond. Each message's store time is checked; at most ``max_num`` are kept
        per queue, as the merged total is capped anyway.
        """
        if max_num <= 0 or end_ms < begin_ms:
            return []
        api = self.instance.api
        queues = await self.instance.subscribe_queues(topic, refresh=True)

        async def one(mq: MessageQueue) -> list[MessageExt]:
            start = await api.search_offset(mq, max(0, begin_ms - 1), self.timeout)
            stop = await api.search_offset(mq, min(END_OF_TIME, end_ms + 1), self.timeout) + 1
            found: list[MessageExt] = []
            while start < stop and len(found) < max_num:
                batch = min(_PULL_BATCH, stop - start)
                result = await self.read_queue(mq, start, batch, timeout=self.timeout)
                if result.status is not PullStatus.FOUND or result.next_begin_offset <= start:
                    break
                found += [
                    m for m in result.messages
                    if m.queue_offset < stop and begin_ms <= m.store_timestamp <= end_ms
                ]  # fmt: skip
                start = result.next_begin_offset
            return found

        batches = await asyncio.gather(*(one(mq) for mq in queues))
        # Equal store times (a millisecond holds many) go by broker, queue and offset, so the
        # same window gives the same list, and a lower max_num a prefix of it.
        merged = sorted(
            (m for b in batches for m in b),
            key=lambda m: (m.store_timestamp, m.store_host, m.queue_id, m.queue_offset),
        )
        return merged[:max_num]

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """VIEW_MESSAGE_BY_ID at the broker the offset msg id names."""
        return await self.instance.api.view_message_by_id(offset_msg_id)

    async def find_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        """By offset msg id, else (with ``topic``) by unique key, as ``mqadmin queryMsgById``."""
        try:
            return await self.view_message(msg_id)
        except (MessageIdError, MQClientError) as exc:
            if topic is None:
                raise
            found = await self.query_by_unique_key(topic, msg_id)
            if not found:
                raise MQClientError(f"no message {msg_id} in topic {topic}") from exc
            return found[0]

    # -- for tools: queues, offsets and reads of one queue -------------------------------

    async def topic_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of ``topic`` in the name servers' current route (raises
        TopicRouteNotFoundError)."""
        return await self.instance.subscribe_queues(topic, refresh=True)

    async def min_offset(self, mq: MessageQueue) -> int:
        return await self.instance.api.min_offset(mq)

    async def max_offset(self, mq: MessageQueue) -> int:
        """The next offset to be written in ``mq``."""
        return await self.instance.api.max_offset(mq)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return await self.instance.api.search_offset(mq, timestamp_ms)

    async def read_queue(
        self, mq: MessageQueue, offset: int, max_nums: int = 32, *, timeout: float = PULL_TIMEOUT
    ) -> PullResult:
        """Messages of ``mq`` from ``offset``, pulled as TOOLS_CONSUMER without waiting for
        new ones: reading them commits nothing."""
        return await self.instance.api.pull(
            mq, group=TOOLS_GROUP, offset=offset, max_nums=max_nums, suspend=False,
            timeout=timeout,
        )  # fmt: skip

    # -- one broker's operations (the methods that name a broker take its address) -------

    async def _ask(
        self, addr: str, code: int, header: CommandHeader | None = None, *,
        timeout: float | None = None,
    ) -> RemotingCommand:  # fmt: skip
        request = self.instance.request(code, header)
        return await self.instance.invoke(addr, request, timeout or self.timeout)

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

    # -- one broker's tables (what a dashboard polls, broker by broker) -----------------

    async def broker_config(self, addr: str) -> dict[str, str]:
        """GET_BROKER_CONFIG: the broker's running configuration (``messageDelayLevel``...)."""
        body = check_ok(await self._ask(addr, RequestCode.GET_BROKER_CONFIG)).body
        return parse_properties(bytes(body or b"").decode("utf-8", "replace"))

    async def broker_topic_configs(self, addr: str) -> dict[str, TopicConfig]:
        """GET_ALL_TOPIC_CONFIG: every topic one broker hosts."""
        response = check_ok(await self._ask(addr, RequestCode.GET_ALL_TOPIC_CONFIG))
        return TopicConfigSerializeWrapper.decode(response.body).topic_config_table

    async def broker_consumer_offsets(self, addr: str) -> dict[str, dict[int, int]]:
        """GET_ALL_CONSUMER_OFFSET: ``topic@group`` -> {queue id: offset}, every group's
        offsets at one broker in one answer (no request per group)."""
        response = check_ok(await self._ask(addr, RequestCode.GET_ALL_CONSUMER_OFFSET))
        return ConsumerOffsetSerializeWrapper.decode(response.body).offset_table

    async def broker_subscription_groups(self, addr: str) -> dict[str, SubscriptionGroupConfig]:
        """GET_ALL_SUBSCRIPTIONGROUP_CONFIG at one broker."""
        response = check_ok(await self._ask(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
        return SubscriptionGroupWrapper.decode(response.body).subscription_group_table

    async def broker_topic_stats(self, addr: str, topic: str) -> dict[MessageQueue, TopicOffset]:
        """GET_TOPIC_STATS_INFO at one broker: min/max offset and last update per queue."""
        header = GetTopicStatsInfoRequestHeader(topic)
        response = check_ok(await self._ask(addr, RequestCode.GET_TOPIC_STATS_INFO, header))
        return TopicStatsTable.decode(response.body).offset_table

    async def peek(
        self, addr: str, topic: str, queue_id: int, offset: int, max_nums: int = 32
    ) -> list[MessageExt]:
        """Messages of one queue at ``addr`` from ``offset``, pulled as TOOLS_CONSUMER (no
        offset committed, no long poll), so reading them consumes nothing."""
        header = PullMessageRequestHeader(
            consumer_group=TOOLS_GROUP, topic=topic, queue_id=queue_id, queue_offset=offset,
            max_msg_nums=max_nums, sys_flag=PullSysFlag.SUBSCRIPTION, commit_offset=0,
            suspend_timeout_millis=0, sub_version=0, subscription="*", expression_type="TAG",
        )  # fmt: skip
        return (await self.instance.api.pull_message(addr, header, self.timeout)).messages

    # -- store housekeeping -------------------------------------------------------------

    async def clean_expired_consume_queue(self, addrs: Iterable[str]) -> None:
        """CLEAN_EXPIRED_CONSUMEQUEUE: each broker destroys the consume queues whose
        messages are all deleted from its commit log."""
        await self._each_ok(addrs, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)

    async def clean_unused_topic(self, addrs: Iterable[str]) -> None:
        """CLEAN_UNUSED_TOPIC: each broker destroys the consume queues of topics it no
        longer has in its topic table."""
        await self._each_ok(addrs, RequestCode.CLEAN_UNUSED_TOPIC)

    async def delete_expired_commit_log(self, addrs: Iterable[str]) -> None:
        """DELETE_EXPIRED_COMMITLOG: one cleanup pass now, as at ``deleteWhen``."""
        await self._each_ok(addrs, RequestCode.DELETE_EXPIRED_COMMITLOG)

    async def _each_ok(self, addrs: Iterable[str], code: int) -> None:
        # file deletion can take a while: 3 x the timeout, as mqadmin's housekeeping calls
        responses = await asyncio.gather(
            *(self._ask(a, code, timeout=self.timeout * 3) for a in sorted(set(addrs)))
        )
        for response in responses:
            check_ok(response)

    # -- consume queues and consume stats -----------------------------------------------

    async def query_consume_queue(
        self,
        addr: str,
        topic: str,
        queue_id: int,
        index: int,
        count: int = 10,
        *,
        group: str | None = None,
    ) -> tuple[QueryConsumeQueueResponseBody | None, str | None]:
        """QUERY_CONSUME_QUEUE: ``count`` units from ``index`` (at most to the end of
        their file), the queue's bounds and ``group``'s subscription. The broker answers
        an index it has no unit for with a remark and no body: ``(None, remark)``."""
        header = QueryConsumeQueueRequestHeader(topic, queue_id, index, count, group)
        response = check_ok(await self._ask(addr, RequestCode.QUERY_CONSUME_QUEUE, header))
        if not response.body:
            return None, response.remark
        return QueryConsumeQueueResponseBody.decode(response.body), response.remark

    async def broker_consume_stats(
        self, addr: str, *, order_only: bool = False
    ) -> ConsumeStatsList:
        """GET_BROKER_CONSUME_STATS: every subscription group's ConsumeStats per topic."""
        header = GetConsumeStatsInBrokerHeader(order_only)
        response = await self._ask(
            addr, RequestCode.GET_BROKER_CONSUME_STATS, header, timeout=self.timeout * 3
        )
        return ConsumeStatsList.decode(check_ok(response).body)

    async def consume_time_span(self, topic: str, group: str) -> list[QueueTimeSpan]:
        """QUERY_CONSUME_TIME_SPAN on every master of the topic: per queue the oldest,
        newest and last consumed store times and how long the next message has waited."""
        header = QueryConsumeTimeSpanRequestHeader(topic, group)
        addrs = await self._route_masters(topic)
        responses = await asyncio.gather(
            *(self._ask(a, RequestCode.QUERY_CONSUME_TIME_SPAN, header) for a in addrs)
        )
        spans = [
            s
            for r in responses
            for s in QueryConsumeTimeSpanBody.decode(check_ok(r).body).consume_time_span_set
        ]
        return sorted(spans, key=lambda s: s.message_queue)

    async def _route_masters(self, topic: str) -> list[str]:
        route = await self.topic_route(topic)
        return sorted({b.master_addr() or "" for b in route.broker_datas if b.master_addr()})

    # -- offsets ------------------------------------------------------------------------

    async def clone_group_offset(
        self, src_group: str, dest_group: str, topic: str | None = None, *, offline: bool = False
    ) -> list[str]:
        """CLONE_GROUP_OFFSET on every master (of ``topic``'s route, or of all clusters
        without one): ``dest_group`` gets ``src_group``'s offsets. ``offline`` copies even
        topics an online ``src_group`` no longer subscribes to. Returns the addresses."""
        header = CloneGroupOffsetRequestHeader(src_group, dest_group, topic, offline)
        if topic:
            addrs = await self._route_masters(topic)
        else:
            addrs = sorted(set((await self.master_addrs()).values()))
        responses = await asyncio.gather(
            *(self._ask(a, RequestCode.CLONE_GROUP_OFFSET, header) for a in addrs)
        )
        for response in responses:
            check_ok(response)
        return addrs

    async def correction_offsets(
        self, addr: str, topic: str, compare_group: str, filter_groups: Iterable[str] = ()
    ) -> dict[int, int]:
        """QUERY_CORRECTION_OFFSET: per queue id the smallest readable offset of the other
        groups on ``topic`` (2**63-1 where ``compare_group`` is behind it)."""
        header = QueryCorrectionOffsetHeader(compare_group, topic, ",".join(filter_groups) or None)
        response = check_ok(await self._ask(addr, RequestCode.QUERY_CORRECTION_OFFSET, header))
        return QueryCorrectionOffsetBody.decode(response.body).correction_offsets

    # -- clients ------------------------------------------------------------------------

    async def producer_table(self, addr: str) -> ProducerTableInfo:
        """GET_ALL_PRODUCER_INFO: every producer group's connections to one broker."""
        response = check_ok(await self._ask(addr, RequestCode.GET_ALL_PRODUCER_INFO))
        return ProducerTableInfo.decode(response.body)

    async def consumer_status(
        self, group: str, topic: str, client_addr: str | None = None
    ) -> dict[str, dict[MessageQueue, int]]:
        """INVOKE_BROKER_TO_GET_CONSUMER_STATUS on the topic's masters: each live
        client's offsets (its own view), merged by client id. A broker the group is not
        connected to is passed over; MQBrokerError when none answers."""
        header = GetConsumerStatusRequestHeader(topic, group, client_addr)
        addrs = await self._route_masters(topic)
        responses = await asyncio.gather(
            *(self._ask(a, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header) for a in addrs)
        )
        answered = [r for r in responses if r.code == ResponseCode.SUCCESS]
        if responses and not answered:
            check_ok(responses[0])
        out: dict[str, dict[MessageQueue, int]] = {}
        for response in answered:
            body = GetConsumerStatusBody.decode(response.body)
            for cid, table in body.consumer_table.items():
                out.setdefault(cid, {}).update(table)
        return out

    async def consume_message_directly(
        self, addr: str, group: str, client_id: str, msg_id: str
    ) -> dict[str, Any]:
        """CONSUME_MESSAGE_DIRECTLY: the broker at ``addr`` (where the offset msg id
        points) hands the message to ``client_id``, which consumes it and answers its
        ConsumeMessageDirectlyResult (``consumeResult``, ``spentTimeMills``, ...)."""
        header = ConsumeMessageDirectlyResultRequestHeader(group, client_id, msg_id)
        response = await self._ask(
            addr, RequestCode.CONSUME_MESSAGE_DIRECTLY, header, timeout=max(self.timeout, 12.0)
        )
        check_ok(response)
        result = decode_json(response.body) if response.body else {}
        return result if isinstance(result, dict) else {"result": result}

    # -- statistics ---------------------------------------------------------------------

    async def broker_stats(self, addr: str, stats_name: str, stats_key: str) -> BrokerStatsData:
        """VIEW_BROKER_STATS_DATA: one statistic (``TOPIC_PUT_NUMS`` of a topic,
        ``GROUP_GET_NUMS`` of ``topic@group``, ``BROKER_PUT_NUMS`` of the cluster...)
        over the last minute, hour and day."""
        header = ViewBrokerStatsDataRequestHeader(stats_name, stats_key)
        response = check_ok(await self._ask(addr, RequestCode.VIEW_BROKER_STATS_DATA, header))
        return BrokerStatsData.decode(response.body)

    def __repr__(self) -> str:
        return f"<Admin {self.namesrv} {'started' if self._instance else 'new'}>"

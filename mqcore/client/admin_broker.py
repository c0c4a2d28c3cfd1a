"""Broker-level admin operations of :class:`~mqcore.client.admin.Admin`: store
housekeeping, raw consume-queue units, every group's consume stats, producer tables,
statistics windows, and the consumer relays (mqadmin's cleanExpiredCQ, cleanUnusedTopic,
deleteExpiredCommitLog, queryCq, brokerConsumeStats, producer, statsAll,
queryMsgById -d, cloneGroupOffset).

The methods that name a broker take its address; :meth:`BrokerAdminMixin.masters_of`
turns a cluster or a broker name into addresses the way the other admin commands do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mqcore.client.errors import check_ok
from mqcore.common.properties import parse_properties
from mqcore.errors import MQClientError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    ConsumerOffsetSerializeWrapper,
    MessageQueue,
    QueryConsumeTimeSpanBody,
    QueueTimeSpan,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
    TopicOffset,
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
from mqcore.protocol.headers import (
    CloneGroupOffsetRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerStatusRequestHeader,
    GetTopicStatsInfoRequestHeader,
    PullMessageRequestHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    ViewBrokerStatsDataRequestHeader,
)
from mqcore.protocol.headers.consume import PullSysFlag
from mqcore.protocol.headers.store_admin import GetConsumeStatsInBrokerHeader

if TYPE_CHECKING:
    from mqcore.client.instance import ClientInstance
    from mqcore.common.metadata import SubscriptionGroupConfig, TopicConfig
    from mqcore.message import MessageExt
    from mqcore.protocol.bodies import ClusterInfo, TopicRouteData
    from mqcore.protocol.headers import CommandHeader

__all__ = ["TOOLS_GROUP", "BrokerAdminMixin"]

TOOLS_GROUP = "TOOLS_CONSUMER"  # RocketMQ's MixAll.TOOLS_CONSUMER_GROUP, for admin pulls


class BrokerAdminMixin:
    """Mixed into :class:`~mqcore.client.admin.Admin`, which provides the attributes."""

    timeout: float

    if TYPE_CHECKING:

        @property
        def instance(self) -> ClientInstance: ...

        async def cluster_info(self) -> ClusterInfo: ...

        async def master_addrs(self, cluster: str | None = None) -> dict[str, str]: ...

        async def topic_route(self, topic: str) -> TopicRouteData: ...

    async def _ask(
        self,
        addr: str,
        code: int,
        header: CommandHeader | None = None,
        *,
        timeout: float | None = None,
    ) -> RemotingCommand:
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

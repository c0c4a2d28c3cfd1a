"""One broker's tables and housekeeping, :class:`BrokerAdmin`, a part of
:class:`~mqcore.client.admin.Admin` (``admin.brokers``, its methods also on the admin).

What a dashboard polls broker by broker and what mqadmin's broker commands send: the
broker's configuration, topic, offset and group tables, consume queue units, consume and
broker statistics, producers, a message handed to one consumer, and the store cleanups.
Every method takes the address of the broker it asks (``Admin.masters_of`` gives them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from mqcore.client.errors import check_ok
from mqcore.common.metadata import SubscriptionGroupConfig, TopicConfig
from mqcore.common.properties import parse_properties
from mqcore.protocol import RequestCode
from mqcore.protocol.bodies import (
    ConsumerOffsetSerializeWrapper,
    MessageQueue,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
    TopicOffset,
    TopicStatsTable,
    decode_json,
)
from mqcore.protocol.bodies.consumer_admin import (
    BrokerStatsData,
    ProducerTableInfo,
    QueryCorrectionOffsetBody,
)
from mqcore.protocol.bodies.store_admin import ConsumeStatsList, QueryConsumeQueueResponseBody
from mqcore.protocol.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryConsumeQueueRequestHeader,
    QueryCorrectionOffsetHeader,
    ViewBrokerStatsDataRequestHeader,
)
from mqcore.protocol.headers.store_admin import GetConsumeStatsInBrokerHeader

if TYPE_CHECKING:
    from mqcore.client.admin_link import AdminLink

__all__ = ["BrokerAdmin"]


class BrokerAdmin:
    """Requests to one broker at a time, sent through the admin's ``link``."""

    def __init__(self, link: AdminLink) -> None:
        self._link = link

    async def broker_config(self, addr: str) -> dict[str, str]:
        """GET_BROKER_CONFIG: the broker's running configuration (``messageDelayLevel``...)."""
        body = check_ok(await self._link.ask(addr, RequestCode.GET_BROKER_CONFIG)).body
        return parse_properties(bytes(body or b"").decode("utf-8", "replace"))

    async def update_broker_config(self, addr: str, changes: Mapping[str, str]) -> str | None:
        """UPDATE_BROKER_CONFIG: the broker saves ``changes`` (``key -> value`` by
        RocketMQ's names) and applies those it reads at run time; returns its remark (mq's
        broker says which keys wait for a restart; 4.9.8 says nothing)."""
        body = "".join(f"{key}={value}\n" for key, value in changes.items()).encode()
        link = self._link
        request = link.request(RequestCode.UPDATE_BROKER_CONFIG, body=body)
        return check_ok(await link.call(addr, request)).remark

    async def broker_topic_configs(self, addr: str) -> dict[str, TopicConfig]:
        """GET_ALL_TOPIC_CONFIG: every topic one broker hosts."""
        response = check_ok(await self._link.ask(addr, RequestCode.GET_ALL_TOPIC_CONFIG))
        return TopicConfigSerializeWrapper.decode(response.body).topic_config_table

    async def broker_consumer_offsets(self, addr: str) -> dict[str, dict[int, int]]:
        """GET_ALL_CONSUMER_OFFSET: ``topic@group`` -> {queue id: offset}, every group's
        offsets at one broker in one answer (no request per group)."""
        response = check_ok(await self._link.ask(addr, RequestCode.GET_ALL_CONSUMER_OFFSET))
        return ConsumerOffsetSerializeWrapper.decode(response.body).offset_table

    async def broker_subscription_groups(self, addr: str) -> dict[str, SubscriptionGroupConfig]:
        """GET_ALL_SUBSCRIPTIONGROUP_CONFIG at one broker."""
        response = check_ok(
            await self._link.ask(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        )
        return SubscriptionGroupWrapper.decode(response.body).subscription_group_table

    async def broker_topic_stats(self, addr: str, topic: str) -> dict[MessageQueue, TopicOffset]:
        """GET_TOPIC_STATS_INFO at one broker: min/max offset and last update per queue."""
        header = GetTopicStatsInfoRequestHeader(topic)
        response = check_ok(await self._link.ask(addr, RequestCode.GET_TOPIC_STATS_INFO, header))
        return TopicStatsTable.decode(response.body).offset_table

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
            *(self._link.ask(a, code, timeout=self._link.timeout() * 3) for a in sorted(set(addrs)))
        )
        for response in responses:
            check_ok(response)

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
        response = check_ok(await self._link.ask(addr, RequestCode.QUERY_CONSUME_QUEUE, header))
        if not response.body:
            return None, response.remark
        return QueryConsumeQueueResponseBody.decode(response.body), response.remark

    async def broker_consume_stats(
        self, addr: str, *, order_only: bool = False
    ) -> ConsumeStatsList:
        """GET_BROKER_CONSUME_STATS: every subscription group's ConsumeStats per topic."""
        header = GetConsumeStatsInBrokerHeader(order_only)
        response = await self._link.ask(
            addr, RequestCode.GET_BROKER_CONSUME_STATS, header, timeout=self._link.timeout() * 3
        )
        return ConsumeStatsList.decode(check_ok(response).body)

    async def correction_offsets(
        self, addr: str, topic: str, compare_group: str, filter_groups: Iterable[str] = ()
    ) -> dict[int, int]:
        """QUERY_CORRECTION_OFFSET: per queue id the smallest readable offset of the other
        groups on ``topic`` (2**63-1 where ``compare_group`` is behind it)."""
        header = QueryCorrectionOffsetHeader(compare_group, topic, ",".join(filter_groups) or None)
        response = check_ok(await self._link.ask(addr, RequestCode.QUERY_CORRECTION_OFFSET, header))
        return QueryCorrectionOffsetBody.decode(response.body).correction_offsets

    async def producer_table(self, addr: str) -> ProducerTableInfo:
        """GET_ALL_PRODUCER_INFO: every producer group's connections to one broker."""
        response = check_ok(await self._link.ask(addr, RequestCode.GET_ALL_PRODUCER_INFO))
        return ProducerTableInfo.decode(response.body)

    async def consume_message_directly(
        self, addr: str, group: str, client_id: str, msg_id: str
    ) -> dict[str, Any]:
        """CONSUME_MESSAGE_DIRECTLY: the broker at ``addr`` (where the offset msg id
        points) hands the message to ``client_id``, which consumes it and answers its
        ConsumeMessageDirectlyResult (``consumeResult``, ``spentTimeMills``, ...)."""
        header = ConsumeMessageDirectlyResultRequestHeader(group, client_id, msg_id)
        response = await self._link.ask(
            addr,
            RequestCode.CONSUME_MESSAGE_DIRECTLY,
            header,
            timeout=max(self._link.timeout(), 12.0),
        )
        check_ok(response)
        result = decode_json(response.body) if response.body else {}
        return result if isinstance(result, dict) else {"result": result}

    async def broker_stats(self, addr: str, stats_name: str, stats_key: str) -> BrokerStatsData:
        """VIEW_BROKER_STATS_DATA: one statistic (``TOPIC_PUT_NUMS`` of a topic,
        ``GROUP_GET_NUMS`` of ``topic@group``, ``BROKER_PUT_NUMS`` of the cluster...)
        over the last minute, hour and day."""
        header = ViewBrokerStatsDataRequestHeader(stats_name, stats_key)
        response = check_ok(await self._link.ask(addr, RequestCode.VIEW_BROKER_STATS_DATA, header))
        return BrokerStatsData.decode(response.body)

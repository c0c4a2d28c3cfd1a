"""Consumer groups and their offsets, :class:`GroupAdmin`, a part of
:class:`~mqcore.client.admin.Admin` (``admin.groups``, its methods also on the admin).

Groups are cluster-wide: a group's configuration goes to every master, its progress is
read from every master and merged by queue, an offset reset goes to the masters of the
topic (the members online are told by their broker; with none online the offsets are
written directly, as mqadmin's offline reset does).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mqcore.client.errors import check_ok
from mqcore.client.instance import subscribe_queues
from mqcore.common.metadata import SubscriptionGroupConfig
from mqcore.errors import MQBrokerError, MQClientError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    ConsumerConnection,
    ConsumeStats,
    GroupList,
    MessageQueue,
    QueryConsumeTimeSpanBody,
    QueueTimeSpan,
    ResetOffsetBody,
    SubscriptionGroupWrapper,
)
from mqcore.protocol.bodies.consumer_admin import GetConsumerStatusBody
from mqcore.protocol.bodies.running_info import ConsumerRunningInfo
from mqcore.protocol.headers import (
    CloneGroupOffsetRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    GetConsumeStatsRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
)

if TYPE_CHECKING:
    from mqcore.client.admin_link import AdminLink

__all__ = ["GroupAdmin", "QueueProgress", "ResetRow"]


@dataclass(frozen=True, slots=True)
class QueueProgress:
    """One queue of a group's progress; ``lag`` is never negative. ``first_unconsumed_ts``
    (store time of the next message to consume) is filled when asked for (``with_age``).

    For a queue the group consumes by POP, ``consumer_offset`` is its pop offset (what a
    pop hands out next) and the broker also says how many messages are ``in_flight``
    (handed out, not acknowledged) and how many of those are still ``invisible``; both
    are None for a queue nobody popped from since its broker started, and from brokers
    that do not count them (RocketMQ's)."""

    mq: MessageQueue
    broker_offset: int
    consumer_offset: int
    last_timestamp: int
    first_unconsumed_ts: int | None = None
    in_flight: int | None = None
    invisible: int | None = None

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


class GroupAdmin:
    """Group and offset requests to the masters that hold them, sent through the
    admin's ``link``."""

    def __init__(self, link: AdminLink) -> None:
        self._link = link

    async def subscription_groups(
        self, cluster: str | None = None
    ) -> dict[str, SubscriptionGroupConfig]:
        """GET_ALL_SUBSCRIPTIONGROUP_CONFIG from every master, merged by group name."""
        request = self._link.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        responses = await self._link.each(
            (await self._link.master_addrs(cluster)).values(),
            lambda a: self._link.call_ok(a, request),
        )
        out: dict[str, SubscriptionGroupConfig] = {}
        for response in responses:
            out.update(SubscriptionGroupWrapper.decode(response.body).subscription_group_table)
        return dict(sorted(out.items()))

    async def groups_of_topic(self, topic: str) -> set[str]:
        """QUERY_TOPIC_CONSUME_BY_WHO on every master of the route."""
        header = QueryTopicConsumeByWhoRequestHeader(topic)
        request = self._link.request(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, header)
        responses = await self._link.each(
            (await self._link.topic_masters(topic)).values(),
            lambda a: self._link.call_ok(a, request),
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
        request = self._link.request(RequestCode.GET_CONSUME_STATS, header)

        async def one(addr: str) -> ConsumeStats | None:
            response = await self._link.call(addr, request)
            if response.code != ResponseCode.SUCCESS:
                return None  # this broker knows nothing of the group
            return ConsumeStats.decode(response.body)

        stats = await self._link.each((await self._link.master_addrs()).values(), one)
        rows = [
            QueueProgress(
                mq,
                w.broker_offset,
                w.consumer_offset,
                w.last_timestamp,
                in_flight=w.pop_in_flight,
                invisible=w.pop_invisible,
            )
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
            await self._link.instance().update_route(row.mq.topic)
            result = await self._link.instance().api.pull(
                row.mq, group=group, offset=max(0, row.consumer_offset), max_nums=1,
                suspend=False, timeout=self._link.timeout(),
            )  # fmt: skip
        except MQClientError:
            return row
        if not result.messages:
            return row
        return dataclasses.replace(row, first_unconsumed_ts=result.messages[0].store_timestamp)

    async def consumer_connections(self, group: str) -> ConsumerConnection:
        """GET_CONSUMER_CONNECTION_LIST: the group's live clients and subscriptions.
        Raises MQBrokerError(206) when no member is online."""
        header = GetConsumerConnectionListRequestHeader(group)
        request = self._link.request(RequestCode.GET_CONSUMER_CONNECTION_LIST, header)
        last: RemotingCommand | None = None
        for addr in (await self._link.master_addrs()).values():
            last = await self._link.call(addr, request)
            if last.code == ResponseCode.SUCCESS:
                return ConsumerConnection.decode(last.body)
        code = last.code if last is not None else ResponseCode.CONSUMER_NOT_ONLINE
        raise MQBrokerError(code, f"the consumer group {group} is not online")

    async def consumer_running_info(
        self, group: str, client_id: str, *, jstack: bool = False
    ) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO: the client's own account of itself (its settings,
        subscriptions, held queues, rates and, with ``jstack``, its stacks), relayed by a
        broker the client is connected to (the masters are asked in turn). Raises
        MQBrokerError when none can reach it."""
        header = GetConsumerRunningInfoRequestHeader(group, client_id, jstack)
        last: RemotingCommand | None = None
        for addr in (await self._link.master_addrs()).values():
            last = await self._link.ask(
                addr,
                RequestCode.GET_CONSUMER_RUNNING_INFO,
                header,
                timeout=max(self._link.timeout() * 3, 10.0),  # the broker waits on the client
            )
            if last.code == ResponseCode.SUCCESS:
                return ConsumerRunningInfo.decode(last.body)
        if last is None:
            raise MQBrokerError(ResponseCode.CONSUMER_NOT_ONLINE, "no broker is registered")
        raise MQBrokerError(last.code, last.remark)

    async def create_subscription_group(
        self, group: SubscriptionGroupConfig | str, *, cluster: str | None = None
    ) -> list[str]:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP on every master; returns broker names."""
        config = (
            group if isinstance(group, SubscriptionGroupConfig) else SubscriptionGroupConfig(group)
        )
        request = self._link.request(
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.encode()
        )
        masters = await self._link.master_addrs(cluster)
        await self._link.each(masters.values(), lambda a: self._link.call_ok(a, request))
        return sorted(masters)

    async def delete_subscription_group(
        self, group: str, *, cluster: str | None = None, remove_offset: bool = True
    ) -> None:
        header = DeleteSubscriptionGroupRequestHeader(group, remove_offset)
        request = self._link.request(RequestCode.DELETE_SUBSCRIPTIONGROUP, header)
        await self._link.each(
            (await self._link.master_addrs(cluster)).values(),
            lambda a: self._link.call_ok(a, request),
        )

    async def reset_offset_by_time(
        self, group: str, topic: str, timestamp_ms: int, *, force: bool = True
    ) -> dict[MessageQueue, int]:
        """INVOKE_BROKER_TO_RESET_OFFSET on every master of the topic (``timestamp_ms``
        -1 = to the end); online members are told by their broker. With no member online
        the offsets are written directly (as mqadmin's offline reset). Returns new offsets."""
        header = ResetOffsetRequestHeader(topic, group, timestamp_ms, force)
        request = self._link.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)
        out: dict[MessageQueue, int] = {}
        offline = False
        for addr in (await self._link.topic_masters(topic)).values():
            response = await self._link.call(addr, request)
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
        api = self._link.instance().api
        queues = subscribe_queues(topic, await self._link.topic_route(topic))

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
        api = self._link.instance().api
        await asyncio.gather(
            *(api.update_consumer_offset(group, mq, off, oneway=False) for mq, off in items)
        )

    async def clone_group_offset(
        self, src_group: str, dest_group: str, topic: str | None = None, *, offline: bool = False
    ) -> list[str]:
        """CLONE_GROUP_OFFSET on every master (of ``topic``'s route, or of all clusters
        without one): ``dest_group`` gets ``src_group``'s offsets. ``offline`` copies even
        topics an online ``src_group`` no longer subscribes to. Returns the addresses."""
        header = CloneGroupOffsetRequestHeader(src_group, dest_group, topic, offline)
        if topic:
            addrs = await self._link.route_masters(topic)
        else:
            addrs = sorted(set((await self._link.master_addrs()).values()))
        responses = await asyncio.gather(
            *(self._link.ask(a, RequestCode.CLONE_GROUP_OFFSET, header) for a in addrs)
        )
        for response in responses:
            check_ok(response)
        return addrs

    async def consume_time_span(self, topic: str, group: str) -> list[QueueTimeSpan]:
        """QUERY_CONSUME_TIME_SPAN on every master of the topic: per queue the oldest,
        newest and last consumed store times and how long the next message has waited."""
        header = QueryConsumeTimeSpanRequestHeader(topic, group)
        addrs = await self._link.route_masters(topic)
        responses = await asyncio.gather(
            *(self._link.ask(a, RequestCode.QUERY_CONSUME_TIME_SPAN, header) for a in addrs)
        )
        spans = [
            s
            for r in responses
            for s in QueryConsumeTimeSpanBody.decode(check_ok(r).body).consume_time_span_set
        ]
        return sorted(spans, key=lambda s: s.message_queue)

    async def consumer_status(
        self, group: str, topic: str, client_addr: str | None = None
    ) -> dict[str, dict[MessageQueue, int]]:
        """INVOKE_BROKER_TO_GET_CONSUMER_STATUS on the topic's masters: each live
        client's offsets (its own view), merged by client id. A broker the group is not
        connected to is passed over; MQBrokerError when none answers."""
        header = GetConsumerStatusRequestHeader(topic, group, client_addr)
        addrs = await self._link.route_masters(topic)
        responses = await asyncio.gather(
            *(
                self._link.ask(a, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header)
                for a in addrs
            )
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

"""PULL_MESSAGE (11) with long polling: spec §8.7 (``PullMessageProcessor``).

Checks (broker/group/topic permissions, queue id), the subscription (from the request
with the SUBSCRIPTION flag, else the one the group registered by heartbeat), then a
store read filtered by the consume queue's tag hash (TAG) or by the record's properties
(SQL92, with ``enablePropertyFilter``). Found records go back as one
body joined once from the store's memoryviews, byte-identical to the commit log.

A pull that finds nothing (PULL_NOT_FOUND) with the SUSPEND flag is held in
:class:`~mqcore.broker.long_polling.LongPollingService` until a matching message
arrives on its queue or ``suspendTimeoutMillis`` passes (``shortPollingTimeMills`` with
long polling off), then re-run once without suspension and answered with that result.
The piggybacked commit offset is stored during the first run only, and never by a slave.

Held pulls are answered outside the read loop, so the remoting layer's back-pressure
(stop reading past the high-water mark) cannot bound them: a client that never reads
could park any number and have each answered with up to 256 KiB at the next arrival.
So a connection holds at most :data:`MAX_HELD_PULLS_PER_CHANNEL` (more are answered
PULL_NOT_FOUND at once: short polling, as a client with that many queues would still
work), and a held pull that wakes while its connection is backed up past the high-water
mark is answered PULL_NOT_FOUND at the same offset, without messages: the client pulls
again once it reads.

``suggestWhichBrokerId`` is 4.9.8's observable result: 0 (the master) unless
``slaveReadEnable``; with it, the group's ``whichBrokerWhenConsumeSlowly`` when the store
says the reader is behind by more than memory holds, else the group's ``brokerId``. The
same rule holds on a slave (4.9.8's SLAVE branch sets a code the status mapping then
overwrites, so a slave serves pulls as a master does).

Registered on the main server only: RocketMQ's VIP port does not serve pulls.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mqcore.errors import CorruptRecordError, FilterSyntaxError, RequestRefused
from mqcore.filter import compile_sql
from mqcore.filter.tags import build_subscription_data
from mqcore.message.const import RETRY_GROUP_TOPIC_PREFIX
from mqcore.message.record import decode_dispatch
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.client import SubscriptionData
from mqcore.protocol.headers import (
    HeaderError,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    PullSysFlag,
)
from mqcore.remoting import Channel, Processor
from mqcore.remoting.channel import DEFAULT_HIGH_WATER
from mqcore.store.metadata import PERM_READ, SubscriptionGroupConfig
from mqcore.store.results import GetResult, GetStatus, RecordFilter, TagFilter
from mqcore.store.store_config import BrokerRole

from . import reply

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext

__all__ = ["PullMessageProcessor", "build_subscription", "handlers", "tag_filter"]

log = logging.getLogger("mq.broker.pull")

MASTER_ID = 0
SUB_ALL = "*"
_SUCCESS = int(ResponseCode.SUCCESS)
_NOT_FOUND = int(ResponseCode.PULL_NOT_FOUND)

Filters = tuple[TagFilter | None, RecordFilter | None]

MAX_HELD_PULLS_PER_CHANNEL = 1024
"""A client holds one pull per queue it consumes on this broker."""
BACKED_UP_BYTES = DEFAULT_HIGH_WATER
"""A connection with this much unsent is not reading: held pulls answer it empty."""
_HELD = "pull.held"


class PullRefused(RequestRefused):
    """A pull check failed: answer ``code`` with ``remark``."""


def build_subscription(topic: str, expression: str | None, sub_version: int) -> SubscriptionData:
    """A pull's own TAG expression as a subscription (``FilterAPI.build``, the one rule
    in :mod:`mqcore.filter.tags`); one with no tag between its separators is refused
    with SUBSCRIPTION_PARSE_FAILED, as 4.9.8 refuses it."""
    try:
        sub = build_subscription_data(topic, expression)
    except FilterSyntaxError as exc:
        raise PullRefused(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc)) from None
    sub.sub_version = sub_version
    return sub


def tag_filter(sub: SubscriptionData) -> TagFilter | None:
    """None (everything matches) or a test on the consume queue's tag slot."""
    if sub.class_filter_mode or sub.sub_string.strip() in ("", SUB_ALL):
        return None
    codes = frozenset(sub.code_set)
    return codes.__contains__


class PullMessageProcessor:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.config = ctx.config
        self.store = ctx.store

    def process(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        """Answer now, or return a coroutine that holds the pull (long polling)."""
        try:
            header = PullMessageRequestHeader.from_command(request)
        except HeaderError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        try:
            filters, group = self.check(channel, request, header)
        except PullRefused as exc:
            return reply(request, exc.code, exc.remark)
        response = self.pull(request, header, filters, group)
        if header.sys_flag & PullSysFlag.COMMIT_OFFSET and self._is_master:
            self.ctx.offsets.commit(
                header.consumer_group, header.topic, header.queue_id, header.commit_offset
            )
        if response.code == _NOT_FOUND and header.sys_flag & PullSysFlag.SUSPEND:
            held = channel.attrs.get(_HELD, 0)
            if held < MAX_HELD_PULLS_PER_CHANNEL:
                channel.attrs[_HELD] = held + 1
                return self._hold(channel, request, header, filters, group)
            refused = channel.attrs["pull.unheld"] = channel.attrs.get("pull.unheld", 0) + 1
            if refused & (refused - 1) == 0:  # 1, 2, 4...: a flood logs a few lines
                log.warning(
                    "%s holds %d pulls already: answering at once (%d so far)",
                    channel.remote_address,
                    held,
                    refused,
                )
        return response

    @property
    def _is_master(self) -> bool:
        return self.ctx.store_config.broker_role is not BrokerRole.SLAVE

    async def _hold(
        self,
        channel: Channel,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        filters: Filters,
        group: SubscriptionGroupConfig,
    ) -> RemotingCommand:
        timeout_ms = (
            header.suspend_timeout_millis
            if self.config.long_polling_enable
            else self.config.short_polling_time_mills
        )
        store, topic, queue_id = self.ctx.store, header.topic, header.queue_id
        try:
            await self.ctx.long_polling.hold(
                topic,
                queue_id,
                header.queue_offset,
                timeout_ms / 1000,
                filters[0],
                lambda: store.get_max_offset_in_queue(topic, queue_id),
            )
        finally:
            channel.attrs[_HELD] -= 1
        if channel.write_buffered >= BACKED_UP_BYTES:
            return reply(
                request,
                _NOT_FOUND,
                "the connection is not reading its answers: pull again",
                PullMessageResponseHeader(
                    suggest_which_broker_id=MASTER_ID,
                    next_begin_offset=header.queue_offset,
                    min_offset=store.get_min_offset_in_queue(topic, queue_id),
                    max_offset=store.get_max_offset_in_queue(topic, queue_id),
                ),
            )
        return self.pull(request, header, filters, group)

    # -- checks ---------------------------------------------------------------------------
    def check(
        self, channel: Channel, request: RemotingCommand, header: PullMessageRequestHeader
    ) -> tuple[Filters, SubscriptionGroupConfig]:
        """Permissions, group, topic, queue id and subscription; the filters to use and
        the group's config (the pull answer's broker suggestion reads it)."""
        c = self.ctx
        if not self.config.broker_permission & PERM_READ:
            raise PullRefused(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.config.broker_ip1}] pulling message is forbidden",
            )
        groups = c.groups
        group = header.consumer_group
        known = group in groups.table
        group_config = groups.find(group, auto_create=self.config.auto_create_subscription_group)
        if group_config is None:
            raise PullRefused(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{group}] does not exist",
            )
        if not known:  # auto-created: written off the loop, coalesced (as heartbeats do)
            c.persister.request(groups)
        if not group_config.consume_enable:
            raise PullRefused(
                ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}"
            )
        topic = header.topic
        topic_config = c.topics.select(topic)
        if topic_config is None:
            raise PullRefused(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please!",
            )
        if not topic_config.perm & PERM_READ:
            raise PullRefused(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden"
            )
        qid = header.queue_id
        if qid < 0 or qid >= topic_config.read_queue_nums:
            raise PullRefused(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{qid}] is illegal, topic:[{topic}] "
                f"topicConfig.readQueueNums:[{topic_config.read_queue_nums}] "
                f"consumer:[{channel.remote_address}]",
            )
        if header.sys_flag & PullSysFlag.SUBSCRIPTION:
            expression_type = header.expression_type or "TAG"
            self._check_expression_type(expression_type)
            if expression_type != "TAG":
                return (None, self._sql_filter(topic, header.subscription or "")), group_config
            sub = build_subscription(topic, header.subscription, header.sub_version)
        else:
            group_info = c.consumers.get_group(group)
            if group_info is None:
                raise PullRefused(
                    ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist"
                )
            if (
                not group_config.consume_broadcast_enable
                and group_info.message_model == "BROADCASTING"
            ):
                raise PullRefused(
                    ResponseCode.NO_PERMISSION,
                    f"the consumer group[{group}] can not consume by broadcast way",
                )
            found = c.consumers.find_subscription(group, topic)
            if found is None:
                raise PullRefused(
                    ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's subscription not exist"
                )
            if found.sub_version < header.sub_version:
                raise PullRefused(
                    ResponseCode.SUBSCRIPTION_NOT_LATEST,
                    "the consumer's subscription not latest",
                )
            expression_type = found.expression_type or "TAG"
            self._check_expression_type(expression_type)
            if expression_type != "TAG":
                return (None, self._sql_filter(topic, found.sub_string)), group_config
            sub = found
        return (tag_filter(sub), None), group_config

    def _sql_filter(self, topic: str, expression: str) -> RecordFilter | None:
        """SQL92 on each record's properties; retry topics pass unfiltered unless
        ``filterSupportRetry`` (as RocketMQ's ExpressionMessageFilter)."""
        try:
            sql = compile_sql(expression)
        except FilterSyntaxError as exc:
            raise PullRefused(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc)) from None
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and not self.config.filter_support_retry:
            return None

        def matches(record: memoryview) -> bool:
            try:
                return sql.evaluate(decode_dispatch(record).properties)
            except CorruptRecordError:
                return False

        return matches

    def _check_expression_type(self, expression_type: str) -> None:
        if expression_type == "TAG":
            return
        if not self.config.enable_property_filter:
            raise PullRefused(
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {expression_type}",
            )
        if expression_type == "SQL92":
            return
        raise PullRefused(
            ResponseCode.SUBSCRIPTION_PARSE_FAILED,
            f"unknown expression type {expression_type!r}",
        )

    # -- the read -------------------------------------------------------------------------
    def pull(
        self,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        filters: Filters,
        group: SubscriptionGroupConfig,
    ) -> RemotingCommand:
        store_config = self.ctx.store_config
        max_count = max(
            1, min(header.max_msg_nums, store_config.max_transfer_count_on_message_in_memory)
        )
        result = self.store.get_messages(
            header.topic,
            header.queue_id,
            header.queue_offset,
            max_count,
            store_config.max_transfer_bytes_on_message_in_memory,
            tag_filter=filters[0],
            record_filter=filters[1],
        )
        code, next_begin = self._map_status(header.queue_offset, result)
        if self.config.slave_read_enable:
            suggest = (
                group.which_broker_when_consume_slowly
                if result.suggest_pulling_from_slave
                else group.broker_id
            )
        else:
            suggest = MASTER_ID
        response_header = PullMessageResponseHeader(
            suggest_which_broker_id=suggest,
            next_begin_offset=next_begin,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
        )
        stats = self.ctx.stats
        if code == _SUCCESS:
            body = b"".join(result.buffers)
            stats.on_get(header.consumer_group, header.topic, len(result.buffers), len(body))
            return reply(request, code, result.status.value, response_header, body)
        stats.on_get(header.consumer_group, header.topic, 0, 0)
        return reply(request, code, result.status.value, response_header)

    @staticmethod
    def _map_status(queue_offset: int, result: GetResult) -> tuple[int, int]:
        """(response code, nextBeginOffset) for a store result, spec §8.7 table."""
        status = result.status
        if status is GetStatus.FOUND:
            return _SUCCESS, result.next_begin_offset
        if status in (GetStatus.NO_MATCHED_MESSAGE, GetStatus.MESSAGE_WAS_REMOVING):
            return ResponseCode.PULL_RETRY_IMMEDIATELY, result.next_begin_offset
        if status in (GetStatus.NO_MATCHED_LOGIC_QUEUE, GetStatus.NO_MESSAGE_IN_QUEUE):
            code = ResponseCode.PULL_OFFSET_MOVED if queue_offset != 0 else _NOT_FOUND
            return code, 0
        if status is GetStatus.OFFSET_TOO_SMALL:
            return ResponseCode.PULL_OFFSET_MOVED, result.min_offset
        if status is GetStatus.OFFSET_OVERFLOW_BADLY:
            return ResponseCode.PULL_OFFSET_MOVED, result.next_begin_offset
        if status is GetStatus.OFFSET_OVERFLOW_ONE:
            return _NOT_FOUND, queue_offset
        # OFFSET_FOUND_NULL: a hole in the consume queue; the store says where to go on.
        return _NOT_FOUND, result.next_begin_offset


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    """PULL_MESSAGE: served on the main port only (RocketMQ's fast port has no pulls)."""
    return {RequestCode.PULL_MESSAGE: PullMessageProcessor(ctx).process}

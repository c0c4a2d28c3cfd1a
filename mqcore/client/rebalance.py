"""Which queues this consumer reads, and from where: subscriptions and RebalanceImpl.

Members of a clustering group never talk to each other. Each one, every 20 s and when a
broker says the group changed (NOTIFY_CONSUMER_IDS_CHANGED), asks the route for the
topic's queues and a broker for the group's client ids, runs the same allocation strategy
(:mod:`mqcore.client.allocate`) over the same sorted lists, and keeps its own share: a
:class:`~mqcore.client.process_queue.ProcessQueue` per queue it now owns, dropped for the
ones it lost. Broadcasting members take every queue.

Orderly consumers must also own a queue at the broker (LOCK_BATCH_MQ) before pulling it,
so that two members never consume one queue at once while a rebalance is in flight, and
release it (UNLOCK_BATCH_MQ) when it moves away; :meth:`RebalanceImpl.lock_all` refreshes
the locks every 20 s.

What the owner (push or lite pull consumer) does with a queue it gains or loses lives in
its :class:`RebalanceOwner` hooks; where a new queue starts is
:func:`compute_pull_from_where` (committed offset, else consume-from-where). The small
helpers both consumers share (subscriptions, strategy names, consume timestamps, the
SQL92 start check) live here too.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import enum
import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from mqcore.client.allocate import (
    AllocateMessageQueueAveragely,
    AllocateStrategy,
    strategy_by_name,
)
from mqcore.client.offset_store import OffsetStore, ReadOffsetType
from mqcore.client.process_queue import LockEvent, ProcessQueue
from mqcore.errors import FilterSyntaxError, MQError
from mqcore.filter.tags import compile_tags
from mqcore.message import MessageExt
from mqcore.message.const import RETRY_GROUP_TOPIC_PREFIX
from mqcore.protocol.bodies import MessageQueue, SubscriptionData

__all__ = [
    "ConsumeFromWhere",
    "ExpressionType",
    "MessageModel",
    "MessageSelector",
    "OffsetLookupAPI",
    "RebalanceAPI",
    "RebalanceImpl",
    "RebalanceOwner",
    "build_subscription",
    "compute_pull_from_where",
    "filter_by_tags",
    "resolve_strategy",
    "retry_topic",
    "timestamp_ms",
]

log = logging.getLogger("mq.client.rebalance")

SUB_ALL = "*"


class MessageModel(enum.Enum):
    """How a group shares messages (wire names, as in ConsumerData)."""

    CLUSTERING = "CLUSTERING"
    """Each message goes to one member; offsets at the broker."""
    BROADCASTING = "BROADCASTING"
    """Every member gets every message; offsets in a local file."""


class ConsumeFromWhere(enum.Enum):
    """Where a queue without a committed offset starts (wire names)."""

    LAST = "CONSUME_FROM_LAST_OFFSET"
    FIRST = "CONSUME_FROM_FIRST_OFFSET"
    TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class ExpressionType(enum.Enum):
    TAG = "TAG"
    SQL92 = "SQL92"


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """A subscription expression: tags (``"TagA || TagB"``, ``"*"``) or SQL92 over
    message properties (the broker evaluates it; needs ``enablePropertyFilter``)."""

    type: ExpressionType
    expression: str

    @classmethod
    def by_tag(cls, expression: str = SUB_ALL) -> MessageSelector:
        return cls(ExpressionType.TAG, expression)

    @classmethod
    def by_sql(cls, expression: str) -> MessageSelector:
        return cls(ExpressionType.SQL92, expression)


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def build_subscription(topic: str, selector: str | MessageSelector | None) -> SubscriptionData:
    """RocketMQ's ``FilterAPI.buildSubscriptionData``: tags split on ``||`` and trimmed,
    their Java hash codes for the broker's consume-queue filter; SQL92 passed as is.
    ``subVersion`` is the current time in ms, so the newest subscription wins."""
    if not isinstance(selector, MessageSelector):
        selector = MessageSelector.by_tag(selector or SUB_ALL)
    version = time.time_ns() // 1_000_000
    expr = selector.expression.strip()
    if selector.type is ExpressionType.SQL92:
        if not expr:
            raise ValueError("an SQL92 subscription needs an expression")
        return SubscriptionData(
            topic=topic, sub_string=expr, sub_version=version, expression_type="SQL92"
        )
    try:
        tags = compile_tags(expr)  # the one tag rule (FilterAPI), on the trimmed text
    except FilterSyntaxError as exc:
        raise ValueError(f"tag expression {selector.expression!r} names no tag") from exc
    if tags.is_all:
        return SubscriptionData(topic=topic, sub_string=SUB_ALL, sub_version=version)
    return SubscriptionData(
        topic=topic,
        sub_string=expr,
        tags_set=set(tags.tags),
        code_set=set(tags.codes),
        sub_version=version,
    )


def filter_by_tags(msgs: list[MessageExt], sub: SubscriptionData) -> list[MessageExt]:
    """The client's re-check of tags by string: the broker filters by hash code only, and
    two tags can share one (``PullAPIWrapper.processPullResult``)."""
    if not sub.tags_set or sub.class_filter_mode or sub.expression_type != "TAG":
        return msgs
    tags = sub.tags_set
    return [m for m in msgs if m.tags is not None and m.tags in tags]


def timestamp_ms(value: int | float | dt.datetime | None, default_age: float = 1800.0) -> int:
    """A consume timestamp in ms: datetime, epoch ms, or ``None`` for 30 min ago."""
    if value is None:
        return int((time.time() - default_age) * 1000)
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000)
    return int(value)


def resolve_strategy(strategy: AllocateStrategy | str | None) -> AllocateStrategy:
    if strategy is None or isinstance(strategy, str):
        return strategy_by_name(strategy or "AVG")
    return strategy


class OffsetLookupAPI(Protocol):
    """Queue offsets at the broker, for consume-from-where."""

    async def max_offset(self, mq: MessageQueue) -> int: ...

    async def min_offset(self, mq: MessageQueue) -> int: ...

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int: ...


class RebalanceAPI(Protocol):
    """What rebalancing asks of the client instance."""

    @property
    def client_id(self) -> str: ...

    async def topic_queues(self, topic: str) -> list[MessageQueue]:
        """Readable queues of the topic (route cache); raises when it has no route."""
        ...

    async def consumer_ids(self, topic: str, group: str) -> list[str]:
        """Client ids of the group, asked of a broker serving the topic."""
        ...

    async def lock_batch(
        self, group: str, broker_name: str, mqs: set[MessageQueue]
    ) -> set[MessageQueue]:
        """LOCK_BATCH_MQ at the broker's master: the subset now held by this client."""
        ...

    async def unlock_batch(self, group: str, broker_name: str, mqs: set[MessageQueue]) -> None: ...


async def compute_pull_from_where(
    mq: MessageQueue,
    offset_store: OffsetStore,
    api: OffsetLookupAPI,
    where: ConsumeFromWhere,
    timestamp_ms: int,
) -> int:
    """Start offset of a newly assigned queue: the committed offset if there is one,
    else by ``where`` (RebalancePushImpl.computePullFromWhere). Retry topics start at 0
    (LAST/FIRST) or at their end (TIMESTAMP), as RocketMQ does. Raises MQError."""
    committed = await offset_store.read(mq, ReadOffsetType.STORE)
    if committed is not None and committed >= 0:
        return committed
    is_retry = mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
    if where is ConsumeFromWhere.LAST:
        return 0 if is_retry else await api.max_offset(mq)
    if where is ConsumeFromWhere.FIRST:
        return 0 if is_retry else await api.min_offset(mq)
    if is_retry:
        return await api.max_offset(mq)
    return await api.search_offset(mq, timestamp_ms)


class RebalanceOwner(Protocol):
    """Hooks of the consumer that owns a RebalanceImpl."""

    async def start_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """Resolve the start offset and begin pulling; False to retry at the next
        rebalance (e.g. the broker could not say where to start)."""
        ...

    async def remove_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """The queue went away (``pq`` is already dropped): persist its offset, release
        it. False keeps it in the table to try again (orderly listener still busy)."""
        ...

    def assignment_changed(self, topic: str, mine: set[MessageQueue]) -> None:
        """The set of owned queues of ``topic`` changed."""
        ...


class RebalanceImpl:
    """The queue table of one consumer and the rebalance that keeps it right."""

    def __init__(
        self,
        group: str,
        api: RebalanceAPI,
        owner: RebalanceOwner,
        *,
        message_model: MessageModel = MessageModel.CLUSTERING,
        strategy: AllocateStrategy | None = None,
        orderly: bool = False,
        drop_idle_queues: bool = True,
    ) -> None:
        self.group = group
        self.api = api
        self.owner = owner
        self.message_model = message_model
        self.strategy: AllocateStrategy = strategy or AllocateMessageQueueAveragely()
        self.orderly = orderly
        self.drop_idle_queues = drop_idle_queues
        """Push consumers drop a queue not pulled for 2 minutes (a stuck pull loop)."""
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.process_queues: dict[MessageQueue, ProcessQueue] = {}
        self.topic_queues: dict[str, list[MessageQueue]] = {}
        self._lock = asyncio.Lock()

    # -- rebalance -------------------------------------------------------------------------
    async def do_rebalance(self) -> bool:
        """One pass over every subscribed topic; True if the queue table changed.

        Runs one at a time: the 20 s timer and a NOTIFY arriving together must not both
        create process queues for the same queue."""
        async with self._lock:
            changed = False
            for topic in list(self.subscriptions):
                try:
                    changed |= await self._rebalance_topic(topic)
                except MQError as exc:
                    log.warning("rebalance of %s for %s failed: %s", topic, self.group, exc)
            changed |= await self._truncate_unsubscribed()
            return changed

    async def _rebalance_topic(self, topic: str) -> bool:
        mqs = await self.api.topic_queues(topic)
        self.topic_queues[topic] = list(mqs)
        if self.message_model is MessageModel.BROADCASTING:
            mine = set(mqs)
        else:
            if not mqs:
                log.debug("no queues of %s to allocate for %s", topic, self.group)
                return False
            cids = await self.api.consumer_ids(topic, self.group)
            if not cids:
                log.warning("no consumer ids of group %s for %s yet", self.group, topic)
                return False
            mine = set(self.strategy.allocate(self.group, self.api.client_id, mqs, cids))
        changed = await self._update_table(topic, mine)
        if changed:
            log.info(
                "rebalance %s %s: %d queue(s) now %s",
                self.group,
                topic,
                len(mine),
                sorted((mq.broker_name, mq.queue_id) for mq in mine),
            )
            self.owner.assignment_changed(topic, mine)
        return changed

    async def _update_table(self, topic: str, mine: set[MessageQueue]) -> bool:
        changed = False
        for mq, pq in list(self.process_queues.items()):
            if mq.topic != topic:
                continue
            if mq not in mine:
                reason = "not assigned any more"
            elif pq.dropped:
                reason = "dropped by its pull loop"
            elif self.drop_idle_queues and pq.pull_expired:
                reason = "not pulled for too long"
            else:
                continue
            pq.drop()
            if await self.owner.remove_queue(mq, pq):
                del self.process_queues[mq]
                changed = True
                log.info("%s: dropped %s (%s)", self.group, mq, reason)
        for mq in sorted(mine - self.process_queues.keys()):
            pq = ProcessQueue()
            if self.orderly and not await self.lock(mq, pq):
                log.info("%s: %s is locked by another member; later", self.group, mq)
                continue
            self.process_queues[mq] = pq
            if await self.owner.start_queue(mq, pq):
                changed = True
            else:
                del self.process_queues[mq]
                pq.drop()
                if self.orderly:
                    await self.unlock(mq)
        return changed

    async def _truncate_unsubscribed(self) -> bool:
        changed = False
        for mq, pq in list(self.process_queues.items()):
            if mq.topic not in self.subscriptions:
                pq.drop()
                if await self.owner.remove_queue(mq, pq):
                    del self.process_queues[mq]
                    changed = True
        return changed

    async def drop_all(self) -> None:
        """Shutdown: drop every queue through the owner (offsets persisted by it)."""
        async with self._lock:
            for mq, pq in list(self.process_queues.items()):
                pq.drop()
                await self.owner.remove_queue(mq, pq)
            self.process_queues.clear()

    def queues_of(self, topic: str) -> list[MessageQueue]:
        return sorted(mq for mq in self.process_queues if mq.topic == topic)

    # -- broker locks (orderly) ------------------------------------------------------------
    async def lock(self, mq: MessageQueue, pq: ProcessQueue | None = None) -> bool:
        """Lock one queue at its broker; updates ``pq`` (or the table's) on the answer."""
        pq = pq or self.process_queues.get(mq)
        try:
            granted = await self.api.lock_batch(self.group, mq.broker_name, {mq})
        except MQError as exc:
            log.info("%s: locking %s failed: %s", self.group, mq, exc)
            return False
        ok = mq in granted
        if pq is not None:
            pq.fire(LockEvent.GRANTED if ok else LockEvent.DENIED)
        return ok

    async def unlock(self, mq: MessageQueue) -> None:
        try:
            await self.api.unlock_batch(self.group, mq.broker_name, {mq})
        except MQError as exc:
            log.info("%s: unlocking %s failed: %s", self.group, mq, exc)

    def _by_broker(self, mqs: Iterable[MessageQueue]) -> dict[str, set[MessageQueue]]:
        table: dict[str, set[MessageQueue]] = defaultdict(set)
        for mq in mqs:
            table[mq.broker_name].add(mq)
        return table

    async def lock_all(self) -> None:
        """Refresh the broker locks of every owned queue (every 20 s); queues the broker
        did not grant stop consuming until a later pass gets them back."""
        for broker, mqs in self._by_broker(self.process_queues).items():
            try:
                granted = await self.api.lock_batch(self.group, broker, mqs)
            except MQError as exc:
                log.info("%s: lock refresh at %s failed: %s", self.group, broker, exc)
                continue
            for mq in mqs:
                pq = self.process_queues.get(mq)
                if pq is not None:
                    pq.fire(LockEvent.GRANTED if mq in granted else LockEvent.DENIED)

    async def unlock_all(self, mqs: Sequence[MessageQueue] | None = None) -> None:
        targets = self.process_queues if mqs is None else mqs
        for broker, batch in self._by_broker(targets).items():
            try:
                await self.api.unlock_batch(self.group, broker, batch)
            except MQError as exc:
                log.info("%s: unlock at %s failed: %s", self.group, broker, exc)
            for mq in batch:
                pq = self.process_queues.get(mq)
                if pq is not None:
                    pq.fire(LockEvent.RELEASED)

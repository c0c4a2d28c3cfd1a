"""`ConsumerBase`: what :class:`~mqcore.client.push_consumer.PushConsumer` and
:class:`~mqcore.client.lite_pull_consumer.LitePullConsumer` share.

The group, subscriptions, the shared :class:`ClientInstance`, the offset store (broker
for CLUSTERING, local file for BROADCASTING), joining and leaving the group, the
rebalance hooks that are the same for both, and one long-polling task per owned queue.
Subclasses set ``CONSUME_TYPE`` / ``TASK_PREFIX`` and add their own delivery.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict

from mqcore.client.allocate import AllocateStrategy
from mqcore.client.consume_stats import ConsumerStats
from mqcore.client.errors import ClientStateError
from mqcore.client.instance import ClientConfig, ClientInstance
from mqcore.client.offset_store import LocalFileOffsetStore, OffsetStore, RemoteBrokerOffsetStore
from mqcore.client.process_queue import ProcessQueue
from mqcore.client.rebalance import (
    ConsumeFromWhere,
    MessageModel,
    MessageSelector,
    RebalanceImpl,
    build_subscription,
    compute_pull_from_where,
    resolve_strategy,
    timestamp_ms,
)
from mqcore.client.role import ClientRole
from mqcore.client.trace import ConsumeTraceHook
from mqcore.client.trace_dispatcher import TraceDispatcher
from mqcore.client.validators import validate_group
from mqcore.common.aio import cancel_and_wait
from mqcore.errors import MQError
from mqcore.protocol.bodies import ConsumerData, MessageQueue, SubscriptionData

if TYPE_CHECKING:
    from mqcore.client.api import MQClientAPI, PullResult
    from mqcore.protocol.bodies.running_info import ConsumerRunningInfo

__all__ = ["FLOW_CONTROL_DELAY", "PULL_RETRY_DELAY", "ConsumerBase", "ConsumerOptions"]

log = logging.getLogger("mq.client.consumer")

PULL_RETRY_DELAY = 3.0
"""Seconds before pulling again after an error (``PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION``)."""
FLOW_CONTROL_DELAY = 0.05
"""Seconds between checks while a queue is over its cache limits."""


class ConsumerOptions(TypedDict, total=False):
    """Keyword options both consumers take, with :class:`ConsumerBase`'s defaults:
    ``namesrv`` (``MQ_NAMESRV_ADDR``, ``NAMESRV_ADDR``, then 127.0.0.1:9876), the group's
    model and start position, the allocation strategy, per-queue cache limits, where
    BROADCASTING offsets are kept, the client instance (``instance_name`` /
    ``client_config``, or a shared ``instance``), ACL keys, and message trace (``trace`` /
    ``trace_topic``)."""

    namesrv: str | Sequence[str] | None
    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    consume_timestamp: int | dt.datetime | None
    allocate_strategy: AllocateStrategy | str | None
    pull_threshold_for_queue: int
    pull_threshold_size_for_queue: int
    offset_store_dir: str | None
    instance_name: str | None
    client_config: ClientConfig | None
    access_key: str | None
    secret_key: str | None
    trace: bool
    trace_topic: str | None
    instance: ClientInstance | None


class ConsumerBase(ClientRole):
    """Shared state and lifecycle of the two consumers; not used on its own."""

    CONSUME_TYPE: ClassVar[str]
    """``CONSUME_PASSIVELY`` (push) or ``CONSUME_ACTIVELY`` (pull), in heartbeats."""
    TASK_PREFIX: ClassVar[str]

    def __init__(
        self,
        group: str,
        *,
        pull_batch_size: int,
        namesrv: str | Sequence[str] | None = None,
        message_model: MessageModel = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere = ConsumeFromWhere.LAST,
        consume_timestamp: int | dt.datetime | None = None,
        allocate_strategy: AllocateStrategy | str | None = None,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_size_for_queue: int = 100 * 1024 * 1024,
        offset_store_dir: str | None = None,
        instance_name: str | None = None,
        client_config: ClientConfig | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        trace: bool = False,
        trace_topic: str | None = None,
        instance: ClientInstance | None = None,
    ) -> None:
        validate_group(group)
        super().__init__(namesrv, instance_name, client_config, access_key, secret_key, instance)
        self._group = group
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.consume_timestamp = timestamp_ms(consume_timestamp)
        self.strategy = resolve_strategy(allocate_strategy)
        self.pull_batch_size = pull_batch_size
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue
        self.offset_store_dir = offset_store_dir
        self.trace_dispatcher: TraceDispatcher | None = None
        """With ``trace``: SubBefore/SubAfter records of what is consumed (message trace)."""
        self._trace: ConsumeTraceHook | None = None
        if trace:
            from mqcore.client.producer import trace_producer  # only a tracing consumer sends

            self.trace_dispatcher = TraceDispatcher(
                trace_producer(group, "CONSUMER", self.namesrv, self.client_config),
                trace_topic=trace_topic,
            )
            self._trace = ConsumeTraceHook(self.trace_dispatcher, group)
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._pull_tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._left: ClientInstance | None = None
        self._rebalance: RebalanceImpl | None = None
        self._offset_store: OffsetStore | None = None
        self._running = False
        self._closed = False
        self.stats = ConsumerStats()
        """Pull and consume figures by topic (the running info's statusTable)."""
        self._started_ms = 0

    # -- configuration ---------------------------------------------------------------------
    @property
    def group(self) -> str:
        return self._group

    def subscribe(self, topic: str, selector: str | MessageSelector | None = "*") -> None:
        """Subscribe to ``topic`` with a tag expression (``"TagA || TagB"``, ``"*"``) or a
        :class:`MessageSelector` (``MessageSelector.by_sql("a > 5")``)."""
        self._subscriptions[topic] = build_subscription(topic, selector)
        if self._rebalance is not None:
            self._rebalance.subscriptions[topic] = self._subscriptions[topic]
        if self._running:
            self._spawn(self._resync(), "resync")

    def unsubscribe(self, topic: str) -> None:
        self._subscriptions.pop(topic, None)
        if self._rebalance is not None:
            self._rebalance.subscriptions.pop(topic, None)
        if self._running:
            self._spawn(self._resync(), "resync")

    @property
    def client_id(self) -> str | None:
        instance = self._instance or self._left
        return instance.client_id if instance else None

    def _not_started(self) -> str:
        return f"consumer {self._group} is not started"

    @property
    def api(self) -> MQClientAPI:
        return self.instance.api

    def position(self, mq: MessageQueue) -> int | None:
        """The next offset of ``mq`` this member will consume, as its in-memory offset
        table has it: what the next commit sends. ``None`` before ``start``, after
        ``shutdown``, or when this member does not own ``mq`` (or has no offset for it
        yet). No broker call."""
        if self._offset_store is None or not self._running:
            return None
        return self._offset_store.offsets(mq.topic).get(mq)

    def offset_table(self, topic: str) -> dict[MessageQueue, int]:
        """The offsets of ``topic`` this member holds (GET_CONSUMER_STATUS_FROM_CLIENT);
        empty before ``start``."""
        return dict(self._offset_store.offsets(topic)) if self._offset_store is not None else {}

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        if self._closed:
            raise ClientStateError(f"consumer {self._group} was shut down; create a new one")
        await super().start()

    async def shutdown(self) -> None:
        self._closed = True
        self._left = self._instance or self._left
        await super().shutdown()

    @property
    def instance(self) -> ClientInstance:
        """The client instance; after shutdown the one it left (a consumer is not restarted)."""
        return self._left or super().instance

    async def _join(self, instance: ClientInstance, **rebalance_options: Any) -> None:
        """Start's common part: offset store, config check, rebalance, then
        :meth:`_prepare` and registration (a failure undoes the start)."""
        await instance.start()
        if self.message_model is MessageModel.CLUSTERING:
            self._offset_store = RemoteBrokerOffsetStore(self._group, instance.api)
        else:
            self._offset_store = LocalFileOffsetStore(
                self._group, instance.client_id, self.offset_store_dir
            )
        await self._offset_store.load()
        await instance.api.check_client_config(self._group, self._subscriptions.values())
        self._rebalance = RebalanceImpl(
            self._group,
            instance.api,
            self,
            message_model=self.message_model,
            strategy=self.strategy,
            **rebalance_options,
        )
        self._rebalance.subscriptions.update(self._subscriptions)
        self._prepare()
        self._running = True
        self._started_ms = int(time.time() * 1000)
        try:
            await instance.register_consumer(self)
        except BaseException:
            self._running = False
            raise

    def _prepare(self) -> None:
        """Hook: set up what the subclass needs once the rebalance exists."""

    async def _stop_tasks(self) -> bool:
        """Shutdown's common start: cancel and await every task. False when the consumer
        was not running (nothing more to do)."""
        if not self._running:
            return False
        self._running = False
        await cancel_and_wait([*self._pull_tasks.values(), *self._tasks])
        self._pull_tasks.clear()
        return True

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=f"mq-{self.TASK_PREFIX}-{self._group}-{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _resync(self) -> None:
        """Subscriptions changed while running: tell the brokers, then rebalance."""
        await self.instance.send_heartbeat_to_all_brokers()
        await self.do_rebalance()

    async def do_rebalance(self) -> None:
        if self._running and self._rebalance is not None:
            await self._rebalance.do_rebalance()

    # -- ClientInstance's ConsumerHandle ----------------------------------------------------
    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self._group,
            consume_type=self.CONSUME_TYPE,
            message_model=self.message_model.value,
            consume_from_where=self.consume_from_where.value,
            subscription_data_set=list(self._subscriptions.values()),
        )

    def running_info(self, jstack: bool = False) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO: settings, subscriptions, each held queue, rates per
        topic and, with ``jstack``, the stacks of this process (mqadmin consumerStatus)."""
        from mqcore.client.running_info import running_info

        namesrv = self.namesrv if isinstance(self.namesrv, str) else ";".join(self.namesrv)
        return running_info(
            properties=self._running_properties(),
            consume_type=self.CONSUME_TYPE,
            namesrv=namesrv,
            started_ms=self._started_ms,
            subscriptions=list(self._subscriptions.values()),
            queues=self._held_queues() if self._running else {},
            offsets=self._offset_store.offsets() if self._offset_store is not None else {},
            stats=self.stats,
            jstack=jstack,
        )

    def _held_queues(self) -> dict[MessageQueue, ProcessQueue]:
        """The queues this member holds now (the rebalance's table)."""
        return dict(self._rebalance.process_queues) if self._rebalance is not None else {}

    def _running_properties(self) -> dict[str, object]:
        """Settings for the running info, by the Java client's property names."""
        return {
            "consumerGroup": self._group,
            "messageModel": self.message_model,
            "consumeFromWhere": self.consume_from_where,
            "consumeTimestamp": self.consume_timestamp or 0,
            "allocateMessageQueueStrategy": type(self.strategy).__name__,
            "pullBatchSize": self.pull_batch_size,
            "pullThresholdForQueue": self.pull_threshold_for_queue,
            "pullThresholdSizeForQueue": self.pull_threshold_size_for_queue // (1024 * 1024),
            "instanceName": self.instance_name or "DEFAULT",
            "clientId": self.client_id or "",
            "unitMode": False,
        }

    # -- RebalanceOwner --------------------------------------------------------------------
    async def _start_offset(self, mq: MessageQueue, pq: ProcessQueue) -> int | None:
        """Where a newly owned queue starts (offset store, else consume-from-where);
        None if the broker could not tell or the queue was dropped meanwhile."""
        assert self._offset_store is not None
        self._offset_store.remove(mq)  # a stale in-memory offset must not win
        try:
            offset = await compute_pull_from_where(
                mq, self._offset_store, self.api, self.consume_from_where, self.consume_timestamp
            )
        except MQError as exc:
            log.warning("%s: cannot tell where to start %s: %s", self._group, mq, exc)
            return None
        if pq.dropped or not self._running:
            return None  # shut down or reassigned while we asked the broker
        return offset

    def _start_pulling(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        """(Re)start ``mq``'s pull task at ``offset``."""
        old = self._pull_tasks.pop(mq, None)
        if old is not None:
            old.cancel()
        task = asyncio.create_task(
            self._pull_loop(mq, pq, offset),
            name=f"mq-{self.TASK_PREFIX}-pull-{mq.topic}-{mq.broker_name}-{mq.queue_id}",
        )
        self._pull_tasks[mq] = task

        def done(t: asyncio.Task[None]) -> None:
            if self._pull_tasks.get(mq) is t:
                del self._pull_tasks[mq]
            if not t.cancelled() and t.exception() is not None:
                log.error("pull loop of %s crashed", mq, exc_info=t.exception())

        task.add_done_callback(done)

    async def start_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        raise NotImplementedError

    async def remove_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        raise NotImplementedError

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        raise NotImplementedError

    async def _pull_loop(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        raise NotImplementedError

    def _stop_pulling(self, mq: MessageQueue) -> None:
        task = self._pull_tasks.pop(mq, None)
        if task is not None:
            task.cancel()

    async def _pull_once(
        self, mq: MessageQueue, pq: ProcessQueue, offset: int, commit_offset: int = 0
    ) -> PullResult | None:
        """One long poll of ``mq`` at ``offset`` with the topic's subscription. None when
        there is nothing to handle this round (no subscription or an error, after a
        pause; or the queue was dropped meanwhile)."""
        sub = self._subscriptions.get(mq.topic)
        if sub is None:
            await asyncio.sleep(PULL_RETRY_DELAY)
            return None
        started = time.monotonic()
        try:
            result = await self.api.pull(
                mq,
                group=self._group,
                offset=offset,
                max_nums=self.pull_batch_size,
                expression=sub.sub_string,
                expression_type=sub.expression_type,
                sub_version=sub.sub_version,
                commit_offset=commit_offset,
            )
        except MQError as exc:
            if pq.dropped or not self._running:
                return None
            log.info("%s: pulling %s at %d failed: %s", self._group, mq, offset, exc)
            await asyncio.sleep(PULL_RETRY_DELAY)
            return None
        self.stats.pulled(mq.topic, (time.monotonic() - started) * 1000, len(result.messages))
        return None if pq.dropped else result

    def assignment_changed(self, topic: str, mine: set[MessageQueue]) -> None:
        if self._instance is not None:
            self._spawn(self._instance.send_heartbeat_to_all_brokers(), "heartbeat")

    def _over_queue_limits(self, pq: ProcessQueue) -> bool:
        """Too many or too large cached messages in one queue: pause its pulling."""
        return (
            pq.msg_count > self.pull_threshold_for_queue
            or pq.msg_size > self.pull_threshold_size_for_queue
        )

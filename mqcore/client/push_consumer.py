"""`PushConsumer`: RocketMQ's DefaultMQPushConsumer in asyncio.

Usage::

    async with PushConsumer("g1", namesrv="127.0.0.1:9876") as consumer:  # or await start()
        consumer.subscribe("TopicTest", "TagA || TagB")
        consumer.register_listener(handle)          # handle(msgs, ctx) -> ConsumeStatus
        ...

(``subscribe`` and ``register_listener`` may also come before ``start()``; the context
manager starts on entry only when a listener is registered, see :meth:`__aenter__`.)

"Push" is long polling underneath: rebalance (:mod:`mqcore.client.rebalance`) hands this
consumer a set of queues; each gets a pull task that asks the broker for the next batch
(held up to 15 s at the broker when nothing is there), caches it in the queue's
:class:`~mqcore.client.process_queue.ProcessQueue` and passes it to the consume service
(:mod:`mqcore.client.consume_service`). A queue with too much cached (1000 messages,
100 MiB, or an offset span over 2000 for concurrent listeners) is not pulled until the
listener catches up. Consumed offsets travel with the next pull and are sent to the
broker every 5 s and on shutdown (a local file for BROADCASTING).

With ``trace=True`` (the Java client's ``enableMsgTrace``) each listener call writes
SubBefore/SubAfter trace records, see :mod:`mqcore.client.trace`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Unpack

from mqcore.client.consume_service import (
    ConsumeConcurrentlyService,
    ConsumeOrderlyService,
    ConsumeService,
    MessageListener,
)
from mqcore.client.consumer_base import (
    FLOW_CONTROL_DELAY,
    PULL_RETRY_DELAY,
    ConsumerBase,
    ConsumerOptions,
)
from mqcore.client.errors import ClientStateError
from mqcore.client.instance import AUTO_CREATE_TOPIC_KEY, ClientInstance
from mqcore.client.offset_store import OffsetStore, ReadOffsetType
from mqcore.client.process_queue import ProcessQueue, QueueEvent
from mqcore.client.rebalance import (
    MessageModel,
    build_subscription,
    retry_topic,
)
from mqcore.errors import MQError
from mqcore.message import MessageExt, encode_properties
from mqcore.message import const as mc
from mqcore.protocol.bodies import MessageQueue
from mqcore.protocol.bodies.running_info import PROP_CONSUME_ORDERLY, PROP_THREADPOOL_CORE_SIZE
from mqcore.protocol.headers import SendMessageRequestHeader

if TYPE_CHECKING:
    from mqcore.client.api import PullResult

__all__ = ["PushConsumer"]

log = logging.getLogger("mq.client.push")

LOCK_INTERVAL = 20.0
INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"


class PushConsumer(ConsumerBase):
    """Long-polling consumer that calls a listener; see the module docstring.

    The other keyword options, shared with the other consumer, are
    :class:`~mqcore.client.consumer_base.ConsumerOptions`.
    Durations follow RocketMQ's option names where they are in ms; the rest are seconds.
    ``max_reconsume_times`` -1 means 16 for concurrent listeners and unlimited for orderly
    ones (RocketMQ's defaults). ``client_config`` / ``instance_name`` configure the consumer's own
    :class:`ClientInstance`; ``instance`` shares one instead (one consumer per group per
    instance).
    """

    CONSUME_TYPE = "CONSUME_PASSIVELY"
    TASK_PREFIX = "push"

    def __init__(
        self,
        group: str,
        *,
        consume_thread_max: int = 20,
        consume_message_batch_max_size: int = 1,
        pull_batch_size: int = 32,
        consume_concurrently_max_span: int = 2000,
        pull_interval: float = 0.0,
        max_reconsume_times: int = -1,
        suspend_current_queue_time_millis: int = 1000,
        await_termination: float = 5.0,
        **options: Unpack[ConsumerOptions],
    ) -> None:
        super().__init__(group, pull_batch_size=pull_batch_size, **options)
        self.consume_thread_max = consume_thread_max
        self.batch_max_size = consume_message_batch_max_size
        self.consume_concurrently_max_span = consume_concurrently_max_span
        self.pull_interval = pull_interval
        self.max_reconsume_times = max_reconsume_times
        self.suspend_time = suspend_current_queue_time_millis / 1000
        self.await_termination = await_termination
        self._listener: MessageListener | None = None
        self._orderly = False
        self._threaded = False
        self._service: ConsumeService | None = None

    # -- configuration ---------------------------------------------------------------------
    def register_listener(
        self, listener: MessageListener, *, orderly: bool = False, threaded: bool = False
    ) -> None:
        """Set the listener (before ``start``). ``orderly`` consumes each queue one
        message at a time under a broker lock; ``threaded`` runs a blocking plain-function
        listener in a pool of ``consume_thread_max`` threads."""
        if self._running:
            raise ClientStateError("register the listener before starting the consumer")
        self._listener = listener
        self._orderly = orderly
        self._threaded = threaded

    @property
    def orderly(self) -> bool:
        return self._orderly

    async def consume_message_directly(
        self, msg: MessageExt, broker_name: str
    ) -> dict[str, Any] | None:
        """Run the listener on ``msg`` for CONSUME_MESSAGE_DIRECTLY; None when not running."""
        if self._service is None:
            return None
        return await self._service.consume_directly(msg, broker_name)

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Join the group: heartbeat to the brokers of the subscribed topics, rebalance,
        start pulling. Raises ClientStateError without a listener or subscription."""
        if self._running:
            return
        if self._listener is None:
            raise ClientStateError("register a listener before starting the consumer")
        if not self._subscriptions:
            raise ClientStateError("subscribe to a topic before starting the consumer")
        if self.message_model is MessageModel.CLUSTERING:
            rtopic = retry_topic(self._group)
            self._subscriptions.setdefault(rtopic, build_subscription(rtopic, "*"))
        await super().start()

    async def _open(self, instance: ClientInstance) -> None:
        # Broadcasting members each read every queue: nothing to lock.
        await self._join(
            instance, orderly=self._orderly and self.message_model is MessageModel.CLUSTERING
        )
        if self._orderly and self.message_model is MessageModel.CLUSTERING:
            self._spawn(self._lock_loop(), "lock")
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.start()
        await self.do_rebalance()
        log.info("push consumer %s started as %s", self._group, instance.client_id)

    def _prepare(self) -> None:
        self._service = self._make_service()
        self._service.trace = self._trace
        self._service.stats = self.stats

    def _make_service(self) -> ConsumeService:
        assert self._listener is not None and self._offset_store is not None
        common: dict[str, Any] = {
            "message_model": self.message_model,
            "batch_max_size": self.batch_max_size,
            "max_reconsume_times": self.max_reconsume_times,
            "threaded": self._threaded,
            "concurrency": self.consume_thread_max,
        }
        if self._orderly:
            return ConsumeOrderlyService(
                self._group,
                self._listener,
                self._offset_store,
                self._send_back,
                lock=self._lock_queue,
                suspend_time=self.suspend_time,
                **common,
            )
        return ConsumeConcurrentlyService(
            self._group, self._listener, self._offset_store, self._send_back, **common
        )

    async def _close(self, instance: ClientInstance) -> None:
        """Stop pulling, let running listeners finish (``await_termination`` s), commit
        offsets, release orderly locks and leave the group (the others rebalance)."""
        if not await self._stop_tasks():
            return
        assert self._service and self._offset_store and self._rebalance
        await self._service.shutdown(self.await_termination)
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.shutdown()
        await self._persist(list(self._rebalance.process_queues))
        if self._orderly and self.message_model is MessageModel.CLUSTERING:
            await self._rebalance.unlock_all()
        for pq in self._rebalance.process_queues.values():
            pq.drop()
        self._rebalance.process_queues.clear()
        await instance.unregister_consumer(self._group)
        log.info("push consumer %s shut down", self._group)

    async def __aenter__(self) -> PushConsumer:
        """Starts the consumer if a listener is registered (else start it yourself after
        registering one)."""
        if self._listener is not None:
            await self.start()
        return self

    # -- ClientInstance's ConsumerHandle ----------------------------------------------------
    async def persist_consumer_offset(self) -> None:
        if self._running and self._rebalance is not None:
            await self._persist(list(self._rebalance.process_queues))

    async def _persist(self, mqs: Iterable[MessageQueue]) -> None:
        assert self._offset_store is not None
        try:
            await self._offset_store.persist_all(mqs)
        except (MQError, OSError) as exc:
            log.warning("persisting offsets of %s failed: %s", self._group, exc)

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """An admin reset the group's offsets: drop the topic's queues, store the new
        offsets, and let rebalance pick the queues up again from there."""
        if self._rebalance is None or self._offset_store is None:
            return
        for mq, pq in list(self._rebalance.process_queues.items()):
            if mq.topic == topic and mq in offsets:
                pq.drop()
        await asyncio.sleep(0)
        for mq, offset in offsets.items():
            if mq.topic == topic:
                self._offset_store.update(mq, offset)
                with contextlib.suppress(MQError):
                    await self._offset_store.persist(mq)
        await self.do_rebalance()

    def _running_properties(self) -> dict[str, object]:
        props = super()._running_properties()
        props.update(
            {
                "consumeThreadMin": self.consume_thread_max,
                "consumeThreadMax": self.consume_thread_max,
                "consumeMessageBatchMaxSize": self.batch_max_size,
                "consumeConcurrentlyMaxSpan": self.consume_concurrently_max_span,
                "pullInterval": int(self.pull_interval * 1000),
                "maxReconsumeTimes": self.max_reconsume_times,
                "suspendCurrentQueueTimeMillis": int(self.suspend_time * 1000),
                PROP_CONSUME_ORDERLY: self._orderly,
                PROP_THREADPOOL_CORE_SIZE: self.consume_thread_max,
            }
        )
        return props

    # -- RebalanceOwner --------------------------------------------------------------------
    async def start_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        offset = await self._start_offset(mq, pq)
        if offset is None:
            return False
        pq.fire(QueueEvent.START)
        self._start_pulling(mq, pq, offset)
        log.info("%s: pulling %s from offset %d", self._group, mq, offset)
        return True

    async def remove_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        assert self._offset_store is not None
        self._stop_pulling(mq)
        with contextlib.suppress(MQError, OSError):
            await self._offset_store.persist(mq)
        self._offset_store.remove(mq)
        if self._orderly and self.message_model is MessageModel.CLUSTERING:
            try:
                async with asyncio.timeout(1.0), pq.consume_lock:
                    assert self._rebalance is not None
                    await self._rebalance.unlock(mq)
            except TimeoutError:
                pq.try_unlock_times += 1
                return False  # listener still busy: keep it, try at the next rebalance
        return True

    async def _lock_queue(self, mq: MessageQueue) -> bool:
        assert self._rebalance is not None
        return await self._rebalance.lock(mq)

    async def _lock_loop(self) -> None:
        assert self._rebalance is not None
        while True:
            await asyncio.sleep(LOCK_INTERVAL)
            await self._rebalance.lock_all()

    # -- pulling ---------------------------------------------------------------------------
    def _flow_controlled(self, pq: ProcessQueue) -> bool:
        if self._over_queue_limits(pq):
            return True
        return not self._orderly and pq.max_span > self.consume_concurrently_max_span

    async def _pull_loop(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        """One queue's long-polling loop (PullMessageService + pullMessage + PullCallback)."""
        assert self._offset_store is not None and self._service is not None
        store, service = self._offset_store, self._service
        clustering = self.message_model is MessageModel.CLUSTERING
        while self._running and not pq.dropped:
            pq.touch_pull()
            if self._flow_controlled(pq):
                await asyncio.sleep(FLOW_CONTROL_DELAY)
                continue
            if self._orderly and clustering and not pq.locked:
                await asyncio.sleep(PULL_RETRY_DELAY)
                continue
            commit = (await store.read(mq, ReadOffsetType.MEMORY) or 0) if clustering else 0
            result = await self._pull_once(mq, pq, offset, commit)
            if result is None:
                continue
            offset = await self._on_pull_result(mq, pq, offset, result, service, store)
            if self.pull_interval > 0:
                await asyncio.sleep(self.pull_interval)

    async def _on_pull_result(
        self,
        mq: MessageQueue,
        pq: ProcessQueue,
        offset: int,
        result: PullResult,
        service: ConsumeService,
        store: OffsetStore,
    ) -> int:
        from mqcore.client.api import PullStatus

        status = result.status
        if status is PullStatus.FOUND:
            if result.messages:
                pq.put(result.messages, result.next_begin_offset)
                service.submit(result.messages, pq, mq)
            elif not pq.msg_count:
                store.update(mq, result.next_begin_offset, increase_only=True)
            return result.next_begin_offset
        if status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            if not pq.msg_count:
                # Nothing in flight: everything up to here is consumed (or filtered out).
                store.update(mq, result.next_begin_offset, increase_only=True)
            return result.next_begin_offset
        # OFFSET_ILLEGAL: the offset fell out of the queue; restart from the broker's word.
        log.warning(
            "%s: offset %d of %s is illegal (queue %d..%d); moving to %d",
            self._group,
            offset,
            mq,
            result.min_offset,
            result.max_offset,
            result.next_begin_offset,
        )
        pq.drop()
        store.update(mq, result.next_begin_offset)
        with contextlib.suppress(MQError, OSError):
            await store.persist(mq)
        self._spawn(self.do_rebalance(), "offset-moved")
        return result.next_begin_offset

    # -- retries ---------------------------------------------------------------------------
    @property
    def _max_reconsume(self) -> int:
        return 16 if self.max_reconsume_times < 0 else self.max_reconsume_times

    async def _send_back(self, msg: MessageExt, delay_level: int, mq: MessageQueue) -> None:
        """CONSUMER_SEND_MSG_BACK; if the broker cannot take it, send a copy to the retry
        topic ourselves (as RocketMQ's client does). Raises MQError if both fail."""
        try:
            await self.api.consumer_send_msg_back(
                msg,
                self._group,
                broker_name=mq.broker_name,
                delay_level=delay_level,
                max_reconsume_times=self._max_reconsume,
            )
            return
        except MQError as exc:
            log.info(
                "send back of %s failed (%s); resending it to the retry topic", msg.msg_id, exc
            )
        await self._resend_to_retry(msg, delay_level)

    async def _resend_to_retry(self, msg: MessageExt, delay_level: int) -> None:
        instance = self.instance
        topic = retry_topic(self._group)
        props = dict(msg.properties)
        for name in (
            mc.PROPERTY_MIN_OFFSET,
            mc.PROPERTY_MAX_OFFSET,
            mc.PROPERTY_TRANSACTION_PREPARED,
        ):
            props.pop(name, None)
        props.setdefault(mc.PROPERTY_RETRY_TOPIC, msg.topic)
        props.setdefault(mc.PROPERTY_ORIGIN_MESSAGE_ID, msg.msg_id)
        reconsume = msg.reconsume_times + 1
        props[mc.PROPERTY_RECONSUME_TIME] = str(reconsume)
        props[mc.PROPERTY_MAX_RECONSUME_TIMES] = str(self._max_reconsume)
        if delay_level >= 0:
            props[mc.PROPERTY_DELAY_TIME_LEVEL] = str(3 + msg.reconsume_times)
        info = await instance.find_publish_info(topic)
        target = info.select_queue()
        addr = await instance.master_addr_or_refresh(target)
        header = SendMessageRequestHeader(
            producer_group=INNER_PRODUCER_GROUP,
            topic=topic,
            default_topic=AUTO_CREATE_TOPIC_KEY,
            default_topic_queue_nums=4,
            queue_id=target.queue_id,
            sys_flag=0,
            born_timestamp=time.time_ns() // 1_000_000,
            flag=msg.flag,
            properties=encode_properties(props).decode(),
            # -1 (orderly giving up) makes the broker route it to the DLQ at once.
            reconsume_times=reconsume if delay_level >= 0 else self._max_reconsume,
            max_reconsume_times=self._max_reconsume,
            bname=target.broker_name,
        )
        await self.api.send_message(
            addr,
            target.broker_name,
            header,
            msg.body,
            msg_id=props.get(mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, msg.msg_id),
        )

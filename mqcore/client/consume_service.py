"""Consume services: hand pulled messages to the user's listener and act on its answer.

* :class:`ConsumeConcurrentlyService` -- batches of ``batch_max_size`` messages run
  concurrently (at most ``concurrency`` at once) as asyncio tasks; a sync listener runs
  inline, or in a thread pool with ``threaded=True`` when it blocks. On
  ``RECONSUME_LATER`` (or an exception) the messages go back to the broker
  (CONSUMER_SEND_MSG_BACK; it schedules them on ``%RETRY%<group>`` and, after
  ``max_reconsume_times``, the DLQ); if even that fails they are consumed again locally
  5 s later. Either way the offset moves past them, so one bad message never blocks a
  queue. Broadcasting consumers just log failures (there is no retry topic per member).
* :class:`ConsumeOrderlyService` -- one batch at a time per queue, while this client holds
  the queue's broker lock. A failure suspends the queue (``suspend_time``) and retries the
  same messages locally, so order is kept; after ``max_reconsume_times`` (unlimited by
  default, as RocketMQ) a message goes to the DLQ and the queue moves on.

In both, messages read from the retry topic get their original topic back
(``RETRY_TOPIC``) before the listener sees them, and the offset committed for a queue
never passes a message still being consumed (:meth:`ProcessQueue.remove`).

A listener is ``fn(msgs, context)``, plain or ``async``, returning a
:class:`ConsumeStatus` (orderly: :class:`ConsumeOrderlyStatus`; ``RECONSUME_LATER`` is
accepted as "suspend"). Returning ``None`` counts as success; raising counts as
``RECONSUME_LATER``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import enum
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from mqcore.client.offset_store import OffsetStore
from mqcore.client.process_queue import ProcessQueue
from mqcore.client.rebalance import MessageModel, retry_topic
from mqcore.errors import MQError
from mqcore.message import MessageExt
from mqcore.message.const import PROPERTY_CONSUME_START_TIMESTAMP, PROPERTY_RETRY_TOPIC
from mqcore.protocol.bodies import MessageQueue
from mqcore.protocol.bodies.trace import ConsumeReturnType

if TYPE_CHECKING:
    from mqcore.client.consume_stats import ConsumerStats
    from mqcore.client.trace import ConsumeTraceHook

__all__ = [
    "ConsumeConcurrentlyService",
    "ConsumeContext",
    "ConsumeOrderlyService",
    "ConsumeOrderlyStatus",
    "ConsumeService",
    "ConsumeStatus",
    "MessageListener",
    "SendBack",
    "reset_retry_topic",
]

log = logging.getLogger("mq.client.consume")

RETRY_LATER = 5.0
"""Seconds before a batch that could not even be sent back is consumed again locally."""
LOCK_RETRY = 3.0
"""Seconds before an orderly queue whose lock is missing is tried again."""
DEFAULT_MAX_RECONSUME = 16


class ConsumeStatus(enum.Enum):
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


@dataclass(slots=True)
class ConsumeContext:
    """What the listener may read, and adjust, about the batch it is given."""

    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0
    """Concurrently: retry delay level for failed messages (0 = the broker decides)."""
    ack_index: int | None = None
    """Concurrently: on success, messages after this index are treated as failed."""
    suspend_time: float | None = None
    """Orderly: seconds to suspend the queue on failure (default: the service's)."""


ListenerResult: TypeAlias = ConsumeStatus | ConsumeOrderlyStatus | None
MessageListener: TypeAlias = Callable[
    [list[MessageExt], ConsumeContext], ListenerResult | Awaitable[ListenerResult]
]
SendBack: TypeAlias = Callable[[MessageExt, int, MessageQueue], Awaitable[None]]
"""``(msg, delay_level, mq)``: CONSUMER_SEND_MSG_BACK (with the client's fallbacks);
delay level ``-1`` means straight to the DLQ. Raises MQError when all ways failed."""


_DIRECT_RESULTS: dict[object, str] = {
    None: "CR_SUCCESS",  # mq's listeners may return None for success
    ConsumeStatus.CONSUME_SUCCESS: "CR_SUCCESS",
    ConsumeStatus.RECONSUME_LATER: "CR_LATER",
    ConsumeOrderlyStatus.SUCCESS: "CR_SUCCESS",
    ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT: "CR_LATER",
}
"""Listener result -> 4.9.8's CMResult, for CONSUME_MESSAGE_DIRECTLY."""


def reset_retry_topic(msgs: Sequence[MessageExt], group: str) -> None:
    """Give messages read from ``%RETRY%<group>`` their original topic back."""
    rtopic = retry_topic(group)
    for msg in msgs:
        if msg.topic == rtopic:
            original = msg.properties.get(PROPERTY_RETRY_TOPIC)
            if original:
                msg.topic = original


class ConsumeService:
    """Shared machinery: calling the listener, background tasks, shutdown."""

    def __init__(
        self,
        group: str,
        listener: MessageListener,
        offset_store: OffsetStore,
        send_back: SendBack,
        *,
        message_model: MessageModel = MessageModel.CLUSTERING,
        batch_max_size: int = 1,
        max_reconsume_times: int = -1,
        threaded: bool = False,
        concurrency: int = 20,
    ) -> None:
        if batch_max_size < 1:
            raise ValueError("consume_message_batch_max_size must be >= 1")
        self.group = group
        self.listener = listener
        self.offset_store = offset_store
        self.send_back = send_back
        self.message_model = message_model
        self.batch_max_size = batch_max_size
        self.max_reconsume_times = max_reconsume_times
        self._is_async = inspect.iscoroutinefunction(listener)
        self._executor = (
            concurrent.futures.ThreadPoolExecutor(concurrency, thread_name_prefix="mq-consume")
            if threaded and not self._is_async
            else None
        )
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self.consumed_ok = 0
        self.consumed_failed = 0
        self.trace: ConsumeTraceHook | None = None
        """SubBefore/SubAfter records around each listener call (message trace)."""
        self.stats: ConsumerStats | None = None
        """Where each listener call's time and outcome are counted (running info)."""

    async def _invoke(self, msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
        """The listener's result (in the pool when threaded); its exceptions propagate."""
        now = str(time.time_ns() // 1_000_000)
        for msg in msgs:
            msg.properties[PROPERTY_CONSUME_START_TIMESTAMP] = now
        if self._executor is not None:
            loop = asyncio.get_running_loop()
            result: Any = await loop.run_in_executor(self._executor, self.listener, msgs, ctx)
        else:
            result = self.listener(msgs, ctx)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def consume_directly(self, msg: MessageExt, broker_name: str) -> dict[str, Any]:
        """CONSUME_MESSAGE_DIRECTLY (mqadmin consumeMessage, the dashboard's "resend"):
        run the listener on one message outside the queue flow, commit and send back
        nothing; 4.9.8's ConsumeMessageDirectlyResult as JSON."""
        reset_retry_topic([msg], self.group)
        ctx = ConsumeContext(MessageQueue(msg.topic, broker_name, msg.queue_id))
        started = time.monotonic()
        remark: str | None = None
        try:
            result = await self._invoke([msg], ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            outcome, remark = "CR_THROW_EXCEPTION", f"{type(exc).__name__}: {exc}"
        else:
            outcome = _DIRECT_RESULTS.get(result, "CR_RETURN_NULL")
        return {
            "autoCommit": True,
            "consumeResult": outcome,
            "order": isinstance(self, ConsumeOrderlyService),
            "remark": remark,
            "spentTimeMills": int((time.monotonic() - started) * 1000),
        }

    async def call_listener(self, msgs: list[MessageExt], ctx: ConsumeContext) -> bool:
        """Run the listener; True for success. Exceptions are logged as failures."""
        traced = self.trace.before(msgs) if self.trace is not None else None
        outcome = ConsumeReturnType.SUCCESS
        started = time.monotonic()
        try:
            result = await self._invoke(msgs, ctx)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("listener of %s failed on %d message(s)", self.group, len(msgs))
            result, outcome = ConsumeStatus.RECONSUME_LATER, ConsumeReturnType.EXCEPTION
        ok = result is None or result in (
            ConsumeStatus.CONSUME_SUCCESS,
            ConsumeOrderlyStatus.SUCCESS,
        )
        if not ok and not isinstance(result, (ConsumeStatus, ConsumeOrderlyStatus)):
            log.warning("listener of %s returned %r; treating it as a failure", self.group, result)
            outcome = ConsumeReturnType.RETURNNULL
        elif not ok and outcome is ConsumeReturnType.SUCCESS:
            outcome = ConsumeReturnType.FAILED
        if traced is not None and self.trace is not None:
            self.trace.after(traced, len(msgs), outcome)
        if ok:
            self.consumed_ok += len(msgs)
        else:
            self.consumed_failed += len(msgs)
        if self.stats is not None:
            rt_ms = (time.monotonic() - started) * 1000
            n = len(msgs)
            self.stats.consumed(ctx.message_queue.topic, rt_ms, n if ok else 0, 0 if ok else n)
        return ok

    def spawn(self, coro: Awaitable[Any], name: str | None = None) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        if name:
            task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("consume task of %s crashed", self.group, exc_info=task.exception())

    def later(self, delay: float, fn: Callable[[], None]) -> None:
        async def wait() -> None:
            await asyncio.sleep(delay)
            if not self._closed:
                fn()

        self.spawn(wait())

    def submit(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool = True
    ) -> None:
        raise NotImplementedError

    async def shutdown(self, timeout: float = 5.0) -> None:
        """Let running listeners finish (up to ``timeout``), cancel the rest."""
        self._closed = True
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=1.0)
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    @property
    def idle(self) -> bool:
        return not self._tasks


class ConsumeConcurrentlyService(ConsumeService):
    """RocketMQ's ConsumeMessageConcurrentlyService on asyncio tasks."""

    def __init__(self, *args: Any, concurrency: int = 20, **kwargs: Any) -> None:
        super().__init__(*args, concurrency=concurrency, **kwargs)
        if concurrency < 1:
            raise ValueError("consume concurrency must be >= 1")
        self._slots = asyncio.Semaphore(concurrency)
        if self.max_reconsume_times < 0:
            self.max_reconsume_times = DEFAULT_MAX_RECONSUME

    def submit(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool = True
    ) -> None:
        if self._closed:
            return
        size = self.batch_max_size
        for i in range(0, len(msgs), size):
            self.spawn(self._consume(msgs[i : i + size], pq, mq))

    async def _consume(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        async with self._slots:
            if pq.dropped:
                return
            reset_retry_topic(msgs, self.group)
            ctx = ConsumeContext(mq)
            ok = await self.call_listener(msgs, ctx)
            if pq.dropped:
                # The queue moved to another member meanwhile; it will consume these again.
                return
        await self._process_result(msgs, ok, ctx, pq, mq)

    async def _process_result(
        self,
        msgs: list[MessageExt],
        ok: bool,
        ctx: ConsumeContext,
        pq: ProcessQueue,
        mq: MessageQueue,
    ) -> None:
        ack_index = len(msgs) - 1 if ok else -1
        if ok and ctx.ack_index is not None:
            ack_index = max(-1, min(ctx.ack_index, ack_index))
        failed = msgs[ack_index + 1 :]
        retry_locally: list[MessageExt] = []
        if failed and self.message_model is MessageModel.BROADCASTING:
            for msg in failed:
                log.warning("broadcast consume of %s failed; dropping it", msg.msg_id)
        elif failed:
            for msg in failed:
                try:
                    await self.send_back(msg, ctx.delay_level_when_next_consume, mq)
                except MQError as exc:
                    log.warning(
                        "sending %s back failed (%s); consuming again locally", msg.msg_id, exc
                    )
                    msg.reconsume_times += 1
                    retry_locally.append(msg)
        done = [m for m in msgs if all(m is not r for r in retry_locally)]
        offset = pq.remove(done)
        if offset >= 0 and not pq.dropped:
            self.offset_store.update(mq, offset, increase_only=True)
        if retry_locally:
            self.later(RETRY_LATER, lambda: self.submit(retry_locally, pq, mq))


class ConsumeOrderlyService(ConsumeService):
    """RocketMQ's ConsumeMessageOrderlyService: one worker task per queue."""

    def __init__(
        self,
        *args: Any,
        lock: Callable[[MessageQueue], Awaitable[bool]],
        suspend_time: float = 1.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lock = lock
        self.suspend_time = suspend_time
        self._workers: dict[MessageQueue, asyncio.Task[None]] = {}

    def submit(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool = True
    ) -> None:
        if self._closed or pq.dropped:
            return
        worker = self._workers.get(mq)
        if worker is None or worker.done():
            self._workers[mq] = self.spawn(self._run(pq, mq), name=f"mq-orderly-{mq.queue_id}")

    def _locked(self, pq: ProcessQueue) -> bool:
        return self.message_model is MessageModel.BROADCASTING or pq.locked

    async def _run(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        while not pq.dropped and not self._closed:
            if not self._locked(pq):
                # Lock lost or expired: get it back before consuming anything more.
                await asyncio.sleep(LOCK_RETRY if pq.lock_expired else 0.1)
                if pq.dropped or self._closed:
                    return
                await self.lock(mq)
                continue
            async with pq.consume_lock:
                msgs = pq.take(self.batch_max_size)
                if not msgs:
                    return
                reset_retry_topic(msgs, self.group)
                ctx = ConsumeContext(mq)
                ok = await self.call_listener(msgs, ctx)
                if pq.dropped:
                    return
                if ok or await self._give_up(msgs, mq):
                    offset = pq.commit()
                    if offset >= 0:
                        self.offset_store.update(mq, offset)
                    continue
                pq.rollback()
            await asyncio.sleep(
                ctx.suspend_time if ctx.suspend_time is not None else self.suspend_time
            )

    async def _give_up(self, msgs: list[MessageExt], mq: MessageQueue) -> bool:
        """After a failure: True if every message is past ``max_reconsume_times`` and now
        in the DLQ (the queue moves on); otherwise count a retry and suspend."""
        limit = self.max_reconsume_times
        suspend = False
        for msg in msgs:
            if 0 <= limit <= msg.reconsume_times:
                try:
                    await self.send_back(msg, -1, mq)
                    continue
                except MQError as exc:
                    log.warning("sending %s to the DLQ failed: %s", msg.msg_id, exc)
            msg.reconsume_times += 1
            suspend = True
        return not suspend

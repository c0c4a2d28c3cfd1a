"""`TimerMessageService`: timer messages at any time in a running broker (RocketMQ 5).

Putting: :meth:`TimerMessageService.rewrite` is the timer half of RocketMQ 5's
``HookUtils.handleScheduleMessage``, run on a send before the delay-level rewrite (see
:mod:`mqcore.broker.timer.rewrite`).

Delivering: one task drives the store's :class:`~mqcore.store.timer.TimerMessageStore`
on the event loop. Each pass takes a batch of the timer queue into the wheel, then a
batch of the due slots out to their topics (rolls back into the timer queue), and
commits both (under SYNC_FLUSH once the group commit covering the pass's puts came
back). When nothing is left to do it sleeps until the next precision tick, or until a
timer message is put. RocketMQ's enqueue-get, enqueue-put, dequeue-get and dequeue-put
threads become these bounded steps of one task: a pass touches at most a few hundred
messages before it yields to the loop, so sends and pulls are never held for long.

Every ``timerFlushIntervalMs`` the checkpoint values are taken on the loop and the timer
log, the wheel and ``config/timercheck`` are synced in a thread (``TimerFlushService``).
Every 30 s timer log files naming only deleted commit log files go.

The service runs on a master only (as RocketMQ's dequeue): starting loads and recovers
the files in a thread, stopping writes the checkpoint and closes them.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from mqcore.broker.stats import StatsItem
from mqcore.broker.timer.rewrite import TimerRewrite
from mqcore.common.aio import cancel_and_wait, wait_event
from mqcore.errors import StoreError
from mqcore.message.const import TIMER_TOPIC
from mqcore.metrics import names as n
from mqcore.store.metadata import TopicConfig
from mqcore.store.store_config import BrokerRole, FlushDiskType
from mqcore.store.timer import TimerMessageStore

if TYPE_CHECKING:
    from mqcore.broker.append import Appender
    from mqcore.broker.services import Every
    from mqcore.broker.topics import TopicService
    from mqcore.message.model import MessageExt
    from mqcore.store.message_store import MessageStore
    from mqcore.store.results import PutResult
    from mqcore.store.store_config import MessageStoreConfig

__all__ = ["TimerMessageService"]

log = logging.getLogger("mq.broker.timer")

_BATCH = 256
"""Messages per step before the task yields to the loop."""
_RETRY_WAIT = 0.1
"""After a put worth retrying (RocketMQ sleeps 500 ms * precision / 1000)."""
_ERROR_WAIT = 1.0
_CLEAN_INTERVAL_MS = 30_000


def _now_ms() -> int:
    return int(time.time() * 1000)


class TimerMessageService:
    """The send rewrite, the delivery task, the flush and the runtime figures."""

    def __init__(
        self,
        store: MessageStore,
        store_config: MessageStoreConfig,
        *,
        appender: Appender,
        topics: TopicService,
        every: Every | None = None,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        self.store_config = store_config
        self.appender = appender
        self.topics = topics
        self.every = every
        """The master role's timers: the flush and the statistics samples."""
        self.clock = clock
        self.timer_store = TimerMessageStore(store, store_config, put=self._put, clock=clock)
        self.rewriter = TimerRewrite(
            store_config, clock=clock, is_reject=self._is_reject, on_rewrite=self._woken
        )
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._flushing: asyncio.Future[None] | None = None
        self._rng = random.Random()
        self.enqueue_rate = StatsItem(61)
        self.dequeue_rate = StatsItem(61)
        self.running = False
        self._last_progress_log = time.monotonic()

    @property
    def enabled(self) -> bool:
        return self.store_config.timer_wheel_enable

    # -- put side --------------------------------------------------------------------------
    def rewrite(self, msg: MessageExt) -> MessageExt:
        """A send's timer properties turned into a parked message (raises SendRefused);
        see :meth:`TimerRewrite.rewrite`."""
        return self.rewriter.rewrite(msg)

    def _is_reject(self, deliver_ms: int) -> bool:
        return self.timer_store.is_reject(deliver_ms, self._rng.random)

    def _woken(self) -> None:
        self._wake.set()  # the task runs after the handler, i.e. after the append

    def _put(self, batch: Sequence[MessageExt]) -> PutResult:
        return self.appender.put(batch, wait=False)

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Load and recover the files (in a thread), then start delivering. A slave, or
        a broker with ``timerWheelEnable=false``, runs nothing."""
        if self.running or not self.enabled or self.store_config.broker_role is BrokerRole.SLAVE:
            return
        self.topics.manager.ensure_topics([TopicConfig(TIMER_TOPIC, 1, 1)])
        try:
            await asyncio.to_thread(self.timer_store.load)
        except StoreError as exc:  # e.g. a full disk: the broker serves on without timers
            log.error("timer messages are not delivered: the timer store did not load: %s", exc)
            return
        self.running = True
        self._task = asyncio.create_task(self._run(), name="timer-message-service")
        if self.every is not None:
            flush_ms = self.store_config.timer_flush_interval_ms
            self.every(flush_ms, self.flush, name="timer-flush")
            self.every(1000, self.sample, name="timer-rates")
            self.every(_CLEAN_INTERVAL_MS, self._clean, name="timer-log-clean")

    async def stop(self) -> None:
        """Stop delivering; the checkpoint names what was committed, then the files close."""
        if not self.running:
            return
        self.running = False
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait([task])
        ts = self.timer_store
        if not ts.finish_slot():  # a slot half put would be put again at the next start
            log.warning("timer slot %d not finished at stop (puts refused)", ts.curr_read_time_ms)
        await self._await_flush(ts.last_put)
        ts.commit_dequeue()
        ts.commit_enqueue()
        if self._flushing is not None:
            await asyncio.gather(self._flushing, return_exceptions=True)
        await asyncio.to_thread(ts.close)

    # -- delivery ------------------------------------------------------------------------------
    async def _run(self) -> None:
        while True:
            self._wake.clear()  # a put during the pass sets it again: no wake-up is lost
            try:
                busy = await self.run_pass()
            except Exception:
                log.exception("timer pass failed")
                await asyncio.sleep(_ERROR_WAIT)
                continue
            if self.timer_store.stalled:
                await asyncio.sleep(_RETRY_WAIT)
            elif busy:
                await asyncio.sleep(0)
            else:
                await wait_event(self._wake, self._until_next_tick())

    async def run_pass(self) -> bool:
        """One enqueue step and one dequeue step, each committed once durable enough;
        whether more work is waiting."""
        ts = self.timer_store
        taken = ts.enqueue(_BATCH)
        await self._await_flush(ts.last_put)
        ts.commit_enqueue()
        self.enqueue_rate.add(taken, 0)
        before = ts.dequeue_count
        handled = ts.dequeue(_BATCH)
        await self._await_flush(ts.last_put)
        ts.commit_dequeue()
        self.dequeue_rate.add(ts.dequeue_count - before, 0)
        return taken == _BATCH or handled >= 0

    async def _await_flush(self, result: PutResult | None) -> None:
        """SYNC_FLUSH: a step counts as done once its puts are on disk."""
        if result is None or result.flush_future is None:
            return
        if self.store_config.flush_disk_type is not FlushDiskType.SYNC_FLUSH:
            return
        if not await self.appender.flushed(result):
            log.warning("timer deliveries took longer than syncFlushTimeout to flush")

    def _until_next_tick(self) -> float:
        """Seconds until the clock enters the next precision tick (a slot is due then)."""
        precision = self.timer_store.precision_ms
        now = self.clock()
        return max(0.001, (precision - now % precision) / 1000)

    # -- flush and clean -------------------------------------------------------------------------
    async def flush(self) -> None:
        """Checkpoint values on the loop, the syncs in a thread (one at a time)."""
        if not self.running or self._flushing is not None:
            return
        self.timer_store.prepare_checkpoint()
        self._flushing = asyncio.ensure_future(asyncio.to_thread(self.timer_store.flush_files))
        try:
            await self._flushing
        finally:
            self._flushing = None
        self._log_progress()

    def _clean(self) -> None:
        if self.running:
            deleted = self.timer_store.delete_expired_timer_log()
            if deleted:
                log.info("%d expired timer log file(s) deleted", deleted)

    def _log_progress(self) -> None:
        now = time.monotonic()
        if (
            now - self._last_progress_log
        ) * 1000 < self.store_config.timer_progress_log_interval_ms:
            return
        self._last_progress_log = now
        ts = self.timer_store
        log.info(
            "timer progress: read %d write %d readBehind %d s offsetBehind %d congest %d",
            ts.curr_read_time_ms,
            ts.curr_write_time_ms,
            ts.dequeue_behind_ms() // 1000,
            ts.enqueue_behind_messages(),
            ts.congest_num,
        )

    # -- figures -------------------------------------------------------------------------------
    def sample(self) -> None:
        now = time.monotonic()
        self.enqueue_rate.sample(now)
        self.dequeue_rate.sample(now)

    def metric_values(self) -> list[tuple[str, str, str, float]]:
        """(name, "gauge" or "counter", help, value) of RocketMQ 5's timer metrics
        (``DefaultStoreMetricsManager``), read at a scrape."""
        ts = self.timer_store
        return [
            (n.TIMER_ENQUEUE_LAG, "gauge", "Timer messages not yet in the wheel",
             ts.enqueue_behind_messages()),
            (n.TIMER_ENQUEUE_LATENCY, "gauge", "Store age of the message being enqueued (ms)",
             ts.enqueue_behind_ms()),
            (n.TIMER_DEQUEUE_LAG, "gauge", "Timer messages waiting in the wheel",
             ts.congest_num),
            (n.TIMER_DEQUEUE_LATENCY, "gauge", "How far the wheel's reading trails (ms)",
             max(0, ts.dequeue_behind_ms())),
            (n.TIMER_ENQUEUE_TOTAL, "counter", "Timer messages taken from the timer queue",
             ts.enqueue_count),
            (n.TIMER_DEQUEUE_TOTAL, "counter", "Timer messages put to their topic or rolled",
             ts.dequeue_count),
        ]  # fmt: skip

    def runtime_info(self) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO's timer keys, named and formatted as RocketMQ 5's
        ``AdminBrokerProcessor`` (zeros while the wheel is off or not running), plus
        mq's own progress keys."""
        ts = self.timer_store
        if not self.running or not ts.loaded:
            return {
                "timerReadBehind": "0",
                "timerOffsetBehind": "0",
                "timerCongestNum": "0",
                "timerEnqueueTps": "0.0",
                "timerDequeueTps": "0.0",
            }
        return {
            "timerReadBehind": str(ts.dequeue_behind_ms() // 1000),
            "timerOffsetBehind": str(ts.enqueue_behind_messages()),
            "timerCongestNum": str(ts.congest_num),
            "timerEnqueueTps": repr(round(self.enqueue_rate.rates(10)[0], 2)),
            "timerDequeueTps": repr(round(self.dequeue_rate.rates(10)[0], 2)),
            # mq's own keys: where the wheel reads, writes and has committed to
            "timerCurrReadTimeMs": str(ts.curr_read_time_ms),
            "timerCommitReadTimeMs": str(ts.commit_read_time_ms),
            "timerCurrWriteTimeMs": str(ts.curr_write_time_ms),
            "timerQueueOffset": str(ts.curr_queue_offset),
            "timerPrecisionMs": str(ts.precision_ms),
            "timerDeletedNum": str(ts.deleted_count),
        }

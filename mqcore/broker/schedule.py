"""`ScheduleMessageService`: delay levels (spec store-format §11, RocketMQ 4.x's
``ScheduleMessageService`` and the delay rewrite of ``CommitLog.putMessage``).

Putting: :meth:`ScheduleMessageService.rewrite_delay` turns a NOT/COMMIT message with
``DELAY`` > 0 into a ``SCHEDULE_TOPIC_XXXX`` message on queue ``level - 1`` (level clamped
to the table's maximum), adding ``REAL_TOPIC``/``REAL_QID`` (properties in 4.9.8's
``HashMap`` order, ``WAIT`` kept, as its re-serialization writes them); the store then
writes the deliver time (store ts + the level's delay) into the consume queue's tag slot.

Delivering: one asyncio task per level reads its schedule queue from the level's offset
in ``config/delayOffset.json``. An entry is due when its tag slot is <= now (a slot more
than one level-delay ahead counts as now: the wall clock went back). A due record is
re-put to ``REAL_TOPIC``/``REAL_QID`` with the same body, flag, sysflag, born time and
host, store host and reconsume times, and the properties of the schedule copy unchanged
(``DELAY``, ``REAL_TOPIC``, ``REAL_QID`` stay, as 4.9.8 stores them); it is a
:class:`DeliveredMessage`, which :meth:`rewrite_delay` never delays again. Records whose
real topic is the half topic are dropped. A failed put is retried at the same offset.

Progress is kept in the :class:`DelayOffsetManager` table (what GET_BROKER_RUNTIME_INFO
reports) and persisted every ``flushDelayOffsetInterval`` ms and at stop. Under
SYNC_FLUSH a batch of deliveries counts as done only once the group commit covering it
returns, so the persisted offset never runs ahead of durable copies.

What can repeat: after a clean stop nothing (the offsets are persisted after the last
delivery). After a crash, positions delivered since the last write are delivered again
at restart (at-least-once, as RocketMQ): a delivery asks the controller's ConfigPersister
to write ``delayOffset.json`` within about a second, where RocketMQ waits for
``flushDelayOffsetInterval`` (10 s; still the periodic write here). Under ASYNC_FLUSH a
power loss can also lose unflushed delivered copies whose positions were already
persisted (as RocketMQ; the offsets are clamped into the recovered queue at start).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from mqcore.broker.java_order import rewrite_properties
from mqcore.broker.stats import StatsItem
from mqcore.common.aio import cancel_and_wait, wait_event
from mqcore.errors import CorruptRecordError
from mqcore.message.const import (
    DLQ_GROUP_TOPIC_PREFIX,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    SCHEDULE_TOPIC,
    SysFlag,
)
from mqcore.message.model import MessageExt
from mqcore.message.record import decode_record
from mqcore.store.consume_queue import CQ_STORE_UNIT_SIZE, ENTRY, is_filler
from mqcore.store.results import PutResult, PutStatus
from mqcore.store.store_config import BrokerRole, FlushDiskType

if TYPE_CHECKING:
    from collections.abc import Callable

    from mqcore.broker.append import Appender
    from mqcore.store.message_store import MessageStore
    from mqcore.store.metadata import DelayOffsetManager
    from mqcore.store.metadata.persister import ConfigPersister
    from mqcore.store.store_config import MessageStoreConfig

__all__ = ["DeliveredMessage", "ScheduleMessageService"]

log = logging.getLogger("mq.broker.schedule")

_IDLE_WAIT = 1.0
"""Longest sleep of a level task: bounds the delay of a put that did not wake it."""
_RETRY_WAIT = 0.1
"""After a failed put (RocketMQ's DELAY_FOR_A_WHILE)."""
_ERROR_WAIT = 10.0
"""After an unexpected error (RocketMQ's DELAY_FOR_A_PERIOD)."""
_BATCH = 256
"""Deliveries per pass before yielding to the event loop."""
_RATE_WINDOWS = (10, 60, 600)
_NOT_DELAYABLE = (SysFlag.TRANSACTION_PREPARED_TYPE, SysFlag.TRANSACTION_ROLLBACK_TYPE)
_SKIP_STATUSES = (PutStatus.MESSAGE_ILLEGAL, PutStatus.PROPERTIES_SIZE_EXCEEDED)
"""Put failures that would repeat forever: the record is skipped (logged) instead."""
_SKIPPED = PutResult(PutStatus.PUT_OK)
"""What :meth:`ScheduleMessageService._deliver_one` answers for a dropped record."""


@dataclass(slots=True, kw_only=True)
class DeliveredMessage(MessageExt):
    """A message the schedule service re-puts: its ``DELAY`` property stays in the stored
    properties (as 4.9.8 keeps it) but it must not be delayed again."""


def _now_ms() -> int:
    return int(time.time() * 1000)


class ScheduleMessageService:
    """Delay rewrite on put, one delivery task per level, offsets and delivery rates."""

    def __init__(
        self,
        store: MessageStore,
        store_config: MessageStoreConfig,
        offsets: DelayOffsetManager,
        *,
        appender: Appender,
        persister: ConfigPersister,
        every: Callable[..., object] | None = None,
    ) -> None:
        self.store = store
        self.store_config = store_config
        self.offsets = offsets
        self.appender = appender
        """Deliveries are appended (and counted) as every broker-side put is."""
        self.persister = persister
        self.every = every
        """The master role's timers (:meth:`Timers.every`): offsets and rates."""
        self.delay_table = store_config.delay_level_table()
        self.max_level = max(self.delay_table)
        self.flush_interval_ms = max(100, store_config.flush_delay_offset_interval)
        self._sync_flush = store_config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        self._wake = {level: asyncio.Event() for level in self.delay_table}
        self._rates = {level: StatsItem(max(_RATE_WINDOWS) + 1) for level in self.delay_table}
        self._tasks: list[asyncio.Task[None]] = []
        self.running = False

    # -- put side ---------------------------------------------------------------------------
    def rewrite_delay(self, msg: MessageExt) -> MessageExt:
        """``CommitLog.putMessage``'s rewrite: a NOT/COMMIT message with ``DELAY`` > 0 is
        stored in ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1`` (clamped to the maximum
        level, ``DELAY`` updated) with ``REAL_TOPIC``/``REAL_QID``. Returns ``msg``.

        Not delayed: deliveries of this service, and dead letters (a send redirected to
        ``%DLQ%``: RocketMQ means to clear its delay there, but its setProperties call
        overwrites the cleared value; a dead letter has nothing to wait for)."""
        props = msg.properties
        text = props.get(PROPERTY_DELAY_TIME_LEVEL)
        if text is None or isinstance(msg, DeliveredMessage):
            return msg
        try:
            level = int(text)
        except ValueError:
            return msg
        if (
            level <= 0
            or msg.sys_flag & SysFlag.TRANSACTION_MASK in _NOT_DELAYABLE
            or msg.topic.startswith(DLQ_GROUP_TOPIC_PREFIX)
        ):
            return msg
        if level > self.max_level:
            level = self.max_level
            props[PROPERTY_DELAY_TIME_LEVEL] = str(level)
        rewrite_properties(
            props, {PROPERTY_REAL_TOPIC: msg.topic, PROPERTY_REAL_QUEUE_ID: str(msg.queue_id)}
        )
        msg.topic = SCHEDULE_TOPIC
        msg.queue_id = level - 1
        wake = self._wake.get(level)
        if wake is not None:
            wake.set()  # the task runs after this handler, i.e. after the append
        return msg

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        """Clamp the offsets into their queues, start the level tasks and timers (a
        slave does not deliver: its master's deliveries are replicated to it)."""
        if self.running or self.store_config.broker_role is BrokerRole.SLAVE:
            return
        self.running = True
        self.correct_offsets()
        for level in sorted(self.delay_table):
            self._tasks.append(
                asyncio.create_task(self._run_level(level), name=f"schedule-level-{level}")
            )
        if self.every is not None:
            self.every(self.flush_interval_ms, self.persist, name="persist-delay-offsets")
            self.every(1000, self.sample, name="schedule-rates")

    async def stop(self) -> None:
        """Stop the level tasks (an interrupted batch still records its progress), then
        persist ``delayOffset.json``: after a clean stop nothing is delivered twice."""
        if not self.running:
            return
        self.running = False
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        self.persist()

    def persist(self) -> None:
        self.offsets.persist()

    def correct_offsets(self) -> None:
        """``correctDelayOffset``: an offset outside its queue (a truncated store, a
        copied config) is moved to the nearest end."""
        for level in self.delay_table:
            cq = self.store.consume_queue(SCHEDULE_TOPIC, level - 1)
            if cq is None or level not in self.offsets.table:
                continue
            current = self.offsets.get(level)
            fixed = min(max(current, cq.min_offset), cq.max_offset)
            if fixed != current:
                log.error("delay level %d: offset %d corrected to %d", level, current, fixed)
                self.offsets.update(level, fixed)

    # -- delivery ---------------------------------------------------------------------------
    async def _run_level(self, level: int) -> None:
        wake = self._wake[level]
        while True:
            wake.clear()  # a put during the pass sets it again: no wake-up is lost
            try:
                wait = await self.deliver_due(level)
            except Exception:
                log.exception("delay level %d: delivery failed", level)
                wait = _ERROR_WAIT
            if wait <= 0:
                await asyncio.sleep(0)
                continue
            await wait_event(wake, min(wait, _IDLE_WAIT))

    async def deliver_due(self, level: int) -> float:
        """Deliver the due head of ``level``'s queue (up to one batch); the seconds until
        the next entry is due (0: more is due now, :data:`_IDLE_WAIT` when caught up)."""
        cq = self.store.consume_queue(SCHEDULE_TOPIC, level - 1)
        if cq is None:
            return _IDLE_WAIT
        start = self.offsets.get(level)
        offset = max(start, cq.min_offset)
        if offset != start:
            log.error("delay level %d: offset %d below queue min %d", level, start, offset)
        max_offset = cq.max_offset
        if offset >= max_offset:
            return _IDLE_WAIT
        delay_ms = self.delay_table[level]
        now = _now_ms()
        wait = 0.0
        pending: PutResult | None = None
        delivered = 0
        try:
            while offset < max_offset and delivered < _BATCH and not wait:
                view = cq.entries_view(offset)
                if view is None:
                    wait = _RETRY_WAIT
                    break
                count = min(len(view) // CQ_STORE_UNIT_SIZE, _BATCH - delivered)
                for phy, size, due in ENTRY.iter_unpack(view[: count * CQ_STORE_UNIT_SIZE]):
                    if due > now + delay_ms:
                        due = now  # correctDeliverTimestamp: the clock went back
                    if due > now:
                        wait = (due - now) / 1000
                        break
                    if not is_filler(phy, size):
                        result = self._deliver_one(level, phy)
                        if result is None:
                            wait = _RETRY_WAIT
                            break
                        if result.flush_future is not None:
                            pending = result
                    offset += 1
                    delivered += 1
            if pending is not None and self._sync_flush:
                await self._await_flush(pending)
        finally:
            if offset != start:
                self.offsets.update(level, offset)
                self._rates[level].msgs += delivered
                # On disk within a second (off the loop, coalesced), not only every
                # flushDelayOffsetInterval: kills in quicker succession than that replayed
                # every delayed message at each restart (50 kills: 24 copies of each).
                self.persister.request(self.offsets)
        if not wait and offset >= cq.max_offset:
            return _IDLE_WAIT  # caught up; a new put wakes the task
        return wait

    async def _await_flush(self, result: PutResult) -> None:
        """Wait for the group commit covering a batch (its flush timeout at most)."""
        if not await self.appender.flushed(result):
            timeout = self.store_config.sync_flush_timeout / 1000
            log.warning("delayed message flush took longer than %.1f s", timeout)

    def _deliver_one(self, level: int, phy: int) -> PutResult | None:
        """Re-put the record at ``phy``; None when the put failed and must be retried (a
        lost or unusable record is logged and skipped, as RocketMQ does)."""
        try:
            stored = decode_record(self.store.get_message(phy), 0, strict=True, decompress=False)
        except CorruptRecordError as exc:
            log.warning("delay level %d: no record at %d (%s); skipped", level, phy, exc)
            return _SKIPPED
        msg = self.build_delivery(stored)
        if msg is None:
            return _SKIPPED
        result = self.appender.put((msg,))
        if result.ok:
            return result
        if result.status in _SKIP_STATUSES:
            log.error("delay level %d: record at %d refused (%s); skipped", level, phy, result)
            return _SKIPPED
        log.warning("delay level %d: delivery put failed (%s); retrying", level, result.status)
        return None

    @staticmethod
    def build_delivery(stored: MessageExt) -> DeliveredMessage | None:
        """``messageTimeup``: the message to put for a schedule record, or None to drop it
        (half topic, or no usable ``REAL_TOPIC``/``REAL_QID``)."""
        props = stored.properties
        topic = props.get(PROPERTY_REAL_TOPIC)
        try:
            queue_id = int(props.get(PROPERTY_REAL_QUEUE_ID, ""))
        except ValueError:
            queue_id = -1
        if not topic or queue_id < 0:
            log.error(
                "schedule record at %d has no real topic/queue; dropped", stored.commit_log_offset
            )
            return None
        if topic == RMQ_SYS_TRANS_HALF_TOPIC:
            log.error(
                "schedule record at %d targets the half topic; dropped", stored.commit_log_offset
            )
            return None
        msg = stored.rerouted(topic, queue_id, properties=props, cls=DeliveredMessage)
        return cast(DeliveredMessage, msg)

    # -- statistics -------------------------------------------------------------------------
    def sample(self) -> None:
        now = time.monotonic()
        for item in self._rates.values():
            item.sample(now)

    def delivery_tps(self, level: int, window: int = 60) -> float:
        item = self._rates.get(level)
        return item.rates(window)[0] if item is not None else 0.0

    def runtime_info(self) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO keys, per level: RocketMQ's ``scheduleMessageOffset_<n>``
        = ``"<delivered>,<max>"``, plus mq's ``scheduleMessageHeadDue_<n>`` (deliver time
        of the first waiting message, -1 when none) and ``scheduleMessageDeliverTps_<n>``
        (messages/s over 10 s, 60 s, 600 s, as ``putTps``)."""
        out: dict[str, str] = {}
        for level in sorted(self.delay_table):
            cq = self.store.consume_queue(SCHEDULE_TOPIC, level - 1)
            delivered = self.offsets.get(level)
            max_offset = cq.max_offset if cq is not None else 0
            head = -1
            if cq is not None and delivered < max_offset:
                entry = cq.entry(max(delivered, cq.min_offset))
                if entry is not None:
                    head = entry[2]
            out[f"scheduleMessageOffset_{level}"] = f"{delivered},{max_offset}"
            out[f"scheduleMessageHeadDue_{level}"] = str(head)
            out[f"scheduleMessageDeliverTps_{level}"] = " ".join(
                repr(round(self.delivery_tps(level, w), 2)) for w in _RATE_WINDOWS
            )
        return out

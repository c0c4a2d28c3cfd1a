"""TimerMessageStore: timer messages through the wheel and the timer log (RocketMQ 5).

The broker parks a timer message in ``rmq_sys_wheel_timer`` queue 0 with its deliver
tick in ``TIMER_OUT_MS`` and its topic and queue in ``REAL_TOPIC``/``REAL_QID``. This
store moves it on, in two steps a caller drives (the broker from its event loop, tests
with a fake clock), each synchronous and bounded:

- :meth:`enqueue` reads that queue from ``curr_queue_offset``: a message already due
  (its tick before the write time) is put to its real topic at once; any other gets a
  unit in the timer log, chained into the wheel slot of its tick (or, when that lies
  beyond ``timerRollWindowSlot`` ticks, of a tick inside the window, marked roll: at
  that tick it is put back into the timer topic to be enqueued again). Then the write
  time moves to the present tick.
- :meth:`dequeue` takes the slot at ``curr_read_time_ms`` once it lies before the write
  time: delete markers of the slot first (their ``TIMER_DEL_UNIQKEY`` names what not to
  deliver), then every other unit is put to its real topic (``REAL_TOPIC``/``REAL_QID``
  removed, ``TIMER_ENQUEUE_MS``/``TIMER_DEQUEUE_MS`` added) or rolled. When the whole
  slot is put, the read time moves one tick.

The write time only moves after an enqueue step, so no unit is ever written into a slot
the dequeue has passed. What was done is made durable in the checkpoint through
:meth:`commit_enqueue`/:meth:`commit_dequeue` (a SYNC_FLUSH caller commits once its puts
are flushed) and :meth:`flush`. After a crash :meth:`load` replays the timer log from the
checkpoint's flush position into the wheel and starts enqueueing after the last unit's
message (or at the committed offset, whichever is first) and dequeueing at the committed
read time: nothing is lost, a few messages may be delivered twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mqcore.common.javahash import java_string_hash
from mqcore.errors import CorruptRecordError, StoreError
from mqcore.message.const import (
    PROPERTY_REAL_TOPIC,
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_TIMER_OUT_MS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    TIMER_TOPIC,
)
from mqcore.message.model import MessageExt
from mqcore.message.record import decode_record
from mqcore.store.results import PutResult
from mqcore.store.timer.checkpoint import TimerCheckpoint
from mqcore.store.timer.delivery import Deliverer, Pending, convert
from mqcore.store.timer.timer_log import (
    MAGIC_DEFAULT,
    MAGIC_DELETE,
    MAGIC_ROLL,
    UNIT_SIZE,
    TimerLog,
    TimerUnit,
)
from mqcore.store.timer.wheel import EMPTY, IGNORE, TimerWheel

if TYPE_CHECKING:
    from mqcore.store.message_store import MessageStore
    from mqcore.store.store_config import MessageStoreConfig

__all__ = [
    "DAY_SECS",
    "LONG_MAX",
    "TIMER_BLANK_SLOTS",
    "TIMER_WHEEL_TTL_DAY",
    "TimerMessageStore",
    "build_delete_key",
]

log = logging.getLogger("mq.store.timer")

TIMER_WHEEL_TTL_DAY = 7
DAY_SECS = 24 * 3600
TIMER_BLANK_SLOTS = 60
LONG_MAX = 2**63 - 1
"""``TIMER_ENQUEUE_MS`` of a message delivered without entering the wheel."""


def build_delete_key(real_topic: str, unique_key: str) -> str:
    """``buildDeleteKey``: what a delete marker's ``TIMER_DEL_UNIQKEY`` holds."""
    return f"{real_topic}+{unique_key}"


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class _SlotWork:
    """The slot being delivered: its delete markers, then its other units, in order."""

    time_ms: int
    num: int
    deletes: list[Pending]
    normals: list[Pending]
    deleted_keys: set[str] = field(default_factory=set)
    index: int = 0
    retry: list[Pending] = field(default_factory=list)
    """Units whose put failed and is retried before the slot goes on."""


class TimerMessageStore:
    """The wheel, the timer log and the checkpoint, and the two steps over them."""

    def __init__(
        self,
        store: MessageStore,
        config: MessageStoreConfig,
        *,
        put: Callable[[Sequence[MessageExt]], PutResult],
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        self.store = store
        self.config = config
        self.deliverer = Deliverer(config, put)
        """Puts due messages (``put`` appends a batch of one topic and queue: the
        broker's append path; it never blocks)."""
        self.clock = clock
        self.precision_ms = config.timer_precision_ms
        self.slots_total = TIMER_WHEEL_TTL_DAY * DAY_SECS
        roll = config.timer_roll_window_slot
        if roll > self.slots_total - TIMER_BLANK_SLOTS or roll < 2:
            roll = self.slots_total - TIMER_BLANK_SLOTS
        self.roll_window_slots = roll
        self.wheel: TimerWheel | None = None
        self.timer_log: TimerLog | None = None
        self.checkpoint: TimerCheckpoint | None = None
        self.curr_read_time_ms = 0
        self.curr_write_time_ms = 0
        self.curr_queue_offset = 0
        self.commit_read_time_ms = 0
        self.commit_queue_offset = 0
        self.congest_num = 0
        """Units waiting in the wheel from the read time on (``getAllNum``, kept up as
        units come and go instead of walking 1.2 million slots per question)."""
        self.enqueue_count = 0
        """Messages taken from the timer queue (into the wheel or delivered at once)."""
        self.deleted_count = 0
        self.last_enqueue_store_time = 0
        self.last_enqueue_time = 0
        self.stalled = False
        """The last step stopped at a put worth retrying (the caller waits a moment)."""
        self.replay_until = (0, 0)
        """(queue offset, read time) of a master's checkpoint replayed without its timer
        log: entries before the offset due before the read time were delivered."""
        self._slot: _SlotWork | None = None

    # -- lifecycle -----------------------------------------------------------------------
    def load(self) -> None:
        """Open the files and recover (see the module doc)."""
        root = self.config.root
        self.wheel = TimerWheel(root / "timerwheel", self.slots_total, self.precision_ms)
        self.timer_log = TimerLog(root / "timerlog", self.config.mapped_file_size_timer_log)
        self.checkpoint = TimerCheckpoint(self.config.timer_check_path)
        try:
            self.timer_log.load()
            self.recover()
        except BaseException:
            self.close(write_checkpoint=False)  # it names what the last run committed
            raise

    def close(self, *, write_checkpoint: bool = True) -> None:
        """Write the checkpoint (what was committed) and close the files."""
        if self.timer_log is not None:
            self.timer_log.flush()
        if write_checkpoint and self.checkpoint is not None and self.timer_log is not None:
            self.prepare_checkpoint()  # naming the flushed end: a clean start walks less
        if self.timer_log is not None:
            self.timer_log.close()
        if self.wheel is not None:
            self.wheel.flush()
            self.wheel.close()
        if self.checkpoint is not None:
            self.checkpoint.close(flush=write_checkpoint)
        self.wheel = self.timer_log = self.checkpoint = None
        self._slot = None

    @property
    def loaded(self) -> bool:
        return self.wheel is not None

    def _files(self) -> tuple[TimerWheel, TimerLog, TimerCheckpoint]:
        if self.wheel is None or self.timer_log is None or self.checkpoint is None:
            raise StoreError("the timer message store is not loaded")
        return self.wheel, self.timer_log, self.checkpoint

    def format_time(self, ms: int) -> int:
        return ms // self.precision_ms * self.precision_ms

    # -- recovery ------------------------------------------------------------------------
    def recover(self) -> None:
        """``recover``: the timer log's end, the queue offset and read time to resume at."""
        wheel, timer_log, checkpoint = self._files()
        begin = checkpoint.last_timer_log_flush_pos
        if timer_log.queue.last_file is not None:
            begin -= timer_log.file_size
        process_offset = self._recover_and_revise(max(0, begin), check=True)
        timer_log.set_write_end(process_offset)
        queue_offset = self._revise_queue_offset(process_offset)
        last = checkpoint.last_timer_queue_offset
        offset = last if queue_offset == -1 else queue_offset + 1
        offset = min(offset, checkpoint.master_timer_queue_offset)
        cq = self.store.consume_queue(TIMER_TOPIC, 0)
        if checkpoint.existed and process_offset == 0 and offset > 0 and cq is not None:
            # A checkpoint without a timer log: a slave's copy of its master's (taken by
            # the broker while it followed it), now this store's first start as master.
            # The master's wheel is not here: replay its queue from the start, dropping
            # what the master had delivered (entries it took whose tick lies before its
            # read time).
            self.replay_until = (offset, checkpoint.last_read_time_ms)
            log.warning(
                "timer checkpoint without a timer log: replaying the timer queue from %d "
                "(entries before %d due before %d were delivered by the master)",
                cq.min_offset,
                offset,
                checkpoint.last_read_time_ms,
            )
            offset = cq.min_offset
        if cq is not None:
            offset = min(max(offset, cq.min_offset), cq.max_offset)
        self.curr_queue_offset = offset
        now = self.format_time(self.clock())
        read = checkpoint.last_read_time_ms
        if not checkpoint.existed and process_offset == 0:
            read = now  # a new timer store: no turn of empty slots to walk first
        read = max(read, now - (self.slots_total - TIMER_BLANK_SLOTS) * self.precision_ms)
        self.curr_read_time_ms = read
        if wheel.existed:
            least = wheel.check_phy_pos(read, process_offset)
            if least < process_offset:
                log.warning("timer wheel ahead of the timer log; replaying from %d", least)
                self._recover_and_revise(least, check=False)
            self.congest_num = wheel.all_num(read)
        self.commit_read_time_ms = read
        self.commit_queue_offset = offset
        self.curr_write_time_ms = max(self.curr_write_time_ms, now)
        self.prepare_checkpoint()
        log.info(
            "timer store recovered: read time %d, queue offset %d (checkpoint %d), "
            "timer log end %d, %d waiting",
            read,
            offset,
            checkpoint.last_timer_queue_offset,
            process_offset,
            self.congest_num,
        )

    def _recover_and_revise(self, begin: int, *, check: bool) -> int:
        """Chain every unit from the file holding ``begin`` into its slot; the end of the
        units (``recoverAndRevise``)."""
        wheel, timer_log, _ = self._files()
        end, last = timer_log.last_units(begin, check=check)
        for delayed_time, offset in last.items():  # once per slot: its last unit
            wheel.revise_slot(delayed_time, IGNORE, offset, force=True)
        return end

    def _revise_queue_offset(self, process_offset: int) -> int:
        """The timer-queue offset of the last unit's message, -1 if unknown."""
        _, timer_log, _ = self._files()
        unit = timer_log.read_unit(process_offset - UNIT_SIZE) if process_offset else None
        if unit is None:
            return -1
        msg = self._read_message(unit.offset_py)
        if msg is None:
            return -1
        cq = self.store.consume_queue(TIMER_TOPIC, msg.queue_id)
        if cq is None:
            return msg.queue_offset
        index = msg.queue_offset
        for _ in range(20_000):
            if index < 0:
                break
            entry = cq.entry(index)
            if entry is not None and entry[0] == unit.offset_py and entry[1] == unit.size_py:
                return index
            index -= 1
        return msg.queue_offset

    # -- enqueue -------------------------------------------------------------------------
    def enqueue(self, limit: int = 256) -> int:
        """Take up to ``limit`` messages from the timer queue; how many were taken.
        Stops early at a due message whose put must be retried."""
        self.deliverer.last_put = None
        self.stalled = False
        if self.config.timer_stop_enqueue or not self.loaded:
            return 0
        cq = self.store.consume_queue(TIMER_TOPIC, 0)
        taken = 0
        if cq is not None:
            if self.curr_queue_offset < cq.min_offset:
                log.warning(
                    "timer queue offset %d below the queue's min %d",
                    self.curr_queue_offset,
                    cq.min_offset,
                )
                self.curr_queue_offset = cq.min_offset
            elif self.curr_queue_offset > cq.max_offset:
                # The queue was destroyed (all its messages expired) and made anew: what it
                # holds now came after; read it from its start rather than lose it.
                log.warning(
                    "timer queue offset %d past the queue's end %d; reading from %d",
                    self.curr_queue_offset,
                    cq.max_offset,
                    cq.min_offset,
                )
                self.curr_queue_offset = cq.min_offset
            end = min(cq.max_offset, self.curr_queue_offset + limit)
            while self.curr_queue_offset < end:
                entry = cq.entry(self.curr_queue_offset)
                if entry is None:
                    break
                if not self._enqueue_one(entry[0], entry[1], self.curr_queue_offset):
                    self.stalled = True
                    break
                self.curr_queue_offset += 1
                taken += 1
        self.move_write_time()
        return taken

    def _enqueue_one(self, offset_py: int, size_py: int, queue_offset: int) -> bool:
        """One timer-queue entry; False when a due message's put must be retried."""
        msg = self._read_message(offset_py)
        if msg is None:
            return True  # RocketMQ counts it as missed and moves on
        self.last_enqueue_store_time = msg.store_timestamp
        self.last_enqueue_time = self.clock()
        try:
            delayed = int(msg.properties[PROPERTY_TIMER_OUT_MS])
        except (KeyError, ValueError):
            log.error("timer message at %d has no usable %s; skipped", offset_py, "TIMER_OUT_MS")
            return True
        msg.queue_offset = queue_offset
        until, read = self.replay_until
        if queue_offset < until and delayed < read:
            return True  # delivered by the master this checkpoint came from
        if delayed < self.curr_write_time_ms:
            unit = TimerUnit(-1, MAGIC_DEFAULT, LONG_MAX, delayed, offset_py, size_py)
            pending = Pending(unit, self._copy_to_put(unit, msg))
            if self.deliverer.deliver([pending]):
                return False  # retried at the next step, from this entry
        else:
            self.do_enqueue(offset_py, size_py, delayed, msg)
        self.enqueue_count += 1
        return True

    def do_enqueue(self, offset_py: int, size_py: int, delayed: int, msg: MessageExt) -> int:
        """``doEnqueue``: a unit for ``msg`` in the slot of ``delayed`` (or a roll tick);
        its timer log offset."""
        wheel, timer_log, _ = self._files()
        write_time = self.curr_write_time_ms
        window = self.roll_window_slots * self.precision_ms
        magic = MAGIC_DEFAULT
        if delayed - write_time >= window:
            magic |= MAGIC_ROLL
            if delayed - write_time - window < self.roll_window_slots // 3 * self.precision_ms:
                delayed = write_time + self.roll_window_slots // 2 * self.precision_ms
            else:
                delayed = write_time + window
        is_delete = PROPERTY_TIMER_DEL_UNIQKEY in msg.properties
        if is_delete:
            magic |= MAGIC_DELETE
        real_topic = msg.properties.get(PROPERTY_REAL_TOPIC)
        slot = wheel.get_slot(delayed)
        unit = TimerUnit(
            slot.last_pos,
            magic,
            write_time,
            delayed,
            offset_py,
            size_py,
            java_string_hash(real_topic) if real_topic else 0,
        )
        pos = timer_log.append(unit.encode())
        first = pos if slot.first_pos == -1 else slot.first_pos
        delta = -1 if is_delete else 1
        wheel.put_slot(delayed, first, pos, slot.num + delta, slot.magic)
        self.congest_num += delta
        return pos

    def move_write_time(self) -> None:
        """``maybeMoveWriteTime``: the write time follows the clock's tick."""
        now = self.format_time(self.clock())
        if self.curr_write_time_ms < now:
            self.curr_write_time_ms = now

    def commit_enqueue(self) -> None:
        """What was enqueued counts for the checkpoint."""
        self.commit_queue_offset = self.curr_queue_offset

    # -- dequeue -------------------------------------------------------------------------
    def dequeue(self, budget: int = 256, skip_limit: int = 4096) -> int:
        """Deliver up to ``budget`` units of the due slots; -1 when none is left due, else
        the units handled (0: ``skip_limit`` empty slots passed, more may follow). A
        slot's read time moves only once all of it is put (a failed put stops the step;
        the next one retries it)."""
        self.deliverer.last_put = None
        self.stalled = False
        if self.config.timer_stop_dequeue or not self.loaded:
            return -1
        wheel, _, _ = self._files()
        handled = 0
        skipped = 0
        while handled < budget:
            if self._slot is None:
                if self.curr_read_time_ms >= self.curr_write_time_ms:
                    return handled if handled else -1
                slot = wheel.get_slot(self.curr_read_time_ms)
                if slot is EMPTY:
                    self.curr_read_time_ms += self.precision_ms
                    skipped += 1
                    if skipped >= skip_limit:
                        return handled
                    continue
                self._slot = self._load_slot(slot.time_ms, slot.last_pos, slot.num)
            work = self._slot
            done, stalled = self._deliver_slot(work, budget - handled)
            handled += done
            if stalled:
                self.stalled = True
                return handled
            if work.index >= len(work.deletes) + len(work.normals):
                self._slot = None
                self.congest_num -= work.num
                self.curr_read_time_ms += self.precision_ms
        return handled

    def finish_slot(self, budget: int = 4096) -> bool:
        """Deliver the rest of a slot begun by :meth:`dequeue` (a clean stop calls this,
        so the checkpoint's read time lies past every slot whose messages were put:
        nothing is delivered twice after a clean restart). False when a put failed."""
        work = self._slot
        while work is not None:
            _, stalled = self._deliver_slot(work, budget)
            if stalled:
                return False
            if work.index >= len(work.deletes) + len(work.normals):
                self._slot = None
                self.congest_num -= work.num
                self.curr_read_time_ms += self.precision_ms
                work = None
        return True

    def _load_slot(self, time_ms: int, last_pos: int, num: int) -> _SlotWork:
        """Walk a slot's chain backwards: delete markers in chain order, the others in
        the order they were enqueued."""
        _, timer_log, _ = self._files()
        deletes: list[Pending] = []
        normals: list[Pending] = []
        pos = last_pos
        seen = 0
        while pos != -1 and seen <= 10_000_000:
            unit = timer_log.read_unit(pos)
            if unit is None:
                log.warning("timer slot %d: no unit at %d", time_ms, pos)
                break
            if unit.delete and not unit.roll:
                deletes.append(Pending(unit))
            else:
                normals.append(Pending(unit))
            pos = unit.prev_pos
            seen += 1
        if not deletes and not normals:
            log.warning("timer slot %d read nothing from the timer log", time_ms)
        normals.reverse()
        return _SlotWork(time_ms, num, deletes, normals)

    def _deliver_slot(self, work: _SlotWork, budget: int) -> tuple[int, bool]:
        """Up to ``budget`` units of ``work`` (puts that failed first); (units handled,
        stalled on a put)."""
        if work.retry:
            work.retry = self.deliverer.deliver(work.retry)
            if work.retry:
                return 0, True
        handled = 0
        n_deletes = len(work.deletes)
        batch: list[Pending] = []
        while handled < budget and work.index < n_deletes + len(work.normals):
            i = work.index
            if i < n_deletes:
                pending = work.deletes[i]
                msg = self._read_message(pending.unit.offset_py)
                key = msg.properties.get(PROPERTY_TIMER_DEL_UNIQKEY) if msg else None
                if key:
                    work.deleted_keys.add(key)
            else:
                pending = work.normals[i - n_deletes]
                msg = self._read_message(pending.unit.offset_py)
                if msg is not None:
                    if self._is_deleted(work, msg):
                        self.deleted_count += 1
                    else:
                        pending.out = self._copy_to_put(pending.unit, msg)
                        batch.append(pending)
            work.index += 1
            handled += 1
        work.retry = self.deliverer.deliver(batch)
        return handled, bool(work.retry)

    @staticmethod
    def _is_deleted(work: _SlotWork, msg: MessageExt) -> bool:
        if not work.deleted_keys:
            return False
        uniq = msg.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        topic = msg.properties.get(PROPERTY_REAL_TOPIC)
        if uniq is None or topic is None:
            return False
        return build_delete_key(topic, uniq) in work.deleted_keys

    def _copy_to_put(self, unit: TimerUnit, msg: MessageExt) -> MessageExt | None:
        """What to put for a unit (None: nothing; a delete marker is never delivered)."""
        if not unit.roll and PROPERTY_TIMER_DEL_UNIQKEY in msg.properties:
            return None
        return convert(msg, unit.enqueue_time, self.clock(), roll=unit.roll)

    @property
    def dequeue_count(self) -> int:
        """Messages put to their real topic or rolled (and those put at enqueue)."""
        return self.deliverer.delivered

    @property
    def last_put(self) -> PutResult | None:
        """The latest put of the last step (a SYNC_FLUSH caller waits for it to be
        durable before committing the step)."""
        return self.deliverer.last_put

    def commit_dequeue(self) -> None:
        """What was delivered counts for the checkpoint."""
        self.commit_read_time_ms = self.curr_read_time_ms

    # -- reading ---------------------------------------------------------------------------
    def _read_message(self, offset_py: int) -> MessageExt | None:
        try:
            return decode_record(self.store.get_message(offset_py), 0, decompress=False)
        except CorruptRecordError as exc:
            log.warning("no timer message at %d (%s)", offset_py, exc)
            return None

    # -- checkpoint and flush --------------------------------------------------------------
    def prepare_checkpoint(self) -> None:
        """``prepareTimerCheckPoint``: the committed progress into the checkpoint (a
        master's: it runs the dequeue)."""
        _, timer_log, checkpoint = self._files()
        checkpoint.last_timer_log_flush_pos = timer_log.flushed_where
        checkpoint.last_read_time_ms = self.commit_read_time_ms
        if (
            checkpoint.master_timer_queue_offset != self.commit_queue_offset
            or checkpoint.last_read_time_ms != self.commit_read_time_ms
        ):
            checkpoint.next_version()
        checkpoint.master_timer_queue_offset = self.commit_queue_offset
        checkpoint.last_timer_queue_offset = min(
            self.commit_queue_offset, checkpoint.master_timer_queue_offset
        )

    def flush(self) -> None:
        """``TimerFlushService``'s pass: checkpoint values, timer log, wheel, then the
        checkpoint file (it names a flush position the log has reached)."""
        self.prepare_checkpoint()
        self.flush_files()

    def flush_files(self) -> None:
        """The files' part of :meth:`flush` (a thread may run it: it only syncs what the
        values prepared on the caller's thread describe)."""
        wheel, timer_log, checkpoint = self._files()
        timer_log.flush()
        wheel.flush()
        checkpoint.flush()

    def delete_expired_timer_log(self) -> int:
        """Timer log files naming only messages the commit log no longer holds."""
        _, timer_log, _ = self._files()
        return timer_log.delete_expired(self.store.min_phy_offset)

    # -- figures -----------------------------------------------------------------------------
    def is_reject(self, deliver_ms: int, rand: Callable[[], float]) -> bool:
        """``isReject``: flow control on a crowded slot (``timerCongestNumEachSlot``)."""
        limit = self.config.timer_congest_num_each_slot
        if self.wheel is None:
            return False
        num = self.wheel.num(deliver_ms)
        if num <= limit:
            return False
        if num >= limit * 2:
            return True
        return rand() * 1000 > 1000 * (num - limit) / (limit + 0.1)

    def enqueue_behind_messages(self) -> int:
        """``getEnqueueBehindMessages``: timer-queue entries not taken yet."""
        cq = self.store.consume_queue(TIMER_TOPIC, 0)
        return (cq.max_offset if cq is not None else 0) - self.curr_queue_offset

    def enqueue_behind_ms(self) -> int:
        """``getEnqueueBehindMillis``: the store age of the last message taken, while the
        enqueue took one in the last two seconds (0 otherwise: it is caught up)."""
        now = self.clock()
        if now - self.last_enqueue_time < 2000:
            return max(0, now - self.last_enqueue_store_time)
        return 0

    def dequeue_behind_ms(self) -> int:
        """``getDequeueBehindMillis``: how far the read time trails the clock."""
        return self.clock() - self.curr_read_time_ms

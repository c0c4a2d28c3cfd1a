"""MessageStore: the facade the broker and the offline tools use (DefaultMessageStore).

Byte layout of the store root (RocketMQ 4.x, spec §1)::

    <root>/lock                          "lock" + POSIX record lock on byte 0
    <root>/abort                         empty; present while a writer runs
    <root>/checkpoint                    4096 B, see checkpoint.py
    <root>/commitlog/<20-digit offset>   mappedFileSizeCommitLog each, see commitlog.py
    <root>/consumequeue/<topic>/<qid>/<20-digit offset>   see consume_queue.py
    <root>/index/<yyyyMMddHHmmssSSS>     see index_file.py
    <root>/config/*.json                 owned by mqcore.store.metadata

Appends are synchronous and serialised by one put lock: encode, assign queue offsets
and the store timestamp, copy the whole batch into the mapped commit log once, leave an
append receipt, answer. Consume queue and index entries are written behind the put, as
RocketMQ's ReputMessageService does: a driver set in :attr:`MessageStore.on_append` (the
broker, once per event loop pass) calls :meth:`MessageStore.dispatch_pending`, which
dispatches every receipt since the last pass in one go. A read (a pull, a key query, an
offset) that comes before that pass dispatches what is pending first, so it sees every
acknowledged append. Without a driver (offline tools, tests) a put dispatches before it
returns. Durability is the flush services' job (see flush.py); SYNC_FLUSH callers get a
future from the group commit. Reads hand out memoryviews of the mapped files.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from mqcore.errors import DiskFullError, StoreError
from mqcore.message.const import (
    PROPERTY_DELAY_TIME_LEVEL,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    SCHEDULE_TOPIC,
)
from mqcore.message.model import MessageExt
from mqcore.store import batch_encoder
from mqcore.store.checkpoint import StoreCheckpoint
from mqcore.store.cleanup import CleanupReport, CleanupService
from mqcore.store.commitlog import CommitLog
from mqcore.store.consume_queue import ConsumeQueue
from mqcore.store.dispatcher import AppendReceipt, Arrival, ConsumeQueueTable, Dispatcher
from mqcore.store.flush import (
    CommitLogFlusher,
    FlushConsumeQueueService,
    FlushRealTimeService,
    GroupCommitService,
)
from mqcore.store.index_service import IndexService
from mqcore.store.lock import StoreLock, abort_file_exists, create_abort_file, remove_abort_file
from mqcore.store.observer import StoreObserver
from mqcore.store.reads import StoreReader
from mqcore.store.recovery import RecoveryReport, recover
from mqcore.store.results import (
    GetResult,
    GetStatus,
    PutResult,
    PutStatus,
    QueryResult,
    RecordFilter,
    TagFilter,
)
from mqcore.store.store_config import BrokerRole, FlushDiskType, MessageStoreConfig

__all__ = [
    "Arrival",
    "GetResult",
    "GetStatus",
    "MessageStore",
    "PutResult",
    "PutStatus",
    "QueryResult",
    "RecordFilter",
    "TagFilter",
]

log = logging.getLogger(__name__)
_P = ParamSpec("_P")
_R = TypeVar("_R")


def physical_memory() -> int:
    """Bytes of RAM (RocketMQ's ``TOTAL_PHYSICAL_MEMORY_SIZE``); 8 GiB if unknown."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 1024**3


def _now_ms() -> int:
    return int(time.time() * 1000)


def _read(
    method: Callable[Concatenate[StoreReader, _P], _R], *, observed: bool = False
) -> Callable[Concatenate[MessageStore, _P], _R]:
    """A :class:`MessageStore` method that hands the call to the store's reader: same
    name, parameters and docstring as ``method``. ``observed`` tells the store's
    observer, when it has one, when each call began."""

    def forward(store: MessageStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        observer = store.observer if observed else None
        if observer is None:
            return method(store.reader, *args, **kwargs)
        started = time.monotonic()
        try:
            return method(store.reader, *args, **kwargs)
        finally:
            observer.on_get(started)

    functools.update_wrapper(forward, method)
    return forward


class MessageStore:
    """RocketMQ's DefaultMessageStore: load, start, put, get, query, shut down. Reads are
    its :attr:`reader`'s (:class:`~mqcore.store.reads.StoreReader`); the methods below
    that read hand over to it."""

    def __init__(self, config: MessageStoreConfig, *, readonly: bool = False) -> None:
        self.config = config
        self.readonly = readonly
        self.observer: StoreObserver | None = None
        """Told of each put's result and each get (the broker's put/get timings)."""
        self.root = config.root
        self._delay_table = config.delay_level_table()
        self.commit_log = CommitLog(
            config.commit_log_path,
            config.mapped_file_size_commit_log,
            readonly=readonly,
            delay_table=self._delay_table,
        )
        self.queues = ConsumeQueueTable(
            config.consume_queue_path, config.mapped_file_size_consume_queue, readonly=readonly
        )
        self.index: IndexService | None = None
        if config.message_index_enable or readonly:
            self.index = IndexService(
                self.root, config.max_hash_slot_num, config.max_index_num, readonly=readonly
            )
        self.checkpoint: StoreCheckpoint | None = None
        self.dispatcher = Dispatcher(
            self.commit_log, self.queues, self.index if config.message_index_enable else None
        )
        self.dispatcher.delay_table = self._delay_table
        self.on_append: Callable[[], None] | None = None
        """Called after each append by a driver that dispatches later through
        :meth:`dispatch_pending`; None dispatches inside the put."""
        self._pending: list[AppendReceipt] = []
        self._replicated_pending = False
        """An HA slave appended bytes not dispatched yet."""
        self._arrivals: list[Arrival] = []
        self._dispatch_lock = threading.Lock()
        self.topic_queue_table: dict[tuple[str, int], int] = {}
        """Next queue offset per (topic, queue id)."""
        self.recovery_report: RecoveryReport | None = None
        self.last_exit_ok = True
        self._lock = StoreLock(self.root)
        self._put_lock = threading.Lock()
        self._flusher: CommitLogFlusher | None = None
        self._cq_flusher: FlushConsumeQueueService | None = None
        self.cleanup = CleanupService(config, self.commit_log, self.queues, self.index)
        self._loaded = False
        self._running = False
        self.reader = StoreReader(
            config,
            self.commit_log,
            self.queues,
            self.index,
            settle=self._settle,
            memory_for_reads=physical_memory() * config.access_message_in_memory_max_ratio // 100,
        )

    # -- construction helpers ------------------------------------------------------------
    @classmethod
    def open_readonly(
        cls, root: str | Path, config: MessageStoreConfig | None = None
    ) -> MessageStore:
        """Open a store for offline tools: no lock, no abort file, no writes at all.

        File sizes (commit log, each consume queue, index geometry) are taken from the
        files themselves, so a store written with any settings can be read.
        """
        root = Path(root)
        cfg = config or MessageStoreConfig(store_path_root_dir=str(root))
        commit_dir = cfg.commit_log_path
        files = (
            sorted(p for p in commit_dir.glob("*") if p.name.isdigit())
            if commit_dir.is_dir()
            else []
        )
        if files:
            size = files[0].stat().st_size
            if size >= 4096:
                cfg.mapped_file_size_commit_log = size
        index_dir = root / "index"
        index_files = (
            sorted(p for p in index_dir.glob("*") if p.name.isdigit()) if index_dir.is_dir() else []
        )
        if index_files:
            from mqcore.store.index_file import IndexFile

            probe = IndexFile.open(index_files[0], readonly=True)
            cfg.max_hash_slot_num, cfg.max_index_num = probe.max_hash_slot_num, probe.max_index_num
            probe.close()
        store = cls(cfg, readonly=True)
        store.load()
        return store

    # -- lifecycle -----------------------------------------------------------------------
    def load(self) -> RecoveryReport | None:
        """Map files and recover; writable stores take the lock first."""
        if self._loaded:
            return self.recovery_report
        started = time.monotonic()
        try:
            if not self.readonly:
                self._lock.acquire()
                self.last_exit_ok = not abort_file_exists(self.root)
            self.checkpoint = StoreCheckpoint(self.config.checkpoint_path, readonly=self.readonly)
            self.commit_log.load()
            self.queues.load(infer_size=self.readonly)
            if self.index is not None:
                self.index.load()
            if self.readonly:
                self._recover_readonly()
            else:
                report = recover(
                    self.commit_log,
                    self.queues,
                    self.dispatcher,
                    self.checkpoint,
                    index=self.index if self.config.message_index_enable else None,
                    last_exit_ok=self.last_exit_ok,
                    check_crc=self.config.check_crc_on_recover,
                )
                self.recovery_report = report
                self.topic_queue_table = dict(report.topic_queue_table)
                # Persist the recovered state so a crash right now needs no deep rescan.
                self.commit_log.queue.flush_all()
                for cq in self.queues.all():
                    cq.queue.flush_all()
                if self.index is not None:
                    self.index.flush()
                report.seconds = time.monotonic() - started
                log.info("%s", report.summary())
        except BaseException:
            self._close_files()
            self._lock.release()
            raise
        self._loaded = True
        return self.recovery_report

    def _recover_readonly(self) -> None:
        """Find ends without writing: commit log from its third-to-last file, queues."""
        for cq in self.queues.all():
            cq.recover()
            cq.correct_min_offset(self.commit_log.min_offset)
            self.topic_queue_table[(cq.topic, cq.queue_id)] = cq.max_offset
        files = self.commit_log.queue.files
        if files:
            start = files[max(0, len(files) - 3)].file_from_offset
            for _ in self.commit_log.scan(start, strict=False):
                pass
            self.commit_log.queue.set_write_end(max(self.commit_log.last_scan_end, start))

    def start(self) -> None:
        """Create the abort marker and start the flush threads."""
        if self.readonly:
            raise StoreError("a read-only store cannot be started")
        if not self._loaded:
            self.load()
        if self._running:
            return
        create_abort_file(self.root)
        self._reserve_writable_file()
        cfg = self.config
        if cfg.flush_disk_type is FlushDiskType.SYNC_FLUSH:
            self._flusher = GroupCommitService(self.commit_log)
        else:
            self._flusher = FlushRealTimeService(
                self.commit_log,
                cfg.flush_interval_commit_log,
                cfg.flush_commit_log_least_pages,
                cfg.flush_commit_log_thorough_interval,
            )
        self._cq_flusher = FlushConsumeQueueService(
            cfg.flush_interval_consume_queue,
            self.flush_consume_queues,
            self._housekeeping,
            cfg.clean_resource_interval,
        )
        self._flusher.start()
        self._cq_flusher.start()
        self._running = True

    def _reserve_writable_file(self) -> None:
        """A store that starts on a full disk serves reads and refuses writes (instead of
        dying of SIGBUS at the first write into a hole of its last, sparse, file)."""
        self.cleanup.check_disk()
        last = self.commit_log.queue.last_file
        if last is None or last.is_full:
            return
        try:
            last.reserve_to(last.wrote_position + 1)  # the next step of blocks
        except DiskFullError as exc:
            self.cleanup.disk_full = True
            log.error("starting read-only: %s", exc)

    def shutdown(self) -> None:
        """Stop threads, flush everything, remove the abort marker, release the lock."""
        if self._running:
            self._running = False
            self._dispatch()
            if self._flusher is not None:
                self._flusher.shutdown()
            if self._cq_flusher is not None:
                self._cq_flusher.shutdown()
            self.flush_consume_queues()
            remove_abort_file(self.root)
        self._close_files()
        self._lock.release()
        self._loaded = False

    def _close_files(self) -> None:
        if self.index is not None:
            self.index.shutdown()
        self.queues.close()
        self.commit_log.close()
        if self.checkpoint is not None:
            self.checkpoint.close()

    def __enter__(self) -> MessageStore:
        if self.readonly:
            self.load()
        else:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    @property
    def running(self) -> bool:
        return self._running

    # -- flushing ------------------------------------------------------------------------
    def flush_consume_queues(self) -> None:
        """Flush queues and index, then write the checkpoint naming what is durable.

        indexMsgTimestamp is one millisecond before the last record dispatched when the
        flush began (4.9.8 writes the end of the last full index file there): every index
        entry of records stored up to then is on disk, so recovery keeps the index files
        and only indexes what follows again. One millisecond earlier because a record of
        the same millisecond may be dispatched after the flush began; so an index file
        ending at or before that time holds nothing newer than the flush, which is what a
        4.9.8 broker's recovery needs of the files it keeps."""
        if self.readonly or self.checkpoint is None:
            return
        with self._dispatch_lock:  # between two passes: nothing half dispatched
            dispatched_ts = self.dispatcher.last_dispatched_timestamp
        for cq in self.queues.all():
            cq.queue.flush_all()
        if self.index is not None and self.config.message_index_enable:
            self.index.flush()
            if dispatched_ts:
                self.checkpoint.index_msg_timestamp = dispatched_ts - 1
        if dispatched_ts:
            self.checkpoint.logics_msg_timestamp = dispatched_ts
        if self._flusher is not None and self._flusher.flushed_store_timestamp:
            self.checkpoint.physic_msg_timestamp = self._flusher.flushed_store_timestamp
        self.checkpoint.flush()

    def flush(self) -> None:
        """Make everything appended so far durable (tests, tools, shutdown)."""
        self._dispatch()
        if self._flusher is not None:
            self._flusher.flush_all()
        else:
            self.commit_log.queue.flush_all()
        self.flush_consume_queues()

    def _housekeeping(self) -> None:
        self.cleanup.run()

    def clean_expired(self, *, manual: bool = True) -> CleanupReport:
        """One cleanup pass now (``deleteExpiredCommitLog``)."""
        with self._dispatch_lock, self._put_lock:
            return self.cleanup.run(manual=manual)

    def clean_expired_consume_queues(self) -> list[tuple[str, int]]:
        """``cleanExpiredConsumerQueue``: destroy every consume queue whose last record
        ends below the commit log's min offset (all its messages are gone), so such a
        queue starts again at offset 0. SCHEDULE_TOPIC_XXXX is kept. Returns the
        (topic, queue id) pairs destroyed."""
        with self._dispatch_lock, self._put_lock:
            min_phy = self.commit_log.min_offset
            return self._destroy_queues(
                lambda cq: cq.topic != SCHEDULE_TOPIC and -1 < cq.last_offset() < min_phy
            )

    def clean_unused_topics(self, in_use: Callable[[str], bool]) -> list[tuple[str, int]]:
        """``cleanUnusedTopic``: destroy the consume queues of topics ``in_use`` (the
        broker's topic table) denies, except SCHEDULE_TOPIC_XXXX and the transaction op
        topic. ``in_use`` is asked under the store's locks, so a topic created meanwhile
        is seen."""
        spared = {SCHEDULE_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC}
        with self._dispatch_lock, self._put_lock:
            return self._destroy_queues(lambda cq: cq.topic not in spared and not in_use(cq.topic))

    def _destroy_queues(self, doomed: Callable[[ConsumeQueue], bool]) -> list[tuple[str, int]]:
        """Under both locks: queues with appends not dispatched yet are left alone."""
        busy = {(r.batch.topic, r.batch.queue_id) for r in self._pending}
        removed: list[tuple[str, int]] = []
        for cq in self.queues.all():
            key = (cq.topic, cq.queue_id)
            if key in busy or not doomed(cq):
                continue
            self.queues.remove(*key)
            cq.destroy()
            self.topic_queue_table.pop(key, None)
            removed.append(key)
            log.info("consume queue %s/%d destroyed", *key)
        return removed

    # -- reading: the reader's methods, handed over as they are ---------------------------
    get_message = _read(StoreReader.get_message)
    look_message = _read(StoreReader.look_message)
    consume_queue = _read(StoreReader.consume_queue)
    get_messages = _read(StoreReader.get_messages, observed=True)
    """The observer, when set, is told when each of these reads began."""
    get_max_offset_in_queue = _read(StoreReader.get_max_offset_in_queue)
    get_min_offset_in_queue = _read(StoreReader.get_min_offset_in_queue)
    get_commit_log_offset_in_queue = _read(StoreReader.get_commit_log_offset_in_queue)
    check_in_disk_by_consume_offset = _read(StoreReader.check_in_disk_by_consume_offset)
    get_store_time = _read(StoreReader.get_store_time)
    get_message_store_timestamp = _read(StoreReader.get_message_store_timestamp)
    get_earliest_message_time = _read(StoreReader.get_earliest_message_time)
    lookup_by_time = _read(StoreReader.lookup_by_time)
    query_by_key = _read(StoreReader.query_by_key)
    topics = _read(StoreReader.topics)

    @property
    def min_phy_offset(self) -> int:
        return self.commit_log.min_offset

    @property
    def max_phy_offset(self) -> int:
        return self.commit_log.max_offset

    # -- appending -----------------------------------------------------------------------
    def _check_writable(self) -> PutResult | None:
        if self.readonly or not self._running:
            return PutResult(PutStatus.SERVICE_NOT_AVAILABLE, remark="store is not running")
        if self.config.broker_role is BrokerRole.SLAVE:
            # 4.9.8's checkStoreStatus: a slave's log only grows by replication.
            return PutResult(PutStatus.SERVICE_NOT_AVAILABLE, remark="broker role is slave")
        if self.cleanup.disk_full:
            return PutResult(PutStatus.SERVICE_NOT_AVAILABLE, remark="disk is full")
        return None

    def put_message(self, msg: MessageExt) -> PutResult:
        """Append one message (``putMessage``); the broker has done delay/tx rewrites."""
        return self.put_messages((msg,))

    def put_messages(self, batch: Sequence[MessageExt]) -> PutResult:
        """Append messages of one topic and queue in one copy (``putMessages``); see
        :meth:`_put_messages`. The observer, when set, is told the result and start."""
        observer = self.observer
        if observer is None:
            return self._put_messages(batch)
        started = time.monotonic()
        result = self._put_messages(batch)
        observer.on_put(result, started)
        return result

    def _put_messages(self, batch: Sequence[MessageExt]) -> PutResult:
        """Append messages of one topic and queue in one copy (``putMessages``).

        Fields used: topic, queue_id, body, flag, properties, sys_flag, born_timestamp,
        born_host, store_host, reconsume_times, prepared_transaction_offset. All records
        land in the same commit log file with consecutive queue offsets. Consume queue
        and index entries follow through :meth:`dispatch_pending` (see the module doc).
        """
        bad = self._check_writable()
        if bad is not None:
            return bad
        if not batch:
            return PutResult(PutStatus.MESSAGE_ILLEGAL, remark="empty batch")
        try:
            prepared = batch_encoder.prepare(batch, self.config.max_message_size)
        except batch_encoder.IllegalMessageError as exc:
            return PutResult(PutStatus[exc.status], remark=str(exc))
        delay_level = None
        if prepared.topic == SCHEDULE_TOPIC:
            delay_level = batch[0].properties.get(PROPERTY_DELAY_TIME_LEVEL)
        key = (prepared.topic, prepared.queue_id)
        with self._put_lock:
            # Never earlier than the last record: recovery finds what the checkpoint
            # proves by binary search over store times, which needs them in log order
            # (a clock stepping back would otherwise break that order).
            store_ts = max(_now_ms(), self.commit_log.last_store_timestamp)
            try:
                mf, phy = self.commit_log.reserve(prepared.total)
            except DiskFullError as exc:
                self.cleanup.disk_full = True  # until a cleanup pass finds room again
                log.error("refusing writes: %s", exc)
                return PutResult(PutStatus.SERVICE_NOT_AVAILABLE, remark=f"disk is full: {exc}")
            except StoreError as exc:
                return PutResult(PutStatus.MESSAGE_ILLEGAL, remark=str(exc))
            first_qo = self.topic_queue_table.get(key, 0)
            data, offsets, qoffsets, next_qo = batch_encoder.encode(
                prepared, phy, first_qo, store_ts
            )
            end = self.commit_log.commit(mf, data, store_ts)
            self.topic_queue_table[key] = next_qo
            self._pending.append(AppendReceipt(prepared, offsets, qoffsets, store_ts, delay_level))
        wake = self.on_append
        if wake is None:
            self.dispatch_pending()
        else:
            wake()
        future = None
        if self.config.flush_disk_type is FlushDiskType.SYNC_FLUSH and self._flusher is not None:
            future = self._flusher.submit(end)
        return PutResult(
            PutStatus.PUT_OK,
            wrote_offset=phy,
            wrote_bytes=prepared.total,
            queue_offset=first_qo if next_qo > first_qo else 0,
            msg_count=prepared.count,
            store_timestamp=store_ts,
            record_offsets=offsets,
            flush_future=future,
        )

    def dispatch_pending(self) -> list[Arrival]:
        """Consume queue and index entries for every append not yet dispatched (one
        reput pass); returns what arrived per queue since the last call, for waking held
        pulls (including what reads dispatched on demand meanwhile)."""
        self._dispatch()
        arrivals, self._arrivals = self._arrivals, []
        return arrivals

    def _dispatch(self) -> None:
        with self._dispatch_lock:
            with self._put_lock:
                pending, self._pending = self._pending, []
            if not pending:
                return
            try:
                self._arrivals += self.dispatcher.dispatch_appended(pending)
            except BaseException:
                # Re-dispatching is idempotent, so the next pass may start over.
                with self._put_lock:
                    self._pending[:0] = pending
                raise

    def _settle(self) -> None:
        """Reads see every acknowledged append: what the driver has not dispatched yet is
        dispatched now (its arrivals still go to the driver's next pass)."""
        if self._pending:
            try:
                self._dispatch()
            except StoreError:
                pass  # (e.g. a full disk) the reads see what is dispatched; the driver retries
        if self._replicated_pending:
            self.dispatch_replicated()

    def append_replicated(self, offset: int, data: bytes | bytearray | memoryview) -> int:
        """HA slave: append the master's commit log bytes as they are (no dispatch yet,
        so the slave can acknowledge them first; :meth:`dispatch_replicated` follows).

        Raises StoreError when ``offset`` is not where this log ends."""
        with self._put_lock:
            end = self.commit_log.append_raw(offset, data)
            self._replicated_pending = True
        return end

    def dispatch_replicated(self) -> None:
        """Consume queue and index entries for the replicated bytes; wakes held pulls."""
        with self._dispatch_lock, self._put_lock:
            if not self._replicated_pending:
                return
            self._replicated_pending = False
            before = {(cq.topic, cq.queue_id): cq.max_offset for cq in self.queues.all()}
            self.dispatcher.reput(self.dispatcher.reput_from_offset)
            # Raw appends carry no store time of their own: the records just dispatched
            # name it, so the checkpoint's physicMsgTimestamp moves on a slave too and its
            # recovery after a crash starts near the end rather than at the beginning.
            last = self.dispatcher.last_dispatched_timestamp
            if last > self.commit_log.last_store_timestamp:
                self.commit_log.last_store_timestamp = last
            for cq in self.queues.all():
                key = (cq.topic, cq.queue_id)
                self.topic_queue_table[key] = cq.max_offset
                if cq.max_offset > before.get(key, 0):
                    self._arrivals.append(Arrival(cq.topic, cq.queue_id, cq.max_offset, None))
        if self._arrivals and self.on_append is not None:
            self.on_append()

    def truncate_replica(self, end: int) -> Path | None:
        """HA slave ahead of its master: drop the commit log past ``end`` (a record
        boundary the master has) and the queue entries that pointed there.

        The dropped bytes may hold messages acknowledged under SYNC_MASTER before the
        master lost its tail, so they are kept aside first, in RocketMQ's record format,
        in ``ha-truncated/`` under a commit log file name (its 20-digit start offset;
        returned) for the operator to read (``mq store dump commitlog``) or resend."""
        with self._dispatch_lock, self._put_lock:
            tail_end = self.commit_log.max_offset
            if end >= tail_end:
                return None
            saved = self.root / "ha-truncated" / f"{end:020d}"
            saved.parent.mkdir(parents=True, exist_ok=True)
            with open(saved, "wb") as out:
                pos = end
                while pos < tail_end:
                    chunk = self.commit_log.read_for_transfer(pos, tail_end - pos)
                    if chunk is None:
                        break
                    out.write(chunk)
                    pos += len(chunk)
                out.flush()
                os.fsync(out.fileno())
            self.commit_log.truncate(end)
            for cq in self.queues.all():
                cq.truncate_dirty(end)
                self.topic_queue_table[(cq.topic, cq.queue_id)] = cq.max_offset
            self.dispatcher.reput_from_offset = min(self.dispatcher.reput_from_offset, end)
        return saved

    def dispatch_behind_bytes(self) -> int:
        return max(0, self.commit_log.max_offset - self.dispatcher.reput_from_offset)

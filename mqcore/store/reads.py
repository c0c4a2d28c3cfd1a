"""The read side of the message store (RocketMQ's ``getMessage``,
``lookMessageByOffset``, ``queryMessage`` and the queue lookups).

:class:`StoreReader` is given what reads need and nothing else: the commit log, the
consume queue table, the index service, the store config, a ``settle`` hook and how much
of the log is still served from memory. Reads come after the writes they must see: each
one first calls ``settle`` (the owning :class:`~mqcore.store.message_store.MessageStore`
dispatches what its driver has not dispatched yet), so an acknowledged append is readable
at once. Nothing here writes; the store owns one reader and delegates to it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING

from mqcore.errors import CorruptRecordError
from mqcore.message.model import MessageExt
from mqcore.message.record import decode_record, store_timestamp_pos
from mqcore.store.consume_queue import CQ_STORE_UNIT_SIZE, ENTRY, ConsumeQueue, is_filler
from mqcore.store.results import GetResult, GetStatus, QueryResult, RecordFilter, TagFilter

if TYPE_CHECKING:
    from mqcore.store.commitlog import CommitLog
    from mqcore.store.dispatcher import ConsumeQueueTable
    from mqcore.store.index_service import IndexService
    from mqcore.store.store_config import MessageStoreConfig

__all__ = ["StoreReader"]

_Q = struct.Struct(">q")


class StoreReader:
    """Records, queue offsets, store times and key queries over one store's files."""

    __slots__ = ("_config", "_settle", "commit_log", "index", "memory_for_reads", "queues")

    def __init__(
        self,
        config: MessageStoreConfig,
        commit_log: CommitLog,
        queues: ConsumeQueueTable,
        index: IndexService | None,
        *,
        settle: Callable[[], None],
        memory_for_reads: int,
    ) -> None:
        self._config = config
        self.commit_log = commit_log
        self.queues = queues
        self.index = index
        self._settle = settle
        """Dispatches appends not dispatched yet, so a read sees every acknowledged one."""
        self.memory_for_reads = memory_for_reads
        """Bytes behind the commit log head still served from memory (RocketMQ's
        ``accessMessageInMemoryMaxRatio`` of RAM); further back a read goes to disk."""

    # -- reading -------------------------------------------------------------------------
    def get_message(self, phy_offset: int) -> memoryview:
        """Raw record at a commit log offset (``VIEW_MESSAGE_BY_ID``)."""
        return self.commit_log.get_message(phy_offset)

    def look_message(self, phy_offset: int, *, read_body: bool = True) -> MessageExt:
        """Decoded record at a commit log offset."""
        view = self.commit_log.get_message(phy_offset)
        try:
            return decode_record(view, 0, strict=True, read_body=read_body)
        except CorruptRecordError as exc:
            raise CorruptRecordError(
                exc.detail, path=str(self.commit_log.path), offset=phy_offset
            ) from None

    def consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        self._settle()
        return self.queues.find(topic, queue_id, create=False)

    def get_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int,
        max_bytes: int | None = None,
        tag_filter: TagFilter | None = None,
        record_filter: RecordFilter | None = None,
    ) -> GetResult:
        """Up to ``max_count`` records from queue ``offset`` (``getMessage``).

        Scans one consume queue file per call (like RocketMQ); ``next_begin_offset`` says
        where the next pull starts. Always returns at least one record when one matches.
        """
        self._settle()
        cq = self.queues.find(topic, queue_id, create=False)
        if cq is None:
            return GetResult(GetStatus.NO_MATCHED_LOGIC_QUEUE, 0, 0, 0)
        min_off, max_off = cq.min_offset, cq.max_offset
        if max_off == 0:
            return GetResult(GetStatus.NO_MESSAGE_IN_QUEUE, 0, min_off, max_off)
        if offset < min_off:
            return GetResult(GetStatus.OFFSET_TOO_SMALL, min_off, min_off, max_off)
        if offset == max_off:
            return GetResult(GetStatus.OFFSET_OVERFLOW_ONE, offset, min_off, max_off)
        if offset > max_off:
            nxt = min_off if min_off == 0 else max_off
            return GetResult(GetStatus.OFFSET_OVERFLOW_BADLY, nxt, min_off, max_off)
        view = cq.entries_view(offset)
        if view is None:
            return GetResult(GetStatus.OFFSET_FOUND_NULL, offset + 1, min_off, max_off)
        limit_bytes = max_bytes or self._config.max_transfer_bytes_on_message_in_memory
        scan_limit = max(16000, max_count * CQ_STORE_UNIT_SIZE)
        view = view[: min(len(view), scan_limit) // CQ_STORE_UNIT_SIZE * CQ_STORE_UNIT_SIZE]
        result = GetResult(GetStatus.NO_MATCHED_MESSAGE, offset, min_off, max_off)
        buffers, qoffsets = result.buffers, result.queue_offsets
        get_data = self.commit_log.get_data
        min_phy = self.commit_log.min_offset
        total = 0
        index = offset
        removing = False
        for phy, size, tags in ENTRY.iter_unpack(view):
            if is_filler(phy, size):  # before the size limit: a filler's size is huge
                index += 1
                continue
            if len(buffers) >= max_count or (buffers and total + size > limit_bytes):
                break
            index += 1
            if phy < min_phy:
                removing = True
                continue
            if tag_filter is not None and not tag_filter(tags):
                continue
            data = get_data(phy, size)
            if data is None:
                removing = True
                continue
            if record_filter is not None and not record_filter(data):
                continue
            buffers.append(data)
            qoffsets.append(index - 1)
            total += size
        result.next_begin_offset = index
        result.buffer_total_size = total
        if buffers:
            result.status = GetStatus.FOUND
            # RocketMQ's hint: this reader is further behind than memory holds, so its
            # reads go to disk; a slave should serve it (``suggestWhichBrokerId``).
            behind = self.commit_log.max_offset - phy
            result.suggest_pulling_from_slave = behind > self.memory_for_reads
        elif removing:
            result.status = GetStatus.MESSAGE_WAS_REMOVING
        return result

    # -- offsets and lookups -------------------------------------------------------------
    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        self._settle()
        cq = self.queues.find(topic, queue_id, create=False)
        return cq.max_offset if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        self._settle()
        cq = self.queues.find(topic, queue_id, create=False)
        return cq.min_offset if cq is not None else 0

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, offset: int) -> int:
        """Commit log offset of a queue entry, or -1."""
        self._settle()
        cq = self.queues.find(topic, queue_id, create=False)
        ent = cq.entry(offset) if cq is not None else None
        return ent[0] if ent is not None else -1

    def check_in_disk_by_consume_offset(self, topic: str, queue_id: int, offset: int) -> bool:
        """``checkInDiskByConsumeOffset``: is the message at queue ``offset`` further
        behind the commit log head than memory holds (so reading it goes to disk)?"""
        phy = self.get_commit_log_offset_in_queue(topic, queue_id, offset)
        if phy < 0:
            return False
        return self.commit_log.max_offset - phy > self.memory_for_reads

    def get_store_time(self, phy_offset: int, size: int = 0) -> int | None:
        """STORETIMESTAMP of the record at ``phy_offset`` (None when it is gone)."""
        mf = self.commit_log.queue.find_by_offset(phy_offset)
        if mf is None:
            return None
        pos = phy_offset - mf.file_from_offset
        if pos + 64 > mf.wrote_position:
            return None
        (sys_flag,) = struct.unpack_from(">i", mf.view, pos + 36)
        (ts,) = _Q.unpack_from(mf.view, pos + store_timestamp_pos(sys_flag))
        return int(ts)

    def get_message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        self._settle()
        cq = self.queues.find(topic, queue_id, create=False)
        ent = cq.entry(offset) if cq is not None else None
        if ent is None:
            return -1
        ts = self.get_store_time(ent[0])
        return ts if ts is not None else -1

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        self._settle()
        cq = self.queues.find(topic, queue_id, create=False)
        if cq is None:
            return -1
        return self.get_message_store_timestamp(topic, queue_id, cq.min_offset)

    def lookup_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """First queue offset stored at or after ``timestamp`` (max offset if none)."""
        self._settle()
        cq = self.queues.find(topic, queue_id, create=False)
        if cq is None:
            return 0
        return cq.offset_by_time(timestamp, self.get_store_time)

    def query_by_key(
        self, topic: str, key: str, max_num: int = 32, begin: int = 0, end: int = 2**63 - 1
    ) -> QueryResult:
        """Records indexed under ``topic#key`` stored in ``[begin, end]`` (``queryMessage``)."""
        self._settle()
        if self.index is None:
            return QueryResult([], [], 0, 0)
        max_num = min(max_num, self._config.max_msgs_num_batch)
        res = self.index.query(topic, key, max_num, begin, end)
        buffers: list[memoryview] = []
        offsets: list[int] = []
        for phy in res.phy_offsets:
            try:
                buffers.append(self.commit_log.get_message(phy))
                offsets.append(phy)
            except CorruptRecordError:
                continue  # deleted by cleanup since it was indexed
        return QueryResult(
            buffers, offsets, res.index_last_update_timestamp, res.index_last_update_phyoffset
        )

    def topics(self) -> dict[str, list[int]]:
        """Topic -> queue ids that have a consume queue."""
        self._settle()
        return {t: sorted(q) for t, q in sorted(self.queues.queues.items())}

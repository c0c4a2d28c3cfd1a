"""Dispatcher: RocketMQ's ReputMessageService, turning commit log records into entries.

Byte layout: none of its own. It reads commit log records (see :mod:`commitlog`) and
writes 20-byte consume queue entries (:mod:`consume_queue`) and index entries (the
index service's files). Rules, as in 4.9.8:

* only records whose transaction type is NOT_TYPE (0x0) or COMMIT (0x8) get a consume
  queue entry; PREPARED / ROLLBACK records do not;
* every record except ROLLBACK is indexed under ``topic#UNIQ_KEY`` and ``topic#key``;
* a ``SCHEDULE_TOPIC_XXXX`` record's tag slot is its deliver timestamp (computed when
  the record is parsed, see :func:`commitlog.check_message`).

The send path only appends: it leaves an :class:`AppendReceipt` (what the append already
knows about its records, so nothing is parsed twice) and answers. Whoever drives the
dispatcher (the broker, once per event loop pass) then calls
:meth:`Dispatcher.dispatch_appended` with every receipt since the last pass: one packed
consume queue write per queue, the index entries in one go, and the :class:`Arrival` list
that wakes held pulls. :meth:`Dispatcher.reput` re-reads the log from an offset, which
recovery and an HA slave use. Re-dispatching is idempotent: consume queues skip entries
they already hold.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

from mqcore.common.javahash import tags_hash_code
from mqcore.message.record import DispatchRequest
from mqcore.store.batch_encoder import PreparedBatch
from mqcore.store.commitlog import (
    TRANSACTION_MASK,
    TRANSACTION_PREPARED,
    TRANSACTION_ROLLBACK,
    CommitLog,
    deliver_timestamp,
)
from mqcore.store.consume_queue import ConsumeQueue

__all__ = [
    "AppendReceipt",
    "Arrival",
    "ConsumeQueueTable",
    "Dispatcher",
    "IndexBuilder",
    "IndexRecord",
]

IndexRecord = tuple[str, str | None, str | None, int, int, int]
"""``(topic, keys, uniq_key, commit log offset, store_timestamp, sys_flag)`` of a record."""


class IndexBuilder(Protocol):
    """The part of IndexService the dispatcher needs."""

    def build_index(
        self,
        topic: str,
        keys: str | None,
        uniq_key: str | None,
        commit_log_offset: int,
        store_timestamp: int,
        sys_flag: int,
    ) -> None: ...

    def build_index_many(self, records: Sequence[IndexRecord]) -> None:
        """Index ``(topic, keys, uniq_key, offset, store_timestamp, sys_flag)`` records given
        in commit log order."""


@dataclass(slots=True)
class AppendReceipt:
    """One append as the put path left it: the records' fields it already had in hand."""

    batch: PreparedBatch
    offsets: list[int]
    """Commit log offset of each record."""
    queue_offsets: list[int]
    """Queue offset of each record; -1 for records without a consume queue entry."""
    store_timestamp: int
    delay_level: str | None
    """``DELAY`` property of a ``SCHEDULE_TOPIC_XXXX`` batch: the tag slot is then the
    deliver timestamp."""


class Arrival(NamedTuple):
    """News for held pulls: ``topic``/``queue_id`` now holds entries up to ``max_offset``.

    ``tags_code`` is the single new entry's tag code, or None when several arrived."""

    topic: str
    queue_id: int
    max_offset: int
    tags_code: int | None


class ConsumeQueueTable:
    """All consume queues of a store: ``topic -> queue id -> ConsumeQueue``."""

    def __init__(self, root: Path, mapped_file_size: int, *, readonly: bool = False) -> None:
        self.root = root
        self.mapped_file_size = mapped_file_size
        self.readonly = readonly
        self.queues: dict[str, dict[int, ConsumeQueue]] = {}
        self._lock = threading.Lock()

    def load(self, *, infer_size: bool = False) -> None:
        """Open every ``<topic>/<queueId>`` directory (non-numeric queue dirs ignored).

        ``infer_size`` takes each queue's file size from its files (readonly tools that
        do not know the writer's ``mappedFileSizeConsumeQueue``).
        """
        if not self.root.is_dir():
            return
        for topic_dir in sorted(self.root.iterdir()):
            if not topic_dir.is_dir():
                continue
            for qdir in sorted(topic_dir.iterdir()):
                if not qdir.is_dir() or not qdir.name.isdigit():
                    continue
                size = self.mapped_file_size
                if infer_size:
                    files = sorted(p for p in qdir.iterdir() if p.name.isdigit())
                    if files:
                        size = files[0].stat().st_size or size
                cq = ConsumeQueue(
                    topic_dir.name, int(qdir.name), self.root, size, readonly=self.readonly
                )
                cq.load()
                self.queues.setdefault(topic_dir.name, {})[int(qdir.name)] = cq

    def find(self, topic: str, queue_id: int, *, create: bool = True) -> ConsumeQueue | None:
        """The queue, created on first use unless ``create`` is False or readonly."""
        by_id = self.queues.get(topic)
        if by_id is not None:
            cq = by_id.get(queue_id)
            if cq is not None:
                return cq
        if not create or self.readonly:
            return None
        with self._lock:
            by_id = self.queues.setdefault(topic, {})
            cq = by_id.get(queue_id)
            if cq is None:
                cq = ConsumeQueue(topic, queue_id, self.root, self.mapped_file_size)
                by_id[queue_id] = cq
        return cq

    def remove(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        """Take a queue out of the table (its files stay until it is destroyed)."""
        with self._lock:
            by_id = self.queues.get(topic)
            cq = by_id.pop(queue_id, None) if by_id is not None else None
            if by_id is not None and not by_id:
                del self.queues[topic]
        return cq

    def all(self) -> list[ConsumeQueue]:
        return [cq for by_id in list(self.queues.values()) for cq in list(by_id.values())]

    def max_physic_end(self) -> int:
        """Largest ``offset + size`` any queue points at (where re-dispatch resumes)."""
        return max((cq.max_physic_offset for cq in self.all()), default=-1)

    def close(self) -> None:
        for cq in self.all():
            cq.close()


class Dispatcher:
    """Writes consume queue and index entries for dispatch requests."""

    def __init__(
        self,
        commit_log: CommitLog,
        queues: ConsumeQueueTable,
        index: IndexBuilder | None,
    ) -> None:
        self.commit_log = commit_log
        self.queues = queues
        self.index = index
        self.reput_from_offset = 0
        """Commit log offset up to which every record has been dispatched."""
        self.last_dispatched_timestamp = 0
        """Store ts of the last record written to a consume queue (checkpoint logics ts)."""
        self.delay_table: dict[int, int] = {}
        """Delay level -> milliseconds, for the tag slot of schedule records."""

    def dispatch_appended(self, receipts: Sequence[AppendReceipt]) -> list[Arrival]:
        """Consume queue and index entries for fresh appends, batched per queue.

        Receipts come in append order. A queue's entries that continue it exactly are
        packed and written in one copy; anything else (a gap, a replayed entry) goes
        through :meth:`ConsumeQueue.put`, which pads or skips as recovery does.
        """
        per_queue: dict[tuple[str, int], list[tuple[int, int, int, int]]] = {}
        # In commit log order, across topics: the index then only ever grows by offset,
        # which its replay rule (skip below the last file's endPhyOffset) and recovery's
        # tail repair rely on.
        to_index: list[IndexRecord] = []
        end = 0
        for receipt in receipts:
            batch = receipt.batch
            store_ts = receipt.store_timestamp
            level = receipt.delay_level
            topic = batch.topic
            entries = per_queue.setdefault((topic, batch.queue_id), [])
            for phy, qo, head, tags, keys, uniq in zip(
                receipt.offsets,
                receipt.queue_offsets,
                batch.heads,
                batch.tags,
                batch.keys,
                batch.uniq_keys,
                strict=True,
            ):
                size, sys_flag = head[0], head[3]
                if qo >= 0:
                    code = tags_hash_code(tags)
                    if level and self.delay_table:
                        code = deliver_timestamp(store_ts, level, self.delay_table, code)
                    entries.append((qo, phy, size, code))
                if (keys or uniq) and sys_flag & TRANSACTION_MASK != TRANSACTION_ROLLBACK:
                    to_index.append((topic, keys, uniq, phy, store_ts, sys_flag))
            end = receipt.offsets[-1] + batch.heads[-1][0]
            if entries:
                self.last_dispatched_timestamp = store_ts
        arrivals = [
            self._put_entries(topic, queue_id, entries)
            for (topic, queue_id), entries in per_queue.items()
            if entries
        ]
        if self.index is not None and to_index:
            self.index.build_index_many(to_index)
        if end > self.reput_from_offset:
            self.reput_from_offset = end
        return arrivals

    def _put_entries(
        self, topic: str, queue_id: int, entries: list[tuple[int, int, int, int]]
    ) -> Arrival:
        cq = self.queues.find(topic, queue_id)
        assert cq is not None
        first, last = entries[0], entries[-1]
        if last[0] - first[0] == len(entries) - 1:
            flat: list[int] = []
            for _, phy, size, code in entries:
                flat += (phy, size, code)
            packed = struct.pack(">" + "qiq" * len(entries), *flat)
            cq.put_many(packed, first[0], last[1] + last[2])
        else:
            for qo, phy, size, code in entries:
                cq.put(phy, size, code, qo)
        return Arrival(topic, queue_id, last[0] + 1, last[3] if len(entries) == 1 else None)

    def dispatch(self, req: DispatchRequest, *, to_cq: bool = True, to_index: bool = True) -> None:
        tran = req.sys_flag & TRANSACTION_MASK
        if to_cq and tran != TRANSACTION_PREPARED and tran != TRANSACTION_ROLLBACK:
            cq = self.queues.find(req.topic, req.queue_id)
            assert cq is not None
            cq.put(req.commit_log_offset, req.size, req.tags_code, req.queue_offset)
            self.last_dispatched_timestamp = req.store_timestamp
        if (
            to_index
            and self.index is not None
            and tran != TRANSACTION_ROLLBACK
            and (req.keys or req.uniq_key)
        ):
            self.index.build_index(
                req.topic,
                req.keys,
                req.uniq_key,
                req.commit_log_offset,
                req.store_timestamp,
                req.sys_flag,
            )
        end = req.commit_log_offset + req.size
        if end > self.reput_from_offset:
            self.reput_from_offset = end

    def reput(
        self,
        from_offset: int,
        *,
        check_crc: bool = False,
        to_cq: bool = True,
        to_index: bool = True,
    ) -> int:
        """Dispatch every valid record from ``from_offset`` to the end; returns the end.

        Stops quietly at the first invalid record: recovery has already truncated the
        log there, and a live reader must not fail on a tail still being written.
        """
        start = max(from_offset, self.commit_log.min_offset)
        scan = self.commit_log.scan(start, check_crc=check_crc, strict=False)
        for req in scan:
            self.dispatch(req, to_cq=to_cq, to_index=to_index)
        end = max(self.commit_log.last_scan_end, start)
        if to_cq and end > self.reput_from_offset:
            self.reput_from_offset = end
        return end

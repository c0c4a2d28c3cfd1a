"""ConsumeQueue: the per topic/queue index of commit log records, 20 bytes per message.

Byte layout (``consumequeue/<topic>/<queueId>/<20-digit start byte offset>``, big-endian)::

    entry (CQ_STORE_UNIT_SIZE = 20):
      off  size  field
        0     8  i64 commit log offset of the record
        8     4  i32 record size (TOTALSIZE)
       12     8  i64 tag slot: Java String.hashCode(TAGS) sign-extended, or for
                 SCHEDULE_TOPIC_XXXX the deliver timestamp (store ts + level delay)

Files hold ``mappedFileSizeConsumeQueue / 20`` entries (default 300,000 -> 6,000,000 B).
Logical (queue) offset ``L`` is at byte ``L * 20`` of the queue's stream. An entry is
valid when ``offset >= 0 and size > 0``; the first invalid one (zeros) ends the queue.
Fillers ``(0, 2147483647, 0)`` pad a queue whose first file starts mid-way
(``fillPreBlank``); they are valid for recovery but never point at a message.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

from mqcore.errors import CorruptRecordError
from mqcore.store.mapped_file import MappedFile
from mqcore.store.mapped_file_queue import MappedFileQueue

CQ_STORE_UNIT_SIZE = 20
ENTRY = struct.Struct(">qiq")
FILLER_SIZE = 0x7FFFFFFF
FILLER = ENTRY.pack(0, FILLER_SIZE, 0)


def is_filler(phy: int, size: int) -> bool:
    return size == FILLER_SIZE and phy == 0


_HIGH_BIT = bytes(int(b >= 0x80) for b in range(256))
"""``bytes.translate`` table: 1 for a byte with its top bit set (a negative big-endian
number's first byte), else 0."""


def count_valid_entries(data: bytes | memoryview) -> int:
    """How many entries at the start of ``data`` are valid (offset >= 0 and size > 0),
    as ``ConsumeQueue.recover`` counts them before the first invalid one.

    Recovery checks up to three 6 MB files per queue; one Python step per entry made
    that the largest part of a restart. Here each condition is checked over a column
    of bytes at once (every entry's first byte of the offset, the four bytes of the
    size), so the work per entry is done in C."""
    n = len(data) // CQ_STORE_UNIT_SIZE
    if n == 0:
        return 0
    buf = bytes(data[: n * CQ_STORE_UNIT_SIZE])
    size_bytes = [buf[i::CQ_STORE_UNIT_SIZE] for i in range(8, 12)]
    size_or = 0
    for column in size_bytes:
        size_or |= int.from_bytes(column, "big")
    firsts = (
        buf[0::CQ_STORE_UNIT_SIZE].translate(_HIGH_BIT).find(1),  # offset < 0
        size_bytes[0].translate(_HIGH_BIT).find(1),  # size < 0
        size_or.to_bytes(n, "big").find(0),  # size == 0
    )
    return min((i for i in firsts if i >= 0), default=n)


class ConsumeQueue:
    """One queue's entries; writes are serialised by the dispatcher."""

    def __init__(
        self,
        topic: str,
        queue_id: int,
        root: Path,
        mapped_file_size: int,
        *,
        readonly: bool = False,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.path = root / topic / str(queue_id)
        self.mapped_file_size = mapped_file_size
        self.readonly = readonly
        self.queue = MappedFileQueue(self.path, mapped_file_size, readonly=readonly)
        self.min_logic_offset = 0
        """Byte offset of the first entry still pointing into the commit log."""
        self.max_physic_offset = -1
        """End (offset + size) of the last record written here; -1 when empty."""

    # -- loading and recovery ----------------------------------------------------------
    def load(self) -> None:
        self.queue.load()

    def recover(self) -> None:
        """Find the end of valid entries, scanning from the third-to-last file."""
        files = self.queue.files
        if not files:
            return
        start = max(0, len(files) - 3)
        end = files[start].file_from_offset
        max_phy = -1
        for mf in files[start:]:
            view = mf.view
            valid = count_valid_entries(view[: mf.file_size])
            n = valid
            while n > 0:  # the last entry pointing at a record (fillers point nowhere)
                phy, size, _tags = ENTRY.unpack_from(view, (n - 1) * CQ_STORE_UNIT_SIZE)
                if not is_filler(phy, size):
                    max_phy = phy + size
                    break
                n -= 1
            end = mf.file_from_offset + valid * CQ_STORE_UNIT_SIZE
            if valid < mf.file_size // CQ_STORE_UNIT_SIZE:
                break
        self.queue.set_write_end(end)
        self.queue.flushed_where = end
        self.max_physic_offset = max_phy
        if self.min_logic_offset < self.queue.min_offset:
            self.min_logic_offset = self.queue.min_offset

    def correct_min_offset(self, commit_log_min: int) -> None:
        """Min offset = first entry of the first file pointing at or past the log's min."""
        first = self.queue.first_file
        if first is None:
            return
        limit = first.wrote_position
        for pos in range(0, limit, CQ_STORE_UNIT_SIZE):
            phy, size, _ = ENTRY.unpack_from(first.view, pos)
            if is_filler(phy, size):
                continue
            if phy >= commit_log_min:
                self.min_logic_offset = first.file_from_offset + pos
                return
        self.min_logic_offset = first.file_from_offset + limit

    def truncate_dirty(self, phy_end: int) -> None:
        """Drop entries whose record does not end at or before ``phy_end``."""
        lo, hi = self.min_logic_offset // CQ_STORE_UNIT_SIZE, self.max_offset
        if hi <= lo:
            return
        # entries are ordered by commit log offset: binary search the first dirty one
        while lo < hi:
            mid = (lo + hi) // 2
            ent = self.entry(mid)
            if ent is None:
                break
            phy, size, _ = ent
            if not is_filler(phy, size) and phy + size > phy_end:
                hi = mid
            else:
                lo = mid + 1
        if lo >= self.max_offset:
            return
        self.queue.set_write_end(lo * CQ_STORE_UNIT_SIZE)
        self.max_physic_offset = -1
        if lo > 0:
            ent = self.entry(lo - 1)
            if ent is not None and not is_filler(ent[0], ent[1]):
                self.max_physic_offset = ent[0] + ent[1]
        if self.min_logic_offset > lo * CQ_STORE_UNIT_SIZE:
            self.min_logic_offset = lo * CQ_STORE_UNIT_SIZE

    # -- offsets -----------------------------------------------------------------------
    @property
    def min_offset(self) -> int:
        """``getMinOffsetInQueue``: first logical offset still readable."""
        return self.min_logic_offset // CQ_STORE_UNIT_SIZE

    @property
    def max_offset(self) -> int:
        """``getMaxOffsetInQueue``: number of entries ever written (next offset)."""
        last = self.queue.last_file
        return last.max_offset // CQ_STORE_UNIT_SIZE if last is not None else 0

    # -- writing -----------------------------------------------------------------------
    def put(self, phy: int, size: int, tags_code: int, cq_offset: int) -> bool:
        """Append the entry for queue offset ``cq_offset``.

        Returns False (and writes nothing) for an entry already present, so
        re-dispatching after a crash is idempotent. A gap is padded with fillers so
        that entry ``n`` always sits at byte ``n * 20``.
        """
        if phy + size <= self.max_physic_offset:
            return False
        expect = cq_offset * CQ_STORE_UNIT_SIZE
        mf = self.queue.get_last_file(expect)
        assert mf is not None
        current = mf.max_offset
        if expect < current:
            return False
        if expect > current:
            if self.queue.files == [mf] and mf.wrote_position == 0:
                # a queue starting mid-file (rebuild after head deletion): fillPreBlank
                self.min_logic_offset = expect
            self._fill_blank(mf, expect)
            mf = self.queue.get_last_file(expect)
            assert mf is not None
        mf.reserve_to(mf.wrote_position + CQ_STORE_UNIT_SIZE)
        ENTRY.pack_into(mf.mm, mf.wrote_position, phy, size, tags_code)
        mf.wrote_position += CQ_STORE_UNIT_SIZE
        self.max_physic_offset = phy + size
        return True

    def put_many(self, entries: bytes, first_cq_offset: int, last_end: int) -> None:
        """Append packed entries for consecutive queue offsets in as few copies as files.

        ``last_end`` is the end (offset + size) of the last entry's record. Falls back to
        :meth:`put` per entry when the queue is not exactly at ``first_cq_offset``.
        """
        expect = first_cq_offset * CQ_STORE_UNIT_SIZE
        last = self.queue.last_file
        if last is None or last.max_offset != expect:
            for i, (phy, size, tags) in enumerate(ENTRY.iter_unpack(entries)):
                self.put(phy, size, tags, first_cq_offset + i)
            return
        view = memoryview(entries)
        while view:
            mf = self.queue.get_last_file(expect)
            assert mf is not None
            n = min(len(view), mf.remaining)
            mf.append(view[:n])
            view = view[n:]
        self.max_physic_offset = last_end

    def _fill_blank(self, mf: MappedFile, until: int) -> None:
        while mf.max_offset < until:
            n = min(
                (until - mf.max_offset) // CQ_STORE_UNIT_SIZE, mf.remaining // CQ_STORE_UNIT_SIZE
            )
            mf.append(FILLER * n)
            if mf.is_full and mf.max_offset < until:
                nxt = self.queue.get_last_file(until)
                assert nxt is not None
                mf = nxt

    # -- reading -----------------------------------------------------------------------
    def entry(self, index: int) -> tuple[int, int, int] | None:
        """``(commit log offset, size, tag slot)`` of logical ``index``, None if absent."""
        byte = index * CQ_STORE_UNIT_SIZE
        mf = self.queue.find_by_offset(byte)
        if mf is None:
            return None
        pos = byte - mf.file_from_offset
        if pos + CQ_STORE_UNIT_SIZE > mf.wrote_position:
            return None
        phy, size, tags = ENTRY.unpack_from(mf.view, pos)
        return phy, size, tags

    def repair(self, index: int, phy: int, size: int, tags_code: int) -> bool:
        """Rewrite entry ``index`` in place when it differs (recovery found it wrong);
        True when it was rewritten."""
        byte = index * CQ_STORE_UNIT_SIZE
        mf = self.queue.find_by_offset(byte)
        if mf is None or self.queue.readonly:
            return False
        pos = byte - mf.file_from_offset
        if pos + CQ_STORE_UNIT_SIZE > mf.wrote_position:
            return False
        if ENTRY.unpack_from(mf.view, pos) == (phy, size, tags_code):
            return False
        mf.reserve_to(pos + CQ_STORE_UNIT_SIZE)
        ENTRY.pack_into(mf.mm, pos, phy, size, tags_code)
        return True

    def entries_view(self, index: int) -> memoryview | None:
        """Entries from ``index`` to the end of written data in its file (zero-copy)."""
        byte = index * CQ_STORE_UNIT_SIZE
        mf = self.queue.find_by_offset(byte)
        if mf is None:
            return None
        pos = byte - mf.file_from_offset
        if pos >= mf.wrote_position:
            return None
        return mf.view[pos : mf.wrote_position]

    def iter_entries(
        self, start: int | None = None, limit: int | None = None
    ) -> Iterator[tuple[int, int, int, int]]:
        """Yield ``(queue offset, commit log offset, size, tag slot)`` (offline tools)."""
        index = self.min_offset if start is None else max(start, self.queue.min_offset // 20)
        end = self.max_offset
        count = 0
        while index < end and (limit is None or count < limit):
            view = self.entries_view(index)
            if view is None:
                return
            for phy, size, tags in ENTRY.iter_unpack(view[: len(view) - len(view) % 20]):
                if phy < 0 or size <= 0:
                    mf = self.queue.find_by_offset(index * 20)
                    raise CorruptRecordError(
                        f"invalid entry (offset {phy}, size {size})",
                        path=str(mf.path) if mf else str(self.path),
                        offset=index * 20 - (mf.file_from_offset if mf else 0),
                    )
                yield index, phy, size, tags
                index += 1
                count += 1
                if limit is not None and count >= limit:
                    return

    def offset_by_time(
        self, timestamp: int, store_time_of: Callable[[int, int], int | None]
    ) -> int:
        """First queue offset whose record was stored at or after ``timestamp``.

        Binary search over entries; ``store_time_of(phy, size)`` reads the record's
        STORETIMESTAMP (None when the record is gone). Returns max offset when every
        message is older, the min offset when all are newer.
        """
        lo, hi = self.min_offset, self.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            ent = self.entry(mid)
            ts = None if ent is None or is_filler(ent[0], ent[1]) else store_time_of(ent[0], ent[1])
            if ts is None or ts < timestamp:
                lo = mid + 1
            else:
                hi = mid
        return lo

    # -- maintenance -------------------------------------------------------------------
    def flush(self, least_pages: int = 0) -> bool:
        return self.queue.flush(least_pages)

    def delete_expired(self, commit_log_min: int) -> int:
        """Delete head files whose every entry points below ``commit_log_min``."""

        def expired(mf: MappedFile) -> bool:
            if mf.wrote_position < CQ_STORE_UNIT_SIZE:
                return False
            phy, size, _ = ENTRY.unpack_from(mf.view, mf.wrote_position - CQ_STORE_UNIT_SIZE)
            return not is_filler(phy, size) and phy < commit_log_min

        count = self.queue.delete_files_before(expired)
        self.correct_min_offset(commit_log_min)
        return count

    def last_offset(self) -> int:
        """``getLastOffset``: where the last entry's record ends, -1 when there is none."""
        mf = self.queue.last_file
        if mf is None:
            return -1
        pos = max(0, mf.wrote_position - CQ_STORE_UNIT_SIZE)
        if pos + CQ_STORE_UNIT_SIZE > mf.file_size:
            return -1
        phy, size, _ = ENTRY.unpack_from(mf.view, pos)
        return phy + size if phy >= 0 and size > 0 else -1

    def destroy(self) -> None:
        """Delete every file and the queue's directory (``destroy``)."""
        self.queue.reset_to_empty(0)
        self.min_logic_offset = 0
        self.max_physic_offset = -1
        with contextlib.suppress(OSError):
            self.path.rmdir()

    def close(self) -> None:
        self.queue.close()

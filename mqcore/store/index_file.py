"""One RocketMQ 4.x IndexFile: a hash index from ``topic#key`` to commit log offsets.

Byte layout (big-endian, identical to ``store/.../index/IndexFile.java``)::

    offset 0                 header, 40 bytes
        0  i64 beginTimestamp   store time of the first indexed message
        8  i64 endTimestamp     store time of the last indexed message
       16  i64 beginPhyOffset   commit log offset of the first indexed message
       24  i64 endPhyOffset     commit log offset of the last indexed message
       32  i32 hashSlotCount    number of non-empty slots
       36  i32 indexCount       next entry number; starts at 1 (entry 0 means "none")
    offset 40                slots: max_hash_slot_num x i32, the newest entry number per slot
    offset 40 + slots*4      entries: max_index_num x 20 bytes, entry n at base + n*20
        0  i32 keyHash          abs(String.hashCode(key)), see ``index_key_hash``
        4  i64 phyOffset        commit log offset of the record
       12  i32 timeDiff         (storeTimestamp - beginTimestamp) // 1000, seconds
       16  i32 prevIndex        previous entry of the same slot (0 = end of chain)

File size is ``40 + slots*4 + entries*20`` (420,000,040 bytes with the defaults 5,000,000
slots and 20,000,000 entries); entry 0 is never used, so a file holds ``entries - 1`` keys.
Files are named by creation time ``yyyyMMddHHmmssSSS`` (local time).

Only hashes are stored, so a query returns offsets whose record may carry another key with
the same hash: callers re-check the real key, as RocketMQ's clients do.

Reading never trusts the bytes: geometry and header are checked when a file is opened, and
chains are walked defensively (a corrupt ``prevIndex`` ends the chain), so arbitrary bytes
give :class:`~mqcore.errors.CorruptRecordError` or plain results, never another exception.

:meth:`IndexFile.put_key` is the reference; ``_index_file.pyx`` is its compiled twin, taken
at import when built (see :mod:`mqcore.common.core`): the dispatcher indexes every
message's unique key.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final, NamedTuple

from mqcore.common.core import load
from mqcore.common.javahash import index_key_hash
from mqcore.errors import CorruptRecordError, StoreError
from mqcore.store.mapped_file import RESERVE_STEP, reserve_blocks, sync_mapped

__all__ = [
    "DEFAULT_MAX_HASH_SLOT_NUM",
    "DEFAULT_MAX_INDEX_NUM",
    "HASH_SLOT_SIZE",
    "INDEX_ENTRY_SIZE",
    "INDEX_HEADER_SIZE",
    "IndexEntry",
    "IndexFile",
    "index_file_name",
    "index_file_size",
    "infer_geometry",
]

INDEX_HEADER_SIZE = 40
HASH_SLOT_SIZE = 4
INDEX_ENTRY_SIZE = 20
DEFAULT_MAX_HASH_SLOT_NUM = 5_000_000
DEFAULT_MAX_INDEX_NUM = 20_000_000

_HEADER = struct.Struct(">qqqqii")
_ENTRY = struct.Struct(">iqii")
_SLOT = struct.Struct(">i")
_INT_MAX = 0x7FFFFFFF
_ZERO_ENTRY = bytes(INDEX_ENTRY_SIZE)


def index_file_size(max_hash_slot_num: int, max_index_num: int) -> int:
    """Exact length of an index file with this geometry."""
    return INDEX_HEADER_SIZE + max_hash_slot_num * HASH_SLOT_SIZE + max_index_num * INDEX_ENTRY_SIZE


def index_file_name(timestamp_ms: int) -> str:
    """RocketMQ's ``UtilAll.timeMillisToHumanString``: ``yyyyMMddHHmmssSSS``, local time."""
    seconds, millis = divmod(timestamp_ms, 1000)
    return time.strftime("%Y%m%d%H%M%S", time.localtime(seconds)) + f"{millis:03d}"


class IndexEntry(NamedTuple):
    """One 20-byte entry as stored; ``index_no`` is its 1-based position."""

    index_no: int
    key_hash: int
    phy_offset: int
    time_diff: int
    prev_index: int


def _check_geometry(max_hash_slot_num: int, max_index_num: int) -> None:
    if max_hash_slot_num <= 0 or max_index_num <= 1:
        raise StoreError(
            f"invalid index geometry: maxHashSlotNum={max_hash_slot_num}, "
            f"maxIndexNum={max_index_num} (need > 0 and > 1)"
        )


_ZEROS = bytes(1 << 20)


def _write_zeros(fd: int, size: int) -> None:
    """Write zeros over ``[0, size)`` with ``pwrite``: the hash slots are written at
    random places, and the first write through the map to a page of a sparse or merely
    reserved (fallocated) region makes the file system split an extent, about 150 µs
    each on ext4 (measured), on the event loop, for each of the 5,000 slot pages of a
    default file. Written once here (about 6 ms for 20 MB), they are ordinary pages."""
    pos = 0
    while pos < size:
        pos += os.pwrite(fd, _ZEROS[: min(len(_ZEROS), size - pos)], pos)


class IndexFile:
    """A mapped index file. Build with :meth:`create`, open existing ones with :meth:`open`.

    The header lives in memory and is written back to the map after every key, so a
    reader of a live store (``mq store dump index``) sees a consistent file.
    """

    def __init__(
        self,
        path: Path,
        fd: int,
        mm: mmap.mmap,
        max_hash_slot_num: int,
        max_index_num: int,
        *,
        readonly: bool,
    ) -> None:
        self.path = path
        self._fd = fd
        self._mm: mmap.mmap | None = mm
        self.max_hash_slot_num = max_hash_slot_num
        self.max_index_num = max_index_num
        self.readonly = readonly
        self._entries_base = INDEX_HEADER_SIZE + max_hash_slot_num * HASH_SLOT_SIZE
        self._reserved = 0
        """Bytes known to have blocks; checked again (cheaply) at the first write."""
        header: tuple[int, int, int, int, int, int] = _HEADER.unpack_from(mm, 0)
        self.begin_timestamp: int = header[0]
        self.end_timestamp: int = header[1]
        self.begin_phy_offset: int = header[2]
        self.end_phy_offset: int = header[3]
        self.hash_slot_count: int = header[4]
        self.index_count: int = header[5]
        # IndexHeader.load: a never-flushed header reads as 0 entries.
        if self.index_count <= 0:
            self.index_count = 1
        self._validate_header()

    # -- construction -------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: Path,
        max_hash_slot_num: int,
        max_index_num: int,
        *,
        end_phy_offset: int = 0,
        end_timestamp: int = 0,
    ) -> IndexFile:
        """Create a new, empty file; begin/end are pre-set to the previous file's end."""
        _check_geometry(max_hash_slot_num, max_index_num)
        size = index_file_size(max_hash_slot_num, max_index_num)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.ftruncate(fd, size)
            # Header and slots get their blocks now, entries as they are written (as a
            # MappedFile): no write into the map can meet a full disk as SIGBUS.
            head = INDEX_HEADER_SIZE + max_hash_slot_num * HASH_SLOT_SIZE
            try:
                reserve_blocks(fd, min(size, head + RESERVE_STEP), path)
                _write_zeros(fd, head)
            except (StoreError, OSError):
                os.unlink(path)
                raise
            mm = mmap.mmap(fd, size, access=mmap.ACCESS_WRITE)
        except BaseException:
            os.close(fd)
            raise
        f = cls(path, fd, mm, max_hash_slot_num, max_index_num, readonly=False)
        if end_phy_offset > 0:
            f.begin_phy_offset = f.end_phy_offset = end_phy_offset
        if end_timestamp > 0:
            f.begin_timestamp = f.end_timestamp = end_timestamp
        f.write_header()
        return f

    @classmethod
    def open(
        cls,
        path: Path,
        max_hash_slot_num: int | None = None,
        max_index_num: int | None = None,
        *,
        readonly: bool = True,
    ) -> IndexFile:
        """Map an existing file; geometry is inferred (:func:`infer_geometry`) when omitted.

        A length that does not match the geometry, or an impossible header, raises
        :class:`CorruptRecordError` naming the file.
        """
        fd = os.open(path, os.O_RDONLY if readonly else os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            if size < INDEX_HEADER_SIZE:
                raise CorruptRecordError(
                    f"index file is {size} bytes, shorter than its 40-byte header",
                    path=str(path),
                    offset=0,
                )
            mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ if readonly else mmap.ACCESS_WRITE)
            try:
                if max_hash_slot_num is None or max_index_num is None:
                    max_hash_slot_num, max_index_num = infer_geometry(mm, path=str(path))
                _check_geometry(max_hash_slot_num, max_index_num)
                expected = index_file_size(max_hash_slot_num, max_index_num)
                if size != expected:
                    raise CorruptRecordError(
                        f"index file is {size} bytes, expected {expected} for "
                        f"maxHashSlotNum={max_hash_slot_num} maxIndexNum={max_index_num}",
                        path=str(path),
                        offset=0,
                    )
                return cls(path, fd, mm, max_hash_slot_num, max_index_num, readonly=readonly)
            except BaseException:
                mm.close()
                raise
        except BaseException:
            os.close(fd)
            raise

    def _validate_header(self) -> None:
        problems = []
        if not 1 <= self.index_count <= self.max_index_num:
            problems.append(f"indexCount {self.index_count} outside 1..{self.max_index_num}")
        if not 0 <= self.hash_slot_count <= self.max_hash_slot_num:
            problems.append(f"hashSlotCount {self.hash_slot_count} is negative or too large")
        if self.begin_phy_offset < 0 or self.end_phy_offset < 0:
            problems.append("negative phy offset")
        if problems:
            raise CorruptRecordError(
                "bad index header: " + "; ".join(problems), path=str(self.path), offset=0
            )

    # -- state --------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def is_write_full(self) -> bool:
        """No room for another key (RocketMQ ``isWriteFull``)."""
        return self.index_count >= self.max_index_num

    @property
    def closed(self) -> bool:
        return self._mm is None

    def _map(self) -> mmap.mmap:
        if self._mm is None:
            raise StoreError(f"index file {self.path} is closed")
        return self._mm

    def write_header(self) -> None:
        _HEADER.pack_into(
            self._map(),
            0,
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        )

    def is_time_matched(self, begin: int, end: int) -> bool:
        """Whether ``[begin, end]`` overlaps the file's time range (``isTimeMatched``)."""
        b, e = self.begin_timestamp, self.end_timestamp
        return (begin < b and end > e) or b <= begin <= e or b <= end <= e

    # -- writing ------------------------------------------------------------------------

    def _reserve_to(self, end: int) -> None:
        """Blocks up to ``end`` (the header and slots too, for a file from elsewhere)."""
        size = len(self._map())
        new = min(size, max(end, self._entries_base, self._reserved + RESERVE_STEP))
        reserve_blocks(self._fd, new - self._reserved, self.path, self._reserved)
        self._reserved = new

    def put_key(
        self, key: str, phy_offset: int, store_timestamp: int, *, write_header: bool = True
    ) -> bool:
        """Add one key (``putKey``); False when the file is full and a new one is needed.

        ``write_header=False`` leaves the header to the caller's :meth:`write_header` after
        a batch of keys (the in-memory counts are always current)."""
        if self.readonly:
            raise StoreError(f"index file {self.path} is open read-only")
        if self.is_write_full:
            return False
        mm = self._map()
        key_hash = index_key_hash(key)
        slot_pos = INDEX_HEADER_SIZE + (key_hash % self.max_hash_slot_num) * HASH_SLOT_SIZE
        (slot_value,) = _SLOT.unpack_from(mm, slot_pos)
        # Entry indexCount is the one being written: a slot naming it (or later) is left
        # from a write cut short, and chaining to it would make the entry its own prev.
        if slot_value <= 0 or slot_value >= self.index_count:
            slot_value = 0
        if self.index_count <= 1:
            self.begin_phy_offset = phy_offset
            self.begin_timestamp = store_timestamp
        # Java takes timeDiff before resetting the begin time, so the first key of a rolled
        # file (begin pre-set to the previous file's end) reads back up to seconds late and
        # can fall out of a query's range. Taking it after the reset makes that key's diff 0,
        # the value Java writes in every fresh file; the format is unchanged.
        if self.begin_timestamp <= 0:
            time_diff = 0
        else:
            time_diff = min(max((store_timestamp - self.begin_timestamp) // 1000, 0), _INT_MAX)
        entry_pos = self._entries_base + self.index_count * INDEX_ENTRY_SIZE
        if entry_pos + INDEX_ENTRY_SIZE > self._reserved:
            self._reserve_to(entry_pos + INDEX_ENTRY_SIZE)
        _ENTRY.pack_into(mm, entry_pos, key_hash, phy_offset, time_diff, slot_value)
        _SLOT.pack_into(mm, slot_pos, self.index_count)
        if slot_value == 0:
            self.hash_slot_count += 1
        self.index_count += 1
        self.end_phy_offset = phy_offset
        self.end_timestamp = store_timestamp
        if write_header:
            self.write_header()
        return True

    # -- repair after a crash --------------------------------------------------------

    def drop_stray_entries(self) -> int:
        """Remove entries written past indexCount, and the slots naming them; returns how
        many. A crash between a batch's entries and its header write leaves them: the
        header never counted them, but their slots name them, and the next key of such a
        slot would chain to an entry number about to be reused."""
        if self.readonly:
            raise StoreError(f"index file {self.path} is open read-only")
        mm = self._map()
        n = self.index_count
        while (
            n < self.max_index_num
            and mm[self._entry_pos(n) : self._entry_pos(n) + INDEX_ENTRY_SIZE] != _ZERO_ENTRY
        ):
            n += 1
        stray = n - self.index_count
        for m in range(n - 1, self.index_count - 1, -1):
            self._unlink(m, counted=False)
        return stray

    def drop_from(self, phy_offset: int, store_time: Callable[[int], int | None]) -> int:
        """Remove the newest entries while they point at ``phy_offset`` or later (or make
        no sense); returns how many. Entries go in commit log order, so what stays indexes
        exactly the records below ``phy_offset`` that were indexed; recovery indexes the
        rest again. Slots are set back to the entry each chain had before, the header's
        end to the last entry kept (``store_time`` reads its record's store time)."""
        if self.readonly:
            raise StoreError(f"index file {self.path} is open read-only")
        mm = self._map()
        dropped = 0
        while self.index_count > 1:
            n = self.index_count - 1
            key_hash, phy, time_diff, prev = _ENTRY.unpack_from(mm, self._entry_pos(n))
            if 0 <= phy < phy_offset and key_hash >= 0 and time_diff >= 0 and 0 <= prev < n:
                break
            self._unlink(n, counted=True)
            self.index_count = n
            dropped += 1
        if dropped:
            if self.index_count > 1:
                last = self.entry(self.index_count - 1)
                self.end_phy_offset = last.phy_offset
                stored = store_time(last.phy_offset)
                self.end_timestamp = (
                    stored if stored is not None else self.begin_timestamp + last.time_diff * 1000
                )
            else:
                self.begin_phy_offset = self.end_phy_offset = 0
                self.begin_timestamp = self.end_timestamp = 0
                self.hash_slot_count = 0
            self.write_header()
        return dropped

    def _entry_pos(self, n: int) -> int:
        return self._entries_base + n * INDEX_ENTRY_SIZE

    def _unlink(self, n: int, *, counted: bool) -> None:
        """Zero entry ``n`` and point its slot back at the entry before it in the chain
        (``counted``: the header's hashSlotCount included the entry)."""
        mm = self._map()
        pos = self._entry_pos(n)
        key_hash, _phy, _diff, prev = _ENTRY.unpack_from(mm, pos)
        if key_hash >= 0:
            slot_pos = INDEX_HEADER_SIZE + (key_hash % self.max_hash_slot_num) * HASH_SLOT_SIZE
            (value,) = _SLOT.unpack_from(mm, slot_pos)
            if value >= n:  # names this entry (or one already gone)
                back = prev if 0 < prev < n else 0
                _SLOT.pack_into(mm, slot_pos, back)
                if back == 0 and counted and self.hash_slot_count > 0:
                    self.hash_slot_count -= 1
        mm[pos : pos + INDEX_ENTRY_SIZE] = _ZERO_ENTRY

    def flush(self) -> None:
        """Sync the whole map (header included) without holding the GIL meanwhile."""
        if not self.readonly and self._mm is not None:
            self.write_header()
            self.sync()

    def sync(self) -> None:
        """Make what is written durable (the header as last written), without holding
        the GIL; a file closed or deleted meanwhile has nothing left to sync."""
        mm = self._mm
        if self.readonly or mm is None:
            return
        try:
            sync_mapped(mm, self.path, 0, len(mm))
        except FileNotFoundError:  # destroyed by an expiry while this ran
            pass
        except ValueError:  # closed while this ran (msync of a closed map, not Linux)
            if self._mm is not None:
                raise

    # -- reading ------------------------------------------------------------------------

    def entry(self, index_no: int) -> IndexEntry:
        """Entry ``index_no`` (1 <= n < indexCount) as stored."""
        if not 1 <= index_no < self.index_count:
            raise IndexError(f"entry {index_no} outside 1..{self.index_count - 1}")
        pos = self._entries_base + index_no * INDEX_ENTRY_SIZE
        return IndexEntry(index_no, *_ENTRY.unpack_from(self._map(), pos))

    def iter_entries(self) -> Iterator[IndexEntry]:
        """Every written entry, oldest first, as (index_no, key_hash, phy_offset, time_diff,
        prev_index); values are raw so a verifier can judge them."""
        mm = self._map()
        base = self._entries_base
        for n in range(1, self.index_count):
            yield IndexEntry(n, *_ENTRY.unpack_from(mm, base + n * INDEX_ENTRY_SIZE))

    def slot(self, slot_no: int) -> int:
        """Raw value of hash slot ``slot_no``."""
        if not 0 <= slot_no < self.max_hash_slot_num:
            raise IndexError(f"slot {slot_no} outside 0..{self.max_hash_slot_num - 1}")
        (value,) = _SLOT.unpack_from(self._map(), INDEX_HEADER_SIZE + slot_no * HASH_SLOT_SIZE)
        return int(value)

    def query(self, key: str, max_num: int, begin: int, end: int) -> list[int]:
        """Commit log offsets of entries hashed like ``key`` stored in ``[begin, end]``, newest
        first, at most ``max_num`` (``selectPhyOffset``)."""
        found: list[int] = []
        self.select_phy_offsets(found, set(), key, max_num, begin, end)
        return found

    def select_phy_offsets(
        self, found: list[int], seen: set[int], key: str, max_num: int, begin: int, end: int
    ) -> None:
        """Append matches to ``found`` until it holds ``max_num``; skip offsets in ``seen``."""
        if max_num <= 0 or self.index_count <= 1:
            return
        mm = self._map()
        key_hash = index_key_hash(key)
        slot_pos = INDEX_HEADER_SIZE + (key_hash % self.max_hash_slot_num) * HASH_SLOT_SIZE
        (current,) = _SLOT.unpack_from(mm, slot_pos)
        if current <= 0 or current >= self.index_count:
            return
        base, begin_ts = self._entries_base, self.begin_timestamp
        while len(found) < max_num:
            entry_hash, phy, time_diff, prev = _ENTRY.unpack_from(
                mm, base + current * INDEX_ENTRY_SIZE
            )
            if time_diff < 0:
                break
            stored_at = begin_ts + time_diff * 1000
            if entry_hash == key_hash and begin <= stored_at <= end and phy not in seen:
                seen.add(phy)
                found.append(phy)
            # Chains run newest to oldest, so a smaller prevIndex is the only valid step;
            # anything else is the end (or corruption) and must not loop.
            if prev <= 0 or prev >= current or stored_at < begin:
                break
            current = prev

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None
            os.close(self._fd)

    def destroy(self) -> None:
        """Close and delete the file."""
        self.close()
        self.path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return (
            f"IndexFile({self.name}, count={self.index_count - 1}, "
            f"ts={self.begin_timestamp}..{self.end_timestamp}, "
            f"phy={self.begin_phy_offset}..{self.end_phy_offset})"
        )


def infer_geometry(data: bytes | mmap.mmap, *, path: str | None = None) -> tuple[int, int]:
    """Find (maxHashSlotNum, maxIndexNum) of an index file from its bytes alone.

    The store does not record its index geometry, yet ``mq store dump index`` must read
    files written with any ``maxHashSlotNum``/``maxIndexNum``. The defaults win when the
    length fits; otherwise the candidate geometry under which written entries sit in the
    slots their hashes name (the newest one exactly there) is taken. Raises
    :class:`CorruptRecordError` when no candidate, or more than one, fits.
    """
    size = len(data)
    if size == index_file_size(DEFAULT_MAX_HASH_SLOT_NUM, DEFAULT_MAX_INDEX_NUM):
        return DEFAULT_MAX_HASH_SLOT_NUM, DEFAULT_MAX_INDEX_NUM
    if size < INDEX_HEADER_SIZE:
        raise CorruptRecordError("file shorter than the 40-byte index header", path=path, offset=0)
    index_count = max(_HEADER.unpack_from(data, 0)[5], 1)
    body = size - INDEX_HEADER_SIZE
    candidates = []
    # slots*4 + entries*20 == body with entries >= max(indexCount, 2): only every fifth
    # slot count below the one that leaves room for the entries can fit, so the scan
    # visits those alone (a garbage header used to cost a pass over every slot count).
    top = (body - max(index_count, 2) * INDEX_ENTRY_SIZE) // HASH_SLOT_SIZE
    top -= (top - body // HASH_SLOT_SIZE) % 5
    for slots in range(top if body % HASH_SLOT_SIZE == 0 else 0, 0, -5):
        if index_count > 1 and not _geometry_fits(data, slots, index_count):
            continue
        candidates.append((slots, (body - slots * HASH_SLOT_SIZE) // INDEX_ENTRY_SIZE))
        if index_count <= 1 or len(candidates) > 1:
            break
    if len(candidates) == 1:
        return candidates[0]
    what = "no" if not candidates else "more than one"
    raise CorruptRecordError(
        f"{what} index geometry fits this {size}-byte file; give maxHashSlotNum and maxIndexNum",
        path=path,
        offset=0,
    )


def _geometry_fits(data: bytes | mmap.mmap, slots: int, index_count: int) -> bool:
    base = INDEX_HEADER_SIZE + slots * HASH_SLOT_SIZE

    def slot_of(n: int) -> tuple[int, int, int] | None:
        key_hash, _phy, time_diff, prev = _ENTRY.unpack_from(data, base + n * INDEX_ENTRY_SIZE)
        if key_hash < 0 or time_diff < 0 or not 0 <= prev < n:
            return None
        (value,) = _SLOT.unpack_from(data, INDEX_HEADER_SIZE + (key_hash % slots) * 4)
        return key_hash, prev, value

    last = index_count - 1
    newest = slot_of(last)
    if newest is None or newest[2] != last:
        return False
    for n in range(1, min(last, 64)):
        got = slot_of(n)
        if got is None or not n <= got[2] <= last:
            return False
    return True


PURE: Final[dict[str, Callable[..., Any]]] = {"put_key": IndexFile.put_key}
"""The pure method, kept for the parity tests whichever core runs."""

_compiled = load("mqcore.store._index_file")
if _compiled is not None:
    IndexFile.put_key = _compiled.put_key_method(  # type: ignore[method-assign]
        PURE["put_key"], index_key_hash
    )

"""CommitLog: every message of every topic, appended to one stream of mapped files.

The record layout (one table, one set of structs) is :mod:`mqcore.message.record`'s;
the store writes QUEUEOFFSET, PHYSICALOFFSET and STORETIMESTAMP at append time.

End of file: when a record of ``L`` bytes does not satisfy ``L + 8 <= R`` (``R`` bytes
left), an 8-byte BLANK header ``[i32 R][i32 CBD43194]`` is written and the record goes
to the next file. Zero bytes (TOTALSIZE 0) mark the end of data.

Files are ``mappedFileSizeCommitLog`` bytes (default 1 GiB) named by start offset.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

from mqcore.common.javahash import tags_hash_code
from mqcore.errors import CorruptRecordError, StoreError
from mqcore.message.const import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    SCHEDULE_TOPIC,
    SysFlag,
)
from mqcore.message.properties import decode_properties
from mqcore.message.record import (
    BLANK_RECORD_MIN,
    HEADER,
    INT16,
    INT32,
    INT64,
    PEEK,
    TAIL_AND_BODY_LEN,
    DispatchRequest,
)
from mqcore.store.mapped_file import MappedFile
from mqcore.store.mapped_file_queue import MappedFileQueue

BLANK_HEADER_SIZE = BLANK_RECORD_MIN
_I = INT32
_Q = INT64
_H = INT16
_TAIL = TAIL_AND_BODY_LEN
_BORN_V6 = SysFlag.BORNHOST_V6_FLAG
_STORE_V6 = SysFlag.STOREHOSTADDRESS_V6_FLAG
TRANSACTION_MASK = SysFlag.TRANSACTION_MASK
TRANSACTION_PREPARED = SysFlag.TRANSACTION_PREPARED_TYPE
TRANSACTION_ROLLBACK = SysFlag.TRANSACTION_ROLLBACK_TYPE


def check_message(
    buf: memoryview,
    pos: int,
    *,
    check_crc: bool,
    delay_table: dict[int, int] | None = None,
    path: str | None = None,
    base_offset: int = 0,
    tolerate_crc: bool = False,
) -> DispatchRequest | int | None:
    """Validate the record at ``pos`` like ``checkMessageAndReturnSize``.

    Returns a :class:`DispatchRequest` for a message, the BLANK record's size (an int) at
    a file end, or None at the end of data (zeros). Raises :class:`CorruptRecordError`
    (with ``path`` and the logical offset ``base_offset + pos``) for anything else; with
    ``tolerate_crc`` a record whose only fault is its BODYCRC comes back ``damaged``
    (its bytes still frame it, so the records after it can be trusted).
    """
    damaged = False
    end = len(buf)
    if end - pos < BLANK_HEADER_SIZE:
        return None
    total, magic = PEEK.unpack_from(buf, pos)
    if magic == BLANK_MAGIC_CODE:
        if total < BLANK_HEADER_SIZE or pos + total != end:
            raise _corrupt(
                f"BLANK record of {total} bytes does not end the file", path, base_offset + pos
            )
        return int(total)
    if total == 0 and magic == 0:
        return None
    if magic not in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2):
        raise _corrupt(f"bad magic code 0x{magic & 0xFFFFFFFF:08X}", path, base_offset + pos)
    if total < HEADER.size + 40 or total > end - pos:
        raise _corrupt(f"bad record size {total}", path, base_offset + pos)
    try:
        (_t, _m, crc, queue_id, _flag, queue_offset, phy, sys_flag, _born) = HEADER.unpack_from(
            buf, pos
        )
        p = pos + HEADER.size + (20 if sys_flag & _BORN_V6 else 8)
        (store_ts,) = _Q.unpack_from(buf, p)
        p += 8 + (20 if sys_flag & _STORE_V6 else 8)
        _reconsume, prepared, body_len = _TAIL.unpack_from(buf, p)
        p += 16
        if body_len < 0 or p + body_len > pos + total:
            raise _corrupt(f"bad body length {body_len}", path, base_offset + pos)
        if check_crc and zlib.crc32(buf[p : p + body_len]) & 0x7FFFFFFF != crc:
            if not tolerate_crc:
                raise _corrupt("BODYCRC does not match the body", path, base_offset + pos)
            damaged = True
        p += body_len
        if magic == MESSAGE_MAGIC_CODE:
            topic_len = buf[p]
            p += 1
        else:
            (topic_len,) = _H.unpack_from(buf, p)
            p += 2
        topic = bytes(buf[p : p + topic_len]).decode("utf-8")
        p += topic_len
        (props_len,) = _H.unpack_from(buf, p)
        p += 2
        if props_len < 0 or p + props_len - pos != total:
            raise _corrupt(
                f"TOTALSIZE {total} does not match the record's fields", path, base_offset + pos
            )
        props = decode_properties(buf[p : p + props_len]) if props_len else {}
    except (struct.error, IndexError, UnicodeDecodeError):
        raise _corrupt("record fields run past TOTALSIZE", path, base_offset + pos) from None
    except CorruptRecordError as exc:
        if exc.path is None:
            raise _corrupt(exc.detail, path, base_offset + pos) from None
        raise
    tags_code = tags_hash_code(props.get(PROPERTY_TAGS))
    if topic == SCHEDULE_TOPIC and delay_table:
        level_text = props.get(PROPERTY_DELAY_TIME_LEVEL)
        if level_text:
            tags_code = deliver_timestamp(store_ts, level_text, delay_table, tags_code)
    return DispatchRequest(
        topic=topic,
        queue_id=queue_id,
        commit_log_offset=phy,
        size=total,
        tags_code=tags_code,
        store_timestamp=store_ts,
        queue_offset=queue_offset,
        keys=props.get(PROPERTY_KEYS),
        uniq_key=props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
        sys_flag=sys_flag,
        properties=props,
        prepared_transaction_offset=prepared,
        damaged=damaged,
    )


def deliver_timestamp(
    store_ts: int, level_text: str, delay_table: dict[int, int], default: int
) -> int:
    """Tag slot of a delayed record: store ts + the level's delay (level clamped)."""
    try:
        level = int(level_text)
    except ValueError:
        return default
    if level <= 0:
        return default
    level = min(level, max(delay_table))
    return store_ts + delay_table[level]


def _corrupt(msg: str, path: str | None, offset: int) -> CorruptRecordError:
    return CorruptRecordError(msg, path=path, offset=offset)


class CommitLog:
    """The mapped commit log files plus append, read and scan primitives.

    Appends are not locked here: the message store serialises them with its put lock,
    because queue offsets and consume queue order must follow commit log order.
    """

    def __init__(
        self,
        path: Path,
        mapped_file_size: int,
        *,
        readonly: bool = False,
        delay_table: dict[int, int] | None = None,
    ) -> None:
        self.path = path
        self.mapped_file_size = mapped_file_size
        self.readonly = readonly
        self.delay_table = delay_table or {}
        self.queue = MappedFileQueue(path, mapped_file_size, readonly=readonly)
        self.last_store_timestamp = 0
        self.last_scan_end = 0
        """Store ts of the last appended record (the checkpoint's physic ts after flush)."""

    def load(self) -> None:
        self.queue.load()

    # -- offsets -----------------------------------------------------------------------
    @property
    def min_offset(self) -> int:
        first = self.queue.first_file
        return first.file_from_offset if first is not None else 0

    @property
    def max_offset(self) -> int:
        return self.queue.max_offset

    @property
    def flushed_where(self) -> int:
        return self.queue.flushed_where

    def roll_next_file(self, offset: int) -> int:
        """Start offset of the file after the one holding ``offset``."""
        return offset + self.mapped_file_size - offset % self.mapped_file_size

    # -- appending ---------------------------------------------------------------------
    def reserve(self, size: int) -> tuple[MappedFile, int]:
        """Find room for ``size`` bytes (a whole batch in one file); returns (file, offset).

        Writes the BLANK filler and rolls to a new file when ``size + 8`` does not fit
        (RocketMQ's ``L + 8 > R`` rule). The caller encodes the records for the returned
        physical offset and calls :meth:`commit` - one copy into the map per batch.
        """
        self.queue.check_writable()
        if size + BLANK_HEADER_SIZE > self.mapped_file_size:
            raise StoreError(f"{size} bytes cannot fit in a commit log file")
        mf = self.queue.get_last_file(0)
        assert mf is not None
        if size + BLANK_HEADER_SIZE > mf.remaining:
            remaining = mf.remaining
            mf.reserve_to(mf.wrote_position + BLANK_HEADER_SIZE)
            PEEK.pack_into(mf.mm, mf.wrote_position, remaining, BLANK_MAGIC_CODE)
            mf.wrote_position = mf.file_size
            mf = self.queue.get_last_file(0)
            assert mf is not None
        mf.reserve_to(mf.wrote_position + size)  # a full disk fails here, before any write
        return mf, mf.max_offset

    def commit(self, mf: MappedFile, data: bytes | bytearray, store_timestamp: int) -> int:
        """Copy the patched ``data`` into ``mf``; returns the end offset."""
        mf.append(data)
        mf.store_timestamp = store_timestamp
        self.last_store_timestamp = store_timestamp
        return mf.max_offset

    def append_raw(self, offset: int, data: bytes | bytearray | memoryview) -> int:
        """Append bytes copied verbatim from another log (HA slave); must be contiguous."""
        self.queue.check_writable()
        if self.queue.last_file is None:
            # An empty slave takes the master's stream wherever it starts (RocketMQ starts
            # an empty slave at the master's last file), but only on a file boundary.
            if offset % self.queue.mapped_file_size:
                raise StoreError(f"an empty commit log cannot start at {offset}")
        elif offset != self.max_offset:
            raise StoreError(f"raw append at {offset} but the commit log ends at {self.max_offset}")
        view = memoryview(data)
        while view:
            mf = self.queue.get_last_file(offset)
            assert mf is not None
            n = min(len(view), mf.remaining)
            mf.append(view[:n])
            view = view[n:]
            offset += n
        return offset

    # -- reading -----------------------------------------------------------------------
    def read_for_transfer(self, offset: int, limit: int) -> memoryview | None:
        """Up to ``limit`` written bytes from ``offset``, within one file (HA transfer).

        None when nothing is written there yet, or the offset is no longer on disk."""
        mf = self.queue.find_by_offset(offset)
        if mf is None:
            return None
        pos = offset - mf.file_from_offset
        end = min(mf.wrote_position, pos + limit)
        if end <= pos:
            return None
        return mf.view[pos:end]

    def get_data(self, offset: int, size: int) -> memoryview | None:
        """Zero-copy view of ``size`` bytes at ``offset`` (within one file), or None."""
        mf = self.queue.find_by_offset(offset)
        if mf is None:
            return None
        pos = offset - mf.file_from_offset
        if pos + size > mf.wrote_position:
            return None
        return mf.view[pos : pos + size]

    def get_message(self, offset: int) -> memoryview:
        """The raw record at ``offset``; CorruptRecordError when there is none."""
        mf = self.queue.find_by_offset(offset)
        if mf is None or offset - mf.file_from_offset >= mf.wrote_position:
            raise CorruptRecordError(
                f"no commit log data at offset {offset}", path=str(self.path), offset=offset
            )
        pos = offset - mf.file_from_offset
        if mf.wrote_position - pos < 8:
            raise _corrupt("truncated record header", str(mf.path), offset)
        total, magic = PEEK.unpack_from(mf.mm, pos)
        if magic not in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2):
            raise _corrupt(
                f"no record here (magic 0x{magic & 0xFFFFFFFF:08X})", str(mf.path), offset
            )
        if total <= 0 or pos + total > mf.wrote_position:
            raise _corrupt(f"bad record size {total}", str(mf.path), offset)
        return mf.view[pos : pos + total]

    def check_at(self, offset: int, *, check_crc: bool = False) -> DispatchRequest | int | None:
        """:func:`check_message` at a logical offset (None when no file holds it)."""
        mf = self.queue.find_by_offset(offset)
        if mf is None:
            return None
        return check_message(
            mf.view[: mf.wrote_position],
            offset - mf.file_from_offset,
            check_crc=check_crc,
            delay_table=self.delay_table,
            path=str(mf.path),
            base_offset=mf.file_from_offset,
        )

    def scan(
        self,
        from_offset: int,
        *,
        check_crc: bool = False,
        strict: bool = True,
        tolerate_crc: bool = False,
        until: int | None = None,
    ) -> Iterator[DispatchRequest]:
        """Yield every message from ``from_offset`` to the end of data (or to the file
        that starts at ``until``).

        BLANK records skip to the next file; zeros end the scan. ``strict`` raises
        :class:`CorruptRecordError` on bad bytes; otherwise the scan just stops there
        (recovery's view: the first invalid record is the end). The end reached is left
        in :attr:`last_scan_end`. The offline walk scans one file at a time with
        ``until`` to go on past a damaged file.
        """
        self.last_scan_end = from_offset
        files = self.queue.files
        offset = from_offset
        for mf in files:
            if mf.file_end_offset <= offset:
                continue
            if until is not None and mf.file_from_offset >= until:
                return
            pos = max(0, offset - mf.file_from_offset)
            view = mf.view[: mf.wrote_position]
            path = str(mf.path)
            base = mf.file_from_offset
            while True:
                try:
                    res = check_message(
                        view,
                        pos,
                        check_crc=check_crc,
                        delay_table=self.delay_table,
                        path=path,
                        base_offset=base,
                        tolerate_crc=tolerate_crc,
                    )
                except CorruptRecordError:
                    if strict:
                        raise
                    return
                if res is None:
                    if pos < mf.file_size:
                        return  # zeros: end of data
                    break  # a record ended exactly at the file end: go on
                if isinstance(res, int):
                    pos += res
                    self.last_scan_end = base + pos
                    break
                pos += res.size
                self.last_scan_end = base + pos
                yield res
            offset = mf.file_end_offset

    def iter_records(self, from_offset: int | None = None) -> Iterator[tuple[int, memoryview]]:
        """Yield ``(offset, raw record view)`` for offline tools; raises on bad bytes."""
        start = self.min_offset if from_offset is None else from_offset
        for req in self.scan(start, check_crc=False, strict=True):
            mf = self.queue.find_by_offset(req.commit_log_offset)
            assert mf is not None
            pos = req.commit_log_offset - mf.file_from_offset
            yield req.commit_log_offset, mf.view[pos : pos + req.size]

    # -- flushing and lifecycle ----------------------------------------------------------
    def flush(self, least_pages: int = 0) -> bool:
        return self.queue.flush(least_pages)

    def truncate(self, end_offset: int) -> None:
        """Make ``end_offset`` the end of data (torn tail, dirty files removed)."""
        self.queue.set_write_end(end_offset)

    def close(self) -> None:
        self.queue.close()

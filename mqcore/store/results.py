"""Results of store operations: RocketMQ's PutMessageStatus / GetMessageStatus and friends.

Byte layout: none; :class:`GetResult` and :class:`QueryResult` carry ``memoryview`` slices
of the mapped commit log (raw records, exactly as stored) so a pull response can be
written to a socket without decoding or copying.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field


class PutStatus(enum.Enum):
    """``PutMessageStatus`` of RocketMQ."""

    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPPED_FILE_FAILED = "CREATE_MAPPED_FILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    IN_SYNC_REPLICAS_NOT_ENOUGH = "IN_SYNC_REPLICAS_NOT_ENOUGH"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class GetStatus(enum.Enum):
    """``GetMessageStatus`` of RocketMQ."""

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass(slots=True)
class PutResult:
    """Outcome of an append. ``flush_future`` (SYNC_FLUSH) resolves once durable."""

    status: PutStatus
    wrote_offset: int = 0
    """Commit log offset of the first record."""
    wrote_bytes: int = 0
    queue_offset: int = 0
    """Queue offset of the first record (0 for PREPARED/ROLLBACK records)."""
    msg_count: int = 0
    store_timestamp: int = 0
    record_offsets: list[int] = field(default_factory=list)
    """Commit log offset of every record (offset message ids)."""
    flush_future: Future[bool] | None = None
    remark: str = ""

    @property
    def ok(self) -> bool:
        return self.status is PutStatus.PUT_OK

    def wait(self, timeout: float | None = None) -> PutStatus:
        """Block until durable (SYNC_FLUSH); FLUSH_DISK_TIMEOUT when it takes too long."""
        if self.flush_future is None or self.status is not PutStatus.PUT_OK:
            return self.status
        try:
            ok = self.flush_future.result(timeout)
        except FutureTimeout:
            return PutStatus.FLUSH_DISK_TIMEOUT
        return PutStatus.PUT_OK if ok else PutStatus.FLUSH_DISK_TIMEOUT


@dataclass(slots=True)
class GetResult:
    """Raw records for a pull: memoryviews into the mapped commit log, no copies."""

    status: GetStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    buffers: list[memoryview] = field(default_factory=list)
    queue_offsets: list[int] = field(default_factory=list)
    buffer_total_size: int = 0
    suggest_pulling_from_slave: bool = False

    @property
    def message_count(self) -> int:
        return len(self.buffers)


@dataclass(slots=True)
class QueryResult:
    """Records found through the index (callers re-check keys: only hashes are stored)."""

    buffers: list[memoryview]
    phy_offsets: list[int]
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


TagFilter = Callable[[int], bool]
"""Decides on the consume queue tag slot (low 32 bits hold the tag hash)."""
RecordFilter = Callable[[memoryview], bool]
"""Decides on the raw record (SQL92 on properties)."""

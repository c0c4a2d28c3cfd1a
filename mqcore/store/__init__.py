"""The message store: RocketMQ 4.x byte-compatible commit log, consume queues, index.

Synchronous and network-free; the broker and the offline ``mq store`` tools share it.
Start with :class:`MessageStore` (``open_readonly`` for tools).
"""

from __future__ import annotations

from mqcore.store.message_store import (
    GetResult,
    GetStatus,
    MessageStore,
    PutResult,
    PutStatus,
    QueryResult,
)
from mqcore.store.store_config import BrokerRole, FlushDiskType, MessageStoreConfig

__all__ = [
    "BrokerRole",
    "FlushDiskType",
    "GetResult",
    "GetStatus",
    "MessageStore",
    "MessageStoreConfig",
    "PutResult",
    "PutStatus",
    "QueryResult",
]

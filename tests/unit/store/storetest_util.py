"""Helpers shared by the store engine tests (small file sizes, message factory)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from mqcore.message.model import MessageExt
from mqcore.store import FlushDiskType, MessageStore, MessageStoreConfig


def small_config(root: Path, **overrides: object) -> MessageStoreConfig:
    """A config with tiny files so tests roll over many of them."""
    values: dict[str, object] = {
        "store_path_root_dir": str(root),
        "mapped_file_size_commit_log": 64 * 1024,
        "mapped_file_size_consume_queue": 100 * 20,
        "max_hash_slot_num": 64,
        "max_index_num": 256,
        "max_message_size": 16 * 1024,
        "flush_interval_commit_log": 50,
        "flush_interval_consume_queue": 50,
        "clean_resource_interval": 3_600_000,
        "flush_disk_type": FlushDiskType.ASYNC_FLUSH,
    }
    values.update(overrides)
    return MessageStoreConfig(**values)  # type: ignore[arg-type]


def make_msg(
    topic: str = "TopicA",
    queue_id: int = 0,
    body: bytes = b"hello",
    *,
    tags: str | None = "TagA",
    keys: str | None = None,
    uniq: str | None = None,
    props: dict[str, str] | None = None,
    sys_flag: int = 0,
) -> MessageExt:
    properties: dict[str, str] = {}
    if tags:
        properties["TAGS"] = tags
    if keys:
        properties["KEYS"] = keys
    if uniq:
        properties["UNIQ_KEY"] = uniq
    properties.update(props or {})
    return MessageExt(
        topic=topic,
        body=body,
        properties=properties,
        queue_id=queue_id,
        sys_flag=sys_flag,
        born_timestamp=1_700_000_000_000,
        born_host=("127.0.0.1", 50000),
        store_host=("127.0.0.1", 10911),
    )


def open_store(root: Path, **overrides: object) -> MessageStore:
    store = MessageStore(small_config(root, **overrides))
    store.start()
    return store


def store_threads() -> list[threading.Thread]:
    names = ("FlushRealTimeService", "GroupCommitService", "FlushConsumeQueueService")
    return [t for t in threading.enumerate() if t.name in names]


def kill(store: MessageStore) -> None:
    """Leave the store as ``kill -9`` does: what was written into the maps stays (the page
    cache keeps it), the abort file stays, and nothing more is flushed or written on the
    way out (no final flush, no index header, no checkpoint)."""
    for service in (store._flusher, store._cq_flusher):
        assert service is not None
        service._on_stop = lambda: None  # type: ignore[method-assign]
        service.shutdown()
    store._running = False
    if store.index is not None:
        for f in store.index.files:
            f.close()
    store.queues.close()
    store.commit_log.close()
    checkpoint = store.checkpoint
    if checkpoint is not None and checkpoint._mm is not None:
        checkpoint._mm.close()
        checkpoint._mm = None
    store._lock.release()


def next_millisecond() -> None:
    """Return once the clock's millisecond has moved on, so the next record is stored
    later than every record so far (store times have millisecond resolution)."""
    start = time.time_ns() // 1_000_000
    deadline = time.monotonic() + 1.0
    while time.time_ns() // 1_000_000 == start:
        assert time.monotonic() < deadline, "the clock did not move"

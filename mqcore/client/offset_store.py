"""Consumer offset stores: where a consumer group remembers how far it got in each queue.

* :class:`RemoteBrokerOffsetStore` (CLUSTERING): the group's members share the offsets,
  so they live at the broker (QUERY_CONSUMER_OFFSET / UPDATE_CONSUMER_OFFSET, spec §8.5,
  §8.6). The in-memory table is updated on every consumed batch, sent to the broker
  every 5 s, piggybacked on pulls, and flushed on shutdown.
* :class:`LocalFileOffsetStore` (BROADCASTING): every member consumes everything, so its
  progress is its own: a JSON file per client and group under a directory
  (default ``~/.mq_offsets``), written atomically (temp file, fsync, rename, with the
  previous version kept as ``.bak``).

Offsets are "next offset to consume". ``None`` means "no offset known" (a new group or
queue): the caller then applies its consume-from-where policy.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

import orjson

from mqcore.common.files import write_atomically, write_synced
from mqcore.protocol.bodies.base import MessageQueue, mq_key, mq_key_text

__all__ = [
    "DEFAULT_OFFSET_DIR",
    "LocalFileOffsetStore",
    "OffsetAPI",
    "OffsetStore",
    "ReadOffsetType",
    "RemoteBrokerOffsetStore",
]

log = logging.getLogger("mq.client.offset")

DEFAULT_OFFSET_DIR = Path("~/.mq_offsets")
"""Where broadcasting consumers keep their offsets (RocketMQ: ``~/.rocketmq_offsets``)."""


class ReadOffsetType(enum.Enum):
    MEMORY = "memory"
    """Only the in-memory table."""
    STORE = "store"
    """Ask the backing store (broker or file) and remember the answer."""
    MEMORY_FIRST_THEN_STORE = "memory_first_then_store"


class OffsetAPI(Protocol):
    """The two broker calls a remote offset store needs (implemented over the client's
    request helpers; a fake in unit tests)."""

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int | None:
        """The broker's committed offset, ``None`` if it has none (QUERY_NOT_FOUND).
        Raises MQError when the broker cannot be asked."""
        ...

    async def update_consumer_offset(
        self, group: str, mq: MessageQueue, offset: int, *, oneway: bool = True
    ) -> None:
        """Send the offset (oneway unless told otherwise). Raises MQError when the broker
        is unreachable."""
        ...


class OffsetStore:
    """The in-memory offset table shared by both stores."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._table: dict[MessageQueue, int] = {}

    async def load(self) -> None:
        """Read persisted offsets (local store); nothing to do for the remote one."""

    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool = False) -> None:
        """Remember ``offset`` for ``mq``; ``increase_only`` never moves it backwards
        (concurrent consumers finishing out of order)."""
        if offset < 0:
            return
        if increase_only:
            old = self._table.get(mq)
            if old is not None and old >= offset:
                return
        self._table[mq] = offset

    async def read(
        self, mq: MessageQueue, how: ReadOffsetType = ReadOffsetType.MEMORY_FIRST_THEN_STORE
    ) -> int | None:
        if how is not ReadOffsetType.STORE:
            offset = self._table.get(mq)
            if offset is not None or how is ReadOffsetType.MEMORY:
                return offset
        offset = await self._read_store(mq)
        if offset is not None:
            self.update(mq, offset)
        return offset

    async def _read_store(self, mq: MessageQueue) -> int | None:
        raise NotImplementedError

    def offsets(self, topic: str | None = None) -> dict[MessageQueue, int]:
        """A copy of the in-memory table, optionally for one topic."""
        return {mq: o for mq, o in self._table.items() if topic is None or mq.topic == topic}

    def remove(self, mq: MessageQueue) -> None:
        self._table.pop(mq, None)

    async def persist(self, mq: MessageQueue) -> None:
        """Write one queue's offset to the backing store now (queue being dropped)."""
        raise NotImplementedError

    async def persist_all(self, mqs: Iterable[MessageQueue], *, sync: bool = False) -> None:
        """Write the offsets of ``mqs`` (the queues currently assigned); forget the rest.
        ``sync`` waits for the broker's acknowledgement (``commit_sync``)."""
        raise NotImplementedError


class RemoteBrokerOffsetStore(OffsetStore):
    """CLUSTERING offsets, kept by the broker of each queue."""

    def __init__(self, group: str, api: OffsetAPI) -> None:
        super().__init__(group)
        self.api = api

    async def _read_store(self, mq: MessageQueue) -> int | None:
        return await self.api.query_consumer_offset(self.group, mq)

    async def persist(self, mq: MessageQueue) -> None:
        offset = self._table.get(mq)
        if offset is not None:
            await self.api.update_consumer_offset(self.group, mq, offset)

    async def persist_all(self, mqs: Iterable[MessageQueue], *, sync: bool = False) -> None:
        wanted = set(mqs)
        for mq in [mq for mq in self._table if mq not in wanted]:
            del self._table[mq]
        items = list(self._table.items())
        sends = [
            self.api.update_consumer_offset(self.group, mq, offset, oneway=not sync)
            for mq, offset in items
        ]
        results = await asyncio.gather(*sends, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        for (mq, _), result in zip(items, results, strict=True):
            if isinstance(result, BaseException):
                log.warning("persisting offset of %s for %s failed: %s", mq, self.group, result)
        if sync and errors:
            raise errors[0]


class LocalFileOffsetStore(OffsetStore):
    """BROADCASTING offsets in ``<dir>/<client_id>/<group>/offsets.json``.

    The file holds ``{"offsetTable": {"<MessageQueue JSON>": offset}}``, RocketMQ's
    ``OffsetSerializeWrapper`` with the queue keys as strings (strict JSON).
    """

    def __init__(self, group: str, client_id: str, directory: str | Path | None = None) -> None:
        super().__init__(group)
        root = Path(directory) if directory is not None else DEFAULT_OFFSET_DIR
        safe_client = client_id.replace(os.sep, "_").replace(":", "_")
        self.path = root.expanduser() / safe_client / group / "offsets.json"
        self._file: dict[MessageQueue, int] = {}

    async def load(self) -> None:
        self._file = await asyncio.to_thread(self._read_file)
        for mq, offset in self._file.items():
            self._table.setdefault(mq, offset)

    def _read_file(self) -> dict[MessageQueue, int]:
        for path in (self.path, self.path.with_name(self.path.name + ".bak")):
            try:
                data = orjson.loads(path.read_bytes())
                table = data.get("offsetTable", {}) if isinstance(data, dict) else {}
                return {mq_key(k): int(v) for k, v in table.items()}
            except FileNotFoundError:
                continue
            except (orjson.JSONDecodeError, ValueError, TypeError, AttributeError) as exc:
                log.warning("ignoring unreadable offset file %s: %s", path, exc)
        return {}

    async def _read_store(self, mq: MessageQueue) -> int | None:
        return self._file.get(mq)

    async def persist(self, mq: MessageQueue) -> None:
        await self.persist_all(self._table)

    async def persist_all(self, mqs: Iterable[MessageQueue], *, sync: bool = False) -> None:
        wanted = set(mqs)
        snapshot = {mq: o for mq, o in self._table.items() if mq in wanted}
        merged = {**self._file, **snapshot}
        if merged == self._file and self.path.exists():
            return
        await asyncio.to_thread(self._write_file, merged)
        self._file = merged

    def _write_file(self, table: dict[MessageQueue, int]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = orjson.dumps(
            {"offsetTable": {mq_key_text(mq): o for mq, o in sorted(table.items())}},
            option=orjson.OPT_INDENT_2,
        )
        if self.path.exists():
            with contextlib.suppress(OSError):
                write_synced(self.path.with_name(self.path.name + ".bak"), self.path.read_bytes())
        write_atomically(self.path, data, tmp=self.path.with_name(self.path.name + ".tmp"))

"""Committed consumer offsets: ``config/consumerOffset.json`` (``ConsumerOffsetManager``).

File shape: ``{"offsetTable":{"<topic>@<group>":{<queueId>:<offset>,...}}}`` with fastjson's
bare integer keys (``{0:5}``); the offset is the next one to consume. Persisted by the
broker every ``flushConsumerOffsetInterval`` (5 s) and at shutdown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from mqcore.common.jsonfields import get_mapping, int_key
from mqcore.errors import ConfigError
from mqcore.store.metadata.config_file import ConfigFileManager

__all__ = ["TOPIC_GROUP_SEPARATOR", "ConsumerOffsetManager"]

TOPIC_GROUP_SEPARATOR = "@"


def _split(key: str) -> tuple[str, str] | None:
    parts = key.split(TOPIC_GROUP_SEPARATOR)
    return (parts[0], parts[1]) if len(parts) == 2 else None


class _LiveOffsetTable(Mapping[str, dict[int, int]]):
    """The offset table as the file writer reads it, without the lock and without a
    copy of the whole table.

    Each pair's queue offsets are copied when the writer reaches them (one C-level
    ``dict`` copy, atomic under the GIL) and dropped once written, so a commit landing
    meanwhile is in this file or the next one, which is all a periodic write promises.
    A whole copy made first (10,000 dicts alive while the file is encoded) survives
    garbage collections and sets off full ones: 50-100 ms, GIL held, at 10,000 groups.
    A pair removed meanwhile is left out."""

    def __init__(self, table: dict[str, dict[int, int]]) -> None:
        self._table = table

    def __getitem__(self, key: str) -> dict[int, int]:
        return dict(self._table[key])

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._table))

    def __len__(self) -> int:
        return len(self._table)

    def items(self) -> Iterator[tuple[str, dict[int, int]]]:  # type: ignore[override]
        table = self._table
        for key in list(table):
            offsets = table.get(key)
            if offsets is not None:
                yield key, dict(offsets)


class ConsumerOffsetManager(ConfigFileManager):
    """``table`` maps ``topic@group`` to ``{queue_id: offset}``, as the file does."""

    FILE_NAME = "consumerOffset.json"

    table: dict[str, dict[int, int]]

    def _reset(self) -> None:
        self.table = {}

    def _decode(self, obj: Any) -> None:
        table: dict[str, dict[int, int]] = {}
        for key, offsets in get_mapping(get_mapping(obj), "offsetTable").items():
            if not isinstance(key, str):
                raise ConfigError(f"offsetTable: key {key!r} is not 'topic@group'")
            queue_offsets: dict[int, int] = {}
            for qid, off in get_mapping(offsets).items():
                if isinstance(off, bool) or not isinstance(off, int):
                    raise ConfigError(f"offsetTable.{key}: offset {off!r} is not an integer")
                queue_offsets[int_key(qid, f"offsetTable.{key}")] = off
            table[key] = queue_offsets
        self.table = table

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": {k: dict(v) for k, v in self.table.items()}}

    def snapshot(self) -> Callable[[], dict[str, Any]]:
        """Nothing copied now: the writer reads the live table (:class:`_LiveOffsetTable`).

        The broker writes this file every 5 s from a worker thread while the loop
        commits offsets; copying 10,000s of pairs under the lock would hold every commit,
        and so the loop, until done."""
        table = self.table
        return lambda: {"offsetTable": _LiveOffsetTable(table)}

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Record ``offset`` as the next message ``group`` consumes in the queue."""
        key = f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"
        with self._lock:
            self.table.setdefault(key, {})[queue_id] = offset

    def query(self, group: str, topic: str, queue_id: int) -> int | None:
        """The committed offset, or None when the group never committed one."""
        offsets = self.table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}")
        return None if offsets is None else offsets.get(queue_id)

    def query_all(self, group: str, topic: str) -> dict[int, int]:
        """Every queue's committed offset for ``group`` on ``topic`` (a copy)."""
        return dict(self.table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}))

    def groups_by_topic(self, topic: str) -> set[str]:
        """Groups that committed offsets on ``topic`` (``whichGroupByTopic``)."""
        out = set()
        for key in list(self.table):
            pair = _split(key)
            if pair is not None and pair[0] == topic:
                out.add(pair[1])
        return out

    def topics_by_group(self, group: str) -> set[str]:
        """Topics ``group`` committed offsets on (``whichTopicByConsumer``)."""
        out = set()
        for key in list(self.table):
            pair = _split(key)
            if pair is not None and pair[1] == group:
                out.add(pair[0])
        return out

    def remove_group(self, group: str) -> None:
        """Forget every offset of ``group`` (``removeOffset``)."""
        with self._lock:
            for key in [k for k in self.table if (p := _split(k)) and p[1] == group]:
                del self.table[key]

    def remove_topic(self, topic: str) -> None:
        """Forget every group's offsets on ``topic`` (``cleanOffsetByTopic``)."""
        with self._lock:
            for key in [k for k in self.table if (p := _split(k)) and p[0] == topic]:
                del self.table[key]

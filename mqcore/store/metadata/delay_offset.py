"""Delivery progress of delayed messages: ``config/delayOffset.json``.

File shape: ``{"offsetTable":{<delayLevel>:<offset>,...}}`` (bare integer keys): per delay
level 1..18, the next offset of ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1`` to deliver.
Persisted by the broker every ``flushDelayOffsetInterval`` (10 s).
"""

from __future__ import annotations

from typing import Any

from mqcore.common.jsonfields import get_mapping, int_key
from mqcore.errors import ConfigError
from mqcore.store.metadata.config_file import ConfigFileManager

__all__ = ["DelayOffsetManager"]


class DelayOffsetManager(ConfigFileManager):
    """``table`` maps delay level to the next schedule-queue offset."""

    FILE_NAME = "delayOffset.json"

    table: dict[int, int]

    def _reset(self) -> None:
        self.table = {}

    def _decode(self, obj: Any) -> None:
        table: dict[int, int] = {}
        for level, off in get_mapping(get_mapping(obj), "offsetTable").items():
            if isinstance(off, bool) or not isinstance(off, int):
                raise ConfigError(f"offsetTable: offset {off!r} is not an integer")
            table[int_key(level, "offsetTable")] = off
        self.table = table

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": dict(self.table)}

    def get(self, level: int) -> int:
        """Next offset to deliver for ``level``; 0 when the level never ran (as Java)."""
        return self.table.get(level, 0)

    def update(self, level: int, offset: int) -> None:
        with self._lock:
            self.table[level] = offset

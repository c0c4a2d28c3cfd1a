"""SQL92 filter registrations: ``config/consumerFilter.json`` (``ConsumerFilterManager``).

File shape (spec §10.6)::

    {"filterDataByTopic":{"<topic>":{"groupFilterData":{"<group>":ConsumerFilterData},
                                     "topic":"<topic>"}}}

Only used with ``enablePropertyFilter=true``; the broker re-registers filters from
heartbeats, so this file is a cache. ``dead`` is derived (``deadTime >= bornTime``) and
written, as fastjson serialises Java's ``isDead()`` getter.

Life cycle, as RocketMQ 4.9's ``ConsumerFilterManager``: a group going away (UNREGISTER)
or a topic leaving its subscriptions does not remove an entry but marks it dead
(``deadTime`` = now); a later registration of the same expression revives it
(``deadTime`` = 0). Entries dead for ``clean_after_ms`` (``filterDataCleanTimeSpan``,
24 h) are dropped when the file is written, and topics left without entries with them.
On load every entry still alive is taken as dead since 30 s ago (its consumers have to
heartbeat again).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mqcore.common.jsonfields import get_int, get_mapping, get_str
from mqcore.errors import ConfigError
from mqcore.store.metadata.config_file import ConfigFileManager

__all__ = ["CLEAN_AFTER_MS", "BloomFilterData", "ConsumerFilterData", "ConsumerFilterManager"]

CLEAN_AFTER_MS = 24 * 3600 * 1000
"""``filterDataCleanTimeSpan``: how long a dead entry is kept."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class BloomFilterData:
    """Bit positions of a (topic, group) pair in the consume-queue-ext bloom filter."""

    bit_num: int
    bit_pos: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"bitNum": self.bit_num, "bitPos": list(self.bit_pos)}

    @classmethod
    def from_json(cls, obj: Any) -> BloomFilterData:
        obj = get_mapping(obj)
        positions = obj.get("bitPos") or []
        if not isinstance(positions, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in positions
        ):
            raise ConfigError("bloomFilterData.bitPos: expected a list of integers")
        return cls(bit_num=get_int(obj, "bitNum", 0), bit_pos=positions)


@dataclass
class ConsumerFilterData:
    consumer_group: str
    topic: str
    expression: str | None = None
    expression_type: str | None = None
    born_time: int = 0
    dead_time: int = 0
    client_version: int = 0
    bloom_filter_data: BloomFilterData | None = None

    @property
    def dead(self) -> bool:
        return self.dead_time >= self.born_time

    def dead_for(self, now_ms: int) -> int:
        """``howLongAfterDeath``: ms since it died, -1 while alive."""
        return now_ms - self.dead_time if self.dead else -1

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.bloom_filter_data is not None:
            out["bloomFilterData"] = self.bloom_filter_data.to_json()
        out["bornTime"] = self.born_time
        out["clientVersion"] = self.client_version
        out["consumerGroup"] = self.consumer_group
        out["dead"] = self.dead
        out["deadTime"] = self.dead_time
        if self.expression is not None:
            out["expression"] = self.expression
        if self.expression_type is not None:
            out["expressionType"] = self.expression_type
        out["topic"] = self.topic
        return out

    @classmethod
    def from_json(cls, obj: Any, group: str, topic: str) -> ConsumerFilterData:
        obj = get_mapping(obj)
        bloom = obj.get("bloomFilterData")
        return cls(
            consumer_group=get_str(obj, "consumerGroup", group),
            topic=get_str(obj, "topic", topic),
            expression=get_str(obj, "expression") if obj.get("expression") is not None else None,
            expression_type=(
                get_str(obj, "expressionType") if obj.get("expressionType") is not None else None
            ),
            born_time=get_int(obj, "bornTime", 0),
            dead_time=get_int(obj, "deadTime", 0),
            client_version=get_int(obj, "clientVersion", 0),
            bloom_filter_data=None if bloom is None else BloomFilterData.from_json(bloom),
        )


class ConsumerFilterManager(ConfigFileManager):
    """``table`` maps topic to ``{group: ConsumerFilterData}``."""

    FILE_NAME = "consumerFilter.json"

    table: dict[str, dict[str, ConsumerFilterData]]
    clean_after_ms: int = CLEAN_AFTER_MS

    def _reset(self) -> None:
        self.table = {}

    def _decode(self, obj: Any) -> None:
        table: dict[str, dict[str, ConsumerFilterData]] = {}
        for topic, by_topic in get_mapping(get_mapping(obj), "filterDataByTopic").items():
            if not isinstance(topic, str):
                raise ConfigError(f"filterDataByTopic: topic {topic!r} is not a string")
            groups: dict[str, ConsumerFilterData] = {}
            for group, data in get_mapping(by_topic, "groupFilterData").items():
                if not isinstance(group, str):
                    raise ConfigError(f"groupFilterData: group {group!r} is not a string")
                entry = ConsumerFilterData.from_json(data, group, topic)
                if entry.dead_time == 0:
                    # as RocketMQ: every consumer is taken as dead when loading
                    entry.dead_time = max(entry.born_time, _now_ms() - 30_000)
                groups[group] = entry
            table[topic] = groups
        self.table = table

    def encode(self) -> str:
        """The file's text, after dropping entries dead for too long (as RocketMQ)."""
        with self._lock:
            self.clean()
            return super().encode()

    def snapshot(self) -> Callable[[], dict[str, Any]]:
        """What :meth:`persist` writes: cleaned first, as :meth:`encode`."""
        with self._lock:
            self.clean()
            return super().snapshot()

    def to_json(self) -> dict[str, Any]:
        return {
            "filterDataByTopic": {
                topic: {
                    "groupFilterData": {g: d.to_json() for g, d in groups.items()},
                    "topic": topic,
                }
                for topic, groups in self.table.items()
            }
        }

    def get(self, topic: str, group: str) -> ConsumerFilterData | None:
        return self.table.get(topic, {}).get(group)

    def register(self, data: ConsumerFilterData) -> None:
        """Put ``data`` as is (replacing the group's entry for its topic)."""
        with self._lock:
            self.table.setdefault(data.topic, {})[data.consumer_group] = data

    def register_group(
        self, group: str, subscriptions: Iterable[tuple[str, str, str, int]], now_ms: int
    ) -> bool:
        """A heartbeat's subscriptions ``(topic, expression, type, version)``: SQL92 ones
        registered (see :meth:`register_sql`), and the group's entries for topics it no
        longer subscribes marked dead. True when the table changed."""
        subs = list(subscriptions)
        changed = False
        with self._lock:
            for topic, expression, expression_type, version in subs:
                changed |= self.register_sql(
                    topic, group, expression, expression_type, version, now_ms
                )
            topics = {topic for topic, *_ in subs}
            for topic, groups in self.table.items():
                entry = groups.get(group)
                if entry is not None and topic not in topics and not entry.dead:
                    entry.dead_time = now_ms
                    changed = True
        return changed

    def register_sql(
        self,
        topic: str,
        group: str,
        expression: str,
        expression_type: str,
        version: int,
        now_ms: int,
    ) -> bool:
        """``FilterDataMapByTopic.register``: a new or changed expression replaces the
        entry; an older or equal version is ignored, except that an equal one revives a
        dead entry; the same expression with a newer version updates it (and revives it).
        Tag subscriptions and blank expressions are not kept. True when it changed."""
        if expression_type.upper() != "SQL92" or not expression:
            return False
        with self._lock:
            groups = self.table.setdefault(topic, {})
            old = groups.get(group)
            if old is not None and version <= old.client_version:
                if version == old.client_version and old.dead:
                    old.dead_time = 0
                    return True
                return False
            if old is not None and old.expression == expression:
                old.client_version = version
                if old.dead:
                    old.dead_time = 0
                return True
            groups[group] = ConsumerFilterData(
                group, topic, expression, "SQL92", born_time=now_ms, client_version=version
            )
            return True

    def unregister(self, group: str, now_ms: int | None = None) -> bool:
        """The group went away: its entries are marked dead (kept until cleaned).
        True when one was alive."""
        now = _now_ms() if now_ms is None else now_ms
        changed = False
        with self._lock:
            for groups in self.table.values():
                entry = groups.get(group)
                if entry is not None and not entry.dead:
                    entry.dead_time = now
                    changed = True
        return changed

    def clean(self, now_ms: int | None = None) -> bool:
        """Drop entries dead for ``clean_after_ms`` and empty topics; True if any went."""
        now = _now_ms() if now_ms is None else now_ms
        removed = False
        with self._lock:
            for topic in list(self.table):
                groups = self.table[topic]
                for group in [
                    g for g, d in groups.items() if d.dead_for(now) >= self.clean_after_ms
                ]:
                    del groups[group]
                    removed = True
                if not groups:
                    del self.table[topic]
                    removed = True
        return removed

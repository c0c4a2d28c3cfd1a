"""SQL92 filter registrations: ``config/consumerFilter.json`` (``ConsumerFilterManager``).

File shape (spec §10.6)::

    {"filterDataByTopic":{"<topic>":{"groupFilterData":{"<group>":ConsumerFilterData},
                                     "topic":"<topic>"}}}

Only used with ``enablePropertyFilter=true``; the broker re-registers filters from
heartbeats, so this file is a cache. ``dead`` is derived (``deadTime >= bornTime``) and
written, as fastjson serialises Java's ``isDead()`` getter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqcore.common.jsonfields import get_int, get_mapping, get_str
from mqcore.errors import ConfigError
from mqcore.store.metadata.config_file import ConfigFileManager

__all__ = ["BloomFilterData", "ConsumerFilterData", "ConsumerFilterManager"]


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
                groups[group] = ConsumerFilterData.from_json(data, group, topic)
            table[topic] = groups
        self.table = table

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
        with self._lock:
            self.table.setdefault(data.topic, {})[data.consumer_group] = data

    def unregister(self, group: str) -> None:
        """Drop ``group``'s filters on every topic (the group went away)."""
        with self._lock:
            for groups in self.table.values():
                groups.pop(group, None)

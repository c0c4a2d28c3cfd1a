"""Broker metadata records shared by the store's config files and the wire protocol.

A topic's config, a consumer group's settings and the data version travel both in
``config/*.json`` and in remoting bodies (REGISTER_BROKER, GET_ALL_TOPIC_CONFIG,
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP ...) with the same JSON shape, so one class each
serves both. Field names and defaults are RocketMQ 4.9.8's; unknown (5.x) fields are
ignored on read; bad shapes raise :class:`ConfigError` naming the field.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Self

from mqcore.common import fastjson
from mqcore.common.jsonfields import get_bool, get_int, get_mapping, get_str, now_ms
from mqcore.errors import ConfigError

__all__ = [
    "PERM_INHERIT",
    "PERM_PRIORITY",
    "PERM_READ",
    "PERM_WRITE",
    "DataVersion",
    "JsonModel",
    "PermName",
    "SubscriptionGroupConfig",
    "TopicConfig",
    "TopicFilterType",
]

PERM_PRIORITY = 0x8
PERM_READ = 0x4
PERM_WRITE = 0x2
PERM_INHERIT = 0x1


class PermName:
    """Permission bits of a topic or queue data (``PermName.java``)."""

    PRIORITY = PERM_PRIORITY
    READ = PERM_READ
    WRITE = PERM_WRITE
    INHERIT = PERM_INHERIT


class JsonModel:
    """``to_json``/``from_json`` plus byte encoding, for records that are also bodies."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        raise NotImplementedError

    def encode(self) -> bytes:
        """Strict compact JSON."""
        return fastjson.dumps(self.to_json())

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview | str) -> Self:
        """Parse Java's (fastjson), ali-ons' or our own JSON; raises :class:`ConfigError`."""
        try:
            return cls.from_json(fastjson.loads(data))
        except fastjson.FastjsonError as exc:
            raise ConfigError(f"bad {cls.__name__}: {exc}") from None


@dataclass(slots=True)
class DataVersion(JsonModel):
    """Version stamp of a broker's topics or groups; ``counter`` grows on every change,
    so name servers and slaves can skip re-reading unchanged tables."""

    timestamp: int = field(default_factory=now_ms)
    counter: int = 0
    state_version: int = 0
    """RocketMQ 5's ``stateVersion``: in controller mode the master epoch the broker had
    when it stamped this version. A name server keeps the master with the higher one
    when two brokers register as master of one name (an old master back from a
    partition that has not heard of the new epoch yet). Written only when set, so 4.x
    files and bodies stay as 4.9.8 writes them."""

    def next_version(self, state_version: int | None = None) -> None:
        self.timestamp = now_ms()
        self.counter += 1
        if state_version is not None:
            self.state_version = state_version

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"counter": self.counter}
        if self.state_version:
            out["stateVersion"] = self.state_version
        out["timestamp"] = self.timestamp
        return out

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        """Reads 4.x and 5.x stamps."""
        obj = get_mapping(obj)
        return cls(
            timestamp=get_int(obj, "timestamp", 0),
            counter=get_int(obj, "counter", 0),
            state_version=get_int(obj, "stateVersion", 0),
        )


class TopicFilterType(enum.StrEnum):
    SINGLE_TAG = "SINGLE_TAG"
    MULTI_TAG = "MULTI_TAG"


@dataclass(slots=True)
class TopicConfig(JsonModel):
    """One topic (RocketMQ ``TopicConfig``); defaults are Java's no-arg defaults."""

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = PERM_READ | PERM_WRITE
    topic_filter_type: TopicFilterType = TopicFilterType.SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False

    @property
    def readable(self) -> bool:
        return bool(self.perm & PERM_READ)

    @property
    def writeable(self) -> bool:
        return bool(self.perm & PERM_WRITE)

    @property
    def inherited(self) -> bool:
        return bool(self.perm & PERM_INHERIT)

    def to_json(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicFilterType": str(self.topic_filter_type),
            "topicName": self.topic_name,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_json(cls, obj: Any, name: str | None = None) -> Self:
        """Parse one entry; ``name`` (the table key) stands in for a missing topicName."""
        obj = get_mapping(obj)
        filter_type = get_str(obj, "topicFilterType", TopicFilterType.SINGLE_TAG.value)
        try:
            topic_filter_type = TopicFilterType(filter_type)
        except ValueError:
            raise ConfigError(f"topicFilterType: unknown value {filter_type!r}") from None
        return cls(
            topic_name=get_str(obj, "topicName", name or ""),
            read_queue_nums=get_int(obj, "readQueueNums", 16),
            write_queue_nums=get_int(obj, "writeQueueNums", 16),
            perm=get_int(obj, "perm", PERM_READ | PERM_WRITE),
            topic_filter_type=topic_filter_type,
            topic_sys_flag=get_int(obj, "topicSysFlag", 0),
            order=get_bool(obj, "order", False),
        )


@dataclass(slots=True)
class SubscriptionGroupConfig(JsonModel):
    """One consumer group's server-side settings; defaults are RocketMQ's."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    consume_message_orderly: bool = False
    """RocketMQ 5's FIFO group (``consumeMessageOrderly``): its 5.x consumers receive each
    message group in order. Written only when set, so a 4.x group file stays as 4.x
    writes it (4.x readers ignore the key)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "brokerId": self.broker_id,
            "consumeBroadcastEnable": self.consume_broadcast_enable,
            "consumeEnable": self.consume_enable,
            "consumeFromMinEnable": self.consume_from_min_enable,
            "groupName": self.group_name,
            "notifyConsumerIdsChangedEnable": self.notify_consumer_ids_changed_enable,
            "retryMaxTimes": self.retry_max_times,
            "retryQueueNums": self.retry_queue_nums,
            "whichBrokerWhenConsumeSlowly": self.which_broker_when_consume_slowly,
        }
        if self.consume_message_orderly:
            out["consumeMessageOrderly"] = True
        return out

    @classmethod
    def from_json(cls, obj: Any, name: str | None = None) -> Self:
        """Parse one entry; unknown (5.x) fields are ignored."""
        obj = get_mapping(obj)
        return cls(
            group_name=get_str(obj, "groupName", name or ""),
            consume_enable=get_bool(obj, "consumeEnable", True),
            consume_from_min_enable=get_bool(obj, "consumeFromMinEnable", True),
            consume_broadcast_enable=get_bool(obj, "consumeBroadcastEnable", True),
            retry_queue_nums=get_int(obj, "retryQueueNums", 1),
            retry_max_times=get_int(obj, "retryMaxTimes", 16),
            broker_id=get_int(obj, "brokerId", 0),
            which_broker_when_consume_slowly=get_int(obj, "whichBrokerWhenConsumeSlowly", 1),
            notify_consumer_ids_changed_enable=get_bool(
                obj, "notifyConsumerIdsChangedEnable", True
            ),
            consume_message_orderly=get_bool(obj, "consumeMessageOrderly", False),
        )

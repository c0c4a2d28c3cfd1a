"""Bodies of offsets, statistics and subscription groups (admin tools, slave sync).

Maps keyed by MessageQueue are written with the queue's JSON as a string key and read in
both that form and fastjson's object-key form (spec §10.1, §10.3). Maps keyed by Java
``Integer``/``Long`` are read with bare or quoted keys and written quoted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqcore.common.metadata import DataVersion, SubscriptionGroupConfig
from mqcore.protocol.bodies.base import (
    MessageQueue,
    RemotingBody,
    as_dict,
    as_float,
    as_int,
    as_list,
    int_key_map,
    mq_key,
    mq_key_text,
)

__all__ = [
    "ConsumeStats",
    "ConsumerOffsetSerializeWrapper",
    "DelayOffsetSerializeWrapper",
    "OffsetWrapper",
    "QueryConsumeTimeSpanBody",
    "QueueTimeSpan",
    "ResetOffsetBody",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "TopicOffset",
    "TopicStatsTable",
]


@dataclass(slots=True)
class OffsetWrapper(RemotingBody):
    """One queue of a ConsumeStats. ``pop_in_flight`` / ``pop_invisible`` are mq's
    (``popInFlightMessageCount`` / ``popInvisibleMessageCount``): for a queue the group
    consumes by POP, the messages handed out and not acknowledged, and those of them
    still invisible. They are written only when the broker has them (a queue popped
    since it started), so a 4.x answer is unchanged; RocketMQ's readers ignore fields
    they do not know, and an answer without them reads as None."""

    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0
    pop_in_flight: int | None = None
    pop_invisible: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "brokerOffset": self.broker_offset,
            "consumerOffset": self.consumer_offset,
            "lastTimestamp": self.last_timestamp,
        }
        if self.pop_in_flight is not None:
            out["popInFlightMessageCount"] = self.pop_in_flight
        if self.pop_invisible is not None:
            out["popInvisibleMessageCount"] = self.pop_invisible
        return out

    @classmethod
    def from_json(cls, obj: Any) -> OffsetWrapper:
        obj = as_dict(obj)
        in_flight = obj.get("popInFlightMessageCount")
        invisible = obj.get("popInvisibleMessageCount")
        return cls(
            as_int(obj.get("brokerOffset")),
            as_int(obj.get("consumerOffset")),
            as_int(obj.get("lastTimestamp")),
            None if in_flight is None else as_int(in_flight),
            None if invisible is None else as_int(invisible),
        )


@dataclass(slots=True)
class ConsumeStats(RemotingBody):
    """GET_CONSUME_STATS (208) answer; ``consumeTps`` is a float on the wire."""

    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeTps": float(self.consume_tps),
            "offsetTable": {
                mq_key_text(k): v.to_json() for k, v in sorted(self.offset_table.items())
            },
        }

    @classmethod
    def from_json(cls, obj: Any) -> ConsumeStats:
        obj = as_dict(obj)
        tps = as_float(obj.get("consumeTps"))
        return cls(
            {
                mq_key(k): OffsetWrapper.from_json(v)
                for k, v in as_dict(obj.get("offsetTable")).items()
            },
            tps,
        )


@dataclass(slots=True)
class TopicOffset(RemotingBody):
    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "lastUpdateTimestamp": self.last_update_timestamp,
            "maxOffset": self.max_offset,
            "minOffset": self.min_offset,
        }

    @classmethod
    def from_json(cls, obj: Any) -> TopicOffset:
        obj = as_dict(obj)
        return cls(
            as_int(obj.get("minOffset")),
            as_int(obj.get("maxOffset")),
            as_int(obj.get("lastUpdateTimestamp")),
        )


@dataclass(slots=True)
class TopicStatsTable(RemotingBody):
    """GET_TOPIC_STATS_INFO (202) answer."""

    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "offsetTable": {
                mq_key_text(k): v.to_json() for k, v in sorted(self.offset_table.items())
            }
        }

    @classmethod
    def from_json(cls, obj: Any) -> TopicStatsTable:
        return cls(
            {
                mq_key(k): TopicOffset.from_json(v)
                for k, v in as_dict(as_dict(obj).get("offsetTable")).items()
            }
        )


@dataclass(slots=True)
class ResetOffsetBody(RemotingBody):
    """INVOKE_BROKER_TO_RESET_OFFSET answer and RESET_CONSUMER_CLIENT_OFFSET body."""

    offset_table: dict[MessageQueue, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": {mq_key_text(k): v for k, v in sorted(self.offset_table.items())}}

    @classmethod
    def from_json(cls, obj: Any) -> ResetOffsetBody:
        return cls(
            {mq_key(k): as_int(v) for k, v in as_dict(as_dict(obj).get("offsetTable")).items()}
        )


@dataclass(slots=True)
class ConsumerOffsetSerializeWrapper(RemotingBody):
    """GET_ALL_CONSUMER_OFFSET (43): ``"topic@group" -> {queueId: offset}``."""

    offset_table: dict[str, dict[int, int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "offsetTable": {
                k: {str(q): o for q, o in sorted(v.items())} for k, v in self.offset_table.items()
            }
        }

    @classmethod
    def from_json(cls, obj: Any) -> ConsumerOffsetSerializeWrapper:
        return cls(
            {
                str(k): {q: as_int(o) for q, o in int_key_map(as_dict(v)).items()}
                for k, v in as_dict(as_dict(obj).get("offsetTable")).items()
            }
        )


@dataclass(slots=True)
class DelayOffsetSerializeWrapper(RemotingBody):
    """GET_ALL_DELAY_OFFSET (45): ``delayLevel -> offset``."""

    offset_table: dict[int, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": {str(k): v for k, v in sorted(self.offset_table.items())}}

    @classmethod
    def from_json(cls, obj: Any) -> DelayOffsetSerializeWrapper:
        table = int_key_map(as_dict(as_dict(obj).get("offsetTable")))
        return cls({k: as_int(v) for k, v in table.items()})


@dataclass(slots=True)
class SubscriptionGroupWrapper(RemotingBody):
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) answer."""

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_json(),
            "subscriptionGroupTable": {
                k: v.to_json() for k, v in self.subscription_group_table.items()
            },
        }

    @classmethod
    def from_json(cls, obj: Any) -> SubscriptionGroupWrapper:
        obj = as_dict(obj)
        return cls(
            {
                str(k): SubscriptionGroupConfig.from_json(v)
                for k, v in as_dict(obj.get("subscriptionGroupTable")).items()
            },
            DataVersion.from_json(obj.get("dataVersion")),
        )


@dataclass(slots=True)
class QueueTimeSpan(RemotingBody):
    message_queue: MessageQueue
    min_time_stamp: int = 0
    max_time_stamp: int = 0
    consume_time_stamp: int = 0
    delay_time: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeTimeStamp": self.consume_time_stamp,
            "delayTime": self.delay_time,
            "maxTimeStamp": self.max_time_stamp,
            "messageQueue": self.message_queue.to_json(),
            "minTimeStamp": self.min_time_stamp,
        }

    @classmethod
    def from_json(cls, obj: Any) -> QueueTimeSpan:
        obj = as_dict(obj)
        return cls(
            MessageQueue.from_json(obj.get("messageQueue")),
            as_int(obj.get("minTimeStamp")),
            as_int(obj.get("maxTimeStamp")),
            as_int(obj.get("consumeTimeStamp")),
            as_int(obj.get("delayTime")),
        )


@dataclass(slots=True)
class QueryConsumeTimeSpanBody(RemotingBody):
    """QUERY_CONSUME_TIME_SPAN (303) answer."""

    consume_time_span_set: list[QueueTimeSpan] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"consumeTimeSpanSet": [s.to_json() for s in self.consume_time_span_set]}

    @classmethod
    def from_json(cls, obj: Any) -> QueryConsumeTimeSpanBody:
        return cls(
            [QueueTimeSpan.from_json(s) for s in as_list(as_dict(obj).get("consumeTimeSpanSet"))]
        )

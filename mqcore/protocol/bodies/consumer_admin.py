"""Bodies of the consumer- and producer-facing admin answers: GET_CONSUMER_STATUS (223),
QUERY_CORRECTION_OFFSET (308), VIEW_BROKER_STATS_DATA (315) and GET_ALL_PRODUCER_INFO
(328). Field names and order are fastjson's; Java ``Integer`` map keys are written
quoted and read either way (see :mod:`mqcore.protocol.bodies.stats`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqcore.protocol.bodies.base import (
    MessageQueue,
    RemotingBody,
    as_dict,
    as_float,
    as_int,
    as_list,
    as_str,
    int_key_map,
    mq_key,
    mq_key_text,
)

__all__ = [
    "BrokerStatsData",
    "BrokerStatsItem",
    "GetConsumerStatusBody",
    "ProducerInfo",
    "ProducerTableInfo",
    "QueryCorrectionOffsetBody",
]


def _mq_offsets(obj: Any) -> dict[MessageQueue, int]:
    return {mq_key(k): as_int(v) for k, v in as_dict(obj).items()}


def _mq_offsets_json(table: dict[MessageQueue, int]) -> dict[str, int]:
    return {mq_key_text(k): v for k, v in sorted(table.items())}


@dataclass(slots=True)
class GetConsumerStatusBody(RemotingBody):
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223): each client's offsets; a client's own
    answer to GET_CONSUMER_STATUS_FROM_CLIENT fills ``message_queue_table``."""

    consumer_table: dict[str, dict[MessageQueue, int]] = field(default_factory=dict)
    message_queue_table: dict[MessageQueue, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "consumerTable": {
                cid: _mq_offsets_json(t) for cid, t in sorted(self.consumer_table.items())
            },
            "messageQueueTable": _mq_offsets_json(self.message_queue_table),
        }

    @classmethod
    def from_json(cls, obj: Any) -> GetConsumerStatusBody:
        obj = as_dict(obj)
        return cls(
            {str(k): _mq_offsets(v) for k, v in as_dict(obj.get("consumerTable")).items()},
            _mq_offsets(obj.get("messageQueueTable")),
        )


@dataclass(slots=True)
class QueryCorrectionOffsetBody(RemotingBody):
    """QUERY_CORRECTION_OFFSET (308): per queue id, the smallest offset of the groups
    counted (Long.MAX_VALUE where the compared group is behind it)."""

    correction_offsets: dict[int, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "correctionOffsets": {str(q): o for q, o in sorted(self.correction_offsets.items())}
        }

    @classmethod
    def from_json(cls, obj: Any) -> QueryCorrectionOffsetBody:
        table = int_key_map(as_dict(as_dict(obj).get("correctionOffsets")))
        return cls({q: as_int(o) for q, o in table.items()})


@dataclass(slots=True)
class BrokerStatsItem(RemotingBody):
    """``sum`` over the window, its rate per second, and ``avgpt`` (sum per call)."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"avgpt": float(self.avgpt), "sum": self.sum, "tps": float(self.tps)}

    @classmethod
    def from_json(cls, obj: Any) -> BrokerStatsItem:
        obj = as_dict(obj)
        return cls(as_int(obj.get("sum")), as_float(obj.get("tps")), as_float(obj.get("avgpt")))


@dataclass(slots=True)
class BrokerStatsData(RemotingBody):
    """VIEW_BROKER_STATS_DATA (315): one statistic over the last minute, hour and day."""

    stats_minute: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_hour: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_day: BrokerStatsItem = field(default_factory=BrokerStatsItem)

    def to_json(self) -> dict[str, Any]:
        return {
            "statsDay": self.stats_day.to_json(),
            "statsHour": self.stats_hour.to_json(),
            "statsMinute": self.stats_minute.to_json(),
        }

    @classmethod
    def from_json(cls, obj: Any) -> BrokerStatsData:
        obj = as_dict(obj)
        return cls(
            BrokerStatsItem.from_json(obj.get("statsMinute")),
            BrokerStatsItem.from_json(obj.get("statsHour")),
            BrokerStatsItem.from_json(obj.get("statsDay")),
        )


@dataclass(slots=True)
class ProducerInfo(RemotingBody):
    """One producer connection; ``remoteIP`` is Java's ``SocketAddress.toString()``
    (``"/127.0.0.1:54321"``) and ``lastUpdateTimestamp`` wall-clock milliseconds."""

    client_id: str
    remote_ip: str
    language: str = "JAVA"
    version: int = 0
    last_update_timestamp: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "clientId": self.client_id,
            "language": self.language,
            "lastUpdateTimestamp": self.last_update_timestamp,
            "remoteIP": self.remote_ip,
            "version": self.version,
        }

    @classmethod
    def from_json(cls, obj: Any) -> ProducerInfo:
        obj = as_dict(obj)
        return cls(
            as_str(obj.get("clientId")),
            as_str(obj.get("remoteIP")),
            as_str(obj.get("language"), "JAVA"),
            as_int(obj.get("version")),
            as_int(obj.get("lastUpdateTimestamp")),
        )


@dataclass(slots=True)
class ProducerTableInfo(RemotingBody):
    """GET_ALL_PRODUCER_INFO (328): producer group -> its connections."""

    data: dict[str, list[ProducerInfo]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"data": {g: [p.to_json() for p in ps] for g, ps in sorted(self.data.items())}}

    @classmethod
    def from_json(cls, obj: Any) -> ProducerTableInfo:
        data = as_dict(as_dict(obj).get("data"))
        return cls(
            {str(g): [ProducerInfo.from_json(p) for p in as_list(ps)] for g, ps in data.items()}
        )

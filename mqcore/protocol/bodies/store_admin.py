"""Bodies of the store-level admin answers: GET_BROKER_CONSUME_STATS (317) and
QUERY_CONSUME_QUEUE (321).

Field names and their order are fastjson's (alphabetical); fields Java leaves null are
left out, as fastjson writes them. ConsumeStats inside ConsumeStatsList keeps the
MessageQueue-key convention of :mod:`mqcore.protocol.bodies.stats`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqcore.protocol.bodies.base import (
    RemotingBody,
    as_bool,
    as_dict,
    as_int,
    as_list,
    as_str,
)
from mqcore.protocol.bodies.client import SubscriptionData
from mqcore.protocol.bodies.stats import ConsumeStats

__all__ = ["ConsumeQueueData", "ConsumeStatsList", "QueryConsumeQueueResponseBody"]


@dataclass(slots=True)
class ConsumeStatsList(RemotingBody):
    """GET_BROKER_CONSUME_STATS (317): per subscription group, one ConsumeStats per topic
    it has offsets for; ``totalDiff`` sums broker minus consumer offsets over all."""

    broker_addr: str = ""
    consume_stats_list: list[dict[str, list[ConsumeStats]]] = field(default_factory=list)
    total_diff: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerAddr": self.broker_addr,
            "consumeStatsList": [
                {group: [s.to_json() for s in stats] for group, stats in entry.items()}
                for entry in self.consume_stats_list
            ],
            "totalDiff": self.total_diff,
        }

    @classmethod
    def from_json(cls, obj: Any) -> ConsumeStatsList:
        obj = as_dict(obj)
        entries = [
            {
                str(group): [ConsumeStats.from_json(s) for s in as_list(stats)]
                for group, stats in as_dict(entry).items()
            }
            for entry in as_list(obj.get("consumeStatsList"))
        ]
        return cls(as_str(obj.get("brokerAddr")), entries, as_int(obj.get("totalDiff")))


@dataclass(slots=True)
class ConsumeQueueData(RemotingBody):
    """One 20-byte consume queue unit; the optional fields concern the ConsumeQueueExt
    (SQL92 bitmaps), which a store without the extension never fills."""

    physic_offset: int = 0
    physic_size: int = 0
    tags_code: int = 0
    extend_data_json: str | None = None
    bit_map: str | None = None
    eval: bool = False
    msg: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.bit_map is not None:
            out["bitMap"] = self.bit_map
        out["eval"] = self.eval
        if self.extend_data_json is not None:
            out["extendDataJson"] = self.extend_data_json
        if self.msg is not None:
            out["msg"] = self.msg
        out["physicOffset"] = self.physic_offset
        out["physicSize"] = self.physic_size
        out["tagsCode"] = self.tags_code
        return out

    @classmethod
    def from_json(cls, obj: Any) -> ConsumeQueueData:
        obj = as_dict(obj)

        def text(key: str) -> str | None:
            value = obj.get(key)
            return None if value is None else as_str(value)

        return cls(
            as_int(obj.get("physicOffset")),
            as_int(obj.get("physicSize")),
            as_int(obj.get("tagsCode")),
            text("extendDataJson"),
            text("bitMap"),
            as_bool(obj.get("eval")),
            text("msg"),
        )


@dataclass(slots=True)
class QueryConsumeQueueResponseBody(RemotingBody):
    """QUERY_CONSUME_QUEUE (321): units from an index, the queue's bounds and, when a
    group was named, its subscription and filter data (``filterData`` is text: the
    group's ConsumerFilterData as pretty JSON, ``"null"``, or a not-online notice)."""

    max_queue_index: int = 0
    min_queue_index: int = 0
    queue_data: list[ConsumeQueueData] | None = None
    subscription_data: SubscriptionData | None = None
    filter_data: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.filter_data is not None:
            out["filterData"] = self.filter_data
        out["maxQueueIndex"] = self.max_queue_index
        out["minQueueIndex"] = self.min_queue_index
        if self.queue_data is not None:
            out["queueData"] = [q.to_json() for q in self.queue_data]
        if self.subscription_data is not None:
            out["subscriptionData"] = self.subscription_data.to_json()
        return out

    @classmethod
    def from_json(cls, obj: Any) -> QueryConsumeQueueResponseBody:
        obj = as_dict(obj)
        queue_data = obj.get("queueData")
        sub = obj.get("subscriptionData")
        filter_data = obj.get("filterData")
        return cls(
            as_int(obj.get("maxQueueIndex")),
            as_int(obj.get("minQueueIndex")),
            None
            if queue_data is None
            else [ConsumeQueueData.from_json(q) for q in as_list(queue_data)],
            None if sub is None else SubscriptionData.from_json(sub),
            None if filter_data is None else as_str(filter_data),
        )

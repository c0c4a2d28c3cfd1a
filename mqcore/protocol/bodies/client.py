"""Bodies exchanged with clients: heartbeats, consumer lists, locks, connections.

Note the spellings: ``clientID`` in HeartbeatData but ``clientId`` elsewhere (spec §10.3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Self

from mqcore.protocol.bodies.base import (
    MessageQueue,
    RemotingBody,
    as_bool,
    as_dict,
    as_int,
    as_list,
    as_str,
    mq_list,
)

__all__ = [
    "CheckClientRequestBody",
    "Connection",
    "ConsumerConnection",
    "ConsumerData",
    "GetConsumerListByGroupResponseBody",
    "GroupList",
    "HeartbeatData",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "ProducerConnection",
    "ProducerData",
    "SubscriptionData",
    "UnlockBatchRequestBody",
]

SUB_ALL = "*"


@dataclass(slots=True)
class SubscriptionData(RemotingBody):
    """One topic subscription of a consumer group (``expressionType`` defaults to TAG:
    ali-ons leaves it out)."""

    topic: str
    sub_string: str = SUB_ALL
    tags_set: set[str] = field(default_factory=set)
    code_set: set[int] = field(default_factory=set)
    sub_version: int = 0
    expression_type: str = "TAG"
    class_filter_mode: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "classFilterMode": self.class_filter_mode,
            "codeSet": sorted(self.code_set),
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": sorted(self.tags_set),
            "topic": self.topic,
        }

    @classmethod
    def from_json(cls, obj: Any) -> SubscriptionData:
        obj = as_dict(obj)
        return cls(
            topic=as_str(obj.get("topic")),
            sub_string=as_str(obj.get("subString"), SUB_ALL),
            tags_set={as_str(t) for t in as_list(obj.get("tagsSet"))},
            code_set={as_int(c) for c in as_list(obj.get("codeSet"))},
            sub_version=as_int(obj.get("subVersion")),
            expression_type=as_str(obj.get("expressionType"), "TAG") or "TAG",
            class_filter_mode=as_bool(obj.get("classFilterMode")),
        )


@dataclass(slots=True)
class ConsumerData(RemotingBody):
    group_name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscription_data_set: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeFromWhere": self.consume_from_where,
            "consumeType": self.consume_type,
            "groupName": self.group_name,
            "messageModel": self.message_model,
            "subscriptionDataSet": [s.to_json() for s in self.subscription_data_set],
            "unitMode": self.unit_mode,
        }

    @classmethod
    def from_json(cls, obj: Any) -> ConsumerData:
        obj = as_dict(obj)
        return cls(
            group_name=as_str(obj.get("groupName")),
            consume_type=as_str(obj.get("consumeType"), "CONSUME_PASSIVELY"),
            message_model=as_str(obj.get("messageModel"), "CLUSTERING"),
            consume_from_where=as_str(obj.get("consumeFromWhere"), "CONSUME_FROM_LAST_OFFSET"),
            subscription_data_set=[
                SubscriptionData.from_json(s) for s in as_list(obj.get("subscriptionDataSet"))
            ],
            unit_mode=as_bool(obj.get("unitMode")),
        )


@dataclass(slots=True)
class ProducerData(RemotingBody):
    group_name: str

    def to_json(self) -> dict[str, Any]:
        return {"groupName": self.group_name}

    @classmethod
    def from_json(cls, obj: Any) -> ProducerData:
        return cls(as_str(as_dict(obj).get("groupName")))


@dataclass(slots=True)
class HeartbeatData(RemotingBody):
    """HEART_BEAT (34) body."""

    client_id: str
    producer_data_set: list[ProducerData] = field(default_factory=list)
    consumer_data_set: list[ConsumerData] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "clientID": self.client_id,
            "consumerDataSet": [c.to_json() for c in self.consumer_data_set],
            "producerDataSet": [p.to_json() for p in self.producer_data_set],
        }

    @classmethod
    def from_json(cls, obj: Any) -> HeartbeatData:
        obj = as_dict(obj)
        return cls(
            as_str(obj.get("clientID")),
            [ProducerData.from_json(p) for p in as_list(obj.get("producerDataSet"))],
            [ConsumerData.from_json(c) for c in as_list(obj.get("consumerDataSet"))],
        )


@dataclass(slots=True)
class GetConsumerListByGroupResponseBody(RemotingBody):
    consumer_id_list: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"consumerIdList": list(self.consumer_id_list)}

    @classmethod
    def from_json(cls, obj: Any) -> GetConsumerListByGroupResponseBody:
        return cls([as_str(c) for c in as_list(as_dict(obj).get("consumerIdList"))])


@dataclass(slots=True)
class LockBatchRequestBody(RemotingBody):
    """LOCK_BATCH_MQ (41) body."""

    consumer_group: str
    client_id: str
    mq_set: set[MessageQueue] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        return {
            "clientId": self.client_id,
            "consumerGroup": self.consumer_group,
            "mqSet": [mq.to_json() for mq in sorted(self.mq_set)],
        }

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        obj = as_dict(obj)
        return cls(
            as_str(obj.get("consumerGroup")),
            as_str(obj.get("clientId")),
            set(mq_list(as_list(obj.get("mqSet")))),
        )


@dataclass(slots=True)
class UnlockBatchRequestBody(LockBatchRequestBody):
    """UNLOCK_BATCH_MQ (42) body: the same shape as the lock request."""


@dataclass(slots=True)
class LockBatchResponseBody(RemotingBody):
    lock_ok_mq_set: set[MessageQueue] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        return {"lockOKMQSet": [mq.to_json() for mq in sorted(self.lock_ok_mq_set)]}

    @classmethod
    def from_json(cls, obj: Any) -> LockBatchResponseBody:
        return cls(set(mq_list(as_list(as_dict(obj).get("lockOKMQSet")))))


@dataclass(slots=True)
class CheckClientRequestBody(RemotingBody):
    """CHECK_CLIENT_CONFIG (46) body."""

    client_id: str
    group: str
    subscription_data: SubscriptionData

    def to_json(self) -> dict[str, Any]:
        return {
            "clientId": self.client_id,
            "group": self.group,
            "subscriptionData": self.subscription_data.to_json(),
        }

    @classmethod
    def from_json(cls, obj: Any) -> CheckClientRequestBody:
        obj = as_dict(obj)
        return cls(
            as_str(obj.get("clientId")),
            as_str(obj.get("group")),
            SubscriptionData.from_json(obj.get("subscriptionData")),
        )


@dataclass(slots=True)
class Connection(RemotingBody):
    """One client channel as admin tools list it."""

    client_id: str
    client_addr: str
    language: str = "JAVA"
    version: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "clientAddr": self.client_addr,
            "clientId": self.client_id,
            "language": self.language,
            "version": self.version,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Connection:
        obj = as_dict(obj)
        return cls(
            as_str(obj.get("clientId")),
            as_str(obj.get("clientAddr")),
            as_str(obj.get("language"), "JAVA"),
            as_int(obj.get("version")),
        )


@dataclass(slots=True)
class ConsumerConnection(RemotingBody):
    """GET_CONSUMER_CONNECTION_LIST (203) answer."""

    connection_set: list[Connection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"connectionSet": [c.to_json() for c in self.connection_set]}
        if self.consume_from_where is not None:
            out["consumeFromWhere"] = self.consume_from_where
        if self.consume_type is not None:
            out["consumeType"] = self.consume_type
        if self.message_model is not None:
            out["messageModel"] = self.message_model
        out["subscriptionTable"] = {k: v.to_json() for k, v in self.subscription_table.items()}
        return out

    @classmethod
    def from_json(cls, obj: Any) -> ConsumerConnection:
        obj = as_dict(obj)

        def opt(key: str) -> str | None:
            value = obj.get(key)
            return None if value is None else as_str(value)

        return cls(
            [Connection.from_json(c) for c in as_list(obj.get("connectionSet"))],
            {
                str(k): SubscriptionData.from_json(v)
                for k, v in as_dict(obj.get("subscriptionTable")).items()
            },
            opt("consumeType"),
            opt("messageModel"),
            opt("consumeFromWhere"),
        )


@dataclass(slots=True)
class ProducerConnection(RemotingBody):
    """GET_PRODUCER_CONNECTION_LIST (204) answer."""

    connection_set: list[Connection] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"connectionSet": [c.to_json() for c in self.connection_set]}

    @classmethod
    def from_json(cls, obj: Any) -> ProducerConnection:
        return cls([Connection.from_json(c) for c in as_list(as_dict(obj).get("connectionSet"))])


@dataclass(slots=True)
class GroupList(RemotingBody):
    """QUERY_TOPIC_CONSUME_BY_WHO (300) answer."""

    group_list: set[str] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        return {"groupList": sorted(self.group_list)}

    @classmethod
    def from_json(cls, obj: Any) -> GroupList:
        return cls({as_str(g) for g in as_list(as_dict(obj).get("groupList"))})

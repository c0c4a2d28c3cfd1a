"""Custom headers of queries and admin/tooling requests (spec §9.3, §9.4)."""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.protocol.headers.base import CommandHeader, JavaInt, wire

__all__ = [
    "CloneGroupOffsetRequestHeader",
    "ConsumeMessageDirectlyResultRequestHeader",
    "CreateTopicRequestHeader",
    "DeleteSubscriptionGroupRequestHeader",
    "DeleteTopicRequestHeader",
    "GetBrokerConfigResponseHeader",
    "GetConsumeStatsRequestHeader",
    "GetConsumerConnectionListRequestHeader",
    "GetConsumerRunningInfoRequestHeader",
    "GetConsumerStatusRequestHeader",
    "GetProducerConnectionListRequestHeader",
    "GetTopicStatsInfoRequestHeader",
    "QueryConsumeQueueRequestHeader",
    "QueryConsumeTimeSpanRequestHeader",
    "QueryCorrectionOffsetHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
    "QueryTopicConsumeByWhoRequestHeader",
    "ResetOffsetRequestHeader",
    "ViewBrokerStatsDataRequestHeader",
    "ViewMessageRequestHeader",
]


@dataclass(frozen=True, slots=True)
class QueryMessageRequestHeader(CommandHeader):
    """QUERY_MESSAGE (12); ``unique_key_query`` forces maxNum to 32 on the broker."""

    topic: str
    key: str
    max_num: JavaInt
    begin_timestamp: int
    end_timestamp: int
    unique_key_query: bool | None = wire("_UNIQUE_KEY_QUERY", None)


@dataclass(frozen=True, slots=True)
class QueryMessageResponseHeader(CommandHeader):
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


@dataclass(frozen=True, slots=True)
class ViewMessageRequestHeader(CommandHeader):
    """VIEW_MESSAGE_BY_ID (33): ``offset`` is a commit-log offset."""

    offset: int


@dataclass(frozen=True, slots=True)
class CreateTopicRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_TOPIC (17)."""

    topic: str
    default_topic: str
    read_queue_nums: JavaInt
    write_queue_nums: JavaInt
    perm: JavaInt
    topic_filter_type: str
    order: bool = False
    topic_sys_flag: JavaInt | None = None


@dataclass(frozen=True, slots=True)
class DeleteTopicRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_BROKER (215)."""

    topic: str


@dataclass(frozen=True, slots=True)
class GetTopicStatsInfoRequestHeader(CommandHeader):
    topic: str


@dataclass(frozen=True, slots=True)
class GetConsumeStatsRequestHeader(CommandHeader):
    """GET_CONSUME_STATS (208); blank ``topic`` = every topic the group has offsets for."""

    consumer_group: str
    topic: str | None = None


@dataclass(frozen=True, slots=True)
class QueryTopicConsumeByWhoRequestHeader(CommandHeader):
    topic: str


@dataclass(frozen=True, slots=True)
class GetConsumerConnectionListRequestHeader(CommandHeader):
    consumer_group: str


@dataclass(frozen=True, slots=True)
class GetProducerConnectionListRequestHeader(CommandHeader):
    producer_group: str


@dataclass(frozen=True, slots=True)
class ResetOffsetRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220);
    ``timestamp`` -1 means "to the max offset"."""

    topic: str
    group: str
    timestamp: int
    is_force: bool


@dataclass(frozen=True, slots=True)
class GetConsumerStatusRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) / GET_CONSUMER_STATUS_FROM_CLIENT (221)."""

    topic: str
    group: str
    client_addr: str | None = None


@dataclass(frozen=True, slots=True)
class GetConsumerRunningInfoRequestHeader(CommandHeader):
    """GET_CONSUMER_RUNNING_INFO (307), forwarded by the broker to the client."""

    consumer_group: str
    client_id: str
    jstack_enable: bool = False


@dataclass(frozen=True, slots=True)
class ConsumeMessageDirectlyResultRequestHeader(CommandHeader):
    """CONSUME_MESSAGE_DIRECTLY (309)."""

    consumer_group: str
    client_id: str | None = None
    msg_id: str | None = None
    broker_name: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    """DELETE_SUBSCRIPTIONGROUP (207)."""

    group_name: str
    remove_offset: bool = False


@dataclass(frozen=True, slots=True)
class GetBrokerConfigResponseHeader(CommandHeader):
    """GET_BROKER_CONFIG (26) answer; ``version`` is the config's DataVersion as JSON."""

    version: str


@dataclass(frozen=True, slots=True)
class QueryConsumeTimeSpanRequestHeader(CommandHeader):
    topic: str
    group: str


@dataclass(frozen=True, slots=True)
class QueryCorrectionOffsetHeader(CommandHeader):
    """QUERY_CORRECTION_OFFSET (308); ``filter_groups`` is comma-separated."""

    compare_group: str
    topic: str
    filter_groups: str | None = None


@dataclass(frozen=True, slots=True)
class CloneGroupOffsetRequestHeader(CommandHeader):
    """CLONE_GROUP_OFFSET (314)."""

    src_group: str
    dest_group: str
    topic: str | None = None
    offline: bool = False


@dataclass(frozen=True, slots=True)
class QueryConsumeQueueRequestHeader(CommandHeader):
    """QUERY_CONSUME_QUEUE (321)."""

    topic: str
    queue_id: JavaInt
    index: int
    count: JavaInt
    consumer_group: str | None = None


@dataclass(frozen=True, slots=True)
class ViewBrokerStatsDataRequestHeader(CommandHeader):
    """VIEW_BROKER_STATS_DATA (315)."""

    stats_name: str
    stats_key: str

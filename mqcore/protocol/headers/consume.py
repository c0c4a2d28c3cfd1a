"""Custom headers of consuming: pull, offsets, client management (spec §8)."""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.protocol.headers.base import CommandHeader, JavaInt, wire

__all__ = [
    "ConsumerSendMsgBackRequestHeader",
    "GetConsumerListByGroupRequestHeader",
    "GetEarliestMsgStoretimeRequestHeader",
    "GetEarliestMsgStoretimeResponseHeader",
    "GetMaxOffsetRequestHeader",
    "GetMaxOffsetResponseHeader",
    "GetMinOffsetRequestHeader",
    "GetMinOffsetResponseHeader",
    "NotifyConsumerIdsChangedRequestHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "PullSysFlag",
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "SearchOffsetRequestHeader",
    "SearchOffsetResponseHeader",
    "UnregisterClientRequestHeader",
    "UpdateConsumerOffsetRequestHeader",
]


class PullSysFlag:
    """Bits of PULL_MESSAGE's ``sysFlag``."""

    COMMIT_OFFSET = 0x1
    SUSPEND = 0x2
    SUBSCRIPTION = 0x4
    CLASS_FILTER = 0x8
    LITE_PULL = 0x10


@dataclass(frozen=True, slots=True)
class PullMessageRequestHeader(CommandHeader):
    """PULL_MESSAGE (11); ``sys_flag`` bits are :class:`PullSysFlag`."""

    consumer_group: str
    topic: str
    queue_id: JavaInt
    queue_offset: int
    max_msg_nums: JavaInt
    sys_flag: JavaInt
    commit_offset: int
    suspend_timeout_millis: int
    sub_version: int
    subscription: str | None = None
    expression_type: str | None = None
    bname: str | None = None


@dataclass(frozen=True, slots=True)
class PullMessageResponseHeader(CommandHeader):
    """All four fields are always sent: ali-ons calls ``toString()`` on min/max."""

    suggest_which_broker_id: int
    next_begin_offset: int
    min_offset: int
    max_offset: int


@dataclass(frozen=True, slots=True)
class QueryConsumerOffsetRequestHeader(CommandHeader):
    consumer_group: str
    topic: str
    queue_id: JavaInt
    bname: str | None = None


@dataclass(frozen=True, slots=True)
class QueryConsumerOffsetResponseHeader(CommandHeader):
    offset: int


@dataclass(frozen=True, slots=True)
class UpdateConsumerOffsetRequestHeader(CommandHeader):
    """UPDATE_CONSUMER_OFFSET (15), usually oneway; negative offsets are legal (ali-ons)."""

    consumer_group: str
    topic: str
    queue_id: JavaInt
    commit_offset: int
    bname: str | None = None


@dataclass(frozen=True, slots=True)
class UnregisterClientRequestHeader(CommandHeader):
    """UNREGISTER_CLIENT (35); note the capital ``ID`` in ``clientID``."""

    client_id: str = wire("clientID")
    producer_group: str | None = None
    consumer_group: str | None = None


@dataclass(frozen=True, slots=True)
class GetConsumerListByGroupRequestHeader(CommandHeader):
    consumer_group: str


@dataclass(frozen=True, slots=True)
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    """NOTIFY_CONSUMER_IDS_CHANGED (40), broker to consumer, oneway."""

    consumer_group: str


@dataclass(frozen=True, slots=True)
class ConsumerSendMsgBackRequestHeader(CommandHeader):
    """CONSUMER_SEND_MSG_BACK (36); ``offset`` is the commit-log offset of the message."""

    offset: int
    group: str
    delay_level: JavaInt
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: JavaInt | None = None
    bname: str | None = None


@dataclass(frozen=True, slots=True)
class GetMaxOffsetRequestHeader(CommandHeader):
    topic: str
    queue_id: JavaInt
    bname: str | None = None


@dataclass(frozen=True, slots=True)
class GetMaxOffsetResponseHeader(CommandHeader):
    offset: int


@dataclass(frozen=True, slots=True)
class GetMinOffsetRequestHeader(CommandHeader):
    topic: str
    queue_id: JavaInt
    bname: str | None = None


@dataclass(frozen=True, slots=True)
class GetMinOffsetResponseHeader(CommandHeader):
    offset: int


@dataclass(frozen=True, slots=True)
class SearchOffsetRequestHeader(CommandHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP (29); ``timestamp`` in ms."""

    topic: str
    queue_id: JavaInt
    timestamp: int
    bname: str | None = None


@dataclass(frozen=True, slots=True)
class SearchOffsetResponseHeader(CommandHeader):
    offset: int


@dataclass(frozen=True, slots=True)
class GetEarliestMsgStoretimeRequestHeader(CommandHeader):
    topic: str
    queue_id: JavaInt
    bname: str | None = None


@dataclass(frozen=True, slots=True)
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    timestamp: int

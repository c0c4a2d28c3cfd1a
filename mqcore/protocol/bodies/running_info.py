"""GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309) answers: what a
consumer says about itself when an admin asks through the broker (mqadmin consumerStatus,
queryMsgById -g -d, the dashboard's client view and resend).

``ConsumerRunningInfo`` is 4.9.8's: the consumer's properties (its settings and the
``PROP_*`` keys mqadmin reads: the start timestamp must be there, mqadmin parses it), its
subscriptions, one ``ProcessQueueInfo`` per queue it holds (what is cached, locks, when
it last pulled and consumed), one ``ConsumeStatus`` per topic (pull and consume rates and
times over the last minute, failures over the last hour) and, when asked, ``jstack``: the
client's stacks as text. MessageQueue map keys are written as JSON-in-a-string, which
fastjson reads back as MessageQueues (spec §10.3), and read in either form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqcore.protocol.bodies.base import (
    MessageQueue,
    RemotingBody,
    as_bool,
    as_dict,
    as_float,
    as_int,
    as_list,
    as_str,
    mq_key,
    mq_key_text,
)
from mqcore.protocol.bodies.client import SubscriptionData

__all__ = [
    "PROP_CLIENT_VERSION",
    "PROP_CONSUMER_START_TIMESTAMP",
    "PROP_CONSUME_ORDERLY",
    "PROP_CONSUME_TYPE",
    "PROP_NAMESERVER_ADDR",
    "PROP_THREADPOOL_CORE_SIZE",
    "ConsumeMessageDirectlyResult",
    "ConsumeStatus",
    "ConsumerRunningInfo",
    "ProcessQueueInfo",
]

PROP_NAMESERVER_ADDR = "PROP_NAMESERVER_ADDR"
PROP_THREADPOOL_CORE_SIZE = "PROP_THREADPOOL_CORE_SIZE"
PROP_CONSUME_ORDERLY = "PROP_CONSUMEORDERLY"  # sic: 4.9.8's spelling
PROP_CONSUME_TYPE = "PROP_CONSUME_TYPE"
PROP_CLIENT_VERSION = "PROP_CLIENT_VERSION"
PROP_CONSUMER_START_TIMESTAMP = "PROP_CONSUMER_START_TIMESTAMP"


@dataclass(slots=True)
class ProcessQueueInfo(RemotingBody):
    """One held queue: the offset to commit, what is cached (offsets, count, MiB), the
    orderly lock and the wall-clock milliseconds of the last lock, pull and consume."""

    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_in_mib: int = 0
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    dropped: bool = False
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "cachedMsgCount": self.cached_msg_count,
            "cachedMsgMaxOffset": self.cached_msg_max_offset,
            "cachedMsgMinOffset": self.cached_msg_min_offset,
            "cachedMsgSizeInMiB": self.cached_msg_size_in_mib,
            "commitOffset": self.commit_offset,
            "droped": self.dropped,  # sic: 4.9.8's field name
            "lastConsumeTimestamp": self.last_consume_timestamp,
            "lastLockTimestamp": self.last_lock_timestamp,
            "lastPullTimestamp": self.last_pull_timestamp,
            "locked": self.locked,
            "transactionMsgCount": self.transaction_msg_count,
            "transactionMsgMaxOffset": self.transaction_msg_max_offset,
            "transactionMsgMinOffset": self.transaction_msg_min_offset,
            "tryUnlockTimes": self.try_unlock_times,
        }

    @classmethod
    def from_json(cls, obj: Any) -> ProcessQueueInfo:
        obj = as_dict(obj)
        return cls(
            commit_offset=as_int(obj.get("commitOffset")),
            cached_msg_min_offset=as_int(obj.get("cachedMsgMinOffset")),
            cached_msg_max_offset=as_int(obj.get("cachedMsgMaxOffset")),
            cached_msg_count=as_int(obj.get("cachedMsgCount")),
            cached_msg_size_in_mib=as_int(obj.get("cachedMsgSizeInMiB")),
            transaction_msg_min_offset=as_int(obj.get("transactionMsgMinOffset")),
            transaction_msg_max_offset=as_int(obj.get("transactionMsgMaxOffset")),
            transaction_msg_count=as_int(obj.get("transactionMsgCount")),
            locked=as_bool(obj.get("locked")),
            try_unlock_times=as_int(obj.get("tryUnlockTimes")),
            last_lock_timestamp=as_int(obj.get("lastLockTimestamp")),
            dropped=as_bool(obj.get("droped", obj.get("dropped"))),
            last_pull_timestamp=as_int(obj.get("lastPullTimestamp")),
            last_consume_timestamp=as_int(obj.get("lastConsumeTimestamp")),
        )


@dataclass(slots=True)
class ConsumeStatus(RemotingBody):
    """One topic's figures (4.9.8's ConsumeStatus, not a listener's answer): pull and
    consume round trips in ms and per-second rates over the last minute, and the messages
    that failed in the last hour."""

    pull_rt: float = 0.0
    pull_tps: float = 0.0
    consume_rt: float = 0.0
    consume_ok_tps: float = 0.0
    consume_failed_tps: float = 0.0
    consume_failed_msgs: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeFailedMsgs": self.consume_failed_msgs,
            "consumeFailedTPS": self.consume_failed_tps,
            "consumeOKTPS": self.consume_ok_tps,
            "consumeRT": self.consume_rt,
            "pullRT": self.pull_rt,
            "pullTPS": self.pull_tps,
        }

    @classmethod
    def from_json(cls, obj: Any) -> ConsumeStatus:
        obj = as_dict(obj)
        return cls(
            pull_rt=as_float(obj.get("pullRT")),
            pull_tps=as_float(obj.get("pullTPS")),
            consume_rt=as_float(obj.get("consumeRT")),
            consume_ok_tps=as_float(obj.get("consumeOKTPS")),
            consume_failed_tps=as_float(obj.get("consumeFailedTPS")),
            consume_failed_msgs=as_int(obj.get("consumeFailedMsgs")),
        )


@dataclass(slots=True)
class ConsumerRunningInfo(RemotingBody):
    """A consumer's own account of itself (see the module docstring)."""

    properties: dict[str, str] = field(default_factory=dict)
    subscription_set: list[SubscriptionData] = field(default_factory=list)
    mq_table: dict[MessageQueue, ProcessQueueInfo] = field(default_factory=dict)
    status_table: dict[str, ConsumeStatus] = field(default_factory=dict)
    jstack: str | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "mqTable": {mq_key_text(k): v.to_json() for k, v in sorted(self.mq_table.items())},
            "properties": dict(sorted(self.properties.items())),
            "statusTable": {k: v.to_json() for k, v in sorted(self.status_table.items())},
            "subscriptionSet": [
                s.to_json() for s in sorted(self.subscription_set, key=lambda s: s.topic)
            ],
        }
        if self.jstack is not None:
            doc["jstack"] = self.jstack
        return doc

    @classmethod
    def from_json(cls, obj: Any) -> ConsumerRunningInfo:
        obj = as_dict(obj)
        jstack = obj.get("jstack")
        return cls(
            properties={str(k): as_str(v) for k, v in as_dict(obj.get("properties")).items()},
            subscription_set=[
                SubscriptionData.from_json(s) for s in as_list(obj.get("subscriptionSet"))
            ],
            mq_table={
                mq_key(k): ProcessQueueInfo.from_json(v)
                for k, v in as_dict(obj.get("mqTable")).items()
            },
            status_table={
                str(k): ConsumeStatus.from_json(v)
                for k, v in as_dict(obj.get("statusTable")).items()
            },
            jstack=None if jstack is None else as_str(jstack),
        )


@dataclass(slots=True)
class ConsumeMessageDirectlyResult(RemotingBody):
    """How a consumer consumed the message an admin handed it: ``consume_result`` is
    CR_SUCCESS, CR_LATER, CR_ROLLBACK, CR_COMMIT, CR_THROW_EXCEPTION or CR_RETURN_NULL."""

    consume_result: str = ""
    spent_time_mills: int = 0
    order: bool = False
    auto_commit: bool = True
    remark: str | None = None

    @property
    def ok(self) -> bool:
        return self.consume_result in ("CR_SUCCESS", "CR_COMMIT")

    def to_json(self) -> dict[str, Any]:
        return {
            "autoCommit": self.auto_commit,
            "consumeResult": self.consume_result,
            "order": self.order,
            "remark": self.remark,
            "spentTimeMills": self.spent_time_mills,
        }

    @classmethod
    def from_json(cls, obj: Any) -> ConsumeMessageDirectlyResult:
        obj = as_dict(obj)
        remark = obj.get("remark")
        return cls(
            consume_result=as_str(obj.get("consumeResult")),
            spent_time_mills=as_int(obj.get("spentTimeMills")),
            order=as_bool(obj.get("order")),
            auto_commit=as_bool(obj.get("autoCommit"), True),
            remark=None if remark is None else as_str(remark),
        )

"""A message's track per consumer group, as mqadmin ``queryMsgById`` prints it.

4.9.8's ``DefaultMQAdminExtImpl.messageTrackDetail``: for every group the brokers know
to consume the message's topic (QUERY_TOPIC_CONSUME_BY_WHO), the group's connections
decide: none online is ``NOT_ONLINE``; a pull consumer (``CONSUME_ACTIVELY``) keeps its
own position, so ``PULL``; a push consumer has ``CONSUMED`` the message when its
committed offset on the message's queue (at the master that stored it) is past the
message's queue offset, ``CONSUMED_BUT_FILTERED`` when its subscription's tags exclude
it, and ``NOT_CONSUME_YET`` otherwise. Any other failure is ``UNKNOWN`` with the reason.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from mqcore.client.admin import Admin
from mqcore.errors import MQBrokerError, MQError
from mqcore.message import MessageExt
from mqcore.protocol import ResponseCode
from mqcore.protocol.bodies.client import ConsumerConnection

__all__ = ["MessageTrack", "TrackType", "message_track_detail"]


class TrackType(enum.Enum):
    CONSUMED = "CONSUMED"
    CONSUMED_BUT_FILTERED = "CONSUMED_BUT_FILTERED"
    PULL = "PULL"
    NOT_CONSUME_YET = "NOT_CONSUME_YET"
    NOT_ONLINE = "NOT_ONLINE"
    UNKNOWN = "UNKNOWN"


@dataclass(slots=True)
class MessageTrack:
    consumer_group: str
    track_type: TrackType
    exception_desc: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "consumerGroup": self.consumer_group,
            "trackType": self.track_type.value,
            "exceptionDesc": self.exception_desc,
        }


def _broker_error(group: str, exc: MQBrokerError) -> MessageTrack:
    kind = TrackType.NOT_ONLINE if exc.code == ResponseCode.CONSUMER_NOT_ONLINE else None
    return MessageTrack(group, kind or TrackType.UNKNOWN, f"CODE:{exc.code} DESC:{exc.remark}")


async def consumed(admin: Admin, msg: MessageExt, group: str) -> bool:
    """``consumed``: the group's offset on the message's queue at its master is past it."""
    progress = await admin.consume_progress(group, msg.topic)
    masters = {
        name: data.master_addr()
        for name, data in (await admin.cluster_info()).broker_addr_table.items()
    }
    store_host = f"{msg.store_host[0]}:{msg.store_host[1]}"
    return any(
        row.mq.topic == msg.topic
        and row.mq.queue_id == msg.queue_id
        and masters.get(row.mq.broker_name) == store_host
        and row.consumer_offset > msg.queue_offset
        for row in progress
    )


def _filtered(conn: ConsumerConnection, msg: MessageExt) -> bool:
    sub = conn.subscription_table.get(msg.topic)
    if sub is None or not sub.tags_set or "*" in sub.tags_set:
        return False
    return msg.tags not in sub.tags_set


async def group_track(admin: Admin, msg: MessageExt, group: str) -> MessageTrack:
    try:
        conn = await admin.consumer_connections(group)
    except MQBrokerError as exc:
        return _broker_error(group, exc)
    except MQError as exc:
        return MessageTrack(group, TrackType.UNKNOWN, str(exc))
    if conn.consume_type == "CONSUME_ACTIVELY":
        return MessageTrack(group, TrackType.PULL)
    if conn.consume_type != "CONSUME_PASSIVELY":
        return MessageTrack(group, TrackType.UNKNOWN)
    try:
        done = await consumed(admin, msg, group)
    except MQBrokerError as exc:
        return _broker_error(group, exc)
    except MQError as exc:
        return MessageTrack(group, TrackType.UNKNOWN, str(exc))
    if not done:
        return MessageTrack(group, TrackType.NOT_CONSUME_YET)
    if _filtered(conn, msg):
        return MessageTrack(group, TrackType.CONSUMED_BUT_FILTERED)
    return MessageTrack(group, TrackType.CONSUMED)


async def message_track_detail(admin: Admin, msg: MessageExt) -> list[MessageTrack]:
    """One track per group that consumes ``msg``'s topic, by group name."""
    groups = await admin.groups_of_topic(msg.topic)
    return [await group_track(admin, msg, g) for g in sorted(groups)]

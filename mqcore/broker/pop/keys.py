"""RocketMQ 5's POP names (``PopAckConstants``, ``KeyBuilder``): the revive topic and its
consumer group, the tags of its records, their unique keys."""

from __future__ import annotations

from typing import Final

from mqcore.message.const import SYSTEM_TOPIC_PREFIX
from mqcore.protocol.bodies.pop import AckMsg, BatchAckMsg, PopCheckPoint

__all__ = [
    "ACK_TAG",
    "ACK_TIME_INTERVAL",
    "BATCH_ACK_TAG",
    "CK_TAG",
    "PROPERTY_TIMER_DELIVER_MS",
    "RETRY_QUEUE_NUM",
    "REVIVE_GROUP",
    "REVIVE_TOPIC_PREFIX",
    "SPLIT",
    "ack_unique_id",
    "batch_ack_unique_id",
    "ck_unique_id",
    "polling_key",
    "revive_topic",
]

REVIVE_TOPIC_PREFIX: Final = f"{SYSTEM_TOPIC_PREFIX}REVIVE_LOG_"
REVIVE_GROUP: Final = "CID_RMQ_SYS_REVIVE_GROUP"
"""The group whose offsets in the revive topic say how far the revive service got."""
CK_TAG: Final = "ck"
ACK_TAG: Final = "ack"
BATCH_ACK_TAG: Final = "bAck"
SPLIT: Final = "@"
ACK_TIME_INTERVAL: Final = 1000
"""A checkpoint's record is due this long (ms) before its messages' revive time (5.x)."""
RETRY_QUEUE_NUM: Final = 1
"""Queues of a pop retry topic (``PopAckConstants.retryQueueNum``)."""
PROPERTY_TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
"""5.x's deliver time of a revive record (what its timer wheel would wait for)."""


def revive_topic(cluster: str) -> str:
    """``rmq_sys_REVIVE_LOG_{brokerClusterName}``."""
    return REVIVE_TOPIC_PREFIX + cluster


def polling_key(topic: str, group: str, queue_id: int) -> str:
    """``topic@group@queueId``: one queue of one POP group."""
    return f"{topic}{SPLIT}{group}{SPLIT}{queue_id}"


def ck_unique_id(ck: PopCheckPoint) -> str:
    return SPLIT.join(
        (
            ck.topic,
            str(ck.queue_id),
            str(ck.start_offset),
            ck.cid,
            str(ck.pop_time),
            str(ck.broker_name),
            CK_TAG,
        )
    )


def ack_unique_id(ack: AckMsg) -> str:
    return SPLIT.join(
        (
            ack.topic,
            str(ack.queue_id),
            str(ack.ack_offset),
            ack.consumer_group,
            str(ack.pop_time),
            str(ack.broker_name),
            ACK_TAG,
        )
    )


def batch_ack_unique_id(ack: BatchAckMsg) -> str:
    offsets = "[" + ", ".join(map(str, ack.ack_offset_list)) + "]"  # Java's List.toString
    return SPLIT.join(
        (
            ack.topic,
            str(ack.queue_id),
            offsets,
            ack.consumer_group,
            str(ack.pop_time),
            BATCH_ACK_TAG,
        )
    )

"""Recalling a timer message (RocketMQ 5's ``RecallMessageHandle`` and the message
``RecallMessageProcessor`` puts).

A send that parks a timer message is answered with a recall handle: URL-safe base64 of
``"v1 <topic> <brokerName> <TIMER_OUT_MS + 1> <UNIQ_KEY>"``. Recalling puts a delete
marker: a message to the same topic whose ``TIMER_DEL_UNIQKEY`` is ``<topic>+<UNIQ_KEY>``
and whose ``TIMER_DELIVER_MS`` is the handle's time, so the send's timer rewrite parks it
in the same slot, where the wheel drops the recalled message (the gRPC RecallMessage
builds on the same marker).
"""

from __future__ import annotations

import base64
import binascii
import time
from dataclasses import dataclass

from mqcore.message.const import (
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TAGS,
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TIMER_OUT_MS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    RETRY_GROUP_TOPIC_PREFIX,
    TIMER_TOPIC,
)
from mqcore.message.model import HostAddr, MessageExt
from mqcore.store.timer import build_delete_key

__all__ = ["RECALL_MESSAGE_TAG", "RecallHandle", "recall_handle_of", "recall_marker"]

RECALL_MESSAGE_TAG = "_RECALL_TAG_"
_VERSION_1 = "v1"


@dataclass(frozen=True, slots=True)
class RecallHandle:
    """A v1 handle's parts (``timestamp`` as the text it carries)."""

    topic: str
    broker_name: str
    timestamp: str
    message_id: str

    def encode(self) -> str:
        raw = " ".join((_VERSION_1, self.topic, self.broker_name, self.timestamp, self.message_id))
        return base64.urlsafe_b64encode(raw.encode()).decode()

    @classmethod
    def decode(cls, handle: str) -> RecallHandle:
        """Raises ValueError ("recall handle is invalid", as 5.x) for anything else."""
        try:
            raw = base64.urlsafe_b64decode(handle.encode()).decode()
        except (binascii.Error, UnicodeError, ValueError):
            raise ValueError("recall handle is invalid") from None
        items = raw.split(" ")
        if not handle or items[0] != _VERSION_1 or len(items) < 5:
            raise ValueError("recall handle is invalid")
        return cls(items[1], items[2], items[3], items[4])


def recall_handle_of(stored: MessageExt, broker_name: str) -> str | None:
    """``attachRecallHandle``: the handle for a message the send parked in the timer
    topic (None for any other, and for retry topics)."""
    if stored.topic != TIMER_TOPIC:
        return None
    props = stored.properties
    out_ms = props.get(PROPERTY_TIMER_OUT_MS)
    real_topic = props.get(PROPERTY_REAL_TOPIC)
    uniq = props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    if out_ms is None or real_topic is None or uniq is None:
        return None
    if real_topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return None
    try:
        stamp = str(int(out_ms) + 1)  # "consider of floor": a time inside the same tick
    except ValueError:
        return None
    return RecallHandle(real_topic, broker_name, stamp, uniq).encode()


def recall_marker(
    handle: RecallHandle,
    *,
    producer_group: str | None,
    born_host: HostAddr,
    store_host: HostAddr,
) -> MessageExt:
    """The delete marker 5.x's RecallMessageProcessor builds (before the timer rewrite)."""
    now = int(time.time() * 1000)
    props = {
        PROPERTY_TAGS: RECALL_MESSAGE_TAG,
        PROPERTY_TIMER_DEL_UNIQKEY: build_delete_key(handle.topic, handle.message_id),
        PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: handle.message_id,
        PROPERTY_TIMER_DELIVER_MS: handle.timestamp,
        "BORN_TIMESTAMP": str(now),
    }
    if producer_group:
        props[PROPERTY_PRODUCER_GROUP] = producer_group
    return MessageExt(
        topic=handle.topic,
        body=b"0",
        properties=props,
        queue_id=0,
        born_timestamp=now,
        born_host=born_host,
        store_host=store_host,
    )

"""The transaction service's view of the store (RocketMQ's ``TransactionalMessageBridge``).

Half messages live in ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0, op messages (tag ``d``, body
= the ended half message's queue offset in ASCII) in ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` queue
0, and how far the check service got in each is a consumer offset of the system group
``CID_RMQ_SYS_TRANS`` in ``consumerOffset.json``: so everything the service knows
survives a restart (store-format §13).

Records are read with their bodies as stored (maybe compressed): every copy this bridge
writes (check copies, committed and discarded messages) must carry the same bytes and
sysflag as the half message the producer sent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from mqcore.broker.java_order import hash_map_order, rewrite_properties
from mqcore.errors import CorruptRecordError, StoreError
from mqcore.message.const import (
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TAGS,
    PROPERTY_WAIT_STORE_MSG_OK,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    SysFlag,
)
from mqcore.message.model import HostAddr, MessageExt
from mqcore.message.record import decode_record
from mqcore.store.metadata import PERM_READ, PERM_WRITE
from mqcore.store.results import GetStatus, PutResult

if TYPE_CHECKING:
    from mqcore.broker.append import Appender
    from mqcore.broker.topics import TopicService
    from mqcore.store.message_store import MessageStore
    from mqcore.store.metadata import ConsumerOffsetManager

__all__ = [
    "HALF_QUEUE_ID",
    "ORIGIN_OFFSET",
    "REMOVE_TAG",
    "SYS_TRANS_GROUP",
    "TransactionalMessageBridge",
    "render_half",
]

log = logging.getLogger("mq.broker.transaction")

SYS_TRANS_GROUP = "CID_RMQ_SYS_TRANS"
"""The consumer group under which half/op queue progress is stored."""
HALF_QUEUE_ID = 0
REMOVE_TAG = "d"
"""Tag of every op message (``TransactionalMessageUtil.REMOVETAG``)."""
ORIGIN_OFFSET = "MQ_HALF_ORIGIN_OFFSET"
"""Half-queue offset of the half message a check copy descends from. mq's own property:
4.9.8 check copies carry no origin (``TRAN_PREPARED_QUEUE_OFFSET`` only marks immunity
copies), so it is never delivered nor sent in a check request."""
_READ_BATCH = 32


def render_half(msg: MessageExt) -> MessageExt:
    """Park a PREPARED message as a half message, in place (``parseHalfMessageInner``):
    remember the real topic/queue, clear the transaction bits, move it to the half queue;
    the properties as 4.9.8 serializes them again (``WAIT`` kept, ``HashMap`` order)."""
    rewrite_properties(
        msg.properties,
        {PROPERTY_REAL_TOPIC: msg.topic, PROPERTY_REAL_QUEUE_ID: str(msg.queue_id)},
    )
    msg.sys_flag = SysFlag.reset_transaction_value(msg.sys_flag, SysFlag.TRANSACTION_NOT_TYPE)
    msg.topic = RMQ_SYS_TRANS_HALF_TOPIC
    msg.queue_id = HALF_QUEUE_ID
    return msg


def ensure_system_topic(topics: TopicService, topic: str) -> None:
    """System topics are created on first use, one queue, read/write (as RocketMQ)."""
    if topics.select(topic) is None:
        topics.create_in_send_back(topic, 1, PERM_READ | PERM_WRITE)


class TransactionalMessageBridge:
    """Reads and writes of the half, op and discard topics, and their progress offsets."""

    def __init__(
        self,
        store: MessageStore,
        offsets: ConsumerOffsetManager,
        topics: TopicService,
        store_host: Callable[[], HostAddr],
        appender: Appender,
    ) -> None:
        self.store = store
        self.appender = appender
        """Half, op and final messages are appended (and counted) as every put is."""
        self.offsets = offsets
        """Progress of the half and op queues, under ``CID_RMQ_SYS_TRANS``."""
        self.topics = topics
        self.store_host = store_host
        """Born and store host of op messages: ``brokerIP1`` and the real listen port."""

    # -- topics ---------------------------------------------------------------------------
    def ensure_topic(self, topic: str) -> None:
        ensure_system_topic(self.topics, topic)

    # -- reading --------------------------------------------------------------------------
    def look(self, commit_log_offset: int) -> MessageExt | None:
        """The record at a commit log offset, body as stored; None if there is none."""
        if commit_log_offset < 0:
            return None
        try:
            view = self.store.get_message(commit_log_offset)
            return decode_record(view, 0, strict=True, decompress=False)
        except (CorruptRecordError, StoreError, ValueError, IndexError):
            return None

    def read(
        self, topic: str, offset: int, max_count: int = _READ_BATCH
    ) -> tuple[list[MessageExt], int, bool]:
        """Records of ``topic`` queue 0 from ``offset``: (messages, next offset, at end).

        ``at end`` says there is nothing further to read right now; otherwise a short or
        empty list means a hole (records already cleaned up) the caller may skip."""
        result = self.store.get_messages(topic, HALF_QUEUE_ID, offset, max_count)
        messages: list[MessageExt] = []
        for data, qoffset in zip(result.buffers, result.queue_offsets, strict=True):
            try:
                msg = decode_record(data, 0, strict=False, decompress=False)
            except CorruptRecordError:
                log.warning("%s: unreadable record at queue offset %d", topic, qoffset)
                continue
            msg.queue_offset = qoffset
            messages.append(msg)
        at_end = result.status in (
            GetStatus.NO_MATCHED_LOGIC_QUEUE,
            GetStatus.NO_MESSAGE_IN_QUEUE,
            GetStatus.OFFSET_OVERFLOW_ONE,
            GetStatus.OFFSET_OVERFLOW_BADLY,
        )
        next_offset = result.next_begin_offset
        if result.status is GetStatus.OFFSET_TOO_SMALL:
            next_offset = result.min_offset
        return messages, next_offset, at_end

    def max_offset(self, topic: str) -> int:
        return self.store.get_max_offset_in_queue(topic, HALF_QUEUE_ID)

    # -- progress -------------------------------------------------------------------------
    def progress(self, topic: str) -> int:
        """Where the check service continues in ``topic`` (``fetchConsumeOffset``): the
        committed offset, else the queue's minimum (recorded at once)."""
        offset = self.offsets.query(SYS_TRANS_GROUP, topic, HALF_QUEUE_ID)
        if offset is None or offset < 0:
            offset = self.store.get_min_offset_in_queue(topic, HALF_QUEUE_ID)
            self.set_progress(topic, offset)
        return offset

    def set_progress(self, topic: str, offset: int) -> None:
        self.offsets.commit(SYS_TRANS_GROUP, topic, HALF_QUEUE_ID, offset)

    # -- writing --------------------------------------------------------------------------
    def put(self, msg: MessageExt) -> PutResult:
        """Append (the dispatch wakes long polls of the queue)."""
        result = self.appender.put((msg,))
        if not result.ok:
            log.warning("put to %s failed: %s %s", msg.topic, result.status, result.remark)
        return result

    def put_back(self, msg: MessageExt, properties: dict[str, str]) -> PutResult:
        """Append a copy of a half message with ``properties`` (``renewHalfMessageInner``)."""
        self.ensure_topic(RMQ_SYS_TRANS_HALF_TOPIC)
        ordered = hash_map_order(properties)
        return self.put(_copy(msg, RMQ_SYS_TRANS_HALF_TOPIC, HALF_QUEUE_ID, ordered))

    def put_moved(self, msg: MessageExt, topic: str, queue_id: int) -> PutResult:
        """Append a copy of a half message in another topic, properties as stored."""
        self.ensure_topic(topic)
        return self.put(_copy(msg, topic, queue_id, dict(msg.properties)))

    def put_op(self, half: MessageExt) -> bool:
        """Record that ``half`` (at its half-queue offset) is committed or rolled back.

        The op topic gets no topic config (as 4.9.8's ``writeOp``): it is never registered
        with the name servers, so ``topicList`` does not show it."""
        host = self.store_host()
        op = MessageExt(
            topic=RMQ_SYS_TRANS_OP_HALF_TOPIC,
            body=str(half.queue_offset).encode("ascii"),
            properties=hash_map_order(
                {PROPERTY_TAGS: REMOVE_TAG, PROPERTY_WAIT_STORE_MSG_OK: "true"}
            ),
            queue_id=half.queue_id,
            born_timestamp=_now_ms(),
            born_host=host,
            store_host=host,
        )
        return self.put(op).ok


def _copy(msg: MessageExt, topic: str, queue_id: int, properties: dict[str, str]) -> MessageExt:
    """The fields a re-put keeps: body as stored, flags, born and store info."""
    return replace(
        msg,
        topic=topic,
        queue_id=queue_id,
        properties=properties,
        queue_offset=0,
        commit_log_offset=0,
        store_timestamp=0,
        store_size=0,
    )


def _now_ms() -> int:
    return int(time.time() * 1000)

"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320): spec §7.1.

Checks run in RocketMQ's order (``AbstractSendMessageProcessor.msgCheck``): broker
permission, topic name, forbidden system topics, the topic (auto-created from the
template when allowed), queue id; then the ``%RETRY%`` -> ``%DLQ%`` redirect, and the
message is built and appended in one store call, so a refused request writes nothing.
Properties get ``CLUSTER`` and (single sends) lose ``WAIT``, and a missing ``UNIQ_KEY``
is generated, as a 4.9.8 broker does. The answer also carries that ``UNIQ_KEY`` as an
extra ext field ``uniqKey`` so a client that sent none (ali-ons) learns the unique key
(batches: the entries' keys, comma-separated, if they have any, as the broker generates
none for them); Java, ali-ons and our header decoding ignore unknown ext fields (spec §2).

The answer is built without a task switch for ASYNC_FLUSH; under SYNC_FLUSH the
processor returns a coroutine that awaits the group commit covering the message
(FLUSH_DISK_TIMEOUT after ``syncFlushTimeout``; the message is stored either way).
After each append the long polls waiting on that queue are woken.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from mqcore.broker.body_check import compressed_body_problem
from mqcore.broker.send_checks import SendRefused, born_host, msg_check
from mqcore.broker.timer.recall import recall_handle_of
from mqcore.broker.transaction import is_half_message, prepare_half_message
from mqcore.errors import CorruptRecordError
from mqcore.message.const import (
    DLQ_GROUP_TOPIC_PREFIX,
    PROPERTY_CLUSTER,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    PROPERTY_WAIT_STORE_MSG_OK,
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_TRANS_HALF_TOPIC,
    SCHEDULE_TOPIC,
    TIMER_TOPIC,
)
from mqcore.message.ids import create_offset_msg_id, create_uniq_key
from mqcore.message.model import HostAddr, MessageExt
from mqcore.message.properties import parse_properties_text
from mqcore.message.record import decode_batch_body
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import (
    HeaderError,
    SendMessageRequestHeader,
    decode_send_message_header,
)
from mqcore.remoting import Channel, Processor
from mqcore.store.metadata import PERM_READ, PERM_WRITE, TopicConfig
from mqcore.store.results import PutResult, PutStatus

from . import reply

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext

__all__ = ["SendMessageProcessor", "handlers"]

log = logging.getLogger("mq.broker.send")

_V3_4_9 = 121
"""Request version from which the header's maxReconsumeTimes is honoured."""

_PUT_CODES: dict[PutStatus, tuple[int, str | None]] = {
    PutStatus.PUT_OK: (ResponseCode.SUCCESS, None),
    PutStatus.FLUSH_DISK_TIMEOUT: (ResponseCode.FLUSH_DISK_TIMEOUT, None),
    PutStatus.FLUSH_SLAVE_TIMEOUT: (ResponseCode.FLUSH_SLAVE_TIMEOUT, None),
    PutStatus.SLAVE_NOT_AVAILABLE: (ResponseCode.SLAVE_NOT_AVAILABLE, None),
    PutStatus.CREATE_MAPPED_FILE_FAILED: (
        ResponseCode.SYSTEM_ERROR,
        "create mapped file failed, server is busy or broken.",
    ),
    PutStatus.MESSAGE_ILLEGAL: (ResponseCode.MESSAGE_ILLEGAL, None),
    PutStatus.PROPERTIES_SIZE_EXCEEDED: (ResponseCode.MESSAGE_ILLEGAL, None),
    PutStatus.SERVICE_NOT_AVAILABLE: (
        ResponseCode.SERVICE_NOT_AVAILABLE,
        "service not available now. It may be caused by one of the following reasons: "
        "the broker's disk is full, messages are put to the slave, message store has "
        "been shut down, etc.",
    ),
    PutStatus.OS_PAGECACHE_BUSY: (
        ResponseCode.SYSTEM_ERROR,
        "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
    ),
    PutStatus.IN_SYNC_REPLICAS_NOT_ENOUGH: (
        ResponseCode.SYSTEM_ERROR,
        "in-sync replicas not enough",
    ),
    PutStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
}
_STORED = (
    ResponseCode.SUCCESS,
    ResponseCode.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE,
)


class SendMessageProcessor:
    """One instance per broker, registered for the three send codes on both servers."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.config = ctx.config
        self._rng = random.Random()

    @property
    def store_host(self) -> HostAddr:
        return self.ctx.store_host()

    # -- entry ----------------------------------------------------------------------------
    def process(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        try:
            header = decode_send_message_header(request)
        except HeaderError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        try:
            topic_config = self.msg_check(channel, header)
            if header.batch:
                batch = self.build_batch(channel, request, header, topic_config)
                queue_id = batch[0].queue_id
            else:
                msg, queue_id = self.build_message(channel, request, header, topic_config)
                batch = [msg]
        except SendRefused as exc:
            return reply(request, exc.code, exc.remark)
        props = batch[0].properties
        wait = props.get(PROPERTY_WAIT_STORE_MSG_OK) != "false"
        if not header.batch and batch[0].topic not in (SCHEDULE_TOPIC, RMQ_SYS_TRANS_HALF_TOPIC):
            # 4.9.8 saves these 9 bytes; its delay and half rewrites store them again
            props.pop(PROPERTY_WAIT_STORE_MSG_OK, None)
        uniq_key = props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "")
        if header.batch:
            keys = [m.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "") for m in batch]
            uniq_key = ",".join(keys) if any(keys) else ""
        recall = None
        if batch[0].topic == TIMER_TOPIC and not header.batch:  # 5.x's attachRecallHandle
            recall = recall_handle_of(batch[0], self.config.broker_name)
        result = self.ctx.appender.put(batch, wait=wait)
        written = self.ctx.topics.unwritten_of(header.topic, batch[0].topic)
        if written is not None and result.ok:
            return self._await_topic(
                written, request, header, queue_id, uniq_key, result, wait, recall
            )
        if self.ctx.appender.must_wait(result, wait):
            return self._await_durable(request, header, queue_id, uniq_key, result, recall)
        return self.answer(request, header, queue_id, uniq_key, result, result.status, recall)

    async def _await_topic(
        self,
        written: Future[None],
        request: RemotingCommand,
        header: SendMessageRequestHeader,
        queue_id: int,
        uniq_key: str,
        result: PutResult,
        wait: bool,
        recall: str | None,
    ) -> RemotingCommand:
        """The answer to a send stored under a topic whose creation is not yet in
        ``topics.json``: once it is (see ``TopicService.unwritten``), an error if the
        write failed."""
        why = await self.ctx.topics.written_or_why(written, header.topic)
        if why is not None:
            return reply(request, ResponseCode.SYSTEM_ERROR, why)
        if self.ctx.appender.must_wait(result, wait):
            return await self._await_durable(request, header, queue_id, uniq_key, result, recall)
        return self.answer(request, header, queue_id, uniq_key, result, result.status, recall)

    async def _await_durable(
        self,
        request: RemotingCommand,
        header: SendMessageRequestHeader,
        queue_id: int,
        uniq_key: str,
        result: PutResult,
        recall: str | None = None,
    ) -> RemotingCommand:
        status = await self.ctx.appender.durable(result)
        return self.answer(request, header, queue_id, uniq_key, result, status, recall)

    # -- checks ---------------------------------------------------------------------------
    def msg_check(self, channel: Channel, header: SendMessageRequestHeader) -> TopicConfig:
        """Permission, topic and queue id checks; the topic's config (maybe just created)."""
        return msg_check(
            channel,
            header,
            broker_config=self.config,
            topics=self.ctx.topics,
            groups=self.ctx.groups,
        )

    def _queue_id(self, header: SendMessageRequestHeader, config: TopicConfig) -> int:
        if header.queue_id >= 0:
            return header.queue_id
        if config.write_queue_nums <= 0:
            raise SendRefused(
                ResponseCode.SYSTEM_ERROR, f"topic[{header.topic}] has no writable queue"
            )
        return self._rng.randrange(config.write_queue_nums)

    def _retry_or_dlq(
        self, request: RemotingCommand, header: SendMessageRequestHeader, msg: MessageExt
    ) -> None:
        """A send to ``%RETRY%<group>`` that exhausted its retries goes to ``%DLQ%<group>``."""
        if not msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return
        group = msg.topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        config = self.ctx.groups.find(group, auto_create=self.config.auto_create_subscription_group)
        if config is None:
            raise SendRefused(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}"
            )
        max_times = config.retry_max_times
        if request.version >= _V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        if (header.reconsume_times or 0) < max_times:
            return
        dlq = DLQ_GROUP_TOPIC_PREFIX + group
        self.ctx.topics.create_in_send_back(dlq, 1, PERM_READ | PERM_WRITE, durable=True)
        msg.topic, msg.queue_id = dlq, 0

    def rewrite_half(self, msg: MessageExt) -> MessageExt:
        """A transactional half message (``TRAN_MSG=true``) is parked in
        ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 until END_TRANSACTION (store-format §13)."""
        if not is_half_message(msg):
            return msg
        if self.config.reject_transaction_message:
            raise SendRefused(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.config.broker_ip1}] sending transaction message is forbidden",
            )
        return prepare_half_message(self.ctx.topics, msg)

    # -- building -------------------------------------------------------------------------
    def _base_properties(self, header: SendMessageRequestHeader) -> dict[str, str]:
        props = parse_properties_text(header.properties)
        props[PROPERTY_CLUSTER] = self.config.broker_cluster_name
        return props

    def build_message(
        self,
        channel: Channel,
        request: RemotingCommand,
        header: SendMessageRequestHeader,
        config: TopicConfig,
    ) -> tuple[MessageExt, int]:
        """The message to store and the queue id to answer with (the one chosen for the
        requested topic, even when the message is redirected to a DLQ or delayed)."""
        props = self._base_properties(header)
        if not props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX):
            props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = create_uniq_key()
        body = request.body
        max_size = self.ctx.store_config.max_message_size
        if len(body) > max_size:
            raise SendRefused(
                ResponseCode.MESSAGE_ILLEGAL,
                f"the message body size {len(body)} bytes exceeds maxMessageSize {max_size}",
            )
        problem = compressed_body_problem(body, header.sys_flag, max_inflated=max_size)
        if problem is not None:
            raise SendRefused(ResponseCode.MESSAGE_ILLEGAL, problem)
        msg = MessageExt(
            topic=header.topic,
            body=body if isinstance(body, bytes) else bytes(body),
            flag=header.flag,
            properties=props,
            queue_id=self._queue_id(header, config),
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=born_host(channel),
            store_host=self.store_host,
            reconsume_times=header.reconsume_times or 0,
        )
        queue_id = msg.queue_id
        self._retry_or_dlq(request, header, msg)
        msg = self.rewrite_half(msg)
        return self.rewrite_delay(msg), queue_id

    def build_batch(
        self,
        channel: Channel,
        request: RemotingCommand,
        header: SendMessageRequestHeader,
        config: TopicConfig,
    ) -> list[MessageExt]:
        """Expand a batch body; the header's properties (+ CLUSTER) go on every message."""
        topic = header.topic
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise SendRefused(
                ResponseCode.MESSAGE_ILLEGAL, f"batch request does not support retry group {topic}"
            )
        body = request.body
        limit = self.config.max_batch_body_size
        if len(body) > limit:
            raise SendRefused(
                ResponseCode.MESSAGE_ILLEGAL,
                f"the batch body size {len(body)} bytes exceeds the limit of {limit} bytes",
            )
        batch_props = self._base_properties(header)
        if _delay_level(batch_props) > 0:
            raise SendRefused(
                ResponseCode.MESSAGE_ILLEGAL, "a batch message cannot have a delay level"
            )
        try:
            entries = decode_batch_body(body)
        except CorruptRecordError as exc:
            raise SendRefused(
                ResponseCode.MESSAGE_ILLEGAL, f"bad batch body: {exc.detail}"
            ) from None
        if not entries:
            raise SendRefused(ResponseCode.MESSAGE_ILLEGAL, "empty batch")
        max_size = self.ctx.store_config.max_message_size
        queue_id = self._queue_id(header, config)
        host, store_host = born_host(channel), self.store_host
        out: list[MessageExt] = []
        for flag, msg_body, props in entries:
            if len(msg_body) > max_size:
                raise SendRefused(
                    ResponseCode.MESSAGE_ILLEGAL,
                    f"a batch message body of {len(msg_body)} bytes exceeds "
                    f"maxMessageSize {max_size}",
                )
            if _delay_level(props) > 0:
                raise SendRefused(
                    ResponseCode.MESSAGE_ILLEGAL, "a batch message cannot have a delay level"
                )
            props.update(batch_props)
            out.append(
                MessageExt(
                    topic=topic,
                    body=msg_body,
                    flag=flag,
                    properties=props,
                    queue_id=queue_id,
                    sys_flag=header.sys_flag,
                    born_timestamp=header.born_timestamp,
                    born_host=host,
                    store_host=store_host,
                    reconsume_times=header.reconsume_times or 0,
                )
            )
        return out

    def rewrite_delay(self, msg: MessageExt) -> MessageExt:
        """A timer message (``TIMER_DELIVER_MS``/``TIMER_DELAY_SEC``/``TIMER_DELAY_MS``, due
        later) goes to ``rmq_sys_wheel_timer`` (RocketMQ 5, :mod:`mqcore.broker.timer`;
        raises SendRefused); a ``DELAY`` > 0 message to ``SCHEDULE_TOPIC_XXXX`` queue
        ``level - 1`` with ``REAL_TOPIC``/``REAL_QID`` (spec §11; see
        :mod:`mqcore.broker.schedule`)."""
        timer = self.ctx.timer_service
        if timer is not None and msg.topic != RMQ_SYS_TRANS_HALF_TOPIC:
            msg = timer.rewrite(msg)
        return self.ctx.schedule_service.rewrite_delay(msg)

    # -- the answer -----------------------------------------------------------------------
    def answer(
        self,
        request: RemotingCommand,
        header: SendMessageRequestHeader,
        queue_id: int,
        uniq_key: str,
        result: PutResult,
        status: PutStatus,
        recall: str | None = None,
    ) -> RemotingCommand:
        """``recall``: a parked timer message's handle (5.x's ``recallHandle`` field)."""
        code, remark = _PUT_CODES.get(status, (ResponseCode.SYSTEM_ERROR, None))
        if code not in _STORED:
            if result.status is not PutStatus.PUT_OK:
                log.info("send to %s refused by the store: %s", header.topic, result.remark)
            return reply(request, code, remark or result.remark or status.value)
        host = self.store_host
        offsets = result.record_offsets
        msg_id = (
            create_offset_msg_id(host, offsets[0])
            if len(offsets) == 1
            else ",".join(create_offset_msg_id(host, off) for off in offsets)
        )
        # The SendMessageResponseHeader fields, built directly: this is the hot path.
        ext = {
            "msgId": msg_id,
            "queueId": str(queue_id),
            "queueOffset": str(result.queue_offset),
            "MSG_REGION": self.config.region_id,
            "TRACE_ON": "true" if self.config.trace_on else "false",
        }
        if uniq_key:
            ext["uniqKey"] = uniq_key
        if recall:
            ext["recallHandle"] = recall
        return RemotingCommand.response_to(request, code, remark, ext)


def _delay_level(props: dict[str, str]) -> int:
    try:
        return int(props.get(PROPERTY_DELAY_TIME_LEVEL, "0"))
    except ValueError:
        return 0


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    """SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE, one processor for the three."""
    processor = SendMessageProcessor(ctx)
    codes = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)
    return dict.fromkeys(codes, processor.process)

"""ACK_MESSAGE (200051), BATCH_ACK_MESSAGE (200151) and CHANGE_MESSAGE_INVISIBLETIME
(200053): RocketMQ 5's AckMessageProcessor and ChangeInvisibleTimeProcessor.

An ack is a record, not a change: an ``AckMsg`` (``bAck``: a ``BatchAckMsg`` of one pop's
offsets) appended to the revive queue the receipt names, where the revive service matches
it to its checkpoint. The receipt (``extraInfo``) carries everything needed to find that
checkpoint, so the broker keeps no per-message state. The answer waits until the record
is as durable as the config asks, so an acknowledged message does not come back after a
crash (5.x's at-least-once remains for an ack whose answer was lost).

Changing a message's invisibility writes a new one-message checkpoint (pop time now,
the new invisible time) and then acks the message against its old checkpoint, in that
order: a crash between the two revives the message twice at worst, never loses it.

Each of them also moves the in-flight counter (:mod:`mqcore.broker.pop.inflight`), which
GET_CONSUME_STATS reports.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mqcore.errors import MQError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.pop import (
    AckMsg,
    BatchAck,
    BatchAckMessageRequestBody,
    BatchAckMsg,
    PopCheckPoint,
)
from mqcore.protocol.extra_info import (
    POP_ORDER_REVIVE_QUEUE,
    ExtraInfo,
    ExtraInfoError,
    real_topic,
)
from mqcore.protocol.headers import HeaderError
from mqcore.protocol.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
)
from mqcore.remoting import Channel, Processor
from mqcore.store.results import PutResult

from . import reply

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext

__all__ = ["AckMessageProcessor", "handlers"]

log = logging.getLogger("mq.broker.pop.ack")


class AckMessageProcessor:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def _check_queue(
        self, request: RemotingCommand, topic: str, queue_id: int
    ) -> RemotingCommand | None:
        config = self.ctx.topics.select(topic)
        if config is None:
            return reply(
                request,
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please!",
            )
        if queue_id < 0 or queue_id >= config.read_queue_nums:
            return reply(
                request,
                ResponseCode.MESSAGE_ILLEGAL,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] "
                f"topicConfig.readQueueNums:[{config.read_queue_nums}]",
            )
        return None

    async def _answer(
        self, request: RemotingCommand, result: PutResult, ok: RemotingCommand
    ) -> RemotingCommand:
        if not await self.ctx.pop.revive_log.durable(result):
            log.warning("ack record not stored: %s %s", result.status.value, result.remark)
            return reply(
                request, ResponseCode.SYSTEM_ERROR, f"ack not stored: {result.status.value}"
            )
        return ok

    # -- ACK_MESSAGE -----------------------------------------------------------------------
    def process_ack(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        try:
            header = AckMessageRequestHeader.from_command(request)
            receipt = ExtraInfo.decode(header.extra_info)
        except (HeaderError, ExtraInfoError) as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        refused = self._check_queue(request, header.topic, header.queue_id)
        if refused is not None:
            return refused
        store = self.ctx.store
        lo = store.get_min_offset_in_queue(header.topic, header.queue_id)
        hi = store.get_max_offset_in_queue(header.topic, header.queue_id)
        if not lo <= header.offset <= hi:
            return reply(
                request,
                ResponseCode.NO_MESSAGE,
                f"offset is illegal, key:{header.topic}@{header.queue_id}, "
                f"commit:{header.offset}, store:{lo}~{hi}",
            )
        if receipt.is_order:
            return self._ack_in_order(request, header, receipt)
        ack = AckMsg(
            ack_offset=header.offset,
            start_offset=receipt.ck_queue_offset,
            consumer_group=header.consumer_group,
            topic=header.topic,
            queue_id=header.queue_id,
            pop_time=receipt.pop_time,
            broker_name=receipt.broker_name,
        )
        self.ctx.pop.inflight.acked(
            header.topic,
            header.consumer_group,
            header.queue_id,
            receipt.ck_queue_offset,
            receipt.pop_time,
            [header.offset],
        )
        if self.ctx.pop.buffer.add_ack(ack):  # its checkpoint is still buffered
            return reply(request)
        result = self.ctx.pop.revive_log.put_ack(ack, receipt.revive_qid, receipt.invisible_time)
        return self._answer(request, result, reply(request))

    def _ack_in_order(
        self, request: RemotingCommand, header: AckMessageRequestHeader, receipt: ExtraInfo
    ) -> RemotingCommand:
        """FIFO: no record; the group's offset moves to the first message of the pop not
        acknowledged yet (5.x's ackOrderly), and a queue no longer blocked wakes pops."""
        c = self.ctx
        group, topic, qid = header.consumer_group, header.topic, header.queue_id
        done = c.offsets.query(group, topic, qid)
        if done is not None and header.offset < done:
            return reply(request)  # acknowledged already
        following = c.pop.order_info.commit_and_next(
            topic, group, qid, header.offset, receipt.pop_time
        )
        if following == -1:
            return reply(
                request,
                ResponseCode.MESSAGE_ILLEGAL,
                f"offset is illegal, key:{topic}@{group}@{qid}, old:{done}, "
                f"commit:{header.offset}, next:{following}",
            )
        c.pop.inflight.acked(
            topic, group, qid, receipt.ck_queue_offset, receipt.pop_time, [header.offset]
        )
        if following >= 0:
            c.offsets.commit(group, topic, qid, following)
            c.pop.order_changed()
            if not c.pop.order_info.check_block(None, topic, group, qid, receipt.invisible_time):
                c.long_polling.notify_topic(topic)
        return reply(request)

    # -- BATCH_ACK_MESSAGE -----------------------------------------------------------------
    def process_batch_ack(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        try:
            body = BatchAckMessageRequestBody.decode(request.body) if request.body else None
        except MQError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        if body is None or not body.acks:
            return reply(request, ResponseCode.NO_MESSAGE, "no acks in the body")
        results: list[PutResult] = []
        for batch in body.acks:
            if batch.revive_queue_id == POP_ORDER_REVIVE_QUEUE:
                refused = self._batch_in_order(request, batch)
                if refused is not None:
                    return refused
                continue
            try:
                ack = self._batch(batch, body.broker_name)
            except ExtraInfoError as exc:
                return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
            if ack is None:
                continue
            self.ctx.pop.inflight.acked(
                ack.topic,
                batch.consumer_group,
                batch.queue_id,
                batch.start_offset,
                batch.pop_time,
                ack.ack_offset_list,
            )
            if self.ctx.pop.buffer.add_ack(ack):
                continue
            results.append(
                self.ctx.pop.revive_log.put_ack(ack, batch.revive_queue_id, batch.invisible_time)
            )
        return self._answer_all(request, results)

    async def _answer_all(
        self, request: RemotingCommand, results: list[PutResult]
    ) -> RemotingCommand:
        for result in results:
            answer = await self._answer(request, result, reply(request))
            if answer.code != ResponseCode.SUCCESS:
                return answer
        return reply(request)

    def _batch_in_order(self, request: RemotingCommand, batch: BatchAck) -> RemotingCommand | None:
        """A FIFO pop's acks, one by one as ACK_MESSAGE makes them; an error answer or None."""
        try:
            topic = real_topic(batch.topic, batch.consumer_group, batch.retry)
        except ExtraInfoError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        for bit in sorted(batch.bits):
            offset = batch.start_offset + bit
            receipt = ExtraInfo(
                batch.start_offset,
                batch.pop_time,
                batch.invisible_time,
                batch.revive_queue_id,
                batch.retry,
                "",
                batch.queue_id,
                offset,
            )
            header = AckMessageRequestHeader(
                batch.consumer_group, topic, batch.queue_id, receipt.encode(), offset
            )
            answer = self._ack_in_order(request, header, receipt)
            if answer.code != ResponseCode.SUCCESS:
                return answer
        return None

    def _batch(self, batch: BatchAck, broker_name: str | None) -> BatchAckMsg | None:
        """The acks of one BatchAck inside its queue's bounds (5.x skips the others)."""
        topic = real_topic(batch.topic, batch.consumer_group, batch.retry)
        store = self.ctx.store
        if self.ctx.topics.select(topic) is None:
            return None
        lo = store.get_min_offset_in_queue(topic, batch.queue_id)
        hi = store.get_max_offset_in_queue(topic, batch.queue_id)
        offsets = [
            batch.start_offset + i for i in sorted(batch.bits) if lo <= batch.start_offset + i <= hi
        ]
        if not offsets or batch.revive_queue_id < 0:
            return None
        return BatchAckMsg(
            ack_offset_list=offsets,
            start_offset=batch.start_offset,
            consumer_group=batch.consumer_group,
            topic=topic,
            queue_id=batch.queue_id,
            pop_time=batch.pop_time,
            broker_name=broker_name,
        )

    # -- CHANGE_MESSAGE_INVISIBLETIME ------------------------------------------------------
    def process_change_invisible_time(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        try:
            header = ChangeInvisibleTimeRequestHeader.from_command(request)
            receipt = ExtraInfo.decode(header.extra_info)
        except (HeaderError, ExtraInfoError) as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        refused = self._check_queue(request, header.topic, header.queue_id)
        if refused is not None:
            return refused
        store = self.ctx.store
        lo = store.get_min_offset_in_queue(header.topic, header.queue_id)
        hi = store.get_max_offset_in_queue(header.topic, header.queue_id)
        if not lo <= header.offset < hi:
            return reply(request, ResponseCode.NO_MESSAGE, "no message at that offset")
        if receipt.is_order:
            return self._change_in_order(request, header, receipt)
        return self._change(request, header, receipt)

    def _change_in_order(
        self,
        request: RemotingCommand,
        header: ChangeInvisibleTimeRequestHeader,
        receipt: ExtraInfo,
    ) -> RemotingCommand:
        """FIFO: the message's next visible time in the order info (5.x answers the
        original pop time and an invisible time that reaches the new deadline)."""
        c = self.ctx
        group, topic, qid = header.consumer_group, header.topic, header.queue_id
        visible_at = int(time.time() * 1000) + header.invisible_time
        done = c.offsets.query(group, topic, qid)
        if done is None or header.offset >= done:
            c.pop.order_info.update_next_visible_time(
                topic, group, qid, header.offset, receipt.pop_time, visible_at
            )
            c.pop.order_changed()
            c.pop.inflight.delayed(
                topic,
                group,
                qid,
                receipt.ck_queue_offset,
                receipt.pop_time,
                header.offset,
                visible_at,
            )
        return reply(
            request,
            header=ChangeInvisibleTimeResponseHeader(
                pop_time=receipt.pop_time,
                invisible_time=visible_at - receipt.pop_time,
                revive_qid=receipt.revive_qid,
            ),
        )

    async def _change(
        self, request: RemotingCommand, header: ChangeInvisibleTimeRequestHeader, receipt: ExtraInfo
    ) -> RemotingCommand:
        revive_log = self.ctx.pop.revive_log
        now = int(time.time() * 1000)
        ck = PopCheckPoint(
            start_offset=header.offset,
            pop_time=now,
            invisible_time=header.invisible_time,
            num=1,
            queue_id=header.queue_id,
            topic=header.topic,
            cid=header.consumer_group,
            broker_name=receipt.broker_name,
            queue_offset_diff=[0],
        )
        put = revive_log.put_ck(ck, receipt.revive_qid)
        if not await revive_log.durable(put):
            return reply(
                request, ResponseCode.SYSTEM_ERROR, f"checkpoint not stored: {put.status.value}"
            )
        ack = AckMsg(
            ack_offset=header.offset,
            start_offset=receipt.ck_queue_offset,
            consumer_group=header.consumer_group,
            topic=header.topic,
            queue_id=header.queue_id,
            pop_time=receipt.pop_time,
            broker_name=receipt.broker_name,
        )
        inflight = self.ctx.pop.inflight
        inflight.popped(
            header.topic,
            header.consumer_group,
            header.queue_id,
            header.offset,
            now,
            [header.offset],
            now + header.invisible_time,
        )
        inflight.acked(
            header.topic,
            header.consumer_group,
            header.queue_id,
            receipt.ck_queue_offset,
            receipt.pop_time,
            [header.offset],
        )
        if self.ctx.pop.buffer.add_ack(ack):
            result = put
        else:
            result = revive_log.put_ack(ack, receipt.revive_qid, receipt.invisible_time)
        answer = reply(
            request,
            header=ChangeInvisibleTimeResponseHeader(
                pop_time=now, invisible_time=header.invisible_time, revive_qid=receipt.revive_qid
            ),
        )
        return await self._answer(request, result, answer)


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    processor = AckMessageProcessor(ctx)
    return {
        RequestCode.ACK_MESSAGE: processor.process_ack,
        RequestCode.BATCH_ACK_MESSAGE: processor.process_batch_ack,
        RequestCode.CHANGE_MESSAGE_INVISIBLETIME: processor.process_change_invisible_time,
    }

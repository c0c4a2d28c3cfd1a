"""`SimpleConsumer`: RocketMQ 5's simple consumer over remoting POP.

::

    async with SimpleConsumer("billing", namesrv="127.0.0.1:9876") as consumer:
        consumer.subscribe("Orders", "paid")
        for msg in await consumer.receive(16, invisible_duration=30.0):
            handle(msg)
            await consumer.ack(msg)

No rebalance and no offsets of its own: each :meth:`receive` asks one broker of the
topic's route (round robin) for up to ``max_messages`` (POP_MESSAGE over every queue,
held up to ``await_duration``). The broker hands them out invisible for
``invisible_duration`` and brings back whatever is not acknowledged by then, with its
reconsume times increased, until the group's maximum sends it to ``%DLQ%<group>``. Each
message carries its receipt in the ``POP_CK`` property (:func:`receipt`); :meth:`ack` and
:meth:`change_invisible_duration` send it back to the broker that handed the message out.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from mqcore.client.instance import ClientConfig, ClientInstance
from mqcore.client.pop_result import popped_messages
from mqcore.client.role import ClientRole
from mqcore.errors import MQBrokerError, MQClientError
from mqcore.message.const import PROPERTY_TAGS
from mqcore.message.model import MessageExt
from mqcore.protocol import RequestCode, ResponseCode
from mqcore.protocol.bodies.pop import BatchAck, BatchAckMessageRequestBody
from mqcore.protocol.extra_info import (
    PROPERTY_POP_CK,
    ExtraInfo,
)
from mqcore.protocol.headers.pop import (
    POLLING_FULL,
    POLLING_TIMEOUT,
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    ConsumeInitMode,
    PopMessageRequestHeader,
)

__all__ = ["SimpleConsumer", "receipt"]

_NOT_FOUND = (POLLING_TIMEOUT, ResponseCode.PULL_NOT_FOUND, POLLING_FULL)


def receipt(msg: MessageExt) -> ExtraInfo:
    """The receipt a received message carries; MQClientError for one not received by
    POP."""
    text = msg.properties.get(PROPERTY_POP_CK)
    if text is None:
        raise MQClientError("the message has no receipt (POP_CK): it was not received by POP")
    return ExtraInfo.decode(text)


class SimpleConsumer(ClientRole):
    """See the module docstring. ``await_duration`` (s) is how long a receive may be held
    when nothing is there; ``init_mode`` where a group new to a queue starts."""

    def __init__(
        self,
        group: str,
        namesrv: str | Sequence[str] | None = None,
        *,
        await_duration: float = 5.0,
        invisible_duration: float = 30.0,
        init_mode: int = ConsumeInitMode.MAX,
        fifo: bool = False,
        instance_name: str | None = None,
        client_config: ClientConfig | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        instance: ClientInstance | None = None,
    ) -> None:
        super().__init__(namesrv, instance_name, client_config, access_key, secret_key, instance)
        self.group = group
        self.await_duration = await_duration
        self.invisible_duration = invisible_duration
        self.init_mode = init_mode
        self.fifo = fifo
        """FIFO POP: each queue's messages in order, the next only once the ones before
        are acknowledged (or their invisible time is over: then they come again)."""
        self.subscriptions: dict[str, str] = {}
        """Topic -> tag expression."""
        self._turn = 0

    def subscribe(self, topic: str, expression: str = "*") -> None:
        self.subscriptions[topic] = expression

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(topic, None)

    # -- receiving -------------------------------------------------------------------------
    async def _brokers(self, topic: str) -> list[tuple[str, str]]:
        """(broker name, master address) of every broker with readable queues of ``topic``."""
        instance = self.instance
        queues = await instance.subscribe_queues(topic)
        names = sorted({q.broker_name for q in queues})
        out = []
        for name in names:
            addr = instance.find_master_addr(name)
            if addr is not None:
                out.append((name, addr))
        return out

    async def receive(
        self,
        max_messages: int = 16,
        invisible_duration: float | None = None,
        *,
        await_duration: float | None = None,
    ) -> list[MessageExt]:
        """Up to ``max_messages`` (1..32) messages of a subscribed topic, invisible to
        others for ``invisible_duration`` seconds; [] when none came within
        ``await_duration``. Broker errors raise MQBrokerError."""
        if not self.subscriptions:
            raise MQClientError("subscribe to a topic before receiving")
        if not 1 <= max_messages <= 32:
            raise ValueError("max_messages must be 1..32")
        invisible = self.invisible_duration if invisible_duration is None else invisible_duration
        wait = self.await_duration if await_duration is None else await_duration
        topics = sorted(self.subscriptions)
        targets: list[tuple[str, str, str]] = []
        for topic in topics:
            targets += [(topic, name, addr) for name, addr in await self._brokers(topic)]
        if not targets:
            raise MQClientError(f"no broker serves {', '.join(topics)}: is the topic created?")
        self._turn += 1
        topic, broker_name, addr = targets[self._turn % len(targets)]
        return await self._pop(topic, broker_name, addr, max_messages, invisible, wait)

    async def _pop(
        self,
        topic: str,
        broker_name: str,
        addr: str,
        max_messages: int,
        invisible: float,
        wait: float,
    ) -> list[MessageExt]:
        instance = self.instance
        expression = self.subscriptions.get(topic, "*")
        header = PopMessageRequestHeader(
            consumer_group=self.group,
            topic=topic,
            queue_id=-1,
            max_msg_nums=max_messages,
            invisible_time=int(invisible * 1000),
            poll_time=int(wait * 1000),
            born_time=int(time.time() * 1000),
            init_mode=self.init_mode,
            exp_type="TAG",
            exp=expression,
            order=True if self.fifo else None,
        )
        request = instance.transport.request(RequestCode.POP_MESSAGE, header)
        response = await instance.transport.invoke(addr, request, wait + 3.0)
        if response.code in _NOT_FOUND:
            return []
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError(response.code, response.remark)
        wanted = _tags(expression)
        out = []
        for msg in popped_messages(response, topic, broker_name):
            if wanted and msg.properties.get(PROPERTY_TAGS) not in wanted:
                await self.ack(msg)  # a tag-hash collision: not ours, so done with
                continue
            out.append(msg)
        return out

    # -- acknowledging ---------------------------------------------------------------------
    def _addr(self, broker_name: str) -> str:
        addr = self.instance.find_master_addr(broker_name)
        if addr is None:
            raise MQClientError(f"broker {broker_name} is not in any route")
        return addr

    async def ack(self, msg: MessageExt) -> None:
        """Acknowledge ``msg``: it is never handed out again (ACK_MESSAGE)."""
        r = receipt(msg)
        header = AckMessageRequestHeader(
            consumer_group=self.group,
            topic=r.real_topic(msg.topic, self.group),
            queue_id=r.queue_id,
            extra_info=r.encode(),
            offset=msg.queue_offset if r.queue_offset is None else r.queue_offset,
        )
        transport = self.instance.transport
        request = transport.request(RequestCode.ACK_MESSAGE, header)
        response = await transport.invoke(self._addr(r.broker_name), request, 3.0)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError(response.code, response.remark)

    async def ack_batch(self, messages: Iterable[MessageExt]) -> None:
        """Acknowledge several messages in one BATCH_ACK_MESSAGE per broker."""
        groups: dict[tuple[Any, ...], BatchAck] = {}
        for msg in messages:
            r = receipt(msg)
            offset = msg.queue_offset if r.queue_offset is None else r.queue_offset
            key = (r.broker_name, r.retry, r.queue_id, r.ck_queue_offset, r.pop_time)
            batch = groups.get(key)
            if batch is None:
                batch = groups[key] = BatchAck(
                    consumer_group=self.group,
                    topic=msg.topic,
                    retry=r.retry,
                    start_offset=r.ck_queue_offset,
                    queue_id=r.queue_id,
                    revive_queue_id=r.revive_qid,
                    pop_time=r.pop_time,
                    invisible_time=r.invisible_time,
                )
            batch.bits = batch.bits | {offset - r.ck_queue_offset}
        by_broker: dict[str, list[BatchAck]] = {}
        for key, batch in groups.items():
            by_broker.setdefault(key[0], []).append(batch)
        transport = self.instance.transport
        for name, acks in by_broker.items():
            body = BatchAckMessageRequestBody(broker_name=name, acks=acks).encode()
            request = transport.request(RequestCode.BATCH_ACK_MESSAGE, None, body)
            response = await transport.invoke(self._addr(name), request, 3.0)
            if response.code != ResponseCode.SUCCESS:
                raise MQBrokerError(response.code, response.remark)

    async def change_invisible_duration(self, msg: MessageExt, duration: float) -> None:
        """Make ``msg`` visible again ``duration`` seconds from now instead (0: at once);
        its receipt is replaced by the new one, which later acks must use."""
        r = receipt(msg)
        offset = msg.queue_offset if r.queue_offset is None else r.queue_offset
        header = ChangeInvisibleTimeRequestHeader(
            consumer_group=self.group,
            topic=r.real_topic(msg.topic, self.group),
            queue_id=r.queue_id,
            extra_info=r.encode(),
            offset=offset,
            invisible_time=int(duration * 1000),
        )
        transport = self.instance.transport
        request = transport.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header)
        response = await transport.invoke(self._addr(r.broker_name), request, 3.0)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError(response.code, response.remark)
        head = ChangeInvisibleTimeResponseHeader.from_command(response)
        msg.properties[PROPERTY_POP_CK] = ExtraInfo(
            ck_queue_offset=offset,
            pop_time=head.pop_time,
            invisible_time=head.invisible_time,
            revive_qid=head.revive_qid,
            retry=r.retry,
            broker_name=r.broker_name,
            queue_id=r.queue_id,
            queue_offset=offset,
        ).encode()


def _tags(expression: str) -> frozenset[str]:
    text = expression.strip()
    if text in ("", "*"):
        return frozenset()
    return frozenset(t.strip() for t in text.split("||") if t.strip())

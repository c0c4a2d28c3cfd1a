"""`ReviveLog`: checkpoints and acknowledgements as messages of the revive topic.

RocketMQ 5 keeps POP state nowhere but in its store: a pop writes a checkpoint
(``PopCheckPoint`` JSON, tag ``ck``) to one queue of ``rmq_sys_REVIVE_LOG_<cluster>``, an
ack writes an ``AckMsg`` (tag ``ack``, ``bAck`` for a batch) to the same queue, and the
revive service reads them back. So they survive a restart, a kill -9 (the mapped commit
log outlives the process) and a failover exactly as messages do. Each record carries
5.x's unique key and ``TIMER_DELIVER_MS`` (its revive time, less ``ACK_TIME_INTERVAL``
for a checkpoint), so a 5.x broker reading this store schedules them as it would its own.

Appends go through the broker's one :class:`~mqcore.broker.append.Appender`; a caller that
answers a client only once the record is durable awaits :meth:`durable`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from mqcore.broker.pop.keys import (
    ACK_TAG,
    ACK_TIME_INTERVAL,
    BATCH_ACK_TAG,
    CK_TAG,
    PROPERTY_TIMER_DELIVER_MS,
    ack_unique_id,
    batch_ack_unique_id,
    ck_unique_id,
    revive_topic,
)
from mqcore.message.const import PROPERTY_TAGS, PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
from mqcore.message.model import HostAddr, MessageExt
from mqcore.protocol.bodies.pop import AckMsg, BatchAckMsg, PopCheckPoint
from mqcore.store.metadata import PERM_READ, PERM_WRITE
from mqcore.store.results import PutResult, PutStatus

if TYPE_CHECKING:
    from mqcore.broker.append import Appender
    from mqcore.broker.config import BrokerConfig
    from mqcore.broker.topics import TopicService

__all__ = ["ReviveLog", "now_ms"]


def now_ms() -> int:
    return int(time.time() * 1000)


class ReviveLog:
    """Writes the revive topic's records; knows its name and queue count."""

    def __init__(
        self,
        config: BrokerConfig,
        appender: Appender,
        topics: TopicService,
        store_host: Callable[[], HostAddr],
    ) -> None:
        self._config = config
        self._appender = appender
        self._topics = topics
        self._store_host = store_host
        self._ck_number = 0

    @property
    def topic(self) -> str:
        return revive_topic(self._config.broker_cluster_name)

    @property
    def queue_num(self) -> int:
        return max(1, self._config.revive_queue_num)

    def ensure_topic(self) -> None:
        """The revive topic with ``reviveQueueNum`` queues (a system topic, as in 5.x)."""
        self._topics.create_in_send_back(self.topic, self.queue_num, PERM_READ | PERM_WRITE)

    def next_revive_qid(self) -> int:
        """Round robin over the revive queues, one step per pop (5.x's ckMessageNumber)."""
        qid = self._ck_number % self.queue_num
        self._ck_number += 1
        return qid

    def _message(self, body: bytes, qid: int, tag: str, key: str, deliver_ms: int) -> MessageExt:
        host = self._store_host()
        return MessageExt(
            topic=self.topic,
            body=body,
            queue_id=qid,
            properties={
                PROPERTY_TAGS: tag,
                PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: key,
                PROPERTY_TIMER_DELIVER_MS: str(deliver_ms),
            },
            born_timestamp=now_ms(),
            born_host=host,
            store_host=host,
        )

    def put_ck(self, ck: PopCheckPoint, qid: int) -> PutResult:
        """Append a checkpoint to revive queue ``qid``."""
        msg = self._message(
            ck.encode(), qid, CK_TAG, ck_unique_id(ck), ck.revive_time - ACK_TIME_INTERVAL
        )
        return self._put(msg)

    def put_ack(self, ack: AckMsg | BatchAckMsg, qid: int, invisible_time: int) -> PutResult:
        """Append an acknowledgement (of one message, or several of one pop)."""
        if isinstance(ack, BatchAckMsg):
            tag, key = BATCH_ACK_TAG, batch_ack_unique_id(ack)
        else:
            tag, key = ACK_TAG, ack_unique_id(ack)
        return self._put(self._message(ack.encode(), qid, tag, key, ack.pop_time + invisible_time))

    def _put(self, msg: MessageExt) -> PutResult:
        if msg.queue_id >= self.queue_num or msg.queue_id < 0:
            return PutResult(PutStatus.MESSAGE_ILLEGAL, remark=f"no revive queue {msg.queue_id}")
        return self._appender.put((msg,), wait=True)

    async def durable(self, result: PutResult) -> bool:
        """Whether the record is as durable as the config asks (at once under
        ASYNC_FLUSH on a lone master: the mapped commit log outlives the process)."""
        if not result.ok:
            return False
        if not self._appender.must_wait(result, True):
            return True
        status = await self._appender.durable(result)
        return status is PutStatus.PUT_OK

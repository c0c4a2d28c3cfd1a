"""Putting due timer messages: the copy to put (``convert``) and the puts, grouped.

A slot's messages are put a few dozen at a time per (topic, queue) in one store append
(a batch of records, each with its own properties), which costs a fraction of one put
per message; order within a queue is the slot's. What a put refuses for good
(MESSAGE_ILLEGAL, PROPERTIES_SIZE_EXCEEDED) is put again alone, so one bad message does
not take its group with it, and then skipped; what may succeed later (the store not
writable for a moment) comes back to the caller to retry, up to three times unless
``timerEnableRetryUntilSuccess`` (RocketMQ 5's rule).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mqcore.message.const import (
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TIMER_DEQUEUE_MS,
    PROPERTY_TIMER_ENQUEUE_MS,
    PROPERTY_TIMER_ROLL_TIMES,
)
from mqcore.message.model import MessageExt
from mqcore.store.results import PutResult, PutStatus
from mqcore.store.timer.timer_log import TimerUnit

if TYPE_CHECKING:
    from mqcore.store.store_config import MessageStoreConfig

__all__ = ["Deliverer", "Pending", "convert"]

log = logging.getLogger("mq.store.timer")

_MAX_RETRIES = 3
_SKIP = (PutStatus.MESSAGE_ILLEGAL, PutStatus.PROPERTIES_SIZE_EXCEEDED)
_GROUP_MESSAGES = 64
_GROUP_BYTES = 1 << 20
"""A group's bodies stay far below any commit log file (a batch never spans two)."""


@dataclass(slots=True)
class Pending:
    """A unit to deliver, the copy to put, and the puts it has failed."""

    unit: TimerUnit
    out: MessageExt | None = None
    failures: int = 0


def convert(msg: MessageExt, enqueue_time: int, now_ms: int, *, roll: bool) -> MessageExt | None:
    """``convert``/``convertMessage``: the message to put for a unit (to its real topic
    and queue, ``REAL_TOPIC``/``REAL_QID`` removed; a roll back to the timer topic with
    ``TIMER_ROLL_TIMES`` + 1), or None when its real topic or queue is unusable."""
    props = dict(msg.properties)
    if enqueue_time != -1:
        props[PROPERTY_TIMER_ENQUEUE_MS] = str(enqueue_time)
    if roll:
        times = props.get(PROPERTY_TIMER_ROLL_TIMES)
        props[PROPERTY_TIMER_ROLL_TIMES] = str(int(times) + 1 if times else 1)
    props[PROPERTY_TIMER_DEQUEUE_MS] = str(now_ms)
    if roll:
        return msg.rerouted(msg.topic, msg.queue_id, properties=props)
    topic = props.pop(PROPERTY_REAL_TOPIC, "")
    try:
        queue_id = int(props.pop(PROPERTY_REAL_QUEUE_ID, ""))
    except ValueError:
        queue_id = -1
    if not topic or queue_id < 0:
        log.error("timer message %s has no real topic/queue; dropped", msg.msg_id)
        return None
    return msg.rerouted(topic, queue_id, properties=props)


class Deliverer:
    """Puts converted messages in groups; counts them; keeps the last put's result."""

    def __init__(
        self,
        config: MessageStoreConfig,
        put: Callable[[Sequence[MessageExt]], PutResult],
    ) -> None:
        self.config = config
        self.put = put
        self.delivered = 0
        self.last_put: PutResult | None = None

    def deliver(self, items: Sequence[Pending]) -> list[Pending]:
        """Put every item's ``out``; the items to retry (empty when all were put or
        given up)."""
        groups: dict[tuple[str, int], list[list[Pending]]] = {}
        for item in items:
            out = item.out
            if out is None:
                continue
            chunks = groups.setdefault((out.topic, out.queue_id), [[]])
            last = chunks[-1]
            size = sum(len(p.out.body) for p in last if p.out is not None)
            if len(last) >= _GROUP_MESSAGES or (last and size + len(out.body) > _GROUP_BYTES):
                chunks.append(last := [])
            last.append(item)
        failed: list[Pending] = []
        for chunks in groups.values():
            for chunk in chunks:
                failed += self._put_group(chunk)
        return failed

    def _put_group(self, group: list[Pending]) -> list[Pending]:
        result = self.put([p.out for p in group if p.out is not None])
        if result.ok:
            self.last_put = result
            self.delivered += len(group)
            return []
        if result.status in _SKIP:
            if len(group) > 1:  # find the one refused: each alone
                failed: list[Pending] = []
                for item in group:
                    failed += self._put_group([item])
                return failed
            log.error(
                "timer delivery to %s refused (%s); skipped",
                group[0].out.topic if group[0].out is not None else "?",
                result.status.value,
            )
            return []
        failed = []
        for item in group:
            item.failures += 1
            if item.failures >= _MAX_RETRIES and not self.config.timer_enable_retry_until_success:
                log.error(
                    "timer delivery failed %d times (%s); given up", item.failures, result.status
                )
            else:
                failed.append(item)
        if failed:
            log.warning("timer delivery put failed (%s); retrying", result.status.value)
        return failed

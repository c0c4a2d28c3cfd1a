"""`ConsumerLagCalculator`: how far each consumer group is behind, per topic, for the
``rocketmq_consumer_*`` metrics (RocketMQ 5's class of the same name).

The work is per queue, never per message: a group's lag on a queue is the queue's max
offset minus the group's committed offset, and its latency is how long ago the first
unconsumed message was stored (one consume queue entry and eight bytes of the commit
log, read only for a queue that lags).

Which (group, topic) pairs: RocketMQ 5 takes the groups with consumers online and the
topics they subscribe to. A group whose consumers all died is the one most worth an
alert, and RocketMQ 5 stops reporting it then; mq also takes every pair with committed
offsets (consumerOffset.json), so an offline group keeps its lag series. Retry topics
are left out and topics neither readable nor writable skipped, as there.

For a pull or push consumer, what RocketMQ 5 reports is what is reported here: the pull
offset is the committed offset (RocketMQ 5 keeps pull offsets for POP only), so nothing
is in flight, the ready messages are the lag and the queueing latency is the lag
latency. For a group that pops, the committed offset is the pop offset, and the
messages handed out and not acknowledged (:mod:`mqcore.broker.pop.inflight`) are in
flight; RocketMQ 5 counts them into the lag too, and so does the exporter.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mqcore.message.const import RETRY_GROUP_TOPIC_PREFIX
from mqcore.store.metadata.consumer_offset import TOPIC_GROUP_SEPARATOR

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext

__all__ = ["ConsumerLag", "ConsumerLagCalculator"]

_KEYS_PER_STEP = 512
"""Groups or offset keys gathered between two chances to give the loop back."""
_QUEUES_PER_STEP = 128
"""Queues read (an offset, a queue end, maybe a store time) between two chances to give
the loop back: about a millisecond."""


@dataclass(frozen=True, slots=True)
class ConsumerLag:
    """One group on one topic of this broker."""

    group: str
    topic: str
    lag: int
    """Messages stored and not consumed (committed) yet."""
    earliest_unconsumed_ms: int
    """Store time of the oldest of them; 0 when there are none."""
    inflight: int = 0
    """POP: handed out and not acknowledged (behind the committed offset, so not in
    ``lag``)."""

    def latency_ms(self, now_ms: int) -> int:
        """How long the oldest unconsumed message has waited (0 when caught up)."""
        return max(0, now_ms - self.earliest_unconsumed_ms) if self.earliest_unconsumed_ms else 0


class ConsumerLagCalculator:
    """Reads the broker ``ctx``'s offsets and queues on the event loop."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def pairs(self, out: set[tuple[str, str]]) -> Iterator[None]:
        """(group, topic) into ``out``: the online groups' subscriptions and every
        committed pair, retry topics left out; yields between runs of them."""
        for count, (group, info) in enumerate(list(self.ctx.consumers.groups.items()), 1):
            out.update(
                (group, topic)
                for topic in list(info.subscriptions)
                if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
            )
            if count % _KEYS_PER_STEP == 0:
                yield
        for count, key in enumerate(list(self.ctx.offsets.table), 1):
            topic, sep, group = key.partition(TOPIC_GROUP_SEPARATOR)
            if sep and not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                out.add((group, topic))
            if count % _KEYS_PER_STEP == 0:
                yield

    def calculate(self, out: list[ConsumerLag]) -> Iterator[None]:
        """Append the lag of every pair to ``out``, yielding between runs of pairs."""
        ctx = self.ctx
        broker_perm = ctx.config.broker_permission
        pairs: set[tuple[str, str]] = set()
        yield from self.pairs(pairs)
        queues = 0
        for group, topic in pairs:
            config = ctx.topic_configs.table.get(topic)
            if config is not None and config.perm & broker_perm & 0x6:  # readable or writable
                out.append(self.lag_of(group, topic, config.write_queue_nums))
                queues += config.write_queue_nums
            if queues >= _QUEUES_PER_STEP:
                queues = 0
                yield

    def lag_of(self, group: str, topic: str, queues: int) -> ConsumerLag:
        """``group``'s lag on ``topic`` over its first ``queues`` queues (RocketMQ 5
        sums the write queues). A queue the group never committed on counts as caught
        up, as there."""
        store = self.ctx.store
        committed = self.ctx.offsets.table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {})
        total = 0
        earliest = 0
        inflight = 0
        counter = self.ctx.pop.inflight
        now = now_ms()
        for queue_id in range(queues):
            popped = counter.count(topic, group, queue_id, now)
            if popped is not None:
                inflight += popped.in_flight
            offset = committed.get(queue_id)
            if offset is None:
                continue
            cq = store.queues.find(topic, queue_id, create=False)
            behind = (cq.max_offset if cq is not None else 0) - offset
            if behind <= 0:
                continue
            total += behind
            stored = store.get_message_store_timestamp(topic, queue_id, offset)
            if stored > 0 and (earliest == 0 or stored < earliest):
                earliest = stored
        return ConsumerLag(group, topic, total, earliest, inflight)


def now_ms() -> int:
    return int(time.time() * 1000)

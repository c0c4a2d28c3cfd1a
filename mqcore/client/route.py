"""Route views a client derives from TopicRouteData: publish queues, subscribe queues.

Pure functions and a small dataclass (no I/O), split from :mod:`mqcore.client.instance`
so they can be tested and reused on their own (the fault strategy selects from
:class:`TopicPublishInfo`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from mqcore.common.net import local_ip
from mqcore.protocol.bodies import MessageQueue, PermName, TopicRouteData

__all__ = [
    "AUTO_CREATE_TOPIC_KEY",
    "TopicPublishInfo",
    "local_ip",
    "split_namesrv",
    "subscribe_queues",
]

AUTO_CREATE_TOPIC_KEY = "TBW102"
"""Template topic of brokers with autoCreateTopicEnable (``TopicValidator``)."""


def split_namesrv(addrs: str | Sequence[str]) -> tuple[str, ...]:
    """``"a:9876;b:9876"`` (RocketMQ's separator; commas too) or a list -> tuple."""
    items = addrs.replace(",", ";").split(";") if isinstance(addrs, str) else addrs
    return tuple(a.strip() for a in items if a.strip())


@dataclass(slots=True)
class TopicPublishInfo:
    """Writable queues of a topic, in the order RocketMQ's producer round-robins them."""

    topic: str
    route: TopicRouteData
    queues: list[MessageQueue]
    order_topic: bool = False
    _index: int = field(default_factory=lambda: int.from_bytes(os.urandom(2), "big"))

    @property
    def ok(self) -> bool:
        return bool(self.queues)

    def next_index(self) -> int:
        """RocketMQ's ``sendWhichQueue``: a per-topic counter starting at a random value."""
        self._index = (self._index + 1) & 0x7FFFFFFF
        return self._index

    def select_queue(self, avoid_broker: str | None = None) -> MessageQueue:
        """Round robin; on a retry skip the broker that just failed, if another has queues."""
        n = len(self.queues)
        if avoid_broker is not None:
            for _ in range(n):
                mq = self.queues[self.next_index() % n]
                if mq.broker_name != avoid_broker:
                    return mq
        return self.queues[self.next_index() % n]

    @classmethod
    def from_route(cls, topic: str, route: TopicRouteData) -> TopicPublishInfo:
        """``MQClientInstance.topicRouteData2TopicPublishInfo``."""
        queues: list[MessageQueue] = []
        if route.order_topic_conf:
            for item in route.order_topic_conf.split(";"):
                name, _, nums = item.partition(":")
                if name and nums.isdigit():
                    queues.extend(MessageQueue(topic, name, i) for i in range(int(nums)))
            return cls(topic, route, queues, order_topic=True)
        masters = {b.broker_name for b in route.broker_datas if b.master_addr()}
        for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
            if qd.perm & PermName.WRITE and qd.broker_name in masters:
                queues.extend(
                    MessageQueue(topic, qd.broker_name, i) for i in range(qd.write_queue_nums)
                )
        return cls(topic, route, queues)


def subscribe_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """Readable queues of a route (``topicRouteData2TopicSubscribeInfo``), sorted."""
    return sorted(
        MessageQueue(topic, qd.broker_name, i)
        for qd in route.queue_datas
        if qd.perm & PermName.READ
        for i in range(qd.read_queue_nums)
    )

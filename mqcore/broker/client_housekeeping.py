"""`ClientHousekeeping`: RocketMQ's ClientHousekeepingService and the consumer filter
bookkeeping, the broker-wide service that keeps the client tables true.

- A closed connection leaves the producer and consumer tables at once (every port's
  close listener is :meth:`ClientHousekeeping.channel_closed`).
- Clients silent for ``channelExpiredTimeout`` are dropped by :meth:`scan_not_active`,
  every ``clientScanInterval``.
- ``consumerFilter.json`` follows the SQL92 subscriptions through the consumer table's
  REGISTER / UNREGISTER events (:func:`filter_listener`), and entries dead for too long
  are cleaned every 10 s (:meth:`clean_filters`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mqcore.broker.client_manager import ConsumerGroupEvent, ConsumerGroupListener
from mqcore.protocol.bodies import SubscriptionData

if TYPE_CHECKING:
    from mqcore.broker.client_manager import ConsumerManager, ProducerManager
    from mqcore.broker.config import BrokerConfig
    from mqcore.remoting import Channel
    from mqcore.store.metadata import ConsumerFilterManager
    from mqcore.store.metadata.persister import ConfigPersister

__all__ = ["FILTER_CLEAN_INTERVAL_MS", "ClientHousekeeping", "filter_listener"]

FILTER_CLEAN_INTERVAL_MS = 10_000


class ClientHousekeeping:
    """Closed and silent clients out of the tables; the filter file in step with them."""

    def __init__(
        self,
        config: BrokerConfig,
        producers: ProducerManager,
        consumers: ConsumerManager,
        filters: ConsumerFilterManager,
        persister: ConfigPersister,
    ) -> None:
        self.config = config
        self.producers = producers
        self.consumers = consumers
        self.filters = filters
        self.persister = persister
        consumers.listeners.append(filter_listener(filters, config, persister))

    def channel_closed(self, channel: Channel) -> None:
        self.producers.on_channel_closed(channel)
        self.consumers.on_channel_closed(channel)

    async def scan_not_active(self) -> None:
        """Drop clients silent for ``channelExpiredTimeout``, a slice of groups at a
        time (with 10,000 groups a whole scan held the loop ~10-50 ms)."""
        timeout = self.config.channel_expired_timeout / 1000
        await self.producers.scan_not_active_in_slices(timeout)
        await self.consumers.scan_not_active_in_slices(timeout)

    def clean_filters(self) -> None:
        """Drop filter entries dead for too long, writing the file only when some went."""
        if self.filters.clean():
            self.persister.request(self.filters)


def filter_listener(
    filters: ConsumerFilterManager, config: BrokerConfig, persister: ConfigPersister
) -> ConsumerGroupListener:
    """Keep ``consumerFilter.json`` in step with SQL92 subscriptions, as RocketMQ's
    ConsumerFilterManager is fed by the same REGISTER / UNREGISTER events: a group gone
    is marked dead, not removed (see :mod:`mqcore.store.metadata.consumer_filter`); the
    file is written (by ``persister``) soon after the table changes; ``config``'s
    ``enablePropertyFilter`` is read at each event (it can change at run time)."""

    def on_event(event: ConsumerGroupEvent, group: str, args: Sequence[object]) -> None:
        now_ms = time.time_ns() // 1_000_000
        if event is ConsumerGroupEvent.UNREGISTER:
            changed = filters.unregister(group, now_ms)
        elif event is ConsumerGroupEvent.REGISTER and config.enable_property_filter:
            subs = [
                (s.topic, s.sub_string, s.expression_type or "TAG", s.sub_version)
                for s in args
                if isinstance(s, SubscriptionData)
            ]
            changed = filters.register_group(group, subs, now_ms)
        else:
            return
        if changed:
            persister.request(filters)

    return on_event

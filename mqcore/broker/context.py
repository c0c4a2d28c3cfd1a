"""`BrokerContext`: what the request processors share, handed to them explicitly.

The controller builds the broker's parts and then one frozen context; a processor reads
the parts it needs from it (or is given them one by one when they are few) instead of
keeping the controller and reaching two levels into it. Tests build a context from fakes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mqcore.broker.client_manager import ConsumerManager, ProducerManager
    from mqcore.broker.config import BrokerConfig
    from mqcore.broker.ha.master import HAService
    from mqcore.broker.ha.slave import HAClient
    from mqcore.broker.long_polling import LongPollingService
    from mqcore.broker.rebalance_lock import RebalanceLockManager
    from mqcore.broker.schedule import ScheduleMessageService
    from mqcore.broker.stats import BrokerStatsManager
    from mqcore.broker.topics import TopicService
    from mqcore.message.model import HostAddr
    from mqcore.store.message_store import MessageStore
    from mqcore.store.metadata import (
        ConsumerFilterManager,
        ConsumerOffsetManager,
        DelayOffsetManager,
        SubscriptionGroupManager,
        TopicConfigManager,
    )
    from mqcore.store.metadata.persister import ConfigPersister
    from mqcore.store.store_config import MessageStoreConfig

__all__ = ["BrokerContext"]


@dataclass(frozen=True, slots=True)
class BrokerContext:
    config: BrokerConfig
    store_config: MessageStoreConfig
    store: MessageStore
    topics: TopicService
    topic_configs: TopicConfigManager
    """The topic table as stored (its data version, the whole table for slaves);
    changes go through ``topics``."""
    groups: SubscriptionGroupManager
    offsets: ConsumerOffsetManager
    delay_offsets: DelayOffsetManager
    filters: ConsumerFilterManager
    persister: ConfigPersister
    """Writes config files off the loop, coalesced."""
    producers: ProducerManager
    consumers: ConsumerManager
    locks: RebalanceLockManager
    long_polling: LongPollingService
    stats: BrokerStatsManager
    schedule: ScheduleMessageService
    """Delay levels: rewrites a delayed put into SCHEDULE_TOPIC_XXXX."""
    ha: HAService | None
    """The master's replication (None on a slave): SYNC_MASTER puts wait for it."""
    ha_client: HAClient | None
    """The slave's connection to its master (None on a master)."""
    store_host: Callable[[], HostAddr]
    """``brokerIP1`` and the real listen port (known once the server listens)."""
    broker_addr: Callable[[], str]
    """``brokerIP1:<real listen port>``, as registered with the name servers."""
    request_register: Callable[[bool], None]
    """Register with the name servers soon (``force``), e.g. after a permission change."""

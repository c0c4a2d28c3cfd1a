"""`BrokerContext`: what the request handlers share, handed to them explicitly.

The controller builds every part of a broker once and then one frozen context; each
processor module's ``handlers(ctx)`` builds its processors from the parts it needs and
returns its request table. A processor never sees the controller, starts no service and
schedules no timer. Each part has one name here and on the controller. Tests build a
context from stand-ins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mqcore.acl.guard import AclGuard
    from mqcore.broker.append import Appender
    from mqcore.broker.client_manager import ConsumerManager, ProducerManager
    from mqcore.broker.config import BrokerConfig
    from mqcore.broker.ha.master import HAService
    from mqcore.broker.ha.slave import HAClient
    from mqcore.broker.long_polling import LongPollingService
    from mqcore.broker.pop.service import PopService
    from mqcore.broker.rebalance_lock import RebalanceLockManager
    from mqcore.broker.replicas import ReplicasManager
    from mqcore.broker.schedule import ScheduleMessageService
    from mqcore.broker.stats import BrokerStatsManager
    from mqcore.broker.stats_history import StatsHistory
    from mqcore.broker.timer import TimerMessageService
    from mqcore.broker.topics import TopicService
    from mqcore.broker.transaction import TransactionalMessageService
    from mqcore.common.loop_lag import LoopLagMonitor
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
    """``brokerRole`` included: it changes when the broker changes role."""
    store: MessageStore
    """Reads; every append goes through ``appender``."""
    appender: Appender
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
    stats_history: StatsHistory
    loop_lag: LoopLagMonitor
    """How late the event loop runs what is due (the ``loopLag*`` runtime keys)."""
    schedule_service: ScheduleMessageService
    """Delay levels: rewrites a delayed put into SCHEDULE_TOPIC_XXXX."""
    transaction_service: TransactionalMessageService
    pop: PopService
    """RocketMQ 5's POP: the revive log, what a pop takes, the revive service."""
    ha: HAService
    """The master's replication endpoint (listening while the broker is a master)."""
    ha_client: HAClient
    """The slave's connection to its master (running while the broker is a slave)."""
    acl_guard: AclGuard | None
    """The plain ACL (``aclEnable``), None without it."""
    replicas: ReplicasManager | None
    """Controller mode (``enableControllerMode``): the master, epoch and in-sync set the
    controllers agreed; None without it."""
    store_host: Callable[[], HostAddr]
    """``brokerIP1`` and the real listen port (known once the server listens)."""
    broker_addr: Callable[[], str]
    """``brokerIP1:<real listen port>``, as registered with the name servers."""
    request_register: Callable[[bool], None]
    """Register with the name servers soon (``force``), e.g. after a permission change."""
    timer_service: TimerMessageService | None = None
    """RocketMQ 5's timer messages: rewrites a timed put into rmq_sys_wheel_timer (None:
    a context built without one, as tests do, treats timer properties as plain ones)."""

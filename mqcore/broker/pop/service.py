"""`PopService`: the broker's POP state, one part of the broker context.

It owns the revive log (checkpoint and ack records), the reader (what a pop takes), the
revive service and the in-flight counter (what is handed out and not acknowledged). The
POP processors reach them through it; the controller runs :meth:`start` among a master's
services (5.x runs its revive services on the master only). Nothing else is kept:
offsets live in the consumer offset table, checkpoints and acks in the revive topic (the
in-flight counter is a figure for the admin tools, in memory only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqcore.broker.pop.buffer_merge import PopBufferMergeService
from mqcore.broker.pop.inflight import PopInflightCounter
from mqcore.broker.pop.order_info import ConsumerOrderInfoManager
from mqcore.broker.pop.reader import PopReader
from mqcore.broker.pop.revive import PopReviveService
from mqcore.broker.pop.revive_log import ReviveLog

if TYPE_CHECKING:
    from collections.abc import Callable

    from mqcore.broker.append import Appender
    from mqcore.broker.config import BrokerConfig
    from mqcore.broker.services import Timers
    from mqcore.broker.topics import TopicService
    from mqcore.message.model import HostAddr
    from mqcore.store.message_store import MessageStore
    from mqcore.store.metadata import ConsumerOffsetManager, SubscriptionGroupManager
    from mqcore.store.metadata.persister import ConfigPersister

__all__ = ["PopService"]

_BUFFER_SCAN_MS = 100
"""How often buffered checkpoints are looked at (5.x looks every few ms)."""


class PopService:
    def __init__(
        self,
        config: BrokerConfig,
        store: MessageStore,
        appender: Appender,
        topics: TopicService,
        offsets: ConsumerOffsetManager,
        groups: SubscriptionGroupManager,
        store_host: Callable[[], HostAddr],
        timers: Timers,
        persister: ConfigPersister,
    ) -> None:
        self.config = config
        self.order_info = ConsumerOrderInfoManager(store.config.root)
        """FIFO pops' in-flight messages (``config/consumerOrderInfo.json``)."""
        self._persister = persister
        self._order_info_loaded = False
        self.revive_log = ReviveLog(config, appender, topics, store_host)
        self.inflight = PopInflightCounter()
        """Messages handed out and not acknowledged, per queue (GET_CONSUME_STATS)."""
        self.revive = PopReviveService(
            config,
            store,
            appender,
            self.revive_log,
            offsets,
            topics,
            groups,
            store_host,
            inflight=self.inflight,
        )
        self.buffer = PopBufferMergeService(config, self.revive_log, offsets)
        """Checkpoints held back a while (``enablePopBufferMerge``)."""
        self.reader = PopReader(
            config,
            store,
            offsets,
            topics,
            self.revive_log,
            self.order_info,
            self.order_changed,
            self.buffer,
            self.inflight,
        )
        self._timers = timers
        self.polling: dict[str, int] = {}
        """POPs held now per ``topic@group@queueId`` (POLLING_INFO answers from it)."""

    def start(self) -> None:
        """Load the FIFO order info and read the revive topic once, at once (before any
        pop is served: it raises pop offsets a crash left behind), then every
        ``reviveInterval`` ms."""
        if not self._order_info_loaded:
            self.order_info.load()
            self._order_info_loaded = True
        self.revive.recover(to_the_end=True)
        self._timers.every(
            max(10, self.config.revive_interval), self.revive.revive_once, name="pop-revive"
        )
        self._timers.every(_BUFFER_SCAN_MS, self._scan_buffer, name="pop-buffer-merge")

    def stop(self) -> None:
        """Write every checkpoint still buffered (a clean stop loses no pop)."""
        self.buffer.scan(stopping=True)

    def _scan_buffer(self) -> None:
        if self.buffer.enabled or self.buffer.buffered:
            self.buffer.scan()

    def order_changed(self) -> None:
        """A FIFO pop or ack changed the order info: written soon, off the loop."""
        self._persister.request(self.order_info)

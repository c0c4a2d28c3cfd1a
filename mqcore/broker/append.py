"""`Appender`: the one way the broker appends messages to its store.

Every writer goes through it: sends and batches, CONSUMER_SEND_MSG_BACK, replies, the
schedule service's deliveries, the transaction bridge (half, op and final messages) and
the admin's resumed half messages. One place means every stored message is counted in
the broker statistics (``BrokerStatsManager.on_put``) and the durability rule (the disk
flush and the slave, :mod:`mqcore.broker.durability`) is asked the same way by whoever
answers a client after the put.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mqcore.broker.durability import Replication, await_durable, must_wait, wait_flushed
from mqcore.message.const import PROPERTY_WAIT_STORE_MSG_OK
from mqcore.store.results import PutResult, PutStatus
from mqcore.store.store_config import BrokerRole

if TYPE_CHECKING:
    from mqcore.broker.stats import BrokerStatsManager
    from mqcore.message.model import MessageExt
    from mqcore.store.message_store import MessageStore
    from mqcore.store.store_config import MessageStoreConfig

__all__ = ["Appender"]


class Appender:
    """Put, count, and (for whom it answers a client) wait until durable."""

    def __init__(
        self,
        store: MessageStore,
        store_config: MessageStoreConfig,
        stats: BrokerStatsManager,
        replication: Replication,
    ) -> None:
        self._store = store
        self._store_config = store_config
        """``brokerRole``, ``flushDiskType`` and ``syncFlushTimeout``, read at each put
        (the role changes at run time)."""
        self.stats = stats
        self._replication = replication

    def put(self, batch: Sequence[MessageExt], *, wait: bool | None = None) -> PutResult:
        """Append messages of one topic and queue in one copy and count them when stored.
        A refused put (slave, full disk, ...) stores and counts nothing.

        ``wait``: whether the answer waits for durability (the messages' ``WAIT``
        property when not given). Such a put on a SYNC_MASTER whose in-sync set is
        smaller than ``minInSyncReplicas`` is refused up front (RocketMQ 5's
        IN_SYNC_REPLICAS_NOT_ENOUGH): stored, it could never be acknowledged."""
        if wait is None:
            wait = batch[0].properties.get(PROPERTY_WAIT_STORE_MSG_OK) != "false"
        if (
            wait
            and self._store_config.broker_role is BrokerRole.SYNC_MASTER
            and not self._replication.enough_in_sync
        ):
            return PutResult(PutStatus.IN_SYNC_REPLICAS_NOT_ENOUGH)
        result = self._store.put_messages(batch)
        if result.ok:
            self.stats.on_put(batch[0].topic, result.msg_count, result.wrote_bytes)
        return result

    def must_wait(self, result: PutResult, wait: bool) -> bool:
        """Does the answer to this put wait for a flush or a slave? (Usually not.)"""
        return must_wait(result, wait, self._store_config)

    async def durable(self, result: PutResult) -> PutStatus:
        """The status to answer once the put is as durable as the config asks."""
        return await await_durable(result, self._store_config, self._replication)

    async def flushed(self, result: PutResult) -> bool:
        """Whether the group commit covering ``result`` came within ``syncFlushTimeout``."""
        return await wait_flushed(result, self._store_config.sync_flush_timeout / 1000)

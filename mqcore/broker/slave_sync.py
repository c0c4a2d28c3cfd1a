"""`SlaveSynchronize`: a slave copies its master's metadata (RocketMQ 4.9.8's behaviour).

The commit log reaches a slave through HA replication; the broker's metadata does not.
So that consumers can go on at a slave when its master is gone, a slave asks its master
every 10 s (first 3 s after start) for four tables and stores them as its own:

==============================  ========  ==========================================
request                         code      what the slave does with the answer
==============================  ========  ==========================================
GET_ALL_TOPIC_CONFIG            21        data version differs: take the master's
                                          version, replace the whole table, persist
GET_ALL_CONSUMER_OFFSET         43        merge (master's entries win, entries only
                                          the slave has stay), persist
GET_ALL_DELAY_OFFSET            45        replace the whole table, persist
GET_ALL_SUBSCRIPTIONGROUP_      201       as topics: data version differs -> replace
CONFIG                                    and persist
==============================  ========  ==========================================

Nothing is asked while the master is unknown or is this broker itself. Each step fails on
its own (logged; the others still run), since one table the master cannot serve must not
keep the others stale.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mqcore.common.metadata import DataVersion
from mqcore.errors import MQError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.route import TopicConfigSerializeWrapper
from mqcore.protocol.bodies.stats import (
    ConsumerOffsetSerializeWrapper,
    SubscriptionGroupWrapper,
)
from mqcore.remoting import RemotingClient
from mqcore.remoting.client import split_address
from mqcore.store.metadata import (
    ConsumerOffsetManager,
    DelayOffsetManager,
    SubscriptionGroupManager,
    TopicConfigManager,
)
from mqcore.store.metadata.persister import ConfigPersister

__all__ = [
    "SYNC_INITIAL_DELAY_MS",
    "SYNC_INTERVAL_MS",
    "SlaveSyncError",
    "SlaveSynchronize",
    "vip_addr",
]

log = logging.getLogger("mq.broker.slave_sync")

SYNC_INITIAL_DELAY_MS = 3_000
SYNC_INTERVAL_MS = 10_000
"""4.9.8's slave schedule: 3 s after start, then every 10 s."""
VIP_PORT_DISTANCE = 2
DEFAULT_TIMEOUT = 3.0
"""Seconds per request (4.9.8's BrokerOuterAPI uses 3 s for these calls)."""


class SlaveSyncError(MQError):
    """The master answered one of the four requests with an error code."""


class SlaveSynchronize:
    """Copies topics, offsets, delay offsets and groups from the master (module docstring).

    Dependencies are explicit so that tests can point it at any fake master: ``master_addr``
    is asked before every step, since the master may change or vanish between runs.
    """

    def __init__(
        self,
        client: RemotingClient,
        master_addr: Callable[[], str | None],
        topics: TopicConfigManager,
        offsets: ConsumerOffsetManager,
        delay_offsets: DelayOffsetManager,
        groups: SubscriptionGroupManager,
        *,
        own_addr: Callable[[], str] | None = None,
        on_topics_taken: Callable[[], None] | None = None,
        persister: ConfigPersister | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        """``persister``: writes the merged consumer offsets off the loop (the broker's);
        without one they are written at once, on the caller's thread."""
        self.client = client
        self.persister = persister
        self.on_topics_taken = on_topics_taken
        """Told after the master's topic table replaced ours (the broker adds back the
        topics its store holds that the master's answer did not have yet)."""
        self.master_addr = master_addr
        self.own_addr = own_addr
        self.topics = topics
        self.offsets = offsets
        self.delay_offsets = delay_offsets
        self.groups = groups
        self.timeout = timeout
        self.last_results: dict[str, bool] = {}
        """Step -> success of the last :meth:`sync_all` (False also: no master to ask)."""

    async def sync_all(self) -> None:
        """Run the four steps in 4.9.8's order; :attr:`last_results` says which worked.
        Never raises for a master's failure (a periodic task must not die of one)."""
        self.last_results = {
            "topics": await self._step("topic configs", self.sync_topic_config),
            "offsets": await self._step("consumer offsets", self.sync_consumer_offset),
            "delay_offsets": await self._step("delay offsets", self.sync_delay_offset),
            "groups": await self._step("subscription groups", self.sync_subscription_groups),
        }

    async def _step(self, what: str, fn: Callable[[str], Awaitable[object]]) -> bool:
        addr = self._target()
        if addr is None:
            return False
        try:
            await fn(addr)
        except Exception:
            log.exception("syncing %s from master %s failed", what, addr)
            return False
        return True

    def _target(self) -> str | None:
        addr = self.master_addr()
        if not addr or (self.own_addr is not None and addr == self.own_addr()):
            return None
        return addr

    async def _ask(self, addr: str, code: RequestCode) -> bytes:
        """The answer's body; :class:`SlaveSyncError` for an error code."""
        response = await self.client.invoke(addr, RemotingCommand.request(code), self.timeout)
        if response.code != ResponseCode.SUCCESS:
            raise SlaveSyncError(f"{code.name} at {addr}: code {response.code} {response.remark}")
        return bytes(response.body or b"")

    # -- the four steps (each raises on failure; sync_all logs) ----------------------------
    async def sync_topic_config(self, addr: str) -> bool:
        """Take the master's topic table if its data version differs; True if taken."""
        # 4.9.8 asks this one on the master's VIP port (listenPort - 2).
        wrapper = TopicConfigSerializeWrapper.decode(
            await self._ask(vip_addr(addr), RequestCode.GET_ALL_TOPIC_CONFIG)
        )
        if not _take_if_changed(self.topics, wrapper.data_version, wrapper.topic_config_table):
            return False
        log.info("slave topic configs updated from master %s", addr)
        if self.on_topics_taken is not None:
            self.on_topics_taken()
        return True

    async def sync_consumer_offset(self, addr: str) -> None:
        """Merge the master's offsets over ours (4.9.8 ``putAll``: whole queue maps of the
        master's ``topic@group`` keys replace ours, keys it lacks stay)."""
        body = await self._ask(addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
        # 10,000 groups are ~1 MB of JSON: decoded and written off the loop
        wrapper = await asyncio.to_thread(ConsumerOffsetSerializeWrapper.decode, body)
        manager = self.offsets
        with manager._lock:
            manager.table.update(wrapper.offset_table)
            if self.persister is None:
                manager.persist()
        if self.persister is not None:
            self.persister.request(manager)
        log.info("slave consumer offsets updated from master %s", addr)

    async def sync_delay_offset(self, addr: str) -> None:
        """The master's delay-level progress replaces ours (4.9.8 overwrites the file with
        the master's text; we decode it into the table, so memory and file agree)."""
        body = await self._ask(addr, RequestCode.GET_ALL_DELAY_OFFSET)
        manager = self.delay_offsets
        with manager._lock:
            manager.decode(body)
            manager.persist()
        log.info("slave delay offsets updated from master %s", addr)

    async def sync_subscription_groups(self, addr: str) -> bool:
        """Take the master's group table if its data version differs; True if taken."""
        wrapper = SubscriptionGroupWrapper.decode(
            await self._ask(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        )
        table = wrapper.subscription_group_table
        if not _take_if_changed(self.groups, wrapper.data_version, table):
            return False
        log.info("slave subscription groups updated from master %s", addr)
        return True


def vip_addr(addr: str) -> str:
    """``host:port`` -> ``host:port-2``, the broker's VIP channel (``brokerVIPChannel``)."""
    host, port = split_address(addr)
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{port - VIP_PORT_DISTANCE}"


def _assign(target: DataVersion, source: DataVersion) -> None:
    """In place (``assignNewOne``): whoever holds the manager's version object sees it."""
    target.timestamp = source.timestamp
    target.counter = source.counter


def _take_if_changed(
    manager: TopicConfigManager | SubscriptionGroupManager,
    version: DataVersion,
    table: Mapping[str, Any],
) -> bool:
    """The master's whole table and data version, unless ours has that version already
    (4.9.8's rule for topics and groups); persisted. True when taken."""
    with manager._lock:
        if manager.data_version == version:
            return False
        _assign(manager.data_version, version)
        manager.table.clear()
        manager.table.update(table)
        manager.persist()
    return True

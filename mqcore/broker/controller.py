"""`BrokerController`: wires the store, metadata, client services, processors and servers.

Usage (in-process, e.g. tests)::

    controller = BrokerController(
        BrokerConfig(listen_port=0, broker_ip1="127.0.0.1", namesrv_addr="127.0.0.1:9876"),
        MessageStoreConfig(store_path_root_dir=str(tmp_path)),
    )
    await controller.start()        # lock + recover the store, listen, register
    controller.broker_addr          # "127.0.0.1:<real port>"
    ...
    await controller.shutdown()     # unregister, stop listening, flush, persist, unlock

Two servers run with the same processors, as in RocketMQ: ``server`` on ``listenPort``
and ``fast_server`` (the "VIP channel" Java 4.x producers use by default) on
``listenPort - 2``, which does not serve PULL_MESSAGE. With ``listenPort`` 0 a free pair
of ports is picked and ``config.listen_port`` becomes the real one.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable

from mqcore.acl.guard import AclGuard
from mqcore.broker import schedule, slave_sync
from mqcore.broker.client_manager import ConsumerManager, ProducerManager
from mqcore.broker.config import BrokerConfig
from mqcore.broker.context import BrokerContext
from mqcore.broker.ha.master import HAService
from mqcore.broker.ha.slave import HAClient
from mqcore.broker.long_polling import LongPollingService
from mqcore.broker.outer_api import BrokerOuterAPI
from mqcore.broker.processor import (
    acl_admin,
    admin,
    admin_consumer,
    admin_group,
    admin_store,
    client,
    end_transaction,
    offsets,
    pull,
    query,
    reply_message,
    send,
    send_back,
)
from mqcore.broker.rebalance_lock import RebalanceLockManager
from mqcore.broker.reput import ReputService
from mqcore.broker.stats import BrokerStatsManager
from mqcore.broker.store_stats import observe_store
from mqcore.broker.topics import TopicService
from mqcore.common.aio import cancel_and_wait, wait_event
from mqcore.protocol import DEFAULT_MAX_FRAME
from mqcore.remoting import ChannelLimits, RemotingServer
from mqcore.remoting.tls import ServerTls, client_context_from_config
from mqcore.store.message_store import MessageStore
from mqcore.store.metadata import (
    ConsumerFilterManager,
    ConsumerOffsetManager,
    DelayOffsetManager,
    SubscriptionGroupManager,
    TopicConfigManager,
)
from mqcore.store.metadata.persister import ConfigPersister
from mqcore.store.store_config import BrokerRole, MessageStoreConfig

__all__ = ["BrokerController"]

log = logging.getLogger("mq.broker")

FAST_PORT_DISTANCE = 2
"""RocketMQ's VIP channel listens on ``listenPort - 2``."""
_PORT_PAIR_ATTEMPTS = 50


class BrokerController:
    """One broker (master). Construct, ``await start()``, ``await shutdown()``."""

    def __init__(self, config: BrokerConfig, store_config: MessageStoreConfig) -> None:
        self.config = config
        self.store_config = store_config
        self.store = MessageStore(store_config)
        root = store_config.root
        self.topic_configs = TopicConfigManager(root)
        self.offsets = ConsumerOffsetManager(root)
        self.groups = SubscriptionGroupManager(root)
        self.delay_offsets = DelayOffsetManager(root)
        self.filters = ConsumerFilterManager(root)
        self.persister = ConfigPersister()
        """Writes config files off the loop, coalesced (heartbeats, the 60 s timer)."""
        self.topics = TopicService(
            self.topic_configs,
            config,
            offsets=self.offsets,
            persister=self.persister,
            request_register=self.request_register,
        )
        self._init_client_services()
        self.long_polling = LongPollingService()
        self.ha: HAService | None = None
        """The master's replication endpoint (None on a slave)."""
        self.ha_client: HAClient | None = None
        """The slave's connection to its master (None on a master)."""
        self.master_addr: str | None = None
        """A slave's master (remoting address), from the name server's answer."""
        server_tls = ServerTls.from_config(config)  # main, fast and HA ports alike
        if store_config.broker_role is BrokerRole.SLAVE:
            self.ha_client = HAClient(
                self.store,
                store_config,
                master_end=self._master_end,
                ssl_context=client_context_from_config(config),
            )
        else:
            self.ha = HAService(
                self.store.commit_log, store_config, host=config.bind_address, tls=server_tls
            )
        self.reput = ReputService(
            self.store,
            self.long_polling,
            after_dispatch=self.ha.notify_data if self.ha is not None else None,
        )
        limits = ChannelLimits.from_config(config)  # idle, half-sent frame, per-address cap
        self.server = RemotingServer(
            host=config.bind_address,
            port=config.listen_port,
            max_frame=_max_frame(store_config),
            limits=limits,
            tls=server_tls,
        )
        self.fast_server = RemotingServer(
            host=config.bind_address,
            port=max(0, config.listen_port - FAST_PORT_DISTANCE),
            max_frame=_max_frame(store_config),
            limits=limits,
            tls=server_tls,
        )
        self.acl_guard = AclGuard.from_config(
            config.acl_enable, config.plain_acl_file, store_config.root / "config"
        )
        if self.acl_guard is not None:  # ACL: one check at dispatch, on both ports
            self.server.dispatcher.pre_dispatch = self.acl_guard
            self.fast_server.dispatcher.pre_dispatch = self.acl_guard
        self.outer_api = BrokerOuterAPI(
            config,
            self.topics,
            broker_addr=lambda: self.broker_addr,
            ha_addr=lambda: self.ha_addr,
            on_registered=self.on_registered,
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._register_wanted: asyncio.Event | None = None
        self._register_force = False
        self._started = False
        self._start_hooks: list[Callable[[], object]] = []
        self._stop_hooks: list[Callable[[], object]] = []
        self._register_processors()
        self.slave_sync = slave_sync.register(self)
        if self.acl_guard is not None:
            self._start_hooks.append(self.acl_guard.start)
            self._stop_hooks.append(self.acl_guard.close)

    def _init_client_services(self) -> None:
        """Producer/consumer managers, the rebalance lock table and statistics."""
        self.producers = ProducerManager()
        self.consumers = ConsumerManager()
        self.locks = RebalanceLockManager(self.config.rebalance_lock_max_live_time)
        self.stats = BrokerStatsManager()

    def _register_processors(self) -> None:
        """Every request processor, on ``server`` and (minus PULL_MESSAGE) ``fast_server``."""
        # -- delay levels (SCHEDULE_TOPIC_XXXX) first: sends and send-backs rewrite into it --
        self.schedule_service = schedule.register(self)
        self.context = BrokerContext(
            config=self.config,
            store_config=self.store_config,
            store=self.store,
            topics=self.topics,
            topic_configs=self.topic_configs,
            groups=self.groups,
            offsets=self.offsets,
            delay_offsets=self.delay_offsets,
            filters=self.filters,
            persister=self.persister,
            producers=self.producers,
            consumers=self.consumers,
            locks=self.locks,
            long_polling=self.long_polling,
            stats=self.stats,
            schedule=self.schedule_service,
            ha=self.ha,
            ha_client=self.ha_client,
            store_host=lambda: (self.config.broker_ip1, self.server.port),
            broker_addr=lambda: self.broker_addr,
            request_register=self.request_register,
        )
        send.register(self)
        pull.register(self)
        offsets.register(self)
        client.register(self)
        query.register(self)
        admin.register(self)
        self._observe_stats()
        admin_group.register(self)
        admin_consumer.register(self)
        acl_admin.register(self)
        admin_store.register(self)
        # -- transactions: END_TRANSACTION and the check-back --
        self.transaction_service = end_transaction.register(self)
        # -- CONSUMER_SEND_MSG_BACK --
        send_back.register(self)
        reply_message.register(self)

    def _observe_stats(self) -> None:
        """The store reports its puts to the statistics, sampled once a second."""
        observe_store(self.store, self.stats.store_stats)

        def start() -> None:  # not returning the task: start hooks' awaitables are awaited
            self.schedule(1000, self.stats.sample, name="stats-sample")

        self.add_start_hook(start)

    # -- addresses ------------------------------------------------------------------------
    @property
    def servers(self) -> tuple[RemotingServer, RemotingServer]:
        """The main and the fast (VIP) port, where most processors serve alike."""
        return (self.server, self.fast_server)

    @property
    def broker_addr(self) -> str:
        """``brokerIP1:<real listen port>``: what is registered and stored as store host."""
        return f"{self.config.broker_ip1}:{self.server.port}"

    @property
    def fast_addr(self) -> str:
        return f"{self.config.broker_ip1}:{self.fast_server.port}"

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        """Lock and recover the store, load metadata, listen, register once (the result in
        ``outer_api.last_results``), start timers.

        Raises StoreError/ConfigError (bad store or config files) or OSError (ports)."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.store.load)
        try:
            self._load_metadata()
            self.store.start()
            self.reput.start(loop)
            await self._listen()
            await self._start_ha()
        except BaseException:
            if self.ha is not None:
                await self.ha.close()
            await self.fast_server.close()
            await self.server.close()
            self.reput.stop()
            self.store.shutdown()
            raise
        self.config.listen_port = self.server.port
        self._started = True
        self._register_wanted = asyncio.Event()
        self._register_force = True
        try:  # as 4.9.8's start(): once this returns, the name servers route to this broker
            await self.outer_api.register_all(force=True)
        except Exception:
            log.exception("registering with the name servers failed")
        self._tasks.append(asyncio.create_task(self._register_loop(), name="broker-register"))
        self.schedule(
            self.config.flush_consumer_offset_interval,
            self.persist_consumer_offsets,
            name="persist-consumer-offsets",
        )
        self.persister.start()
        self.schedule(60_000, self.request_persist_configs, name="persist-configs")
        for hook in self._start_hooks:
            await _maybe_await(hook())
        log.info(
            "broker %s (%s, cluster %s) started on %s, fast port %d",
            self.config.broker_name,
            self.config.broker_id,
            self.config.broker_cluster_name,
            self.broker_addr,
            self.fast_server.port,
        )

    async def _start_ha(self) -> None:
        """The master listens on ``haListenPort`` (``listenPort + 1`` unless set); the
        slave starts copying as soon as it knows its master's HA address."""
        if self.ha is not None:
            port = self.store_config.ha_listen_port
            if port is None:
                port = self.server.port + 1 if self.config.listen_port else 0
            await self.ha.start(port)
        if self.ha_client is not None:
            self.ha_client.start()

    @property
    def ha_addr(self) -> str:
        """What the name server hands this broker's slaves (brokerIP2 as RocketMQ)."""
        port = self.ha.port if self.ha is not None else self.server.port + 1
        return f"{self.config.broker_ip2 or self.config.broker_ip1}:{port}"

    def on_registered(self, master_addr: str | None, ha_server_addr: str | None) -> None:
        """A slave learns its master from the name server (as RocketMQ's
        registerBrokerAll): the HA address unless ``haMasterAddress`` fixes it."""
        if self.ha_client is None:
            return
        known, self.master_addr = self.master_addr, master_addr
        if master_addr and master_addr != known and self.slave_sync is not None:
            # A new master: copy its metadata now rather than at the next 10 s tick.
            task = asyncio.create_task(self.slave_sync.sync_all(), name="slave-sync-now")
            self._tasks.append(task)
        if not self.store_config.ha_master_address:
            self.ha_client.update_master_address(ha_server_addr)

    async def _master_end(self) -> int | None:
        """The master's commit log end (GET_BROKER_RUNTIME_INFO), for a slave ahead of it."""
        if self.master_addr is None:
            return None
        return await self.outer_api.commit_log_end(self.master_addr)

    def _load_metadata(self) -> None:
        self.topic_configs.load()
        self.offsets.load()
        self.groups.load()
        self.groups.ensure_system_groups()
        self.delay_offsets.load()
        self.filters.load()
        self.topics.init_system_topics()

    async def _listen(self) -> None:
        """Bind ``listenPort`` and ``listenPort - 2``; with port 0 find a free pair."""
        if self.config.listen_port != 0:
            self.server.port = self.config.listen_port
            self.fast_server.port = self.config.listen_port - FAST_PORT_DISTANCE
            if self.fast_server.port < 1:
                raise OSError(f"listenPort {self.config.listen_port} leaves no fast port")
            await self.server.start()
            try:
                await self.fast_server.start()
            except BaseException:
                await self.server.close()
                raise
            return
        last: OSError | None = None
        for _ in range(_PORT_PAIR_ATTEMPTS):
            self.fast_server.port = 0
            await self.fast_server.start()
            self.server.port = self.fast_server.port + FAST_PORT_DISTANCE
            try:
                await self.server.start()
                return
            except OSError as exc:
                last = exc
                await self.fast_server.close()
        raise OSError(f"no free port pair (port, port-2) found: {last}")

    async def shutdown(self) -> None:
        """Unregister, stop accepting, answer held pulls, flush, persist, unlock the store."""
        if not self._started:
            return
        self._started = False
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        for hook in self._stop_hooks:
            try:
                await _maybe_await(hook())
            except Exception:
                log.exception("broker stop hook failed")
        try:
            await self.outer_api.unregister_all()
        except Exception:
            log.exception("unregistering from the name servers failed")
        self.long_polling.shutdown()
        if self.ha_client is not None:
            await self.ha_client.close()
        if self.ha is not None:
            await self.ha.close()
        await self.fast_server.close()
        await self.server.close()
        await self.outer_api.close()
        self.reput.stop()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.persister.close)  # pending writes first
        try:
            self.persist_consumer_offsets()
            self.persist_configs()
        finally:
            await loop.run_in_executor(None, self.store.shutdown)
        log.info("broker %s on %s stopped", self.config.broker_name, self.broker_addr)

    @property
    def running(self) -> bool:
        return self._started

    # -- persistence ----------------------------------------------------------------------
    def persist_consumer_offsets(self) -> None:
        self.offsets.persist()

    def request_persist_configs(self) -> None:
        """The periodic write, off the loop: a large table takes long to encode and sync."""
        self.persister.request(
            self.topic_configs,
            self.groups,
            self.delay_offsets,
            self.filters,
        )

    def persist_configs(self) -> None:
        """Everything but the offsets (those have their own, faster, timer)."""
        self.topic_configs.persist()
        self.groups.persist()
        self.delay_offsets.persist()
        self.filters.persist()

    # -- name server registration ---------------------------------------------------------
    def request_register(self, force: bool = True) -> None:
        """Register with every name server soon (coalesced), e.g. after a topic change."""
        if self._register_wanted is None:
            return
        self._register_force = self._register_force or force
        self._register_wanted.set()

    async def _register_loop(self) -> None:
        assert self._register_wanted is not None
        period = self.config.register_name_server_period / 1000
        while True:
            await wait_event(self._register_wanted, period)
            self._register_wanted.clear()
            force, self._register_force = self._register_force, True
            try:
                await self.outer_api.register_all(force=force)
            except Exception:
                log.exception("registering with the name servers failed")

    # -- periodic tasks -------------------------------------------------------------------
    def schedule(
        self,
        interval_ms: int,
        fn: Callable[[], object],
        *,
        name: str | None = None,
        initial_delay_ms: int | None = None,
    ) -> asyncio.Task[None]:
        """Run ``fn`` (plain or coroutine function) every ``interval_ms`` until shutdown;
        a failing run is logged and the next one still happens."""

        async def loop() -> None:
            delay = interval_ms if initial_delay_ms is None else initial_delay_ms
            while True:
                await asyncio.sleep(delay / 1000)
                delay = interval_ms
                try:
                    await _maybe_await(fn())
                except Exception:
                    log.exception("periodic task %s failed", name or fn)

        task = asyncio.create_task(loop(), name=name)
        self._tasks.append(task)
        return task

    def add_start_hook(self, hook: Callable[[], object]) -> None:
        """``hook()`` (maybe async) runs at the end of :meth:`start` (services' timers)."""
        self._start_hooks.append(hook)

    def add_stop_hook(self, hook: Callable[[], object]) -> None:
        """``hook()`` (maybe async) runs first in :meth:`shutdown`."""
        self._stop_hooks.append(hook)


async def _maybe_await(value: object) -> None:
    if inspect.isawaitable(value):
        await value


def _max_frame(store_config: MessageStoreConfig) -> int:
    """Frames must carry a full batch plus headers."""
    return max(DEFAULT_MAX_FRAME, store_config.max_message_size + 1024 * 1024)

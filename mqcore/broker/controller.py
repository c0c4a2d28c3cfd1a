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
import logging
from collections.abc import Sequence

from mqcore.acl.guard import AclGuard
from mqcore.broker.append import Appender
from mqcore.broker.client_housekeeping import FILTER_CLEAN_INTERVAL_MS, ClientHousekeeping
from mqcore.broker.client_manager import ConsumerManager, ProducerManager
from mqcore.broker.config import BrokerConfig
from mqcore.broker.context import BrokerContext
from mqcore.broker.ha.master import HAService
from mqcore.broker.ha.slave import HAClient
from mqcore.broker.long_polling import LongPollingService
from mqcore.broker.metrics import metrics_endpoint
from mqcore.broker.outer_api import BrokerOuterAPI
from mqcore.broker.pop.service import PopService
from mqcore.broker.port_handlers import both_ports, main_port_only
from mqcore.broker.ports import listen_pair, server_pair
from mqcore.broker.processor import serve
from mqcore.broker.rebalance_lock import RebalanceLockManager
from mqcore.broker.registration import Registration
from mqcore.broker.replicas import ReplicasManager
from mqcore.broker.reput import ReputService
from mqcore.broker.schedule import ScheduleMessageService
from mqcore.broker.services import Service, ServiceSet, Timers, periodic
from mqcore.broker.slave_sync import SYNC_INITIAL_DELAY_MS, SYNC_INTERVAL_MS, SlaveSynchronize
from mqcore.broker.stats import BrokerStatsManager
from mqcore.broker.stats_history import DAY_SAMPLE_SECONDS, HOUR_SAMPLE_SECONDS, StatsHistory
from mqcore.broker.store_stats import observe_store
from mqcore.broker.timer import TimerMessageService
from mqcore.broker.timer.slave import TimerCheckpointSync
from mqcore.broker.topics import TopicService
from mqcore.broker.transaction import (
    TransactionalMessageBridge,
    TransactionalMessageCheckService,
    TransactionalMessageService,
)
from mqcore.common.loop_lag import LoopLagMonitor
from mqcore.errors import MQError
from mqcore.message.model import HostAddr
from mqcore.remoting import ChannelLimits, Processor, RemotingServer
from mqcore.remoting.tls import ServerTls, client_context_from_config
from mqcore.store.dispatcher import Arrival
from mqcore.store.epoch_file import EPOCH_FILE_NAME, EpochFileCache
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

_STATS_SAMPLE_MS = 1000


class BrokerController:
    """One broker. Construct, ``await start()``, ``await shutdown()``; change role at
    run time with :meth:`become_master` / :meth:`become_slave`."""

    def __init__(self, config: BrokerConfig, store_config: MessageStoreConfig) -> None:
        self.config = config
        self.store_config = store_config
        # -- the store and its metadata ---------------------------------------------------
        self.store = MessageStore(store_config)
        root = store_config.root
        self.topic_configs = TopicConfigManager(root)
        self.offsets = ConsumerOffsetManager(root)
        self.groups = SubscriptionGroupManager(root)
        self.delay_offsets = DelayOffsetManager(root)
        self.filters = ConsumerFilterManager(root)
        self.registration = Registration(
            config.register_name_server_period, force_register=config.force_register
        )
        """Re-registration with the name servers, coalesced and periodic."""
        self.persister = ConfigPersister()
        """Writes config files off the loop, coalesced (heartbeats, the 60 s timer)."""
        self.topics = TopicService(
            self.topic_configs,
            config,
            offsets=self.offsets,
            persister=self.persister,
            request_register=self.registration.request,
            register_topics=self.registration.request_topics,
        )
        # -- clients and statistics -------------------------------------------------------
        self.producers = ProducerManager()
        self.consumers = ConsumerManager()
        self.locks = RebalanceLockManager(config.rebalance_lock_max_live_time)
        self.stats = BrokerStatsManager()
        self.stats_history = StatsHistory(self.stats, lambda: config.broker_cluster_name)
        observe_store(self.store, self.stats.store_stats)
        self.loop_lag = LoopLagMonitor(server=f"broker {config.broker_name}")
        """Every request is served on one loop: how late it runs what is due."""
        self.housekeeping = ClientHousekeeping(
            config, self.producers, self.consumers, self.filters, self.persister
        )
        # -- replication: both ends exist; the role says which one runs -------------------
        server_tls = ServerTls.from_config(config)  # main, fast and HA ports alike
        controller_mode = config.enable_controller_mode
        if controller_mode:  # a slave until a controller says otherwise
            store_config.broker_role = BrokerRole.SLAVE
            config.broker_id = max(config.broker_id, 1)
        self.ha = HAService(
            self.store.commit_log,
            store_config,
            host=config.bind_address,
            tls=server_tls,
            identities=controller_mode,
        )
        """The master's replication endpoint (listening while this broker is a master)."""
        self.ha_client = HAClient(
            self.store,
            store_config,
            master_end=self._master_end,
            ssl_context=client_context_from_config(config),
            identity=lambda: self.replicas.broker_id if self.replicas is not None else None,
        )
        """The slave's connection to its master (running while this broker is a slave)."""
        self.master_addr: str | None = None
        """A slave's master (remoting address), from the name server or a role change."""
        self._ha_port = config.listen_port + 1 if config.listen_port else 0
        """Where the HA service listens unless ``haListenPort`` says: ``listenPort + 1``,
        or a free port; kept from the first start so a role change keeps the address."""
        # -- the one append path, dispatch and long polling -------------------------------
        self.appender = Appender(self.store, store_config, self.stats, self.ha)
        self.long_polling = LongPollingService()
        self.reput = ReputService(
            self.store,
            self.long_polling,
            after_dispatch=self.ha.notify_data,
            on_arrivals=self._learn_replicated_topics,
        )
        # -- servers and the name servers -------------------------------------------------
        limits = ChannelLimits.from_config(config)  # idle, half-sent frame, per-address cap
        self.server, self.fast_server = server_pair(
            config.bind_address, config.listen_port, store_config, limits, server_tls
        )
        """The main port and the fast (VIP) port two below it."""
        self.acl_guard = AclGuard.from_config(
            config.acl_enable, config.plain_acl_file, store_config.root / "config"
        )
        self.outer_api = BrokerOuterAPI(
            config,
            self.topics,
            broker_addr=lambda: self.broker_addr,
            ha_addr=lambda: self.ha_addr,
            on_registered=self.on_registered,
        )
        # -- what runs: broker-wide, and per role -----------------------------------------
        self.timers = Timers()
        master_timers, slave_timers = Timers(), Timers()
        self.schedule_service = ScheduleMessageService(
            self.store,
            store_config,
            self.delay_offsets,
            appender=self.appender,
            persister=self.persister,
            every=master_timers.every,
        )
        self.timer_service = TimerMessageService(
            self.store,
            store_config,
            appender=self.appender,
            topics=self.topics,
            every=master_timers.every,
        )
        """RocketMQ 5's timer messages: the send rewrite and the wheel's deliveries."""
        bridge = TransactionalMessageBridge(
            self.store, self.offsets, self.topics, self._store_host, self.appender
        )
        self.transaction_service = TransactionalMessageService(bridge)
        self.transaction_check = TransactionalMessageCheckService(
            self.transaction_service,
            config=config,
            store_config=store_config,
            producers=self.producers,
            persister=self.persister,
            every=master_timers.every,
        )
        self.pop = PopService(
            config,
            self.store,
            self.appender,
            self.topics,
            self.offsets,
            self.groups,
            self._store_host,
            master_timers,
            self.persister,
        )
        """RocketMQ 5's POP state; its revive service runs on a master."""
        self.slave_sync = SlaveSynchronize(
            self.outer_api.client,
            lambda: self.master_addr,  # None until known, or without a master
            self.topic_configs,
            self.offsets,
            self.delay_offsets,
            self.groups,
            own_addr=lambda: self.broker_addr,
            on_topics_taken=self._learn_stored_topics,
            persister=self.persister,
        )
        self.timer_checkpoint_sync = TimerCheckpointSync(
            self.outer_api.client,
            lambda: self.master_addr,
            store_config.timer_check_path,
            own_addr=lambda: self.broker_addr,
            local_running=lambda: self.timer_service.running,
        )
        """A slave's copy of its master's timer checkpoint (RocketMQ 5)."""
        self.epochs = EpochFileCache(store_config.root / EPOCH_FILE_NAME)
        """The master epochs this log was written in (controller mode)."""
        self.replicas: ReplicasManager | None = None
        """Controller mode's dealings with the controllers (None without it)."""
        if controller_mode:
            self.replicas = ReplicasManager(
                config,
                store_config,
                client=self.outer_api.client,
                ha=self.ha,
                epochs=self.epochs,
                broker_addr=lambda: self.broker_addr,
                max_offset=lambda: self.store.max_phy_offset,
                become_master=self.become_master,
                become_slave=self._follow_master,
                stamp_epoch=self.topics.stamp_epoch,
            )
        self.master_services = ServiceSet(
            "master",
            [
                Service("pop-revive", self.pop.start, self.pop.stop),  # first: before pops
                Service("ha-service", self._listen_ha, self.ha.close),
                Service("schedule", self.schedule_service.start, self.schedule_service.stop),
                Service("timer", self.timer_service.start, self.timer_service.stop),
                Service("transaction-check", self.transaction_check.start),
            ],
            master_timers,
        )
        """What a master runs: replication to slaves, delay-level deliveries and the
        transaction check-back (4.9.8 starts the last two on masters only)."""
        self.slave_services = ServiceSet(
            "slave",
            [
                Service("learn-stored-topics", self._learn_stored_topics),
                Service("ha-client", self.ha_client.start, self.ha_client.close),
                periodic(
                    slave_timers,
                    "slave-sync",
                    SYNC_INTERVAL_MS,
                    self.slave_sync.sync_all,
                    initial_delay_ms=SYNC_INITIAL_DELAY_MS,
                ),
                periodic(
                    slave_timers,
                    "timer-checkpoint-sync",
                    SYNC_INTERVAL_MS,
                    self.timer_checkpoint_sync.sync,
                    initial_delay_ms=SYNC_INITIAL_DELAY_MS,
                ),
            ],
            slave_timers,
        )
        """What a slave runs: replication from its master and the metadata copy."""
        self._role_change = asyncio.Lock()
        self._started = False
        # -- one context, and every request handler on the ports --------------------------
        self.context = BrokerContext(
            config=config,
            store_config=store_config,
            store=self.store,
            appender=self.appender,
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
            stats_history=self.stats_history,
            loop_lag=self.loop_lag,
            schedule_service=self.schedule_service,
            timer_service=self.timer_service,
            transaction_service=self.transaction_service,
            pop=self.pop,
            ha=self.ha,
            ha_client=self.ha_client,
            acl_guard=self.acl_guard,
            replicas=self.replicas,
            store_host=self._store_host,
            broker_addr=lambda: self.broker_addr,
            request_register=self.registration.request,
        )
        self._serve()
        self.metrics = metrics_endpoint(self.context, self.servers)
        """The Prometheus endpoint (``metricsExporterType=PROM``), None without it."""
        self.services = ServiceSet("broker", self._broker_services(), self.timers)
        """What every broker runs, whatever its role."""

    def _serve(self) -> None:
        """Every processor module's handlers on both ports (pulls on the main one only, as
        RocketMQ's fast port has none); the ACL check and close listener on each."""
        serve(self.servers, both_ports(self.context))
        serve([self.server], main_port_only(self.context))
        if self.replicas is not None:
            serve(self.servers, self.replicas.handlers())
        for server in self.servers:
            server.add_close_listener(self.housekeeping.channel_closed)
            if self.acl_guard is not None:  # ACL: one check at dispatch, on both ports
                server.dispatcher.pre_dispatch = self.acl_guard

    def handlers(self) -> dict[int, Processor]:
        """Request code -> handler of every request both ports serve (not pulls), built
        anew over this broker's context: what a front door in this process hands its
        requests to (the gRPC access point, :mod:`mqcore.proxy`), past no ACL guard."""
        return both_ports(self.context)

    def _broker_services(self) -> list[Service]:
        """The loop-lag monitor (first, so it sees the others' stalls), registration,
        the periodic persistence, client scans, statistics samples and the metrics
        endpoint (``metricsExporterType=PROM``)."""
        t, c = self.timers, self.config
        services = [
            Service("loop-lag-monitor", self.loop_lag.start, self.loop_lag.stop),
            Service("name-server-registration", self._start_registration),
            periodic(
                t,
                "persist-consumer-offsets",
                c.flush_consumer_offset_interval,
                self.persist_consumer_offsets_in_thread,
            ),
            periodic(t, "persist-configs", 60_000, self.request_persist_configs),
            periodic(t, "client-scan", c.client_scan_interval, self.housekeeping.scan_not_active),
            periodic(t, "filter-clean", FILTER_CLEAN_INTERVAL_MS, self.housekeeping.clean_filters),
            periodic(t, "stats-sample", _STATS_SAMPLE_MS, self.stats.sample_in_slices),
            periodic(
                t,
                "stats-hour",
                HOUR_SAMPLE_SECONDS * 1000,
                self.stats_history.sample_hour_ring_in_slices,
            ),
            periodic(
                t,
                "stats-day",
                DAY_SAMPLE_SECONDS * 1000,
                self.stats_history.sample_day_ring_in_slices,
            ),
        ]
        if self.metrics is not None:  # bound at start; answers once the broker is up
            services.append(Service("metrics-exporter", self.metrics.serve, self.metrics.stop))
        if self.acl_guard is not None:
            services.append(Service("acl-watch", self.acl_guard.start, self.acl_guard.close))
        if self.replicas is not None:
            services += self.replicas.services(t)
        return services

    def _start_registration(self) -> None:
        run = self.registration.run(
            lambda force: self.outer_api.register_all(force=force),
            self.outer_api.register_topics,
        )
        self.timers.spawn(run, name="broker-register")

    def _store_host(self) -> HostAddr:
        return (self.config.broker_ip1, self.server.port)

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
        """Lock and recover the store, load metadata, listen, start the role's services,
        register once (the result in ``outer_api.last_results``), start the rest.

        Raises StoreError/ConfigError (bad store or config files) or OSError (ports)."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.store.load)
        try:
            self._load_metadata()
            self.epochs.load()
            self.store.start()
            self.reput.start(loop)
            if self.metrics is not None:  # its port, before the broker is reachable
                self.metrics.bind()
            await listen_pair(self.server, self.fast_server, self.config.listen_port)
            await self._role_services().start()
        except BaseException:
            if self.metrics is not None:
                self.metrics.close()
            await self._stop_role_services()
            await self.fast_server.close()
            await self.server.close()
            self.reput.stop()
            self.store.shutdown()
            raise
        self.config.listen_port = self.server.port
        self._started = True
        self.registration.arm()
        try:  # as 4.9.8's start(): once this returns, the name servers route to this broker
            await self.outer_api.register_all(force=True)
        except Exception:
            log.exception("registering with the name servers failed")
        self.persister.start()
        await self.services.start()
        log.info(
            "broker %s (%s, cluster %s) started on %s, fast port %d",
            self.config.broker_name,
            self.config.broker_id,
            self.config.broker_cluster_name,
            self.broker_addr,
            self.fast_server.port,
        )

    def _role_services(self) -> ServiceSet:
        """The set of services the configured role runs."""
        if self.store_config.broker_role is BrokerRole.SLAVE:
            return self.slave_services
        return self.master_services

    async def _stop_role_services(self) -> None:
        """Whichever role's services run (a set not running has nothing to stop)."""
        await self.master_services.stop()
        await self.slave_services.stop()

    @property
    def running_services(self) -> list[str]:
        """The names of the services running now: the broker-wide ones, then the role's."""
        return [
            *self.services.running_names,
            *self.master_services.running_names,
            *self.slave_services.running_names,
        ]

    async def _listen_ha(self) -> None:
        """The master listens on ``haListenPort`` (``listenPort + 1`` unless set)."""
        port = self.store_config.ha_listen_port
        await self.ha.start(self._ha_port if port is None else port)
        self._ha_port = self.ha.port

    @property
    def ha_addr(self) -> str:
        """What the name server hands this broker's slaves (brokerIP2 as RocketMQ)."""
        port = self.ha.port if self.ha.listening else self.server.port + 1
        return f"{self.config.broker_ip2 or self.config.broker_ip1}:{port}"

    # -- role changes -----------------------------------------------------------------------
    async def become_master(self, role: BrokerRole = BrokerRole.SYNC_MASTER) -> None:
        """Take over as the master of this broker name (brokerId 0), at once.

        The slave's services stop (no more replicated bytes arrive), every replicated
        record is dispatched, so the consume queues and the next queue offsets continue
        where the old master stopped; then the master's services start and the broker
        registers again. ``role`` is SYNC_MASTER (RocketMQ 5's promoted master) unless
        given."""
        if role is BrokerRole.SLAVE:
            raise ValueError("become_master needs a master role")
        async with self._role_change:
            if self.store_config.broker_role is not BrokerRole.SLAVE:
                self.store_config.broker_role = role
                return
            await self.slave_services.stop()
            self.store.dispatch_replicated()
            self.reput.run()
            self.master_addr = None
            self.store_config.broker_role = role
            self.config.broker_id = 0
            await self.master_services.start()
            log.warning("broker %s is now the master (%s)", self.config.broker_name, role.value)
        self.registration.request(force=True)

    async def become_slave(
        self,
        broker_id: int = 1,
        master_addr: str | None = None,
        master_ha_addr: str | None = None,
    ) -> None:
        """Follow another master as ``broker_id``, at once: sends are refused from now
        on, the master's services stop (slaves are disconnected, the schedule service
        records its progress), and replication starts from this log's end, from
        ``master_ha_addr`` or from what the name server names as master."""
        if broker_id <= 0:
            raise ValueError("a slave's brokerId is > 0")
        async with self._role_change:
            if self.store_config.broker_role is not BrokerRole.SLAVE:
                self.store_config.broker_role = BrokerRole.SLAVE  # the store refuses puts now
                await self.master_services.stop()
                self.reput.run()
            self.config.broker_id = broker_id
            if master_addr is not None:
                self.master_addr = master_addr
            if master_ha_addr is not None and not self.store_config.ha_master_address:
                self.ha_client.update_master_address(master_ha_addr)
            await self.slave_services.start()
            log.warning("broker %s is now a slave (id %d)", self.config.broker_name, broker_id)
        self.registration.request(force=True)

    def on_registered(self, master_addr: str | None, ha_server_addr: str | None) -> None:
        """A slave learns its master from the name server (as RocketMQ's
        registerBrokerAll): the HA address unless ``haMasterAddress`` fixes it. In
        controller mode the controller names the master, not the name server."""
        if self.store_config.broker_role is not BrokerRole.SLAVE or self.replicas is not None:
            return
        known, self.master_addr = self.master_addr, master_addr
        if master_addr and master_addr != known and self.slave_services.running:
            # A new master: copy its metadata now rather than at the next 10 s tick.
            self.slave_services.timers.spawn(self.slave_sync.sync_all(), name="slave-sync-now")
        if not self.store_config.ha_master_address:
            self.ha_client.update_master_address(ha_server_addr)

    # -- a slave serves every record it holds ---------------------------------------------
    def _learn_replicated_topics(self, arrivals: Sequence[Arrival]) -> None:
        """On a slave, the topics of replicated records are served as soon as they are
        dispatched, whether or not the metadata sync has copied them yet: a message
        acknowledged by SYNC_MASTER stays readable if its master dies right after."""
        if self.store_config.broker_role is BrokerRole.SLAVE:
            self.topics.learn_queues((a.topic, a.queue_id) for a in arrivals)

    def _learn_stored_topics(self) -> None:
        """Every topic this slave's store holds queues of (at start, and after the sync
        took a master's table that may predate the newest of them)."""
        if self.store_config.broker_role is BrokerRole.SLAVE:
            self.topics.learn_queues((cq.topic, cq.queue_id) for cq in self.store.queues.all())

    async def _master_end(self) -> int | None:
        """Where a slave's log may go on from its master's: the master's end
        (GET_BROKER_RUNTIME_INFO), or in controller mode where both logs' epochs agree."""
        if self.master_addr is None:
            return None
        if self.replicas is not None:
            return await self.replicas.consistent_point(self.master_addr)
        return await self.outer_api.commit_log_end(self.master_addr)

    async def _follow_master(self, broker_id: int, master_addr: str | None) -> None:
        """Controller mode: follow ``master_addr``, replicating from where it says it
        serves (its runtime info) rather than waiting for the name server to say."""
        ha_addr = None
        if master_addr is not None:
            try:
                ha_addr = await self.outer_api.ha_server_addr(master_addr)
            except (OSError, TimeoutError, MQError) as exc:
                log.info("HA address of %s unknown yet (%s)", master_addr, exc)
        await self.become_slave(broker_id, master_addr, ha_addr)

    def _load_metadata(self) -> None:
        self.topic_configs.load()
        self.offsets.load()
        self.groups.load()
        self.groups.ensure_system_groups()
        self.delay_offsets.load()
        self.filters.load()
        self.topics.init_system_topics()

    async def shutdown(self) -> None:
        """Stop the services, unregister, stop accepting, answer held pulls, flush,
        persist, unlock the store."""
        if not self._started:
            return
        self._started = False
        await self.services.stop()
        await self._stop_role_services()
        try:
            await self.outer_api.unregister_all()
        except Exception:
            log.exception("unregistering from the name servers failed")
        self.long_polling.shutdown()
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
        """Write consumerOffset.json now, on the caller's thread (shutdown)."""
        self.offsets.persist()

    async def persist_consumer_offsets_in_thread(self) -> None:
        """The periodic write, off the loop: with 10,000 groups the file is ~1 MB and
        encoding it on the loop held every request for 0.3-0.8 s. A thread of its own
        rather than the config persister's, which writes a file at most once a second:
        ``flushConsumerOffsetInterval`` may be shorter, and each period's write must
        happen in that period."""
        await asyncio.to_thread(self.offsets.persist)

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

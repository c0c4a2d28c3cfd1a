"""The in-process variant: a name server and brokers in the test's own event loop, on
ephemeral loopback ports, so that tests can configure short expiry times and look at
broker state directly."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from mqcore.broker.config import BrokerConfig
from mqcore.broker.controller import BrokerController
from mqcore.common.metadata import TopicConfig
from mqcore.controller.server import ControllerConfig
from mqcore.namesrv.config import NamesrvConfig
from mqcore.namesrv.controller import NamesrvController
from mqcore.store.store_config import BrokerRole, MessageStoreConfig
from tests.support.polling import until
from tests.support.processes import restartable_broker_port

BROKER_NAME = "broker-a"


def namesrv_controller(kv_config_path: Path, **overrides: Any) -> NamesrvController:
    """A name server on 127.0.0.1 (port 0); ``overrides`` are NamesrvConfig fields."""
    return NamesrvController(
        NamesrvConfig(
            listen_port=0,
            bind_address="127.0.0.1",
            kv_config_path=str(kv_config_path),
            **overrides,
        )
    )


def broker_controller(
    store_dir: Path,
    namesrv: str | None = None,
    *,
    name: str = BROKER_NAME,
    store: dict[str, Any] | None = None,
    **overrides: Any,
) -> BrokerController:
    """A broker on 127.0.0.1 (port 0) with a small store in ``store_dir``; ``store``
    overrides MessageStoreConfig fields (e.g. ``flush_disk_type``), ``overrides``
    BrokerConfig fields."""
    config = BrokerConfig(
        **{
            "broker_name": name,
            "broker_ip1": "127.0.0.1",
            "bind_address": "127.0.0.1",
            "listen_port": 0,
            "namesrv_addr": namesrv,
            **overrides,
        }
    )
    store_config = MessageStoreConfig(
        **{
            "store_path_root_dir": str(store_dir),
            "mapped_file_size_commit_log": 1024 * 1024,
            "mapped_file_size_consume_queue": 20 * 1000,
            "max_hash_slot_num": 1000,
            "max_index_num": 4000,
            **(store or {}),
        }
    )
    return BrokerController(config, store_config)


def free_port() -> int:
    """A port free a moment ago (for a Raft address: PySyncObj binds what it is given)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def namesrv_hosting_controller(tmp_path: Path, **controller: Any) -> NamesrvController:
    """A name server that is also a one-node controller (``enableControllerInNamesrv``),
    its Raft journal under ``tmp_path/controller``; ``controller`` overrides
    ControllerConfig fields. Not started."""
    return NamesrvController(
        NamesrvConfig(
            listen_port=0,
            bind_address="127.0.0.1",
            kv_config_path=str(tmp_path / "ns" / "kv.json"),
            enable_controller_in_namesrv=True,
        ),
        ControllerConfig(
            **{
                "controller_d_leger_peers": f"n0-127.0.0.1:{free_port()}",
                "controller_store_path": str(tmp_path / "controller"),
                "scan_not_active_broker_interval": 200,
                **controller,
            }
        ),
    )


def controller_replica(
    store_dir: Path, namesrv: str, *, heartbeat_timeout_ms: int = 1500, **overrides: Any
) -> BrokerController:
    """A broker-a replica in controller mode (the controller at ``namesrv``) with short
    periods: the controller, not its config, makes it master or slave."""
    return broker_controller(
        store_dir,
        namesrv,
        **{
            "enable_controller_mode": True,
            "controller_addr": namesrv,
            "broker_heartbeat_interval": 200,
            "sync_broker_metadata_period": 300,
            "check_sync_state_set_period": 300,
            "controller_heart_beat_timeout_mills": heartbeat_timeout_ms,
            "register_name_server_period": 1000,
            **overrides,
        },
    )


@asynccontextmanager
async def running_namesrv(tmp_path: Path, **overrides: Any) -> AsyncIterator[NamesrvController]:
    """A started name server (files under ``tmp_path/namesrv``), shut down after."""
    namesrv = namesrv_controller(tmp_path / "namesrv" / "kvConfig.json", **overrides)
    await namesrv.start()
    try:
        yield namesrv
    finally:
        await namesrv.shutdown()


@asynccontextmanager
async def running_broker(
    tmp_path: Path,
    namesrv: str | None = None,
    *,
    store: dict[str, Any] | None = None,
    **overrides: Any,
) -> AsyncIterator[BrokerController]:
    """A started broker-a with its store under ``tmp_path/store``, shut down after."""
    broker = broker_controller(tmp_path / "store", namesrv, store=store, **overrides)
    await broker.start()
    try:
        yield broker
    finally:
        await broker.shutdown()


@asynccontextmanager
async def running_slave(
    tmp_path: Path,
    namesrv: str,
    *,
    store: dict[str, Any] | None = None,
    **overrides: Any,
) -> AsyncIterator[BrokerController]:
    """A started slave (brokerId 1) of broker-a, its store under ``tmp_path/store``, that
    learns its master from the name server; shut down after."""
    slave_store = {"broker_role": BrokerRole.SLAVE, **(store or {})}
    async with running_broker(
        tmp_path, namesrv, broker_id=1, store=slave_store, **overrides
    ) as slave:
        yield slave


@asynccontextmanager
async def running_ha_pair(
    tmp_path: Path,
    *,
    master_store: dict[str, Any] | None = None,
    **overrides: Any,
) -> AsyncIterator[tuple[NamesrvController, BrokerController, BrokerController]]:
    """A name server, a master broker-a (under ``tmp_path/m``; ``master_store``: its
    MessageStoreConfig overrides) and its slave (under ``tmp_path/s``); ``overrides`` are
    both brokers' BrokerConfig fields. The slave may not have connected yet."""
    async with (
        running_namesrv(tmp_path) as namesrv,
        running_broker(
            tmp_path / "m", namesrv.listen_address, store=master_store, **overrides
        ) as master,
        running_slave(tmp_path / "s", namesrv.listen_address, **overrides) as slave,
    ):
        yield namesrv, master, slave


LIVE_STORE = {
    "mapped_file_size_commit_log": 4 * 1024 * 1024,
    "mapped_file_size_consume_queue": 20 * 10_000,
}
"""Store overrides for tests that send more: 4 MiB commit log files, 10,000-entry queues."""


class Closable(Protocol):
    async def shutdown(self) -> None: ...


C = TypeVar("C", bound=Closable)


@dataclass
class LiveCluster:
    """A name server and named brokers (their stores in ``tmp/<name>``) the test adds,
    restarts and stops as it goes. Every broker gets ``store`` (MessageStoreConfig) and
    ``settings`` (BrokerConfig) overrides; clients the test hands to :meth:`track` are
    shut down before the servers. ``restartable``: brokers listen below the ephemeral
    range, so that nothing takes the port of one that restarts."""

    tmp: Path
    store: dict[str, Any] = field(default_factory=lambda: dict(LIVE_STORE))
    settings: dict[str, Any] = field(default_factory=dict)
    restartable: bool = False
    namesrv: NamesrvController | None = None
    brokers: dict[str, BrokerController] = field(default_factory=dict)
    clients: list[Closable] = field(default_factory=list)

    @property
    def addr(self) -> str:
        assert self.namesrv is not None
        return self.namesrv.listen_address

    @property
    def broker(self) -> BrokerController:
        """The first broker (the only one of most tests)."""
        return next(iter(self.brokers.values()))

    def store_dir(self, name: str = BROKER_NAME) -> Path:
        """Where broker ``name`` keeps its store (also once it is stopped)."""
        return self.tmp / name

    async def start(self, *broker_names: str) -> LiveCluster:
        self.namesrv = namesrv_controller(self.tmp / "kv.json")
        await self.namesrv.start()
        for name in broker_names:
            await self.add_broker(name)
        return self

    @asynccontextmanager
    async def running(self, *broker_names: str) -> AsyncIterator[LiveCluster]:
        """:meth:`start`, and :meth:`stop` after the ``async with``."""
        try:
            yield await self.start(*broker_names)
        finally:
            await self.stop()

    async def add_broker(self, name: str, *, port: int = 0, **overrides: Any) -> BrokerController:
        """Start broker ``name`` (on ``port``; 0: an ephemeral one) with the cluster's
        settings and ``overrides``; wait until the name server has it."""
        if port == 0 and self.restartable:
            port = restartable_broker_port()
        broker = broker_controller(
            self.store_dir(name),
            self.addr,
            name=name,
            store=self.store,
            **{
                "log_dir": str(self.tmp / "logs"),
                "listen_port": port,
                **self.settings,
                **overrides,
            },
        )
        await broker.start()
        self.brokers[name] = broker
        assert self.namesrv is not None
        routes = self.namesrv.routes

        def registered() -> bool:
            if broker.broker_addr not in routes.live_broker_addrs():
                return False
            if not broker.config.auto_create_topic_enable:
                return True
            route = routes.pick_topic_route_data("TBW102")
            return route is not None and name in {b.broker_name for b in route.broker_datas}

        await until(registered, 15.0, f"{name} registered")
        return broker

    async def restart_broker(
        self, name: str = BROKER_NAME, /, **overrides: Any
    ) -> BrokerController:
        """A clean stop and a new broker on the same store and port, with the cluster's
        settings and ``overrides``."""
        old = self.brokers.pop(name)
        port = old.server.port
        await old.shutdown()
        return await self.add_broker(name, port=port, **overrides)

    def track(self, client: C) -> C:
        """``client`` is shut down at :meth:`stop`, before the servers."""
        self.clients.append(client)
        return client

    async def stop(self) -> None:
        """Stop the clients, the brokers and the name server (again: nothing happens)."""
        for client in self.clients:
            await client.shutdown()
        self.clients.clear()
        for broker in self.brokers.values():
            await broker.shutdown()
        self.brokers.clear()
        if self.namesrv is not None:
            await self.namesrv.shutdown()
            self.namesrv = None

    async def create_topic(self, topic: str, queues: int = 4) -> None:
        """``topic`` with ``queues`` queues on every broker, once the route has them all."""
        for broker in self.brokers.values():
            broker.topics.update(TopicConfig(topic, queues, queues))
        await self.wait_route(topic, len(self.brokers))

    async def wait_route(self, topic: str, brokers: int = 1) -> None:
        assert self.namesrv is not None
        routes = self.namesrv.routes

        def ready() -> bool:
            route = routes.pick_topic_route_data(topic)
            return route is not None and len(route.queue_datas) >= brokers

        await until(ready, 15.0, f"route of {topic}")

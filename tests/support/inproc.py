"""The in-process variant: a name server and brokers in the test's own event loop, on
ephemeral loopback ports, so that tests can configure short expiry times and look at
broker state directly."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqcore.broker.config import BrokerConfig
from mqcore.broker.controller import BrokerController
from mqcore.namesrv.config import NamesrvConfig
from mqcore.namesrv.controller import NamesrvController
from mqcore.store.store_config import MessageStoreConfig
from tests.support.polling import until

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


LIVE_STORE = {
    "mapped_file_size_commit_log": 4 * 1024 * 1024,
    "mapped_file_size_consume_queue": 20 * 10_000,
}
"""Store overrides for tests that send more: 4 MiB commit log files, 10,000-entry queues."""


@dataclass
class LiveCluster:
    """A name server and named brokers the test adds and stops as it goes."""

    tmp: Path
    namesrv: NamesrvController | None = None
    brokers: dict[str, BrokerController] = field(default_factory=dict)

    @property
    def addr(self) -> str:
        assert self.namesrv is not None
        return self.namesrv.listen_address

    async def start(self, *broker_names: str) -> LiveCluster:
        self.namesrv = namesrv_controller(self.tmp / "kv.json")
        await self.namesrv.start()
        for name in broker_names:
            await self.add_broker(name)
        return self

    async def add_broker(self, name: str) -> BrokerController:
        broker = broker_controller(
            self.tmp / name, self.addr, name=name, store=LIVE_STORE, log_dir=str(self.tmp / "logs")
        )
        await broker.start()
        self.brokers[name] = broker
        assert self.namesrv is not None
        routes = self.namesrv.routes

        def registered() -> bool:
            route = routes.pick_topic_route_data("TBW102")
            return route is not None and name in {b.broker_name for b in route.broker_datas}

        await until(registered, 15.0, f"{name} registered")
        return broker

    async def stop(self) -> None:
        for broker in self.brokers.values():
            await broker.shutdown()
        self.brokers.clear()
        if self.namesrv is not None:
            await self.namesrv.shutdown()

    async def wait_route(self, topic: str, brokers: int = 1) -> None:
        assert self.namesrv is not None
        routes = self.namesrv.routes

        def ready() -> bool:
            route = routes.pick_topic_route_data(topic)
            return route is not None and len(route.queue_datas) >= brokers

        await until(ready, 15.0, f"route of {topic}")

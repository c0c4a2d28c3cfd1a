"""An in-process name server and brokers on 127.0.0.1 port 0 for client integration tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mqcore.broker.config import BrokerConfig
from mqcore.broker.controller import BrokerController
from mqcore.client.api import MQClientAPI
from mqcore.message import MessageExt
from mqcore.namesrv.config import NamesrvConfig
from mqcore.namesrv.controller import NamesrvController
from mqcore.protocol.bodies import MessageQueue
from mqcore.store.store_config import MessageStoreConfig


async def until(cond: Callable[[], bool], timeout: float = 15.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or cond}")
        await asyncio.sleep(0.02)


@dataclass
class LiveCluster:
    tmp: Path
    namesrv: NamesrvController | None = None
    brokers: dict[str, BrokerController] = field(default_factory=dict)

    @property
    def addr(self) -> str:
        assert self.namesrv is not None
        return self.namesrv.listen_address

    async def start(self, *broker_names: str) -> LiveCluster:
        self.namesrv = NamesrvController(
            NamesrvConfig(
                listen_port=0, bind_address="127.0.0.1", kv_config_path=str(self.tmp / "kv.json")
            )
        )
        await self.namesrv.start()
        for name in broker_names:
            await self.add_broker(name)
        return self

    async def add_broker(self, name: str) -> BrokerController:
        broker = BrokerController(
            BrokerConfig(
                listen_port=0,
                bind_address="127.0.0.1",
                broker_ip1="127.0.0.1",
                broker_name=name,
                namesrv_addr=self.addr,
                log_dir=str(self.tmp / "logs"),
            ),
            MessageStoreConfig(
                store_path_root_dir=str(self.tmp / name),
                mapped_file_size_commit_log=4 * 1024 * 1024,
                mapped_file_size_consume_queue=20 * 10_000,
                max_hash_slot_num=1000,
                max_index_num=4000,
            ),
        )
        await broker.start()
        self.brokers[name] = broker
        assert self.namesrv is not None
        routes = self.namesrv.routes
        await until(
            lambda: (
                routes.pick_topic_route_data("TBW102") is not None
                and name
                in {b.broker_name for b in routes.pick_topic_route_data("TBW102").broker_datas}
            ),  # type: ignore[union-attr]
            what=f"{name} registered",
        )
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

        await until(ready, what=f"route of {topic}")


async def pull_all(api: MQClientAPI, mq: MessageQueue, group: str = "check") -> list[MessageExt]:
    """Every message of one queue, through the api layer (no long polling)."""
    out: list[MessageExt] = []
    offset = 0
    while True:
        result = await api.pull(mq, group=group, offset=offset, suspend=False, timeout=5)
        if not result.messages and result.next_begin_offset == offset:
            return out
        out.extend(result.messages)
        if result.next_begin_offset <= offset:
            return out
        offset = result.next_begin_offset


async def pull_topic(api: MQClientAPI, topic: str) -> list[MessageExt]:
    await api.instance.update_route(topic)
    out: list[MessageExt] = []
    for mq in await api.instance.subscribe_queues(topic):
        out.extend(await pull_all(api, mq))
    return out

"""A name server and a broker in this process, on ephemeral loopback ports, plus a small
client that records the requests the broker sends it (NOTIFY_CONSUMER_IDS_CHANGED,
RESET_CONSUMER_CLIENT_OFFSET). Used by the client, query and admin integration tests:
in-process so that tests can configure short expiry times and look at broker state.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mqcore.broker.config import BrokerConfig
from mqcore.broker.controller import BrokerController
from mqcore.message.model import MessageExt
from mqcore.namesrv.config import NamesrvConfig
from mqcore.namesrv.controller import NamesrvController
from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.bodies import ConsumerData, HeartbeatData, ProducerData, SubscriptionData
from mqcore.remoting import Channel, RemotingClient, RequestDispatcher
from mqcore.store.store_config import FlushDiskType, MessageStoreConfig

BROKER_NAME = "broker-a"


@asynccontextmanager
async def running_namesrv(tmp_path: Path, **overrides: Any) -> AsyncIterator[NamesrvController]:
    """A name server on 127.0.0.1 (port 0); ``overrides`` are NamesrvConfig fields."""
    namesrv = NamesrvController(
        NamesrvConfig(
            listen_port=0,
            bind_address="127.0.0.1",
            kv_config_path=str(tmp_path / "namesrv" / "kvConfig.json"),
            **overrides,
        )
    )
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
    """A broker on 127.0.0.1 with a small store under ``tmp_path/store``; ``store``
    overrides MessageStoreConfig fields (e.g. ``flush_disk_type``)."""
    config = BrokerConfig(
        broker_name=BROKER_NAME,
        broker_ip1="127.0.0.1",
        bind_address="127.0.0.1",
        listen_port=0,
        namesrv_addr=namesrv,
        **overrides,
    )
    store_config = MessageStoreConfig(
        store_path_root_dir=str(tmp_path / "store"),
        mapped_file_size_commit_log=1024 * 1024,
        mapped_file_size_consume_queue=20 * 1000,
        max_hash_slot_num=1000,
        max_index_num=4000,
        **{"flush_disk_type": FlushDiskType.ASYNC_FLUSH, **(store or {})},
    )
    broker = BrokerController(config, store_config)
    await broker.start()
    try:
        yield broker
    finally:
        await broker.shutdown()


def put(
    broker: BrokerController,
    topic: str,
    queue_id: int = 0,
    *,
    keys: str | None = None,
    uniq: str | None = None,
    body: bytes = b"hello",
) -> MessageExt:
    """Append one message straight to the broker's store; returns it with its offsets."""
    props = {"TAGS": "TagA"}
    if keys:
        props["KEYS"] = keys
    if uniq:
        props["UNIQ_KEY"] = uniq
    msg = MessageExt(
        topic=topic,
        body=body,
        properties=props,
        queue_id=queue_id,
        born_timestamp=1_700_000_000_000,
        born_host=("127.0.0.1", 50000),
        store_host=("127.0.0.1", broker.server.port),
    )
    result = broker.store.put_message(msg)
    assert result.ok, result
    return broker.store.look_message(result.wrote_offset)


class TestClient:
    """One connection to the broker; remembers broker-initiated requests by code."""

    __test__ = False  # not a pytest class

    def __init__(self, addr: str, client_id: str) -> None:
        self.addr = addr
        self.client_id = client_id
        self.received: dict[int, list[RemotingCommand]] = {}
        dispatcher = RequestDispatcher()
        for code in (
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
        ):
            dispatcher.register(code, self._record)
        self.remoting = RemotingClient(dispatcher)

    def _record(self, channel: Channel, request: RemotingCommand) -> None:
        self.received.setdefault(request.code, []).append(request)

    def count(self, code: int) -> int:
        return len(self.received.get(code, []))

    async def invoke(
        self, code: int, fields: dict[str, str] | None = None, body: bytes = b""
    ) -> RemotingCommand:
        return await self.remoting.invoke(
            self.addr, RemotingCommand.request(code, fields or {}, body), timeout=5.0
        )

    async def heartbeat(
        self,
        consumer_groups: Iterable[str] = (),
        producer_groups: Iterable[str] = (),
        topics: Iterable[str] = ("TopicTest",),
    ) -> RemotingCommand:
        subs = [SubscriptionData(t, "*", sub_version=1) for t in topics]
        data = HeartbeatData(
            self.client_id,
            [ProducerData(g) for g in producer_groups],
            [ConsumerData(g, subscription_data_set=list(subs)) for g in consumer_groups],
        )
        return await self.invoke(RequestCode.HEART_BEAT, body=data.encode())

    async def close(self) -> None:
        await self.remoting.close()


async def until(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "") -> None:
    """Poll ``predicate`` until true; fail at the deadline (no sleep-as-synchronisation)."""
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"not within {timeout} s: {what or predicate}") from None

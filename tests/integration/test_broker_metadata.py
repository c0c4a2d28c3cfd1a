"""Metadata changes cost what changed (issue 24): a created topic is registered alone and
the name server keeps the rest; large tables register split or compressed and are encoded
off the event loop; admin creates share group-committed writes that survive kill -9;
topic lists are created in one request, one by one where the broker lacks it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import mqcore.broker.outer_api as outer_api
import mqcore.namesrv.processor as namesrv_processor
from mqcore.broker.controller import BrokerController
from mqcore.client import Admin
from mqcore.namesrv.controller import NamesrvController
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import RegisterBrokerBody
from mqcore.protocol.bodies.register_compressed import decode_compressed
from mqcore.protocol.headers import CreateTopicRequestHeader, RegisterBrokerRequestHeader
from mqcore.remoting import Channel, RemotingClient
from mqcore.store.metadata import SubscriptionGroupManager, TopicConfig, TopicConfigManager
from tests.support import until
from tests.support.clients import RawBrokerClient
from tests.support.inproc import running_broker, running_namesrv
from tests.support.processes import start_broker


@dataclass(frozen=True, slots=True)
class Seen:
    """One REGISTER_BROKER the name server received."""

    topics: frozenset[str]
    compressed: bool


class Recorder:
    """Wraps the name server's REGISTER_BROKER processor: what arrives, then as usual."""

    def __init__(self, namesrv: NamesrvController) -> None:
        self.seen: list[Seen] = []
        self.processor = namesrv.processor
        namesrv.server.register(RequestCode.REGISTER_BROKER, self)

    def __call__(self, channel: Channel, request: RemotingCommand) -> Any:
        header = RegisterBrokerRequestHeader.from_command(request)
        body = bytes(request.body)
        if header.compressed:
            parsed = decode_compressed(body, request.version)
        else:
            parsed = RegisterBrokerBody.decode(body)
        table = parsed.topic_config_serialize_wrapper.topic_config_table
        self.seen.append(Seen(frozenset(table), header.compressed))
        return self.processor.register_broker(channel, request)

    def since(self, mark: int) -> list[Seen]:
        return self.seen[mark:]


@pytest.fixture
async def namesrv(tmp_path: Path) -> AsyncIterator[NamesrvController]:
    async with running_namesrv(tmp_path) as ns:
        yield ns


def routed(namesrv: NamesrvController) -> set[str]:
    return namesrv.routes.get_all_topic_list().topic_list


async def create(client: RemotingClient, broker: BrokerController, topic: str) -> None:
    header = CreateTopicRequestHeader(topic, "TBW102", 4, 4, 6, "SINGLE_TAG")
    request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
    response = await client.invoke(broker.broker_addr, request, 10)
    assert response.code == ResponseCode.SUCCESS, response.remark


async def test_a_created_topic_is_registered_alone_and_the_rest_stay_routed(
    tmp_path: Path, namesrv: NamesrvController
) -> None:
    recorder = Recorder(namesrv)
    async with (
        running_broker(tmp_path, namesrv.listen_address) as broker,
        RemotingClient() as client,
    ):
        table = set(broker.topic_configs.table)
        await until(lambda: table <= routed(namesrv), 10, "the start's registration")
        mark = len(recorder.seen)
        await create(client, broker, "Orders")
        await until(lambda: "Orders" in routed(namesrv), 10, "the route of Orders")
        assert [s.topics for s in recorder.since(mark)] == [{"Orders"}]
        assert table <= routed(namesrv)  # a partial body adds, it does not replace
        route = namesrv.routes.pick_topic_route_data("TBW102")
        assert route is not None and route.queue_datas[0].broker_name == "broker-a"


async def test_a_topic_a_send_creates_is_registered_alone(
    tmp_path: Path, namesrv: NamesrvController
) -> None:
    recorder = Recorder(namesrv)
    async with running_broker(tmp_path, namesrv.listen_address) as broker:
        table = set(broker.topic_configs.table)
        await until(lambda: table <= routed(namesrv), 10, "the start's registration")
        mark = len(recorder.seen)
        async with RawBrokerClient(broker.broker_addr) as client:
            sent = await client.send("AutoMade", b"x")
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        await until(lambda: "AutoMade" in routed(namesrv), 10, "the route of AutoMade")
        assert [s.topics for s in recorder.since(mark)] == [{"AutoMade"}]


async def test_a_name_server_that_forgot_the_broker_gets_the_whole_table(
    tmp_path: Path, namesrv: NamesrvController
) -> None:
    recorder = Recorder(namesrv)
    async with (
        running_broker(tmp_path, namesrv.listen_address) as broker,
        RemotingClient() as client,
    ):
        await until(lambda: "TBW102" in routed(namesrv), 10, "the start's registration")
        broker.outer_api.client.close_channel(namesrv.listen_address)
        # the name server drops a broker whose connection closed (as 4.9.8 does)
        await until(lambda: not namesrv.routes.live_broker_addrs(), 10, "the broker dropped")
        namesrv.routes.delete_topic("TBW102")  # as if it had restarted empty
        mark = len(recorder.seen)
        await create(client, broker, "After")
        await until(lambda: {"After", "TBW102"} <= routed(namesrv), 10, "the whole table")
        assert recorder.since(mark)[0].topics == set(broker.topic_configs.table)


async def test_a_split_registration_routes_every_topic(
    tmp_path: Path, namesrv: NamesrvController
) -> None:
    recorder = Recorder(namesrv)
    async with running_broker(
        tmp_path,
        namesrv.listen_address,
        enable_split_registration=True,
        split_registration_size=5,
    ) as broker:
        for i in range(23):
            broker.topic_configs.update(TopicConfig(f"Split{i}", 1, 1))
        mark = len(recorder.seen)
        assert all((await broker.outer_api.register_all(force=True)).values())
        parts = recorder.since(mark)
        table = set(broker.topic_configs.table)
        assert len(parts) == -(-len(table) // 5) and all(len(p.topics) <= 5 for p in parts)
        assert set().union(*(p.topics for p in parts)) == table
        assert table <= routed(namesrv)


async def test_a_compressed_registration_routes_every_topic(
    tmp_path: Path, namesrv: NamesrvController
) -> None:
    recorder = Recorder(namesrv)
    async with (
        running_broker(tmp_path, namesrv.listen_address, compressed_register=True) as broker,
        RemotingClient() as client,
    ):
        table = set(broker.topic_configs.table)
        await until(lambda: table <= routed(namesrv), 10, "the start's registration")
        await create(client, broker, "Zipped")
        await until(lambda: "Zipped" in routed(namesrv), 10, "the route of Zipped")
        assert recorder.seen and all(s.compressed for s in recorder.seen)


async def test_a_10000_topic_table_is_encoded_and_decoded_off_the_event_loop(
    tmp_path: Path, namesrv: NamesrvController, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    threads: dict[str, set[int]] = {"encode": set(), "decode": set()}

    def on_thread(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            threads[name].add(threading.get_ident())
            return fn(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(outer_api, "encode_bodies", on_thread("encode", outer_api.encode_bodies))
    monkeypatch.setattr(
        namesrv_processor,
        "_decode_register_body",
        on_thread("decode", namesrv_processor._decode_register_body),
    )
    async with running_broker(tmp_path, namesrv.listen_address) as broker:
        for i in range(10_000):
            broker.topic_configs.update(TopicConfig(f"Many{i}", 1, 1))
        threads["encode"].clear()
        threads["decode"].clear()
        assert all((await broker.outer_api.register_all(force=True)).values())
        assert {f"Many{i}" for i in range(10_000)} <= routed(namesrv)
    assert threads["encode"] and loop_thread not in threads["encode"]
    assert threads["decode"] and loop_thread not in threads["decode"]


async def test_concurrent_creates_share_writes_and_are_on_disk_when_answered(
    tmp_path: Path, namesrv: NamesrvController
) -> None:
    async with (
        running_broker(tmp_path, namesrv.listen_address) as broker,
        RemotingClient() as client,
    ):
        writes = broker.topic_configs.writes
        names = [f"Burst{i}" for i in range(40)]
        await asyncio.gather(*(create(client, broker, n) for n in names))
        assert broker.topic_configs.writes - writes < len(names)
        on_disk = TopicConfigManager(broker.store_config.root)
        on_disk.load()  # the broker still runs: what it answered for is in the file
        assert set(names) <= on_disk.table.keys()


async def test_topic_lists_are_created_in_one_request_or_one_by_one(
    tmp_path: Path, namesrv: NamesrvController
) -> None:
    async with (
        running_broker(tmp_path, namesrv.listen_address) as broker,
        Admin(namesrv=namesrv.listen_address) as admin,
    ):
        served: list[int] = []
        for server in broker.servers:
            list_handler = server.dispatcher.processor_for(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST)
            assert list_handler is not None

            def counting(channel: Channel, request: RemotingCommand, h: Any = list_handler) -> Any:
                served.append(request.code)
                return h(channel, request)

            server.register(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, counting)
        assert await admin.create_topics(["L1", "L2", "L3"], queues=2) == ["broker-a"]
        assert served == [RequestCode.UPDATE_AND_CREATE_TOPIC_LIST]
        assert all(broker.topic_configs.table[t] == TopicConfig(t, 2, 2) for t in ("L1", "L2"))
        await until(lambda: {"L1", "L2", "L3"} <= routed(namesrv), 10, "the list's routes")

        for server in broker.servers:  # a RocketMQ 4.x broker: code 18 is unknown
            server.register(
                RequestCode.UPDATE_AND_CREATE_TOPIC_LIST,
                lambda channel, request, s=server: s.dispatcher.unsupported(request),
            )
        await admin.create_topics(["Old1", "Old2"], queues=3)
        assert broker.topic_configs.table["Old2"] == TopicConfig("Old2", 3, 3)


async def test_a_group_create_is_on_disk_when_answered(
    tmp_path: Path, namesrv: NamesrvController
) -> None:
    async with (
        running_broker(tmp_path, namesrv.listen_address) as broker,
        Admin(namesrv=namesrv.listen_address) as admin,
    ):
        await asyncio.gather(*(admin.create_subscription_group(f"g{i}") for i in range(10)))
        on_disk = SubscriptionGroupManager(broker.store_config.root)
        on_disk.load()
        assert {f"g{i}" for i in range(10)} <= on_disk.table.keys()


async def test_acknowledged_creates_survive_kill_9(tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "b")
    try:
        async with RemotingClient() as client:

            async def one(topic: str) -> None:
                header = CreateTopicRequestHeader(topic, "TBW102", 2, 2, 6, "SINGLE_TAG")
                request = RemotingCommand.request(
                    RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields()
                )
                response = await client.invoke(broker.addr, request, 10)
                assert response.code == ResponseCode.SUCCESS, response.remark

            names = [f"Kept{i}" for i in range(30)]
            await asyncio.gather(*(one(n) for n in names))
    finally:
        broker.kill()
    on_disk = TopicConfigManager(broker.store)
    on_disk.load()
    assert set(names) <= on_disk.table.keys()

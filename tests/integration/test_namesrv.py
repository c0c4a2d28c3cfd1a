"""`mq namesrv` end to end: a real subprocess on 127.0.0.1, spoken to over real sockets."""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import ClusterInfo, KVTable, TopicList, TopicRouteData
from mqcore.protocol.headers import (
    DeleteTopicFromNamesrvRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    UnregisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
)
from mqcore.remoting import RemotingClient
from tests.support import until
from tests.support.clients import register, topic_wrapper
from tests.support.processes import ServerProcess, start_namesrv

A_MASTER = "127.0.0.1:10911"
A_SLAVE = "127.0.0.1:10921"
B_MASTER = "127.0.0.1:10931"


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[ServerProcess]:
    ns = start_namesrv(tmp_path / "ns")
    yield ns
    ns.stop()


@pytest.fixture
async def clients() -> AsyncIterator[Callable[[], RemotingClient]]:
    """A factory of clients (one per simulated broker = one connection each)."""
    made: list[RemotingClient] = []

    def make() -> RemotingClient:
        made.append(RemotingClient())
        return made[-1]

    yield make
    for client in made:
        await client.close()


async def call(
    client: RemotingClient,
    addr: str,
    code: int,
    ext: dict[str, str] | None = None,
    body: bytes = b"",
) -> RemotingCommand:
    return await client.invoke(addr, RemotingCommand.request(code, ext or {}, body))


async def route(client: RemotingClient, addr: str, topic: str) -> RemotingCommand:
    return await call(
        client,
        addr,
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        GetRouteInfoRequestHeader(topic).to_ext_fields(),
    )


async def register_two_clusters(
    ns: str, make: Callable[[], RemotingClient]
) -> tuple[RemotingClient, RemotingClient, RemotingClient]:
    a, a_slave, b = make(), make(), make()
    first = await register(
        a,
        ns,
        cluster="c1",
        name="broker-a",
        broker_id=0,
        addr=A_MASTER,
        wrapper=topic_wrapper(1, TopicA=4, TBW102=8),
    )
    assert first.code == ResponseCode.SUCCESS
    assert "masterAddr" not in first.ext_fields
    slave = await register(
        a_slave,
        ns,
        cluster="c1",
        name="broker-a",
        broker_id=1,
        addr=A_SLAVE,
        wrapper=topic_wrapper(1, TopicA=4, TBW102=8),
    )
    assert slave.code == ResponseCode.SUCCESS
    assert slave.ext_fields == {"masterAddr": A_MASTER, "haServerAddr": "127.0.0.1:11911"}
    resp = await register(
        b,
        ns,
        cluster="c2",
        name="broker-b",
        broker_id=0,
        addr=B_MASTER,
        wrapper=topic_wrapper(1, TopicA=2, TopicB=3),
    )
    assert resp.code == ResponseCode.SUCCESS
    return a, a_slave, b


async def test_routes_cluster_info_and_topic_lists(
    namesrv: ServerProcess, clients: Callable[[], RemotingClient]
) -> None:
    ns = namesrv.addr
    await register_two_clusters(ns, clients)
    admin = clients()

    resp = await route(admin, ns, "TopicA")
    assert resp.code == ResponseCode.SUCCESS and resp.version == 409
    raw = json.loads(resp.body)  # strict JSON, quoted broker-id keys
    assert raw["brokerDatas"][0]["brokerAddrs"] == {"0": A_MASTER, "1": A_SLAVE}
    data = TopicRouteData.decode(resp.body)
    assert {(q.broker_name, q.write_queue_nums, q.perm) for q in data.queue_datas} == {
        ("broker-a", 4, 6),
        ("broker-b", 2, 6),
    }
    assert {
        (b.cluster, b.broker_name, tuple(sorted(b.broker_addrs.items()))) for b in data.broker_datas
    } == {("c1", "broker-a", ((0, A_MASTER), (1, A_SLAVE))), ("c2", "broker-b", ((0, B_MASTER),))}

    missing = await route(admin, ns, "NoSuchTopic")
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST
    assert "No topic route info in name server for the topic: NoSuchTopic" in (missing.remark or "")

    info = ClusterInfo.decode((await call(admin, ns, RequestCode.GET_BROKER_CLUSTER_INFO)).body)
    assert info.cluster_addr_table == {"c1": {"broker-a"}, "c2": {"broker-b"}}
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: A_MASTER, 1: A_SLAVE}

    everything = await call(admin, ns, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    assert TopicList.decode(everything.body).topic_list == {"TopicA", "TopicB", "TBW102"}
    c2 = await call(
        admin,
        ns,
        RequestCode.GET_TOPICS_BY_CLUSTER,
        GetTopicsByClusterRequestHeader("c2").to_ext_fields(),
    )
    assert TopicList.decode(c2.body).topic_list == {"TopicA", "TopicB"}
    system = await call(admin, ns, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)
    assert TopicList.decode(system.body).topic_list == {"c1", "c2", "broker-a", "broker-b"}

    unknown = await call(admin, ns, 4242)
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    bad = await call(admin, ns, RequestCode.GET_ROUTEINFO_BY_TOPIC)  # topic missing
    assert bad.code == ResponseCode.SYSTEM_ERROR and "topic" in (bad.remark or "")


async def test_admin_operations(
    namesrv: ServerProcess, clients: Callable[[], RemotingClient]
) -> None:
    ns = namesrv.addr
    a, _, _ = await register_two_clusters(ns, clients)
    admin = clients()

    wiped = await call(
        admin,
        ns,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        WipeWritePermOfBrokerRequestHeader("broker-a").to_ext_fields(),
    )
    assert wiped.ext_fields == {"wipeTopicCount": "2"}
    perms = {
        q.broker_name: q.perm
        for q in TopicRouteData.decode((await route(admin, ns, "TopicA")).body).queue_datas
    }
    assert perms == {"broker-a": 4, "broker-b": 6}

    # Same data version: no change, liveness refreshed. New version: changed.
    qdv = QueryDataVersionRequestHeader("broker-a", A_MASTER, "c1", 0).to_ext_fields()
    same = await call(
        a, ns, RequestCode.QUERY_DATA_VERSION, qdv, topic_wrapper(1).data_version.encode()
    )
    assert same.ext_fields == {"changed": "false"}
    newer = await call(
        a, ns, RequestCode.QUERY_DATA_VERSION, qdv, topic_wrapper(2).data_version.encode()
    )
    assert newer.ext_fields == {"changed": "true"}

    await call(
        admin,
        ns,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        DeleteTopicFromNamesrvRequestHeader("TopicA", "c2").to_ext_fields(),
    )
    left = TopicRouteData.decode((await route(admin, ns, "TopicA")).body)
    assert [q.broker_name for q in left.queue_datas] == ["broker-a"]
    await call(
        admin,
        ns,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        DeleteTopicFromNamesrvRequestHeader("TopicB").to_ext_fields(),
    )
    assert (await route(admin, ns, "TopicB")).code == ResponseCode.TOPIC_NOT_EXIST

    await call(
        a,
        ns,
        RequestCode.UNREGISTER_BROKER,
        UnregisterBrokerRequestHeader("broker-a", A_MASTER, "c1", 0).to_ext_fields(),
    )
    info = ClusterInfo.decode((await call(admin, ns, RequestCode.GET_BROKER_CLUSTER_INFO)).body)
    assert info.broker_addr_table["broker-a"].broker_addrs == {1: A_SLAVE}


async def test_kv_config_persisted_and_order_conf(
    tmp_path: Path, clients: Callable[[], RemotingClient]
) -> None:
    workdir = tmp_path / "ns"
    ns = start_namesrv(workdir)
    try:
        a = clients()
        await register(
            a,
            ns.addr,
            cluster="c1",
            name="broker-a",
            broker_id=0,
            addr=A_MASTER,
            wrapper=topic_wrapper(1, TopicA=4),
        )
        put = PutKVConfigRequestHeader("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4")
        assert (
            await call(a, ns.addr, RequestCode.PUT_KV_CONFIG, put.to_ext_fields())
        ).code == ResponseCode.SUCCESS
        got = await call(
            a,
            ns.addr,
            RequestCode.GET_KV_CONFIG,
            {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicA"},
        )
        assert got.ext_fields == {"value": "broker-a:4"}
        data = TopicRouteData.decode((await route(a, ns.addr, "TopicA")).body)
        assert data.order_topic_conf == "broker-a:4"
        stored = json.loads((workdir / "kv" / "kvConfig.json").read_bytes())
        assert stored == {"configTable": {"ORDER_TOPIC_CONFIG": {"TopicA": "broker-a:4"}}}
    finally:
        assert ns.stop() == 0
        await a.close()

    ns = start_namesrv(workdir)  # same kvConfigPath: the value survives a restart
    try:
        admin = clients()
        listed = await call(
            admin, ns.addr, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ORDER_TOPIC_CONFIG"}
        )
        assert KVTable.decode(listed.body).table == {"TopicA": "broker-a:4"}
        await call(
            admin,
            ns.addr,
            RequestCode.DELETE_KV_CONFIG,
            {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicA"},
        )
        gone = await call(
            admin,
            ns.addr,
            RequestCode.GET_KV_CONFIG,
            {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicA"},
        )
        assert gone.code == ResponseCode.QUERY_NOT_FOUND
    finally:
        assert ns.stop() == 0


async def test_dropped_connection_removes_broker_at_once(
    namesrv: ServerProcess, clients: Callable[[], RemotingClient]
) -> None:
    ns = namesrv.addr
    _, a_slave, b = await register_two_clusters(ns, clients)
    admin = clients()
    await b.close()

    async def b_gone() -> bool:
        info = ClusterInfo.decode((await call(admin, ns, RequestCode.GET_BROKER_CLUSTER_INFO)).body)
        return "broker-b" not in info.broker_addr_table and "c2" not in info.cluster_addr_table

    await until(b_gone, 5)
    assert (await route(admin, ns, "TopicB")).code == ResponseCode.TOPIC_NOT_EXIST
    await a_slave.close()

    async def slave_gone() -> bool:
        data = TopicRouteData.decode((await route(admin, ns, "TopicA")).body)
        return data.broker_datas[0].broker_addrs == {0: A_MASTER}

    await until(slave_gone, 5)


async def test_silent_broker_expires(tmp_path: Path, clients: Callable[[], RemotingClient]) -> None:
    ns = start_namesrv(
        tmp_path / "ns", brokerChannelExpiredTime="600", scanNotActiveBrokerInterval="100"
    )
    try:
        silent, chatty, admin = clients(), clients(), clients()
        await register(
            silent,
            ns.addr,
            cluster="c1",
            name="broker-a",
            broker_id=0,
            addr=A_MASTER,
            wrapper=topic_wrapper(1, TopicA=4),
        )
        silent_channel = await silent.channel(ns.addr)

        async def keep_alive() -> None:
            while True:
                await register(
                    chatty,
                    ns.addr,
                    cluster="c1",
                    name="broker-b",
                    broker_id=0,
                    addr=B_MASTER,
                    wrapper=topic_wrapper(1, TopicB=4),
                )
                await asyncio.sleep(0.1)

        heartbeat = asyncio.create_task(keep_alive())
        try:

            async def a_expired() -> bool:
                return (await route(admin, ns.addr, "TopicA")).code == ResponseCode.TOPIC_NOT_EXIST

            await until(a_expired, 10)
            # The name server also closed the silent broker's connection.
            await asyncio.wait_for(silent_channel.wait_closed(), 5)
            assert (await route(admin, ns.addr, "TopicB")).code == ResponseCode.SUCCESS
        finally:
            heartbeat.cancel()
    finally:
        assert ns.stop() == 0


async def test_garbage_connection_closed_others_served(
    namesrv: ServerProcess, clients: Callable[[], RemotingClient]
) -> None:
    ns = namesrv.addr
    host, port = ns.rsplit(":", 1)
    a = clients()
    await register(
        a,
        ns,
        cluster="c1",
        name="broker-a",
        broker_id=0,
        addr=A_MASTER,
        wrapper=topic_wrapper(1, TopicA=4),
    )
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(struct.pack(">ii", 40, 36) + b"this is not a remoting header at all!")
    async with asyncio.timeout(5):
        assert await reader.read() == b""
    writer.close()
    huge_reader, huge_writer = await asyncio.open_connection(host, int(port))
    huge_writer.write(struct.pack(">i", 1 << 30))  # announces a 1 GiB frame
    async with asyncio.timeout(5):
        assert await huge_reader.read() == b""
    huge_writer.close()
    assert (await route(a, ns, "TopicA")).code == ResponseCode.SUCCESS


async def test_ali_ons_style_request(
    namesrv: ServerProcess, clients: Callable[[], RemotingClient]
) -> None:
    """Numbers in extFields, version 121, an empty extFields object: still a route."""
    a = clients()
    await register(
        a,
        namesrv.addr,
        cluster="c1",
        name="broker-a",
        broker_id=0,
        addr=A_MASTER,
        wrapper=topic_wrapper(1, TopicA=4),
    )
    host, port = namesrv.addr.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    header = (
        b'{"code":105,"language":"JAVA","opaque":1,"flag":0,"version":121,'
        b'"extFields":{"topic":"TopicA","acceptStandardJsonOnly":false}}'
    )
    writer.write(struct.pack(">ii", 4 + len(header), len(header)) + header)
    length, word = struct.unpack(">ii", await reader.readexactly(8))
    assert word >> 24 == 0  # JSON header, which ali-ons needs
    rest = await reader.readexactly(length - 4)
    head = json.loads(rest[: word & 0xFFFFFF])
    assert head["flag"] == 1 and head["opaque"] == 1 and head["code"] == 0
    body = json.loads(rest[word & 0xFFFFFF :])
    assert body["brokerDatas"][0]["brokerAddrs"]["0"] == A_MASTER
    writer.close()


def test_print_config_and_bad_config(tmp_path: Path) -> None:
    import subprocess
    import sys

    conf = tmp_path / "ns.properties"
    conf.write_text("# comment\nlistenPort = 9999\nbrokerChannelExpiredTime=5000\nbogus=1\n")
    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "namesrv", "-c", str(conf), "-p"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "listenPort=9999\n" in done.stdout and "brokerChannelExpiredTime=5000\n" in done.stdout
    conf.write_text("listenPort=ninety\n")
    bad = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "namesrv", "-c", str(conf)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 1 and "listenPort" in bad.stderr

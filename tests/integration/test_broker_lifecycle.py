"""`mq broker` / `mq up` as processes: config printing and errors, clean stop and
restart (messages and offsets survive), two brokers of one cluster at two name servers."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import ClusterInfo, TopicRouteData
from mqcore.protocol.headers import GetRouteInfoRequestHeader
from mqcore.remoting import RemotingClient
from tests.support.clients import RawBrokerClient
from tests.support.polling import until
from tests.support.processes import mq, start_broker, start_namesrv, stop_process


def test_print_config_merges_file_and_flags(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerName=broker-x\nflushDiskType=SYNC_FLUSH\nmapedFileSizeCommitLog=1048576\n"
        "listenPort=20911\nnamesrvAddr=1.2.3.4:9876\n"
    )
    done = mq(
        "broker",
        "-c",
        str(conf),
        "-p",
        "-n",
        "127.0.0.1:1;127.0.0.1:2",
        "--store",
        str(tmp_path / "s"),
    )
    assert done.returncode == 0, done.stderr
    props = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert props["brokerName"] == "broker-x"
    assert props["listenPort"] == "20911"
    assert props["namesrvAddr"] == "127.0.0.1:1;127.0.0.1:2"
    assert props["flushDiskType"] == "SYNC_FLUSH"
    assert props["mappedFileSizeCommitLog"] == "1048576"
    assert props["storePathRootDir"] == str(tmp_path / "s")
    assert "# broker" in done.stdout and "# store" in done.stdout
    listen = mq("broker", "-p", "--listen", "127.0.0.1:0")
    assert "listenPort=0" in listen.stdout and "brokerIP1=127.0.0.1" in listen.stdout


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        ("listenPort=abc\n", [], "bad value for listenPort"),
        ("flushDiskType=SOMETIMES\n", [], "flushDiskType"),
        ("brokerId=-1\n", [], "brokerId"),
        ("", ["--listen", "nowhere"], "HOST:PORT"),
    ],
)
def test_bad_config_and_flags_fail_clearly(
    tmp_path: Path, content: str, args: list[str], message: str
) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(content)
    done = mq("broker", "-c", str(conf), "-p", *args)
    assert done.returncode != 0
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_config_file_and_locked_store(tmp_path: Path) -> None:
    done = mq("broker", "-c", str(tmp_path / "absent.conf"))
    assert done.returncode != 0 and "absent.conf" in done.stderr
    first = start_broker(tmp_path / "b1")
    try:
        second = mq(
            "broker",
            "--store",
            str(first.store),
            "--listen",
            "127.0.0.1:0",
            env={"HOME": str(tmp_path)},
        )
        assert second.returncode != 0
        assert "lock" in second.stderr.lower() and "Traceback" not in second.stderr
    finally:
        assert first.stop() == 0


async def test_messages_and_offsets_survive_a_clean_restart(tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "b", flushConsumerOffsetInterval="60000")
    try:
        async with RawBrokerClient(broker.addr) as c:
            for i in range(10):
                assert (await c.send("Durable", f"m{i}".encode(), keys=f"k{i}")).code == 0
            assert await c.update_offset("g1", "Durable", 0, 6) == 0
            await c.pull("Durable", 0, 0, group="g2", commit_offset=3)
    finally:
        assert broker.stop() == 0
    store = broker.store
    assert not (store / "abort").exists()
    assert '"Durable@g1":{0:6' in (store / "config" / "consumerOffset.json").read_text().replace(
        " ", ""
    ).replace("\n", "").replace("\t", "")
    verify = mq("store", "verify", str(store))
    assert verify.returncode == 0, verify.stdout + verify.stderr

    again = start_broker(tmp_path / "b2", store=store)
    try:
        async with RawBrokerClient(again.addr) as c:
            assert await c.query_offset("g1", "Durable", 0) == (0, 6)
            assert await c.query_offset("g2", "Durable", 0) == (0, 3)
            msgs = await c.pull_all("Durable", 0)
            assert [m.body for m in msgs] == [f"m{i}".encode() for i in range(10)]
            r = await c.send("Durable", b"m10")
            assert r.code == 0 and r.ext_fields["queueOffset"] == "10"
    finally:
        assert again.stop() == 0


async def _route(client: RemotingClient, namesrv: str, topic: str) -> TopicRouteData | None:
    request = RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic).to_ext_fields()
    )
    r = await client.invoke(namesrv, request)
    return TopicRouteData.decode(r.body) if r.code == ResponseCode.SUCCESS else None


def _brokers(route: TopicRouteData) -> dict[str, str]:
    """Broker name -> master address, as the route lists them."""
    return {bd.broker_name: bd.broker_addrs[0] for bd in route.broker_datas}


async def _route_when(
    client: RemotingClient,
    namesrv: str,
    topic: str,
    ready: Callable[[TopicRouteData], bool] | None = None,
    timeout: float = 10,
) -> TopicRouteData:
    """The topic's route at the name server, once there (and ``ready(route)`` holds);
    fails at the deadline with the route it saw last."""
    seen: list[TopicRouteData | None] = [None]

    async def arrived() -> bool:
        route = seen[0] = await _route(client, namesrv, topic)
        return route is not None and (ready is None or ready(route))

    await until(arrived, timeout, lambda: f"route of {topic}: {seen[0]}", interval=0.05)
    assert seen[0] is not None
    return seen[0]


async def test_two_brokers_of_one_cluster_at_two_name_servers(tmp_path: Path) -> None:
    ns1, ns2 = start_namesrv(tmp_path / "ns1"), start_namesrv(tmp_path / "ns2")
    addrs = f"{ns1.addr};{ns2.addr}"
    brokers = []
    try:
        brokers.append(start_broker(tmp_path / "a", addrs, name="broker-a", brokerClusterName="C1"))
        brokers.append(start_broker(tmp_path / "b", addrs, name="broker-b", brokerClusterName="C1"))
        for b in brokers:
            async with RawBrokerClient(b.addr) as c:
                assert (await c.send("Shared", b"x", queue_nums=2)).code == 0
        expected = {"broker-a": brokers[0].addr, "broker-b": brokers[1].addr}
        async with RemotingClient() as rc:
            for ns in (ns1, ns2):
                route = await _route_when(rc, ns.addr, "Shared", lambda r: _brokers(r) == expected)
                assert all(q.write_queue_nums == 2 for q in route.queue_datas)
                r = await rc.invoke(
                    ns.addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)
                )
                info = ClusterInfo.decode(r.body)
                assert info.cluster_addr_table["C1"] == {"broker-a", "broker-b"}
        # A stopped broker unregisters itself at both name servers.
        assert brokers.pop().stop() == 0
        async with RemotingClient() as rc:
            for ns in (ns1, ns2):
                route = await _route(rc, ns.addr, "Shared")
                assert route is not None
                assert [bd.broker_name for bd in route.broker_datas] == ["broker-a"]
    finally:
        for b in brokers:
            b.stop()
        ns1.stop()
        ns2.stop()


async def test_mq_up_runs_both_and_stops_on_sigint(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mqcli.main",
            "up",
            "--store",
            str(tmp_path / "store"),
            "--namesrv-port",
            "0",
            "--broker-port",
            "0",
            "--host",
            "127.0.0.1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        found: dict[str, str] = {}
        # Blocking reads: the two lines arrive together, and select() cannot see text
        # already buffered by the first readline (pytest-timeout bounds a hang).
        while len(found) < 2:
            line = proc.stdout.readline()
            if not line:
                break
            if m := re.search(r"mq (namesrv|broker) listening on (\S+:\d+)", line):
                found[m.group(1)] = m.group(2)
        assert set(found) == {"namesrv", "broker"}, (
            proc.stderr.read() if proc.poll() is not None else found
        )
        async with RawBrokerClient(found["broker"]) as c:
            assert (await c.send("UpTopic", b"hello")).code == 0
        async with RemotingClient() as rc:
            route = await _route_when(rc, found["namesrv"], "UpTopic")
            assert route.broker_datas[0].broker_addrs[0] == found["broker"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0
        assert not (tmp_path / "store" / "abort").exists()
    finally:
        stop_process(proc, sig=signal.SIGKILL, timeout=10)


def _read_up_lines(proc: subprocess.Popen[str]) -> tuple[str, list[str]]:
    """The name server and broker addresses `mq up` prints, up to its export line."""
    assert proc.stdout is not None
    namesrv, brokers = "", []
    while True:
        line = proc.stdout.readline()
        if not line or line.startswith("export NAMESRV_ADDR"):
            break
        if m := re.search(r"mq (namesrv|broker) listening on (\S+:\d+)", line):
            if m.group(1) == "namesrv":
                namesrv = m.group(2)
            else:
                brokers.append(m.group(2))
    return namesrv, brokers


async def test_mq_up_brokers_2_runs_a_cluster_of_two_processes_and_stops_all(
    tmp_path: Path,
) -> None:
    from mqcore.client import Producer
    from mqcore.client.producer import make_message

    env = {**os.environ, "HOME": str(tmp_path)}
    store = tmp_path / "store"
    args = ["up", "--brokers", "2", "--store", str(store), "--namesrv-port", "0"]
    args += ["--broker-port", "0", "--host", "127.0.0.1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqcli.main", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        namesrv, brokers = _read_up_lines(proc)
        assert namesrv and len(brokers) == 2, proc.stderr.read() if proc.poll() else brokers
        async with RemotingClient() as rc:
            names: list[set[str] | None] = [None]

            async def both_registered() -> bool:
                r = await rc.invoke(
                    namesrv, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5
                )
                names[0] = ClusterInfo.decode(r.body).cluster_addr_table.get("DefaultCluster")
                return names[0] == {"broker-a", "broker-b"}

            await until(both_registered, 20, lambda: f"DefaultCluster: {names[0]}", interval=0.1)
        async with Producer("up-pg", namesrv) as producer:
            results = [await producer.send(make_message("Spread", f"m{i}")) for i in range(40)]
        assert all(r.ok for r in results)
        # Sends spread over both processes' queues.
        assert {r.message_queue.broker_name for r in results} == {"broker-a", "broker-b"}
        proc.send_signal(signal.SIGINT)
        assert proc.wait(40) == 0
        for root in (store, tmp_path / "store-broker-b"):
            assert (root / "commitlog").is_dir() and not (root / "abort").exists()
        for addr in brokers:  # every process is gone with its listener
            host, port = addr.rsplit(":", 1)
            with pytest.raises(OSError):
                await asyncio.open_connection(host, int(port))
    finally:
        stop_process(proc, sig=signal.SIGKILL, timeout=10)


def test_mq_up_brokers_out_of_range_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "up", "--brokers", "0", "--store", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--brokers" in done.stderr and "1..26" in done.stderr


def test_mq_up_stops_everything_when_an_extra_broker_cannot_start(tmp_path: Path) -> None:
    from mqcore.store import MessageStore, MessageStoreConfig

    store = tmp_path / "store"
    holder = MessageStore(MessageStoreConfig(store_path_root_dir=f"{store}-broker-b"))
    holder.start()  # holds broker-b's store lock, as a broker already running on it would
    try:
        args = ["up", "--brokers", "2", "--store", str(store), "--namesrv-port", "0"]
        args += ["--broker-port", "0", "--host", "127.0.0.1"]
        done = subprocess.run(
            [sys.executable, "-m", "mqcli.main", *args],
            capture_output=True,
            text=True,
            timeout=90,
            env={**os.environ, "HOME": str(tmp_path)},
        )
    finally:
        holder.shutdown()
    assert done.returncode == 1
    assert "broker-b" in done.stderr and "lock" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (store / "abort").exists()  # broker-a was shut down cleanly

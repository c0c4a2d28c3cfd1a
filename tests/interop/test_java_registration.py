"""Broker registration across implementations, with the RocketMQ 4.9.8 build at
~/rmq-real (or $RMQ_HOME): a 4.9.8 broker with ``compressedRegister=true`` registers at an
mq name server, and its ``updateTopic`` (registerIncrementBrokerData: one topic in the
body) adds that topic while the rest stay routed; an mq broker registers compressed and
incrementally at a 4.9.8 name server. Skipped where the Java build is absent."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from mqcore.client import Admin, TopicRouteNotFoundError
from tests.support.inproc import running_broker, running_namesrv
from tests.support.polling import until
from tests.support.processes import restartable_broker_port

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(240)]

RMQ_HOME = Path(os.environ.get("RMQ_HOME", Path.home() / "rmq-real"))


@pytest.fixture(scope="module")
def java_cp() -> str:
    if not (RMQ_HOME / "classes").is_dir() or not shutil.which("java"):
        pytest.skip(f"no RocketMQ 4.9.8 Java build at {RMQ_HOME} (or no JDK)")
    jars = sorted(str(j) for j in (RMQ_HOME / "lib").glob("*.jar"))
    return os.pathsep.join([str(RMQ_HOME / "classes"), *jars])


def _java_argv(cp: str, home: Path, heap: str, main: str, *args: str) -> list[str]:
    opts = [f"-Xmx{heap}", f"-Duser.home={home}", f"-Drocketmq.home.dir={RMQ_HOME}"]
    quiet = RMQ_HOME / "conf" / "logback_quiet.xml"
    if quiet.is_file():
        opts.append(f"-Dlogback.configurationFile={quiet}")
    return ["java", *opts, "-cp", cp, main, *args]


@asynccontextmanager
async def java_server(
    cp: str, home: Path, main: str, conf: dict[str, str], ready: str
) -> AsyncIterator[None]:
    """A 4.9.8 server (``main -c conf``) until it prints ``ready``; stopped after."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "server.conf"
    path.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
    proc = await asyncio.create_subprocess_exec(
        *_java_argv(cp, home, "256m", main, "-c", str(path)),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "ROCKETMQ_HOME": str(RMQ_HOME)},
    )
    assert proc.stdout is not None
    try:
        seen = b""
        async with asyncio.timeout(90):
            while ready.encode() not in seen:
                line = await proc.stdout.readline()
                assert line, f"{main} exited: {seen.decode(errors='replace')[-2000:]}"
                seen += line
        yield
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def mqadmin(cp: str, home: Path, *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        *_java_argv(cp, home, "128m", "org.apache.rocketmq.tools.command.MQAdminStartup", *args),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "ROCKETMQ_HOME": str(RMQ_HOME)},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-2000:]
    return out.decode()


async def routed(admin: Admin, topic: str) -> bool:
    try:
        await admin.topic_route(topic)
    except TopicRouteNotFoundError:
        return False
    return True


async def test_a_498_broker_registers_compressed_and_incrementally_at_mq(
    tmp_path: Path, java_cp: str
) -> None:
    port = restartable_broker_port()
    async with running_namesrv(tmp_path) as ns, Admin(ns.listen_address) as admin:
        conf = {
            "brokerName": "broker-j",
            "brokerIP1": "127.0.0.1",
            "listenPort": str(port),
            "namesrvAddr": ns.listen_address,
            "storePathRootDir": str(tmp_path / "jstore"),
            "storePathCommitLog": str(tmp_path / "jstore" / "commitlog"),
            "mappedFileSizeCommitLog": str(16 * 1024 * 1024),
            "compressedRegister": "true",
            "registerNameServerPeriod": "60000",  # no periodic registration in the test
        }
        main = "org.apache.rocketmq.broker.BrokerStartup"
        async with java_server(java_cp, tmp_path / "jhome", main, conf, "boot success"):
            await until(lambda: routed(admin, "TBW102"), 30, "the 4.9.8 broker's table")
            await mqadmin(
                java_cp, tmp_path / "jhome", "updateTopic", "-n", ns.listen_address,
                "-b", f"127.0.0.1:{port}", "-t", "JavaIncrement", "-r", "3", "-w", "3",
            )  # fmt: skip
            # updateTopic answers after registerIncrementBrokerData: routed at once
            route = await admin.topic_route("JavaIncrement")
            assert [(q.broker_name, q.write_queue_nums) for q in route.queue_datas] == [
                ("broker-j", 3)
            ]
            assert {"TBW102", "broker-j", "SCHEDULE_TOPIC_XXXX"} <= await admin.topic_list()


async def test_an_mq_broker_registers_compressed_and_incrementally_at_498(
    tmp_path: Path, java_cp: str
) -> None:
    port = restartable_broker_port()
    namesrv = f"127.0.0.1:{port}"
    main = "org.apache.rocketmq.namesrv.NamesrvStartup"
    async with (
        java_server(java_cp, tmp_path / "nshome", main, {"listenPort": str(port)}, "boot success"),
        running_broker(tmp_path, namesrv, compressed_register=True) as broker,
        Admin(namesrv) as admin,
    ):
        table = set(broker.topic_configs.table)

        async def all_routed() -> bool:
            return table <= await admin.topic_list()

        await until(all_routed, 30, "the mq broker's table")
        await admin.create_topic("MqIncrement", queues=3)
        await until(lambda: routed(admin, "MqIncrement"), 10, "the created topic's route")
        await admin.create_topics(["MqListA", "MqListB"], queues=2)
        await until(lambda: routed(admin, "MqListB"), 10, "the topic list's routes")
        assert await all_routed()  # the increments added to the table

"""`mq broker config get|set` and the broker-as-name-server hint against the real
Apache RocketMQ 4.9.8 name server and broker (the Java processes of ``~/rmq-real``), on
loopback ports picked free. 4.9.8 writes any key it is sent into its configuration and
config file, so GET shows a restart-only key changed too: the CLI's "at restart" comes
from 4.9.8's rules, not from the broker. Skipped where the Java build is absent."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from java_support import RMQ_HOME

from tests.support.polling import until_sync
from tests.support.processes import CLEAN_ENV, run_mq, stop_process

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(300)]

JOPTS = [
    f"-Duser.home={RMQ_HOME}", f"-Drocketmq.home.dir={RMQ_HOME}",
    f"-Dlogback.configurationFile={RMQ_HOME}/conf/logback_quiet.xml",
    *(f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
        "java.lang", "java.lang.reflect", "java.util", "java.nio", "sun.nio.ch",
        "jdk.internal.ref", "jdk.internal.misc")),
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
]  # fmt: skip


def _free_block() -> int:
    """A port P with P-2..P+1 free a moment ago (a broker listens on P, P-2 and P+1)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        try:
            for p in (port - 2, port + 1):
                with socket.socket() as other:
                    other.bind(("127.0.0.1", p))
            return port
        except OSError:
            continue
    raise AssertionError("no free block of ports")


def _java(main: str, heap: str, conf: Path, log: Path) -> subprocess.Popen[str]:
    classes = [str(RMQ_HOME / "classes"), *sorted(str(j) for j in (RMQ_HOME / "lib").glob("*.jar"))]
    with open(log, "w") as out:
        return subprocess.Popen(
            ["java", f"-Xmx{heap}", "-XX:MaxDirectMemorySize=256m", *JOPTS,
             "-cp", os.pathsep.join(classes), main, "-c", str(conf)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
            env={**os.environ, "ROCKETMQ_HOME": str(RMQ_HOME)},
        )  # fmt: skip


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(name server, broker address) of a 4.9.8 name server and broker."""
    if not (RMQ_HOME / "classes").is_dir() or not (RMQ_HOME / "lib").is_dir():
        pytest.skip(f"no RocketMQ 4.9.8 Java build at {RMQ_HOME}")
    base = tmp_path_factory.mktemp("real-4.9.8")
    ns_port, broker_port = _free_block(), _free_block()
    (base / "ns.conf").write_text(f"listenPort={ns_port}\n")
    (base / "broker.conf").write_text(
        "brokerClusterName=DefaultCluster\nbrokerName=real-a\nbrokerId=0\n"
        f"brokerIP1=127.0.0.1\nlistenPort={broker_port}\nnamesrvAddr=127.0.0.1:{ns_port}\n"
        f"storePathRootDir={base}/store\nstorePathCommitLog={base}/store/commitlog\n"
        "mappedFileSizeCommitLog=16777216\nfileReservedTime=48\n"
    )
    ns = _java(
        "org.apache.rocketmq.namesrv.NamesrvStartup", "128m", base / "ns.conf", base / "ns.log"
    )
    broker = _java(
        "org.apache.rocketmq.broker.BrokerStartup",
        "256m",
        base / "broker.conf",
        base / "broker.log",
    )
    procs = [ns, broker]
    try:
        until_sync(lambda: "boot success" in (base / "broker.log").read_text(), 120,
                   "the 4.9.8 broker up")  # fmt: skip
        yield f"127.0.0.1:{ns_port}", f"127.0.0.1:{broker_port}"
    finally:
        for proc in reversed(procs):
            stop_process(proc)


def mq(namesrv: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_mq((*args, "-n", namesrv), CLEAN_ENV, timeout=60, check=False)


def test_config_get_and_set_on_a_real_broker(real: tuple[str, str]) -> None:
    namesrv, broker = real
    until_sync(lambda: mq(namesrv, "broker", "config", "get", "brokerName").returncode == 0, 60,
               "the broker registered")  # fmt: skip
    got = orjson.loads(mq(namesrv, "broker", "config", "get", "fileReservedTime", "listenPort",
                          "--json").stdout)  # fmt: skip
    assert got == [
        {"broker": "real-a", "addr": broker,
         "config": {"fileReservedTime": "48", "listenPort": broker.rsplit(":", 1)[1]}}
    ]  # fmt: skip
    done = mq(namesrv, "broker", "config", "set", "fileReservedTime=36", "listenPort=1", "--json")
    assert done.returncode == 0, done.stderr
    effects = {r["key"]: r["effect"] for r in orjson.loads(done.stdout)}
    assert effects == {"fileReservedTime": "now", "listenPort": "at restart"}
    after = orjson.loads(
        mq(namesrv, "broker", "config", "get", "fileReservedTime", "--json").stdout
    )
    assert after[0]["config"]["fileReservedTime"] == "36"
    typo = mq(namesrv, "broker", "config", "set", "fileReservedTme=1")
    assert typo.returncode == 2 and "unknown broker config key 'fileReservedTme'" in typo.stderr


def test_a_real_broker_given_as_the_name_server(real: tuple[str, str]) -> None:
    _, broker = real
    done = mq(broker, "topic", "list")
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == f"error: {broker} is a broker, not a name server"

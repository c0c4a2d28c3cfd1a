"""The RocketMQ 4.9.8 Java client and mqadmin against `mq namesrv` and `mq broker`
processes: the client's sync, batch and ordered sends and its concurrent and orderly push
consumers, then the mqadmin commands operators run every day (clusterList, topicList,
topicRoute, topicStatus, brokerStatus, getBrokerConfig, consumerProgress, queryMsgByKey,
queryMsgById, updateSubGroup, deleteTopic), each checked for what it must show. Skipped
where the Java build (``~/rmq-real``) is absent."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from java_support import java_classpath, java_command, java_env

from tests.support.polling import until_sync
from tests.support.processes import ServerProcess, start_broker, start_namesrv

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(300)]

TOPIC = "JavaToolsTopic"
GROUP = "java-rt-cg"
N = 200


@pytest.fixture(scope="module")
def java_cp(tmp_path_factory: pytest.TempPathFactory) -> str:
    return java_classpath(tmp_path_factory.mktemp("java-classes"))


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """An `mq namesrv` and an `mq broker` process: (name server, broker address)."""
    base = tmp_path_factory.mktemp("java-tools")
    procs: list[ServerProcess] = []
    try:
        ns = start_namesrv(base / "ns")
        procs.append(ns)
        broker = start_broker(base / "broker", ns.addr)
        procs.append(broker)
        yield ns.addr, broker.addr
    finally:
        for proc in reversed(procs):
            proc.stop()


def java(cp: str, home: Path, main: str, *args: str, ok: bool = True) -> str:
    """Run a Java main to its end; its stdout (its exit status checked unless ``ok``
    is False)."""
    done = subprocess.run(
        java_command(cp, home, main, *args), capture_output=True, text=True,
        env=java_env(), timeout=150, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    if ok:
        assert done.returncode == 0, f"{main} {args} failed:\n{done.stdout}\n{done.stderr[-3000:]}"
    return done.stdout


def mqadmin(cp: str, home: Path, *args: str) -> str:
    return java(cp, home, "org.apache.rocketmq.tools.command.MQAdminStartup", *args)


def test_java_client_and_mqadmin_against_mq(
    servers: tuple[str, str], java_cp: str, tmp_path: Path
) -> None:
    ns, broker = servers
    home = tmp_path / "java-home"
    home.mkdir()
    for topic in (TOPIC, f"{TOPIC}-order"):
        out = mqadmin(java_cp, home, "updateTopic", "-n", ns, "-c", "DefaultCluster",
                      "-t", topic, "-r", "4", "-w", "4")  # fmt: skip
        assert "success" in out, out
    until_sync(lambda: TOPIC in mqadmin(java_cp, home, "topicList", "-n", ns), 20, "the route")

    out = java(java_cp, home, "RoundTripProbe", ns, TOPIC, str(N), GROUP)
    assert f"SENT {N + N + N} 0" in out, out
    assert f"CONSUMED {N + N} of {N + N}" in out, out
    assert f"ORDERED true {N}" in out, out
    [first] = [ln.split()[1:] for ln in out.splitlines() if ln.startswith("FIRST ")]
    msg_id, offset_msg_id = first

    clusters = mqadmin(java_cp, home, "clusterList", "-n", ns)
    assert re.search(rf"DefaultCluster\s+broker-a\s+0\s+{re.escape(broker)}", clusters), clusters

    route = mqadmin(java_cp, home, "topicRoute", "-n", ns, "-t", TOPIC)
    assert '"brokerName":"broker-a"' in route and '"readQueueNums":4' in route, route

    status = mqadmin(java_cp, home, "topicStatus", "-n", ns, "-t", TOPIC)
    rows = [ln.split() for ln in status.splitlines() if ln.startswith("broker-a")]
    assert len(rows) == 4, status
    assert sum(int(r[3]) for r in rows) == N + N, status  # max offsets: every message

    runtime = mqadmin(java_cp, home, "brokerStatus", "-n", ns, "-b", broker)
    assert re.search(r"commitLogMaxOffset\s*:\s*[1-9]\d*", runtime), runtime
    assert re.search(r"brokerVersionDesc\s*:\s*V4_9_8", runtime), runtime

    config = mqadmin(java_cp, home, "getBrokerConfig", "-n", ns, "-b", broker)
    assert re.search(r"brokerName\s*=\s*broker-a", config), config

    progress = mqadmin(java_cp, home, "consumerProgress", "-n", ns, "-g", GROUP)
    assert re.search(r"Diff Total:\s*0\b", progress), progress

    by_key = mqadmin(java_cp, home, "queryMsgByKey", "-n", ns, "-t", TOPIC, "-k", "rk-7")
    [row] = re.findall(r"^([0-9A-F]{32,})\s+(\d+)\s+(\d+)", by_key, re.M)  # rk-7 is one message
    assert row[0] != msg_id, by_key

    by_id = mqadmin(java_cp, home, "queryMsgById", "-n", ns, "-i", offset_msg_id)
    assert re.search(r"Keys:\s+\[rk-0\]", by_id) and re.search(rf"Topic:\s+{TOPIC}", by_id), by_id
    # the tool writes the body to a fixed place (/tmp/rocketmq/msgbodys/<uniq key>)
    Path("/tmp/rocketmq/msgbodys", msg_id).unlink(missing_ok=True)

    out = mqadmin(java_cp, home, "updateSubGroup", "-n", ns, "-b", broker, "-g", "java-tools-g2")
    assert "success" in out, out
    groups = mqadmin(java_cp, home, "consumerProgress", "-n", ns)
    assert "java-tools-g2" in groups or GROUP in groups, groups

    out = mqadmin(java_cp, home, "deleteTopic", "-n", ns, "-c", "DefaultCluster",
                  "-t", f"{TOPIC}-order")  # fmt: skip
    assert "success" in out, out
    assert f"{TOPIC}-order" not in mqadmin(java_cp, home, "topicList", "-n", ns).split()

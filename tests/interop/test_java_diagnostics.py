"""Consumer diagnostics across languages, through `mq namesrv` and `mq broker` processes:
the 4.9.8 Java admin reads a Python consumer's running info (what mqadmin consumerStatus
prints, with jstack), and `mq group status` and `mq message resend --group` read and
drive a 4.9.8 Java push consumer (its ConsumerRunningInfo written by fastjson, MessageQueue
keys as objects). Skipped where the Java build (``~/rmq-real``) is absent."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from java_support import java_classpath, java_command, java_env

from tests.support.polling import until_sync
from tests.support.processes import (
    CLEAN_ENV,
    MQ,
    ServerProcess,
    run_mq,
    start_broker,
    start_namesrv,
    stop_process,
)

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def java_cp(tmp_path_factory: pytest.TempPathFactory) -> str:
    return java_classpath(tmp_path_factory.mktemp("java-classes"))


@pytest.fixture(scope="module")
def namesrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("java-diagnostics")
    procs: list[ServerProcess] = []
    try:
        ns = start_namesrv(base / "ns")
        procs.append(ns)
        procs.append(start_broker(base / "broker", ns.addr))
        yield ns.addr
    finally:
        for proc in reversed(procs):
            proc.stop()


def mq(namesrv: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_mq((*args, "-n", namesrv), CLEAN_ENV, timeout=60, check=False)


def members(namesrv: str, group: str) -> list[str]:
    done = mq(namesrv, "group", "clients", group, "--json")
    if done.returncode != 0:
        return []
    return [c["clientId"] for c in orjson.loads(done.stdout)["connectionSet"]]


def test_the_java_admin_reads_a_python_consumers_running_info(
    namesrv: str, java_cp: str, tmp_path: Path
) -> None:
    assert mq(namesrv, "produce", "-t", "DiagPy", "--body", "p{{Count}}", "-c", "6").returncode == 0
    consumer = subprocess.Popen(
        [*MQ, "consume", "--push", "-t", "DiagPy", "-g", "diag-py", "--from", "first",
         "-n", namesrv],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
        env=CLEAN_ENV, text=True,
    )  # fmt: skip
    try:
        until_sync(lambda: members(namesrv, "diag-py"), 30, "the Python consumer online")
        home = tmp_path / "java-home"
        home.mkdir()
        done = subprocess.run(
            java_command(java_cp, home, "RunningInfoProbe", namesrv, "diag-py", "jstack"),
            capture_output=True, text=True, env=java_env(), timeout=120, check=False,
        )  # fmt: skip
    finally:
        stop_process(consumer)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-3000:]
    for part in ("#Consumer Properties#", "PROP_CONSUMEORDERLY", "#Consumer MQ Detail#",
                 "#Consumer RT&TPS#", "#Consumer jstack#", "MainThread"):  # fmt: skip
        assert part in out, part
    assert "DiagPy" in out.split("#Consumer MQ Detail#")[1]  # the held queues, decoded
    assert "SAME_SUBSCRIPTION true" in out and "PROCESS_QUEUE OK" in out


def test_mq_reads_and_drives_a_java_consumer(namesrv: str, java_cp: str, tmp_path: Path) -> None:
    assert (
        mq(namesrv, "produce", "-t", "DiagJava", "--body", "j{{Count}}", "-c", "5").returncode == 0
    )
    home = tmp_path / "java-home"
    home.mkdir()
    consumer = subprocess.Popen(
        java_command(java_cp, home, "StayingConsumer", namesrv, "DiagJava", "diag-java", "240"),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.PIPE,
        env=java_env(), text=True,
    )  # fmt: skip
    try:
        assert consumer.stdout is not None
        lines: list[str] = []  # (the module's timeout bounds a consumer that never speaks)
        while not lines or "CONSUMED 5" not in lines[-1]:
            line = consumer.stdout.readline()
            assert line, f"the Java consumer ended: {lines}"
            lines.append(line)
        [client_id] = [ln.split()[1] for ln in lines if ln.startswith("STARTED ")]
        done = mq(namesrv, "group", "status", "diag-java", "--json")
        assert done.returncode == 0, done.stderr
        (member,) = orjson.loads(done.stdout)["members"]
        assert member["clientId"] == client_id
        assert member["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
        assert member["properties"]["consumerGroup"] == "diag-java"
        queues = [q for q in member["queues"] if q["topic"] == "DiagJava"]
        assert queues and sum(q["commitOffset"] for q in queues) in (0, 5)  # committed lazily
        assert "DiagJava" in member["statusTable"]
        stacked = mq(namesrv, "group", "status", "diag-java", "--client", client_id, "--stack")
        assert stacked.returncode == 0 and "java.lang.Thread" in stacked.stdout, stacked.stderr
        first = mq(namesrv, "query", "-t", "DiagJava", "--from", "first", "--json")
        msg_id = orjson.loads(first.stdout.splitlines()[0])["msgId"]
        resent = mq(namesrv, "message", "resend", msg_id, "--group", "diag-java", "--json")
        assert resent.returncode == 0, resent.stderr
        assert orjson.loads(resent.stdout)["consumeResult"] == "CR_SUCCESS"
    finally:
        if consumer.stdin is not None:
            consumer.stdin.close()
        stop_process(consumer)

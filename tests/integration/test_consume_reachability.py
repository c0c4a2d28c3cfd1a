"""`mq consume --push` says when its broker goes away (and that it retries) and when it
is back, instead of looking like a quiet topic."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from mqcore.client import SyncProducer, make_message
from tests.support.processes import restartable_broker_port, serving, start_namesrv


def _broker_conf(workdir: Path, namesrv: str) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    settings = {
        "brokerName": "broker-a",
        "brokerIP1": "127.0.0.1",
        "namesrvAddr": namesrv,
        "logDir": str(workdir / "logs"),
        "storePathRootDir": str(workdir / "store"),
        "mappedFileSizeCommitLog": str(4 * 1024 * 1024),
        "mappedFileSizeConsumeQueue": str(20 * 10_000),
    }
    conf = workdir / "broker.conf"
    conf.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    return conf


def _read_until(stream: IO[str] | None, needle: str, timeout: float, seen: list[str]) -> str:
    assert stream is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = stream.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return str(line)
    raise AssertionError(f"no {needle!r} within {timeout} s: {seen!r}")


def _send(namesrv: str, body: str) -> None:
    with SyncProducer("reach-pg", namesrv) as producer:
        producer.send(make_message("ReachT", body))


def test_push_consumer_reports_a_broker_away_and_back(tmp_path: Path) -> None:
    ns = start_namesrv(tmp_path / "ns")
    conf = _broker_conf(tmp_path / "b", ns.addr)
    env = {**os.environ, "HOME": str(tmp_path), "MQ_CONFIG_DIR": str(tmp_path / "cfg")}
    env.pop("NAMESRV_ADDR", None)
    consumer: subprocess.Popen[str] | None = None
    port = restartable_broker_port()  # the broker comes back on the same address
    try:
        with serving(["broker", "-c", str(conf), "--listen", f"127.0.0.1:{port}"], tmp_path / "b"):
            _send(ns.addr, "first")
            consumer = subprocess.Popen(
                [sys.executable, "-m", "mqcli.main", "consume", "--push", "-t", "ReachT",
                 "-g", "reach-cg", "--from", "first", "-n", ns.addr, "--json"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
                env=env,
            )  # fmt: skip
            out: list[str] = []
            _read_until(consumer.stdout, "first", 60, out)
        # the broker is gone: one line, saying it retries
        err: list[str] = []
        away = _read_until(consumer.stderr, "unreachable", 40, err)
        assert "broker broker-a unreachable" in away and "retrying every" in away
        with serving(["broker", "-c", str(conf), "--listen", f"127.0.0.1:{port}"], tmp_path / "b"):
            back = _read_until(consumer.stderr, "reachable again", 60, err)
            assert "broker broker-a is reachable again" in back
            _send(ns.addr, "second")
            _read_until(consumer.stdout, "second", 60, out)
        assert sum("unreachable" in line for line in err) == 1  # once, not per retry
        assert not any("Traceback" in line for line in err)
    finally:
        if consumer is not None:
            consumer.kill()
            consumer.communicate(timeout=30)
        ns.stop()

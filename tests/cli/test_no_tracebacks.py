"""Operator mistakes and interruptions end in one clear line, never a traceback."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from mqcore.client import Admin
from tests.support.cluster import Cluster

MQ = [sys.executable, "-m", "mqcli.main"]


def _mq(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("NAMESRV_ADDR", "MQ_NAMESRV_ADDR")}
    return subprocess.run(
        [*MQ, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**base, **(env or {})},
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("notahost", "bad name server address 'notahost'"),
        ("bad:port:x", "bad name server address 'bad:port:x'"),
        ("127.0.0.1:99999", "bad port 99999"),
        ("127.0.0.1:9876;x:", "bad port ''"),
    ],
)
def test_bad_namesrv_option_is_one_line(address: str, says: str) -> None:
    done = _mq("produce", "-n", address, "-t", "T", "-b", "x")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "ValueError" not in done.stderr
    first = done.stderr.splitlines()[0]
    assert says in first and "(from -n/--namesrv)" in first


@pytest.mark.parametrize("var", ["NAMESRV_ADDR", "MQ_NAMESRV_ADDR"])
def test_bad_namesrv_environment_is_one_line(var: str) -> None:
    done = _mq("produce", "-t", "T", "-b", "x", env={var: "notahost"})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        f"bad name server address 'notahost': expected host:port, e.g. 127.0.0.1:9876 (from {var})"
        in done.stderr
    )


def test_async_sends_to_a_dead_namesrv_print_one_line() -> None:
    done = _mq("produce", "--async", "--count", "1000", "-n", "127.0.0.1:1", "-t", "T", "-b", "x")
    assert done.returncode == 1
    assert "never retrieved" not in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) <= 2, done.stderr
    assert "name server 127.0.0.1:1 unreachable" in done.stderr


def test_async_sends_stop_at_the_first_fatal_error(cluster: Cluster) -> None:
    """A send error every further send would repeat (an invalid topic) is one line, once."""
    done = cluster.mq(
        "produce", "--async", "--count", "300", "-t", "bad topic", "-b", "x",
    )  # fmt: skip
    assert done.returncode == 1
    assert "never retrieved" not in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) <= 2, done.stderr


def test_a_new_topic_is_announced(cluster: Cluster) -> None:
    done = cluster.mq("produce", "-t", "Misspeled", "-b", "x")
    assert done.returncode == 0, done.stderr
    assert "created topic Misspeled (autoCreateTopicEnable)" in done.stderr
    again = cluster.mq("produce", "-t", "Misspeled", "-b", "x")
    assert again.returncode == 0 and "created topic" not in again.stderr


def test_quiet_still_says_why_a_send_failed(cluster: Cluster) -> None:
    long_prop = "a=" + "v" * 40_000  # over 32767 bytes of properties: the broker refuses
    done = cluster.mq("produce", "-t", "QuietT", "-q", "-b", "x", "-p", long_prop, "-c", "2")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    reasons = [ln for ln in done.stderr.splitlines() if "failed:" in ln]
    assert len(reasons) == 1 and "properties" in reasons[0], done.stderr  # once per reason
    assert "2 failed" in done.stderr


@pytest.mark.parametrize("quiet", [False, True])
def test_ctrl_c_prints_what_was_sent_and_exits_130(cluster: Cluster, quiet: bool) -> None:
    cluster.mq("produce", "-t", "IntT", "-b", "warm", check=True)
    before = _stored(cluster, "IntT")
    args = ["produce", "-t", "IntT", "-b", "m{{Count}}", "--count", "100000"]
    proc = subprocess.Popen(
        [*MQ, *args, *(["-q"] if quiet else [])],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=cluster.env,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _stored(cluster, "IntT") < before + 20:
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    line = next(ln for ln in err.splitlines() if "sent to IntT" in ln)
    assert "(interrupted)" in line and int(line.split()[0]) > 0


def _stored(cluster: Cluster, topic: str) -> int:
    """Messages the topic's queues hold (the sum of their max offsets)."""

    async def count() -> int:
        async with Admin(cluster.namesrv, instance_name=f"probe-{os.getpid()}") as admin:
            stats = await admin.topic_status(topic)
        return sum(q.max_offset for q in stats)

    return asyncio.run(count())


def test_ctrl_c_on_a_terminal(cluster: Cluster, tmp_path: Path) -> None:
    """The same with a real terminal (the progress bar is on) and a real Ctrl-C key."""
    child = pexpect.spawn(
        sys.executable,
        ["-m", "mqcli.main", "produce", "-t", "IntT", "-b", "p", "--count", "100000", "-q"],
        env=cluster.env,
        encoding="utf-8",
        timeout=30,
        dimensions=(24, 120),
    )
    try:
        child.expect("sending")
        child.sendcontrol("c")
        child.expect(r"(\d+) sent to IntT.*\(interrupted\)")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 130
    assert "Traceback" not in (child.before or "")

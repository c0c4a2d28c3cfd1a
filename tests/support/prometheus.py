"""A real Prometheus server for tests: Debian's ``prometheus`` binary with a config of
the test's (short scrape interval, storage under the test's directory), and its HTTP
query API.

``make test`` installs the package where it can (as root, with apt-get): see the
Makefile's ``test-tools``. Where it is missing and cannot be installed, the tests that
need it are skipped, saying so."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.support.polling import until_sync
from tests.support.processes import stop_process

PROMETHEUS = "prometheus"
_READY_TIMEOUT = 60.0


def prometheus_binary() -> str:
    """The ``prometheus`` on PATH; where there is none, skip when it could not have been
    installed (not root) and fail where ``make test`` would have installed it."""
    found = shutil.which(PROMETHEUS)
    if found is not None:
        return found
    message = "prometheus is not installed (apt-get install -y prometheus; make test does)"
    if os.geteuid() == 0 and shutil.which("apt-get"):
        pytest.fail(message)
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _config(targets: Sequence[str], interval: str) -> str:
    """prometheus.yml scraping ``targets`` (``host:port``, path /metrics) as job "mq"."""
    quoted = ", ".join(f"'{t}'" for t in targets)
    return (
        "global:\n"
        f"  scrape_interval: {interval}\n"
        f"  scrape_timeout: {interval}\n"
        "scrape_configs:\n"
        "  - job_name: mq\n"
        f"    static_configs:\n      - targets: [{quoted}]\n"
    )


@contextlib.contextmanager
def running_prometheus(
    workdir: Path, targets: Sequence[str], *, interval: str = "1s"
) -> Iterator[str]:
    """Prometheus scraping ``targets`` every ``interval``, its data in ``workdir``; yields
    its base URL once it answers /-/ready; stopped (SIGTERM) after."""
    binary = prometheus_binary()
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(_config(targets, interval))
    port = _free_port()
    with open(workdir / "prometheus.log", "ab") as log:
        proc = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(proc, url, workdir / "prometheus.log")
        yield url
    finally:
        stop_process(proc, timeout=30)


def _wait_ready(proc: subprocess.Popen[str], url: str, log: Path) -> None:
    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"prometheus exited {proc.returncode}: {log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    until_sync(ready, _READY_TIMEOUT, lambda: f"prometheus ready: {log.read_text()}")


def query(url: str, promql: str) -> list[tuple[dict[str, str], float]]:
    """An instant query: each series' labels and value (empty while nothing matches)."""
    address = f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    with urllib.request.urlopen(address, timeout=10) as response:
        answer = json.load(response)
    assert answer["status"] == "success", answer
    return [(r["metric"], float(r["value"][1])) for r in answer["data"]["result"]]

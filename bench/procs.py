"""Starting a lone `mq broker` and stopping the servers a benchmark started: one routine
for each, for every script here."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["start_broker", "stop_processes"]

_LISTENING = re.compile(r"listening on (\S+:\d+)")


def stop_processes(procs: Iterable[subprocess.Popen[Any]], grace: float = 30.0) -> None:
    """SIGTERM all of *procs* at once (newest first), then SIGKILL any that has not
    exited within *grace* seconds: a clean stop flushes the store, a hung one must not
    keep the benchmark from reporting."""
    chosen = list(procs)
    for proc in chosen:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in chosen:
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def start_broker(workdir: Path, **props: object) -> tuple[subprocess.Popen[str], str]:
    """``mq broker`` alone (no name server) on a free loopback port, its store and logs
    under ``workdir``, ``props`` added to its broker.conf (``flushDiskType="SYNC_FLUSH"``);
    the process and the address it says it listens on. Run from ``workdir``, not the
    checkout, so PYTHONPATH decides which checkout is measured."""
    lines = {
        "brokerName": "bench",
        "brokerIP1": "127.0.0.1",
        "storePathRootDir": workdir / "store",
        "logDir": workdir / "logs",
        **props,
    }
    conf = workdir / "broker.conf"
    conf.write_text("".join(f"{key}={value}\n" for key, value in lines.items()))
    env = {**os.environ, "HOME": str(workdir)}
    env.pop("NAMESRV_ADDR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqcli.main", "broker", "-c", str(conf), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=workdir,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = _LISTENING.search(line)
    if m is None:
        proc.kill()
        proc.wait(10)
        raise SystemExit(f"broker did not start: {line!r}")
    return proc, m.group(1)

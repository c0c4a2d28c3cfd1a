"""Stopping the servers a benchmark started: one routine for every script here."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterable
from typing import Any

__all__ = ["stop_processes"]


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

"""Helpers for driving the real `mq` command in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

MqRunner = Callable[..., subprocess.CompletedProcess[str]]


def _run(*args: str, check: bool = False, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home"},
    )
    if check and done.returncode != 0:
        raise AssertionError(f"mq {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done


@pytest.fixture
def mq() -> MqRunner:
    return _run

"""Helpers for driving the real `mq` command in a subprocess."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from tests.support.processes import CLEAN_ENV, run_mq

MqRunner = Callable[..., subprocess.CompletedProcess[str]]


def _run(*args: str, check: bool = False, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return run_mq(args, CLEAN_ENV, timeout=timeout, check=check)


@pytest.fixture
def mq() -> MqRunner:
    return _run

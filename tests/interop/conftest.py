"""Interop fixtures: third-party clients installed into a test-local folder."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from interop_support import DELAY_LEVELS, CppClients

from tests.support.inproc import BROKER_NAME, LiveCluster

NODE_DIR = Path(os.environ.get("MQ_INTEROP_NODE_DIR", Path(__file__).parent / ".node"))
ALI_ONS = "ali-ons@3"


@pytest.fixture(scope="session")
def alions_dir() -> Path:
    """A folder whose node_modules holds ali-ons (npm install once, then reused)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node/npm not installed: the ali-ons interop test needs Node.js >= 16")
    if not (NODE_DIR / "node_modules" / "ali-ons" / "package.json").is_file():
        NODE_DIR.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["npm", "install", "--prefix", str(NODE_DIR), "--no-audit", "--no-fund", ALI_ONS],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"npm install {ALI_ONS} failed:\n{done.stderr[-2000:]}"
    return NODE_DIR


RMQ5_DIR = Path(os.environ.get("MQ_INTEROP_RMQ5_DIR", Path(__file__).parent / ".rmq5"))
RMQ5_SDK = "rocketmq-python-client==5.1.2"
"""The official RocketMQ 5 Python SDK. Its top-level package ``rocketmq`` is not the
``rocketmq`` 0.4.4 of the dev venv, so it gets a virtualenv of its own."""


@pytest.fixture(scope="session")
def rmq5_python() -> Path:
    """The Python of a virtualenv holding the RocketMQ 5 SDK (created and installed from
    PyPI once, then reused while its marker names the same pinned version)."""
    python = RMQ5_DIR / "bin" / "python"
    marker = RMQ5_DIR / "installed.txt"
    RMQ5_DIR.parent.mkdir(parents=True, exist_ok=True)
    # pytest-xdist workers each run session fixtures: one installs, the others wait
    with open(RMQ5_DIR.parent / ".rmq5.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if python.is_file() and marker.is_file() and marker.read_text() == RMQ5_SDK:
            return python
        shutil.rmtree(RMQ5_DIR, ignore_errors=True)
        steps = [
            [sys.executable, "-m", "venv", str(RMQ5_DIR)],
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", RMQ5_SDK],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=600, check=False)
            assert done.returncode == 0, f"{' '.join(step)} failed:\n{done.stderr[-2000:]}"
        marker.write_text(RMQ5_SDK)
    return python


RMQ5_NODE_DIR = Path(
    os.environ.get("MQ_INTEROP_RMQ5_NODE_DIR", Path(__file__).parent / ".node-rmq5")
)
RMQ5_NODE_SDK = "rocketmq-client-nodejs@1.0.8"
"""The official RocketMQ 5 Node.js SDK (its gRPC is @grpc/grpc-js, not grpc's C core)."""


@pytest.fixture(scope="session")
def rmq5_node_dir() -> Path:
    """A folder whose node_modules holds the RocketMQ 5 Node.js SDK (npm install once)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node/npm not installed: the Node.js SDK test needs Node.js >= 16.19")
    RMQ5_NODE_DIR.mkdir(parents=True, exist_ok=True)
    with open(RMQ5_NODE_DIR.parent / ".node-rmq5.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        installed = RMQ5_NODE_DIR / "node_modules" / "rocketmq-client-nodejs" / "package.json"
        if not installed.is_file():
            done = subprocess.run(
                ["npm", "install", "--prefix", str(RMQ5_NODE_DIR), "--no-audit", "--no-fund",
                 RMQ5_NODE_SDK],
                capture_output=True, text=True, timeout=300, check=False,
            )  # fmt: skip
            assert done.returncode == 0, (
                f"npm install {RMQ5_NODE_SDK} failed:\n{done.stderr[-2000:]}"
            )
    return RMQ5_NODE_DIR


CPP_CLIENT = Path(__file__).with_name("cpp_clients.py")


@pytest.fixture(scope="session")
def cpp_client() -> list[str]:
    """The command that runs cpp_clients.py with the Apache C++-core client importable
    (the dev extra pins rocketmq==0.4.4, whose wheel holds librocketmq.so for x86-64
    Linux only)."""
    import importlib.util
    import platform
    import sys

    if not (sys.platform == "linux" and platform.machine() == "x86_64"):
        pytest.skip("the rocketmq 0.4.4 wheel ships librocketmq.so for x86-64 Linux only")
    assert importlib.util.find_spec("rocketmq") is not None, (
        "rocketmq==0.4.4 is a dev dependency: pip install -e '.[dev]'"
    )
    return [sys.executable, str(CPP_CLIENT)]


@pytest.fixture
async def mq(tmp_path: Path, cpp_client: list[str]) -> AsyncIterator[CppClients]:
    """The C++-core client against an in-process name server and broker-a (short delay
    levels); its HOME is ``tmp_path/home``."""
    home = tmp_path / "home"
    home.mkdir()
    cluster = LiveCluster(tmp_path, store={"message_delay_level": DELAY_LEVELS})
    async with cluster.running(BROKER_NAME) as running:
        yield CppClients(running, cpp_client, home)

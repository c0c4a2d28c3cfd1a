"""Running third-party clients from the interop tests: each in its own process (Node.js
for ali-ons, a Python process for the C++-core client), one JSON object per stdout line."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqcore.broker.controller import BrokerController
from mqcore.client import Admin
from tests.support import until
from tests.support.inproc import LiveCluster

ALIONS_SCRIPT = Path(__file__).with_name("alions_clients.js")


async def run_json_lines(
    command: list[str], *args: str, env: dict[str, str] | None = None, timeout: float = 90
) -> list[dict[str, Any]]:
    """Run ``command ARGS`` to the end (killed at ``timeout``); the JSON lines it printed.
    A non-zero exit fails the test with the end of its stderr."""
    proc = await asyncio.create_subprocess_exec(
        *command,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()[-3000:]
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


@asynccontextmanager
async def json_lines_process(
    command: list[str], *args: str, env: dict[str, str] | None = None, stop_timeout: float = 30
) -> AsyncIterator[list[dict[str, Any]]]:
    """``command ARGS`` running while the block runs: the JSON lines it has printed so far
    (a list that grows). On leaving, its stdin is closed (the scripts' signal to end),
    it has ``stop_timeout`` seconds to exit (then it is killed), and a non-zero exit
    fails the test with the end of its stderr."""
    proc = await asyncio.create_subprocess_exec(
        *command,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    lines: list[dict[str, Any]] = []

    async def read_lines() -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            if raw.startswith(b"{"):
                lines.append(json.loads(raw))

    reader = asyncio.create_task(read_lines())
    try:
        yield lines
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), stop_timeout)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            await reader
    err = await proc.stderr.read() if proc.stderr is not None else b""
    assert proc.returncode == 0, err.decode()[-2000:]


def alions_env(alions_dir: Path, **extra: str) -> dict[str, str]:
    return {"ALIONS_NODE_DIR": str(alions_dir), **extra}


async def node(alions_dir: Path, *args: str, timeout: float = 60) -> list[dict[str, Any]]:
    """``node alions_clients.js ARGS`` with ali-ons from ``alions_dir``."""
    return await run_json_lines(
        ["node", str(ALIONS_SCRIPT)], *args, env=alions_env(alions_dir), timeout=timeout
    )


async def registered(admin: Admin, timeout: float = 15) -> None:
    """Wait (with a deadline) until a broker has registered at the name server."""
    await until(admin.master_addrs, timeout, "a broker to register", interval=0.05)


DELAY_LEVELS = "1s 2s " + "1s " * 16
"""Short delays: level 2 is the delay test's, 3.. are the retries' (3 + reconsume times)."""
QUEUES = 4


@dataclass
class CppListener:
    """A running ``cpp_clients.py listen``: its JSON lines as they come."""

    proc: asyncio.subprocess.Process
    stderr: Path
    lines: list[dict[str, Any]] = field(default_factory=list)
    _reader: asyncio.Task[None] = field(init=False)

    def __post_init__(self) -> None:
        self._reader = asyncio.create_task(self._read())

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [line for line in self.lines if "body" in line]

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            if raw.startswith(b"{"):
                self.lines.append(json.loads(raw))

    async def wait_for(self, count: int, timeout: float = 20) -> list[dict[str, Any]]:
        """The first ``count`` messages (fails at the deadline with what came)."""

        def arrived() -> bool:  # a consumer that exited fails at once, not at the deadline
            if len(self.messages) >= count:
                return True
            assert self.proc.returncode is None, f"{count} wanted: {self}"
            return False

        await until(arrived, timeout, lambda: f"{count} wanted: {self}", interval=0.05)
        return self.messages[:count]

    def __str__(self) -> str:
        """For failure messages: what it printed, its exit status, its stderr's end."""
        err = self.stderr.read_text(errors="replace")[-1500:] if self.stderr.exists() else ""
        return f"pid {self.proc.pid} rc {self.proc.returncode} lines {self.lines} stderr {err!r}"

    async def stop(self) -> list[dict[str, Any]]:
        """Close stdin (the script shuts the consumer down), or kill it after 15 s."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 15)
        finally:
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
        await self._reader
        return self.messages


@dataclass
class CppClients:
    """The C++-core client (``cpp``, HOME in ``home``) against an in-process cluster."""

    cluster: LiveCluster
    cpp: list[str]
    home: Path

    @property
    def ns(self) -> str:
        return self.cluster.addr

    @property
    def broker(self) -> BrokerController:
        return self.cluster.broker

    @property
    def env(self) -> dict[str, str]:
        return {"HOME": str(self.home)}

    async def create_topic(self, topic: str) -> None:
        async with Admin(self.ns) as admin:
            await admin.create_topic(topic, queues=QUEUES)

    async def run(self, *args: str, timeout: float = 30) -> list[dict[str, Any]]:
        return await run_json_lines(self.cpp, *args, env=self.env, timeout=timeout)

    async def send(self, group: str, sends: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return await self.run("send", self.ns, group, json.dumps(sends))

    async def listen(self, topic: str, group: str, *flags: str) -> CppListener:
        """A ``listen`` subprocess (it stops itself after 40 s at the latest); its stderr
        goes to a file under HOME."""
        stderr = self.home / f"listen-{len(list(self.home.glob('listen-*')))}.err"
        with stderr.open("wb") as err:
            proc = await asyncio.create_subprocess_exec(
                *self.cpp, "listen", self.ns, topic, group, "--timeout", "40", *flags,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=err, env={**os.environ, **self.env},
            )  # fmt: skip
        return CppListener(proc, stderr)

    def max_offset(self, topic: str) -> int:
        return sum(self.broker.store.get_max_offset_in_queue(topic, q) for q in range(QUEUES))

    async def polled(self, topic: str, per_queue: int, timeout: float = 20) -> None:
        """Every queue of ``topic`` has ``per_queue`` pulls parked at the broker: the
        consumers' rebalance is done and they poll what they own."""
        held = self.broker.long_polling.held_by_queue
        want = {q: per_queue for q in range(QUEUES)}
        await until(lambda: held(topic) == want, timeout, f"held pulls {want} on {topic}")


def no_check_backs(cluster: LiveCluster) -> None:
    """Half messages are checked only after a minute, not the fixture's 300 ms (read at
    each round): a producer that ends its transaction itself may take longer than 300 ms
    on a loaded machine, and a check-back first would have the example's checker commit
    (a rollback test then sees the message committed)."""
    for broker in cluster.brokers.values():
        broker.config.transaction_time_out = 60_000

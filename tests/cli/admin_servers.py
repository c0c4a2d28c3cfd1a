"""A real `mq namesrv` + `mq broker` pair for the admin CLI tests, and ways to run `mq`.

Both servers run as subprocesses on 127.0.0.1 port 0 with their files under a tmp dir;
:meth:`Servers.mq` runs one command to completion, :meth:`Servers.spawn` a pexpect child
(for ``--watch`` and prompts). Produce and consume helpers use the Python client.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pexpect

from mqcore.client import Admin, ConsumeFromWhere, LitePullConsumer, Producer, make_message

_LISTEN = re.compile(r"listening on (\S+):(\d+)")


def _start(args: list[str], workdir: Path) -> tuple[subprocess.Popen[str], str]:
    workdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(workdir)}
    env.pop("NAMESRV_ADDR", None)
    env.pop("MQ_NAMESRV_ADDR", None)
    with open(workdir / "stderr.txt", "ab") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mqcli.main", *args],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
        )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        line = proc.stdout.readline() if ready else ""
        if not line:
            break
        if m := _LISTEN.search(line):
            return proc, f"{m.group(1)}:{m.group(2)}"
    proc.kill()
    proc.wait(5)
    raise AssertionError(f"{args[0]} did not start: {(workdir / 'stderr.txt').read_text()!r}")


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    if proc.stdout is not None:
        proc.stdout.close()


def wait_for(cond: Callable[[], bool], *, timeout: float = 20, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@dataclass
class Servers:
    namesrv: str
    broker: str
    base: Path
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        passed = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
        return {
            **passed,
            "COLUMNS": "220",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.base / "home"),
            "MQ_CONFIG_DIR": str(self.base / "config"),
            "MQ_NAMESRV_ADDR": self.namesrv,
            "PYTHONUNBUFFERED": "1",
        }

    def mq(
        self, *args: str, input: str | None = None, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mqcli.main", *args],
            capture_output=True,
            text=True,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            timeout=timeout,
            env=self.env,
        )

    def ok(self, *args: str, input: str | None = None) -> str:
        done = self.mq(*args, input=input)
        assert done.returncode == 0, f"mq {' '.join(args)}: {done.stdout}\n{done.stderr}"
        return done.stdout

    def json(self, *args: str) -> object:
        return orjson.loads(self.ok(*args, "--json"))

    def spawn(self, *args: str) -> pexpect.spawn:
        return pexpect.spawn(
            sys.executable,
            ["-m", "mqcli.main", *args],
            env=self.env,
            encoding="utf-8",
            timeout=20,
            dimensions=(60, 220),
        )

    def stop(self) -> None:
        for proc in reversed(self.procs):
            with contextlib.suppress(Exception):
                _stop(proc)

    # -- client helpers (in the test process) -----------------------------------------------

    async def produce(self, topic: str, n: int, *, tag: str = "A", delay: int = 0) -> None:
        producer = Producer(f"admin-test-{os.getpid()}", namesrv=self.namesrv)
        await producer.start()
        try:
            for i in range(n):
                msg = make_message(topic, f"body {i}", tags=tag, keys=[f"k{i}"])
                if delay:
                    msg.delay_level = delay
                await producer.send(msg)
        finally:
            await producer.shutdown()

    async def consume(self, topic: str, group: str, at_least: int) -> int:
        """Consume from the first offset until ``at_least`` arrived; commit; return the
        number consumed (polls may hand over a few more than asked)."""
        consumer = LitePullConsumer(
            group,
            namesrv=self.namesrv,
            consume_from_where=ConsumeFromWhere.FIRST,
            pull_batch_size=1,
            auto_commit=False,
        )
        consumer.subscribe(topic)
        await consumer.start()
        got = 0
        try:
            deadline = time.monotonic() + 20
            while got < at_least and time.monotonic() < deadline:
                got += len(await consumer.poll(1.0))
            await consumer.commit_sync()
        finally:
            await consumer.shutdown()
        return got


def _registered(namesrv: str) -> bool:
    async def check() -> int:
        async with Admin(namesrv, instance_name=f"probe-{os.getpid()}") as admin:
            return len(await admin.master_addrs())

    try:
        return asyncio.run(check()) >= 1
    except Exception:
        return False


@contextlib.contextmanager
def running(base: Path, **broker_props: str) -> Iterator[Servers]:
    """A name server and broker-a, stopped at the end."""
    procs: list[subprocess.Popen[str]] = []
    try:
        ns_dir = base / "ns"
        ns_dir.mkdir(parents=True)
        (ns_dir / "namesrv.properties").write_text(
            f"kvConfigPath={ns_dir / 'kv.json'}\nlogDir={ns_dir / 'logs'}\n"
        )
        ns_proc, ns_addr = _start(
            ["namesrv", "-c", str(ns_dir / "namesrv.properties"), "--listen", "127.0.0.1:0"],
            ns_dir,
        )
        procs.append(ns_proc)
        wd = base / "broker-a"
        settings = {
            "brokerName": "broker-a",
            "brokerIP1": "127.0.0.1",
            "namesrvAddr": ns_addr,
            "logDir": str(wd / "logs"),
            "storePathRootDir": str(wd / "store"),
            "mappedFileSizeCommitLog": str(4 * 1024 * 1024),
            "mappedFileSizeConsumeQueue": str(20 * 10_000),
            "maxHashSlotNum": "1000",
            "maxIndexNum": "4000",
            **broker_props,
        }
        wd.mkdir()
        conf = wd / "broker.conf"
        conf.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        broker_proc, broker_addr = _start(
            ["broker", "-c", str(conf), "--listen", "127.0.0.1:0"], wd
        )
        procs.append(broker_proc)
        servers = Servers(ns_addr, broker_addr, base, procs)
        wait_for(lambda: _registered(ns_addr), what="the broker to register")
    except BaseException:
        for proc in reversed(procs):
            _stop(proc)
        raise
    try:
        yield servers
    finally:
        servers.stop()

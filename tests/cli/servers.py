"""Real `mq namesrv` and `mq broker` processes for CLI tests, and ways to run `mq`.

The servers run in their own processes (as users run them), on 127.0.0.1 port 0; a test
module starts one :class:`Cluster` (a name server and one or two brokers) and stops it
at the end. :meth:`Cluster.mq` runs the CLI against it with a private config dir,
:meth:`Cluster.spawn` in the background, :meth:`Cluster.pty` on a pseudo-terminal (for
``--watch`` and prompts); :meth:`Cluster.produce` / :meth:`Cluster.consume` use the
Python client. Every CLI test module uses this one helper.
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


def _start(args: list[str], workdir: Path, what: str) -> tuple[subprocess.Popen[str], str]:
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
    seen: list[str] = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if m := _LISTEN.search(line):
            return proc, f"{m.group(1)}:{m.group(2)}"
    proc.kill()
    proc.wait(5)
    raise AssertionError(f"{what} did not start: {seen!r} {(workdir / 'stderr.txt').read_text()!r}")


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


@dataclass
class Cluster:
    namesrv: str
    brokers: dict[str, str]
    base: Path
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    @property
    def broker(self) -> str:
        """The first broker's address (broker-a)."""
        return next(iter(self.brokers.values()))

    @property
    def env(self) -> dict[str, str]:
        return {
            "COLUMNS": "220",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.base / "home"),
            "MQ_CONFIG_DIR": str(self.base / "config"),
            "MQ_NAMESRV_ADDR": self.namesrv,
            "PYTHONUNBUFFERED": "1",
            **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
        }

    def mq(
        self,
        *args: str,
        input: str | None = None,
        timeout: float = 60,
        check: bool = False,
        columns: int | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run `mq ARGS` to completion against this cluster (``columns``: terminal width)."""
        env = self.env if columns is None else {**self.env, "COLUMNS": str(columns)}
        done = subprocess.run(
            [sys.executable, "-m", "mqcli.main", *args],
            capture_output=True,
            text=True,
            input=input,
            timeout=timeout,
            env=env,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"mq {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
            )
        return done

    def ok(self, *args: str, input: str | None = None) -> str:
        """Run `mq ARGS`, which must succeed; its stdout."""
        return self.mq(*args, input=input, check=True).stdout

    def json(self, *args: str) -> object:
        """Run `mq ARGS --json`; the parsed document."""
        return orjson.loads(self.ok(*args, "--json"))

    def pty(self, *args: str) -> pexpect.spawn:
        """`mq ARGS` on a 60x220 pseudo-terminal."""
        return pexpect.spawn(
            sys.executable,
            ["-m", "mqcli.main", *args],
            env=self.env,
            encoding="utf-8",
            timeout=20,
            dimensions=(60, 220),
        )

    def spawn(self, *args: str) -> subprocess.Popen[str]:
        """Start `mq ARGS` in the background (stdout piped, line buffered)."""
        return subprocess.Popen(
            [sys.executable, "-m", "mqcli.main", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=self.env,
        )

    def stop(self) -> None:
        for proc in reversed(self.procs):
            with contextlib.suppress(Exception):
                _stop(proc)

    # -- client helpers (in the test process) -----------------------------------------------

    async def produce(self, topic: str, n: int, *, tag: str = "A", delay: int = 0) -> None:
        """Send ``n`` messages (bodies ``body 0``.., keys ``k0``..) with the Python client."""
        producer = Producer(f"cli-test-{os.getpid()}", namesrv=self.namesrv)
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


def start_cluster(base: Path, brokers: int = 1, **broker_props: str) -> Cluster:
    """A name server and ``brokers`` brokers (broker-a, broker-b) in one cluster.

    ``{wd}`` in a property value is the broker's own directory (``base/broker-a``)."""
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
            "namesrv",
        )
        procs.append(ns_proc)
        addrs: dict[str, str] = {}
        for name in ("broker-a", "broker-b")[:brokers]:
            wd = base / name  # a test may have put files there (e.g. an ACL file)
            wd.mkdir(exist_ok=True)
            settings = {
                "brokerName": name,
                "brokerIP1": "127.0.0.1",
                "namesrvAddr": ns_addr,
                "logDir": str(wd / "logs"),
                "storePathRootDir": str(wd / "store"),
                "mappedFileSizeCommitLog": str(4 * 1024 * 1024),
                "mappedFileSizeConsumeQueue": str(20 * 10_000),
                "maxHashSlotNum": "1000",
                "maxIndexNum": "4000",
                **{k: v.replace("{wd}", str(wd)) for k, v in broker_props.items()},
            }
            conf = wd / "broker.conf"
            conf.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
            proc, addr = _start(["broker", "-c", str(conf), "--listen", "127.0.0.1:0"], wd, name)
            procs.append(proc)
            addrs[name] = addr
    except BaseException:
        for proc in reversed(procs):
            _stop(proc)
        raise
    cluster = Cluster(ns_addr, addrs, base, procs)
    # Wait until every broker is in the name server's cluster table.
    wait_for(lambda: _registered(cluster, brokers), what="brokers to register")
    return cluster


def _registered(cluster: Cluster, brokers: int) -> bool:
    async def check() -> int:
        async with Admin(cluster.namesrv, instance_name=f"probe-{os.getpid()}") as admin:
            return len(await admin.master_addrs())

    try:
        return asyncio.run(check()) >= brokers
    except Exception:
        return False


def wait_for(cond: Callable[[], bool], *, timeout: float = 20, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def json_lines(text: str) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


@contextlib.contextmanager
def running(base: Path, brokers: int = 1, **props: str) -> Iterator[Cluster]:
    cluster = start_cluster(base, brokers, **props)
    try:
        yield cluster
    finally:
        cluster.stop()

"""A name server and one or two brokers as processes, and ways to run `mq` against them.

A CLI test module starts one :class:`Cluster` and stops it at the end.
:meth:`Cluster.mq` runs the CLI against it with a private config dir, :meth:`Cluster.spawn`
in the background, :meth:`Cluster.pty` on a pseudo-terminal (for ``--watch`` and prompts);
:meth:`Cluster.produce` / :meth:`Cluster.consume` use the Python client.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pexpect

from mqcore.client import Admin, ConsumeFromWhere, LitePullConsumer, Producer, make_message
from tests.support.polling import until_sync
from tests.support.processes import (
    MQ,
    BrokerProcess,
    ServerProcess,
    run_mq,
    start_broker,
    start_namesrv,
)


@dataclass
class Cluster:
    namesrv: str
    brokers: dict[str, str]
    base: Path
    procs: list[ServerProcess] = field(default_factory=list)

    @property
    def broker_processes(self) -> list[BrokerProcess]:
        return [p for p in self.procs if isinstance(p, BrokerProcess)]

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
        return run_mq(args, env, input=input, timeout=timeout, check=check)

    def ok(self, *args: str, input: str | None = None) -> str:
        """Run `mq ARGS`, which must succeed; its stdout."""
        return self.mq(*args, input=input, check=True).stdout

    def json(self, *args: str) -> object:
        """Run `mq ARGS --json`; the parsed document."""
        return orjson.loads(self.ok(*args, "--json"))

    def pty(self, *args: str) -> pexpect.spawn:
        """`mq ARGS` on a 60x220 pseudo-terminal."""
        return pexpect.spawn(
            MQ[0],
            [*MQ[1:], *args],
            env=self.env,
            encoding="utf-8",
            timeout=20,
            dimensions=(60, 220),
        )

    def spawn(self, *args: str) -> subprocess.Popen[str]:
        """Start `mq ARGS` in the background (stdout piped, line buffered)."""
        return subprocess.Popen(
            [*MQ, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=self.env,
        )

    def stop(self) -> None:
        for server in reversed(self.procs):
            with contextlib.suppress(Exception):
                server.stop()

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
    procs: list[ServerProcess] = []
    try:
        namesrv = start_namesrv(base / "ns")
        procs.append(namesrv)
        addrs: dict[str, str] = {}
        for name in ("broker-a", "broker-b")[:brokers]:
            wd = base / name  # a test may have put files there (e.g. an ACL file)
            props = {k: v.replace("{wd}", str(wd)) for k, v in broker_props.items()}
            broker = start_broker(wd, namesrv.addr, name=name, **props)
            procs.append(broker)
            addrs[name] = broker.addr
    except BaseException:
        for server in reversed(procs):
            server.stop()
        raise
    cluster = Cluster(namesrv.addr, addrs, base, procs)
    # Wait until every broker is in the name server's cluster table.
    until_sync(lambda: _registered(cluster, brokers), what="brokers to register")
    return cluster


def _registered(cluster: Cluster, brokers: int) -> bool:
    async def check() -> int:
        async with Admin(cluster.namesrv, instance_name=f"probe-{os.getpid()}") as admin:
            return len(await admin.master_addrs())

    try:
        return asyncio.run(check()) >= brokers
    except Exception:
        return False


def json_lines(text: str) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


@contextlib.contextmanager
def running(base: Path, brokers: int = 1, **props: str) -> Iterator[Cluster]:
    cluster = start_cluster(base, brokers, **props)
    try:
        yield cluster
    finally:
        cluster.stop()


@contextlib.contextmanager
def running_as_marked(base: Path, settings: dict[str, Any]) -> Iterator[Cluster]:
    """:func:`running` as a mark says: ``brokers`` (1 or 2), ``files`` to write under
    ``base`` first (relative path -> text), ``clean_exit`` (every broker must exit 0 when
    stopped), and broker.conf keys (``{wd}`` is the broker's own directory)."""
    settings = dict(settings)
    brokers: int = settings.pop("brokers", 1)
    files: dict[str, str] = settings.pop("files", None) or {}
    clean_exit: bool = settings.pop("clean_exit", False)
    for name, text in files.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text)
    with running(base, brokers, **settings) as cluster:
        yield cluster
        if clean_exit:
            for broker in cluster.broker_processes:
                assert broker.stop() == 0, f"{broker.workdir.name} exited {broker.proc.returncode}"

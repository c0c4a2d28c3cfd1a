"""The RocketMQ 4.9.8 Java client across controller-mode failovers, configured as any
application would be (nothing for the failover): a producer sending one message after
another and a push consumer run while the master of broker-a is killed with SIGKILL,
twice. The producer is acknowledged again at each new master (once it reads the route,
every ``pollNameServerInterval``, 30 s by default: a 4.9.8 client does not read it on a
failed send), the consumer goes on, and every message the producer saw acknowledged is
consumed. Real ``mq`` processes (the
cluster of bench/controller_failover.py); skipped where the Java build is absent."""

from __future__ import annotations

import importlib
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import IO, Any

import pytest
from java_support import java_classpath, java_command, java_env

from mqcore.client import Admin

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(400)]

BENCH = Path(__file__).resolve().parents[2] / "bench"
TIMEOUT_MS = 2000
ROUTE_POLL_S = 30
"""The Java client's pollNameServerInterval (its default)."""
ROUNDS = 2


def bench() -> ModuleType:
    """bench/controller_failover.py, whose cluster code this shares."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module("controller_failover")


cf = bench()


class JavaOutput:
    """A probe's stdout as it grows, read from the file it writes to."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self, prefix: str) -> list[list[str]]:
        text = self.path.read_text(errors="replace") if self.path.exists() else ""
        return [ln.split() for ln in text.splitlines() if ln.startswith(prefix + " ")]


def start_probe(cp: str, home: Path, out: IO[bytes], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        java_command(cp, home, "FailoverProbe", *args),
        stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=java_env(),
    )  # fmt: skip


def stop_probe(proc: subprocess.Popen[bytes]) -> None:
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


async def test_the_java_client_follows_controller_failovers(tmp_path: Path) -> None:
    cp = java_classpath(tmp_path / "classes")
    home = tmp_path / "java-home"
    home.mkdir()
    stop_sending, stop_consuming = tmp_path / "stop-p", tmp_path / "stop-c"
    cluster = cf.ControllerCluster(tmp_path / "cluster", timeout_ms=TIMEOUT_MS)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        cluster.start()
        async with Admin(namesrv=cluster.namesrv_addr, client_config=cf.FAST_CLIENT) as admin:
            await cf.steady_master(admin, cluster)
            await cf.create_topic(admin, cluster)
            sent, got = JavaOutput(tmp_path / "produce.txt"), JavaOutput(tmp_path / "consume.txt")
            with open(sent.path, "wb") as p_out, open(got.path, "wb") as c_out:
                ns = cluster.namesrv_addr
                consume = ("consume", ns, cf.TOPIC, "java-cg", str(stop_consuming))
                procs.append(start_probe(cp, home, c_out, *consume))
                produce = ("produce", ns, cf.TOPIC, str(stop_sending))
                procs.append(start_probe(cp, home, p_out, *produce))
                for _ in range(ROUNDS):
                    await one_round(admin, cluster, sent, got)
                stop_sending.touch()
                stop_probe(procs[1])
                acked = {f"java-{x[1]}" for x in sent.lines("SENT") if x[2] == "SEND_OK"}
                assert len(acked) >= 40 * ROUNDS, sent.path.read_text()[-2000:]

                async def all_consumed() -> bool:
                    return acked <= {x[1] for x in got.lines("GOT")}

                try:
                    await cf.wait_for(all_consumed, 60, "every acknowledged message consumed", 0.5)
                except TimeoutError:
                    missing = acked - {x[1] for x in got.lines("GOT")}
                    raise AssertionError(
                        f"{len(missing)} acknowledged, never consumed: {sorted(missing)[:10]}"
                    ) from None
                stop_consuming.touch()
                stop_probe(procs[0])
    finally:
        stop_sending.touch()
        stop_consuming.touch()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        cluster.stop()


async def one_round(admin: Admin, cluster: Any, sent: JavaOutput, got: JavaOutput) -> None:
    """Kill the master once the Java producer is acknowledged there; the producer is
    acknowledged at another master within the heartbeat timeout and a few seconds, and
    the consumer gets what was sent after the kill."""
    master = await cf.steady_master(admin, cluster)
    base = len(sent.lines("SENT"))

    async def acked_at_master() -> bool:
        here = [x for x in sent.lines("SENT")[base:] if x[2] == "SEND_OK"]
        return sum(1 for x in here if cf.store_addr(x[4]) == master.addr) >= 20

    await cf.wait_for(acked_at_master, 60, f"the Java producer acknowledged by {master.addr}")
    killed_at = await cf.kill_in_sync(admin, cluster, master)
    at_kill = len(sent.lines("SENT"))

    async def acked_elsewhere() -> list[str] | None:
        after = [x for x in sent.lines("SENT")[at_kill:] if x[2] == "SEND_OK"]
        return next((x for x in after if cf.store_addr(x[4]) != master.addr), None)

    last: list[Any] = []

    async def elected() -> bool:
        seen = last[:] = await cf.replicas(admin, cluster)
        return any(r.is_master and r.addr != master.addr for r in seen)

    # The election takes the heartbeat timeout and a scan (longer on a loaded machine);
    # the new master registers at once. The 4.9.8 client reads routes every
    # pollNameServerInterval (30 s) and not on a failure: until its next read after the
    # election it sends to the dead address. So its window starts at the election.
    try:
        await cf.wait_for(elected, TIMEOUT_MS / 1000 + 30, "another replica elected master")
    except TimeoutError as exc:
        raise AssertionError(f"{exc}; killed {master}; the others say {last}") from None
    window = ROUTE_POLL_S + 10
    first = await cf.wait_for(acked_elsewhere, window, "the producer failed over")
    print(f"kill -9 -> first Java SEND_OK elsewhere: {time.monotonic() - killed_at:.1f} s")

    async def consumed_after_kill() -> bool:
        return f"java-{first[1]}" in {x[1] for x in got.lines("GOT")}

    await cf.wait_for(consumed_after_kill, window + 15, "the consumer gets what was sent after")
    cluster.brokers[master.index].start()  # back, as a slave of the new master

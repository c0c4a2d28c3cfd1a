"""Controller mode with real processes under faults: `mq controller`, `mq namesrv` and
three `mq broker` replicas of broker-a (SYNC_MASTER, controllerHeartBeatTimeoutMills
2000), on loopback, as bench/controller_failover.py runs them (its cluster code is
used here; its rounds are the first test).

- kill -9 of the master under continuous sends, three rounds: nothing acknowledged is
  lost, a new master acknowledges within the heartbeat timeout and a few seconds, the
  consumer goes on;
- allAckInSyncStateSet: a SEND_OK means every replica of the in-sync set holds the
  message (a frozen replica holds the answer until the master drops it from the set);
- everything killed at once and started again: the same master at the same epoch;
- a Raft group of three controllers whose leader is killed while an election is
  needed: the new controller leader completes it;
- the master cut off the network (its namespace's link down): it stops acknowledging,
  another master takes over at a higher epoch, and healed it returns as a slave with
  nothing acknowledged lost (needs root for `ip netns`, skipped otherwise).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mqcore.client import Admin, ConsumeFromWhere, LitePullConsumer, Producer, make_message
from mqcore.client.api import SendStatus
from mqcore.client.controller_admin import ControllerAdmin
from mqcore.errors import MQError
from tests.support.polling import until

pytestmark = pytest.mark.timeout(120)

BENCH = Path(__file__).resolve().parents[2] / "bench"
TIMEOUT_MS = 2000
"""controllerHeartBeatTimeoutMills of every broker here."""


def bench() -> ModuleType:
    """bench/controller_failover.py, whose cluster code these tests share."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module("controller_failover")


cf = bench()


@contextlib.asynccontextmanager
async def running(root: Path, **options: Any) -> AsyncIterator[Any]:
    """A started ControllerCluster, every process of it stopped after (even on failure)."""
    cluster = cf.ControllerCluster(root, timeout_ms=TIMEOUT_MS, **options)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


async def send_acked(producer: Producer, bodies: list[str]) -> list[str]:
    """Send each body once; those answered SEND_OK."""
    acked: list[str] = []
    for body in bodies:
        with contextlib.suppress(MQError):
            if (await producer.send(make_message(cf.TOPIC, body))).status is SendStatus.SEND_OK:
                acked.append(body)
    return acked


async def consume_all(namesrv: str, wanted: set[str], timeout: float = 30) -> set[str]:
    """What a new consumer group reads of the topic from its start, until it has every
    body of ``wanted`` or ``timeout`` s."""
    consumer = LitePullConsumer(
        "ctl-proc-check",
        namesrv=namesrv,
        client_config=cf.FAST_CLIENT,
        consume_from_where=ConsumeFromWhere.FIRST,
    )
    consumer.subscribe(cf.TOPIC, "*")
    got: set[str] = set()
    async with consumer:
        deadline = time.monotonic() + timeout
        while not wanted <= got and time.monotonic() < deadline:
            got |= {m.body.decode() for m in await consumer.poll(0.5)}
    return got


def test_kill9_rounds_under_load_lose_nothing_acknowledged() -> None:
    """bench/controller_failover.py, three rounds (the bench runs twenty)."""
    run = subprocess.run(
        [sys.executable, str(BENCH / "controller_failover.py"), "--rounds", "3", "--json"],
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert run.stdout, run.stderr[-3000:]
    result = json.loads(run.stdout)
    assert result["lost"] == 0, result
    assert result["acknowledged"] > 0, result
    assert result["failoverSeconds"]["failedOver"] == 3, result
    assert result["failoverSeconds"]["max"] <= TIMEOUT_MS / 1000 + 4, result
    assert result["consumerResumed"] == 3, result
    epochs = [(r["epochBefore"], r["epochAfter"]) for r in result["perRound"]]
    assert all(after == before + 1 for before, after in epochs), epochs
    killed = [r["killedId"] for r in result["perRound"]]
    news = [r["newMasterId"] for r in result["perRound"]]
    assert all(k != n for k, n in zip(killed, news, strict=True)), result["perRound"]
    assert run.returncode == 0, run.stderr[-3000:]


async def broker_id_of(admin: Admin, cluster: Any, index: int) -> int:
    seen = {r.index: r for r in await cf.replicas(admin, cluster)}
    return int(seen[index].broker_id)


async def test_a_send_ok_is_on_every_in_sync_replica(tmp_path: Path) -> None:
    """allAckInSyncStateSet: with a replica of the in-sync set frozen (SIGSTOP), the
    master answers SEND_OK only once the controller took it out of the set (after
    haMaxTimeSlaveNotCatchup), never while the set still names a replica without the
    message: any replica of the set may be the next master."""
    async with (
        running(tmp_path) as cluster,
        Admin(namesrv=cluster.namesrv_addr, client_config=cf.FAST_CLIENT) as admin,
    ):
        master = await cf.steady_master(admin, cluster)
        await cf.create_topic(admin, cluster)
        frozen = next(i for i in range(len(cluster.brokers)) if i != master.index)
        frozen_id = await broker_id_of(admin, cluster, frozen)
        assert frozen_id in master.sync_state_set
        async with Producer(
                "ctl-proc-pg", namesrv=cluster.namesrv_addr, send_timeout=10.0,
                client_config=cf.FAST_CLIENT,
            ) as producer:  # fmt: skip
            assert await send_acked(producer, ["warm"]) == ["warm"]
            pid = cluster.brokers[frozen].proc.pid
            os.kill(pid, signal.SIGSTOP)
            try:
                result = await producer.send(make_message(cf.TOPIC, "while-frozen"))
                info = await admin.broker_runtime_info(master.addr)
            finally:
                os.kill(pid, signal.SIGCONT)
        assert result.status is SendStatus.SEND_OK, result
        in_sync = {int(x) for x in info["syncStateSet"].split(",") if x}
        assert frozen_id not in in_sync, (
            f"SEND_OK while the in-sync set {sorted(in_sync)} names the frozen {frozen_id}"
        )
        # thawed, it catches up and is back in the set
        await cf.steady_master(admin, cluster)


async def test_everything_restarted_at_once_brings_back_the_same_master_and_epoch(
    tmp_path: Path,
) -> None:
    """A power cut: every process SIGKILLed, then all started at once on their stores
    and the controller's Raft journal. The journal says who was master at which epoch;
    the old master registers, is alive when the controller first looks, and is
    confirmed without an election (RocketMQ 5's DefaultElectPolicy keeps an alive old
    master), so the epoch stays. Nothing acknowledged is lost."""
    async with running(tmp_path) as cluster:
        async with Admin(namesrv=cluster.namesrv_addr, client_config=cf.FAST_CLIENT) as admin:
            master = await cf.steady_master(admin, cluster)
            await cf.create_topic(admin, cluster)
            async with Producer(
                "ctl-proc-pg", namesrv=cluster.namesrv_addr, client_config=cf.FAST_CLIENT
            ) as producer:
                acked = await send_acked(producer, [f"before-{i}" for i in range(50)])
        assert len(acked) == 50
        for server in cluster.all_servers():
            server.kill()
        cluster.restart_all()
        async with Admin(namesrv=cluster.namesrv_addr, client_config=cf.FAST_CLIENT) as admin:
            again = await cf.steady_master(admin, cluster)
            assert (again.broker_id, again.epoch) == (master.broker_id, master.epoch)
            async with Producer(
                "ctl-proc-pg", namesrv=cluster.namesrv_addr, client_config=cf.FAST_CLIENT
            ) as producer:

                async def acknowledged() -> bool:
                    return await send_acked(producer, ["probe"]) == ["probe"]

                await until(acknowledged, 30, "the master acknowledges again", interval=0.2)
                acked += await send_acked(producer, [f"after-{i}" for i in range(10)])
        assert len(acked) == 60
        got = await consume_all(cluster.namesrv_addr, set(acked))
        assert set(acked) <= got, f"lost: {sorted(set(acked) - got)}"


async def controller_leader(cluster: Any) -> int | None:
    """The index of the controller that says it leads its Raft group."""
    async with ControllerAdmin(cluster.controller_addr, timeout=2.0) as ctl:
        for i, c in enumerate(cluster.controllers):
            if not c.running:
                continue
            with contextlib.suppress(OSError, MQError, TimeoutError):
                if (await ctl.metadata(c.addr)).is_leader:
                    return i
    return None


async def has_leader(cluster: Any) -> bool:
    return await controller_leader(cluster) is not None


async def test_the_election_completes_when_the_controller_leader_dies(tmp_path: Path) -> None:
    """Three `mq controller` processes (a Raft group of three); the master is killed and
    right after it the controller leader: a new controller leader, which has heard no
    heartbeat yet, waits a whole heartbeat timeout, finds the master silent and elects
    an in-sync replica; the brokers find it through controllerAddr's three addresses."""
    async with (
        running(tmp_path, controllers=3) as cluster,
        Admin(namesrv=cluster.namesrv_addr, client_config=cf.FAST_CLIENT) as admin,
    ):
        master = await cf.steady_master(admin, cluster)
        await cf.wait_for(lambda: has_leader(cluster), 20, "a controller leader")
        leader = await controller_leader(cluster)
        assert leader is not None
        cluster.brokers[master.index].kill()
        cluster.controllers[leader].kill()

        async def elected() -> Any:
            seen = await cf.replicas(admin, cluster)
            return next((r for r in seen if r.is_master and r.epoch > master.epoch), None)

        new = await cf.wait_for(elected, 30, "a master elected by the new controller leader")
        assert new.broker_id != master.broker_id
        assert new.epoch == master.epoch + 1
        new_leader = await controller_leader(cluster)
        assert new_leader is not None and new_leader != leader
        await cf.create_topic(admin, cluster)
        async with Producer(
            "ctl-proc-pg", namesrv=cluster.namesrv_addr, client_config=cf.FAST_CLIENT
        ) as producer:

            async def acknowledged() -> bool:
                return await send_acked(producer, ["probe"]) == ["probe"]

            await until(acknowledged, 30, "the new master acknowledges", interval=0.2)

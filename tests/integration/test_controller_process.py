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
  nothing acknowledged lost (needs root for `ip netns`, skipped otherwise);
- in process, to make the order certain: a slave told of its new master before that
  master serves replication follows it once it does.
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
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.client import Admin, ConsumeFromWhere, LitePullConsumer, Producer, make_message
from mqcore.client.api import SendStatus
from mqcore.client.controller_admin import ControllerAdmin
from mqcore.errors import MQError
from mqcore.store.store_config import BrokerRole
from tests.support.inproc import controller_replica, namesrv_hosting_controller
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
async def running(root: Path, timeout_ms: int = TIMEOUT_MS, **options: Any) -> AsyncIterator[Any]:
    """A started ControllerCluster, every process of it stopped after (even on failure)."""
    cluster = cf.ControllerCluster(root, timeout_ms=timeout_ms, **options)
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
    master), so the epoch stays. Nothing acknowledged is lost. That holds when the old
    master is back within the heartbeat timeout of the controller's start: 6 s here, as
    brokers on a loaded 2-core machine took over 2 s to start."""
    async with running(tmp_path, timeout_ms=6000) as cluster:
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
                # until its slaves are back, a SYNC_MASTER with allAckInSyncStateSet may
                # answer FLUSH_SLAVE_TIMEOUT: only SEND_OKs count, so send until ten are
                after: list[str] = []
                sent = 0

                async def ten_acknowledged() -> bool:
                    nonlocal sent
                    sent += 1
                    after.extend(await send_acked(producer, [f"after-{sent}"]))
                    return len(after) >= 10

                await until(ten_acknowledged, 60, "ten sends acknowledged", interval=0.05)
                acked += after
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


# -- the master cut off the network ----------------------------------------------------------

NS_SENDER = """
import asyncio, json, sys, time
from pathlib import Path
from tests.support.clients import RawBrokerClient

async def main(addr, topic, stop):
    n = 0
    async with RawBrokerClient(addr) as client:
        while not Path(stop).exists():
            body = f"ns{n}"
            n += 1
            try:
                r = await client.send(topic, body.encode())
                code = r.code
            except Exception as e:
                code = type(e).__name__
            print(json.dumps({"at": time.monotonic(), "body": body, "code": code}), flush=True)

asyncio.run(main(*sys.argv[1:4]))
"""
"""Sends to the master from inside its namespace, where the cut does not reach: a line per
answer (CLOCK_MONOTONIC is one clock for every process of the machine)."""


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@contextlib.contextmanager
def namespace_host() -> Iterator[tuple[str, str, str, str]]:
    """A network namespace joined to this one by a veth pair, with a default route back,
    and an address on this side's loopback that it reaches every other process at:
    (namespace, its address, the link to cut, the address of everything else)."""
    n = 20 + os.getpid() % 200
    tag = f"{os.getpid() % 100000}"
    ns, outer, inner = f"mqc{tag}", f"mqco{tag}", f"mqci{tag}"
    net, alias = f"10.219.{n}", f"10.220.{n}.1"
    ip("netns", "add", ns)
    try:
        ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        ip("link", "set", inner, "netns", ns)
        ip("addr", "add", f"{net}.1/24", "dev", outer)
        ip("link", "set", outer, "up")
        ip("addr", "add", f"{alias}/32", "dev", "lo")
        for cmd in (
            ("addr", "add", f"{net}.2/24", "dev", inner),
            ("link", "set", inner, "up"),
            ("link", "set", "lo", "up"),
            ("route", "add", "default", "via", f"{net}.1"),
        ):
            ip("netns", "exec", ns, "ip", *cmd)
        yield ns, f"{net}.2", outer, alias
    finally:
        subprocess.run(["ip", "addr", "del", f"{alias}/32", "dev", "lo"], capture_output=True)
        subprocess.run(["ip", "link", "del", outer], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def netns_usable() -> str | None:
    """Why `ip netns` cannot be used here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns); CI runs as root"
    probe = subprocess.run(["ip", "netns", "add", f"mqprobe{os.getpid()}"], capture_output=True)
    if probe.returncode != 0:
        return f"ip netns is refused here: {probe.stderr.decode().strip()}"
    subprocess.run(["ip", "netns", "del", f"mqprobe{os.getpid()}"], check=False)
    return None


async def test_a_master_cut_off_stops_acknowledging_and_returns_as_a_slave(
    tmp_path: Path,
) -> None:
    """broker 0, master, in its own network namespace; the others, the controller and the
    name server outside. Its link goes down under load: it answers no SEND_OK any more
    (a sender inside its namespace sees FLUSH_SLAVE_TIMEOUT: its in-sync slaves are out
    of reach), the controller elects another master at the next epoch, and no SEND_OK of
    the old master comes after the new master's first. Healed, it follows the new master
    as a slave (what it wrote alone is truncated) and nothing acknowledged is lost: a
    consumer group reading from the start gets every message either master
    acknowledged."""
    if why := netns_usable():
        pytest.skip(why)
    with ExitStack() as stack:
        ns, ns_addr, link, alias = stack.enter_context(namespace_host())
        cluster = cf.ControllerCluster(
            tmp_path, timeout_ms=TIMEOUT_MS, host=alias, bind="0.0.0.0",
            broker_props={"syncFlushTimeout": "1000"},
        )  # fmt: skip
        cluster.broker_hosts[0] = ns_addr
        cluster.broker_prefix[0] = ["ip", "netns", "exec", ns]
        stack.callback(cluster.stop)
        cluster.start_control()
        cluster.brokers = [cluster.broker(i) for i in range(3)]
        async with Admin(namesrv=cluster.namesrv_addr, client_config=cf.FAST_CLIENT) as admin:
            cluster.brokers[0].start()  # alone, so the controller makes it master

            async def first_master() -> bool:
                return any(r.is_master for r in await cf.replicas(admin, cluster, {0}))

            await cf.wait_for(first_master, 30, "broker 0 master")
            cf.start_at_once(cluster.brokers[1:])
            master = await cf.steady_master(admin, cluster)
            assert master.index == 0
            await cf.create_topic(admin, cluster)
            load = cf.Load(cluster.namesrv_addr)
            await load.start()
            try:
                await run_partition(cluster, admin, load, master, ns, link, tmp_path)
            finally:
                await load.close()


async def run_partition(
    cluster: Any, admin: Admin, load: Any, master: Any, ns: str, link: str, tmp_path: Path
) -> None:
    others = {1, 2}

    async def acked_at_master() -> bool:
        return sum(1 for a in load.acks if a.addr == master.addr) >= 20

    await cf.wait_for(acked_at_master, 30, "sends acknowledged by broker 0")
    stop = tmp_path / "ns-sender-stop"
    out = open(tmp_path / "ns-sender.txt", "w+")  # noqa: SIM115 (closed below)
    sender = subprocess.Popen(
        ["ip", "netns", "exec", ns, sys.executable, "-c", NS_SENDER, master.addr, cf.TOPIC,
         str(stop)],
        stdout=out, stderr=subprocess.STDOUT, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    try:

        def ns_answers() -> list[dict[str, Any]]:
            out.flush()
            text = (tmp_path / "ns-sender.txt").read_text()
            return [json.loads(x) for x in text.splitlines() if x.startswith("{")]

        await until(
            lambda: any(a["code"] == 0 for a in ns_answers()), 20,
            lambda: f"the sender in the namespace acknowledged: {ns_answers()[-3:]}",
        )  # fmt: skip
        before = len(load.acks)
        cut_at = time.monotonic()
        ip("link", "set", link, "down")

        async def new_master() -> Any:
            seen = await cf.replicas(admin, cluster, others)
            return next((r for r in seen if r.is_master and r.epoch > master.epoch), None)

        elected = await cf.wait_for(new_master, 30, "another master elected")
        assert elected.epoch == master.epoch + 1

        async def first_new_ack() -> Any:
            return next((a for a in load.acks[before:] if a.addr == elected.addr), None)

        first = await cf.wait_for(first_new_ack, 30, "the new master acknowledges")
        # the old master goes on answering inside its namespace, never SEND_OK
        await until(
            lambda: sum(1 for a in ns_answers() if a["at"] > first.at) >= 2, 20,
            "the cut-off master answers its own namespace",
        )  # fmt: skip
        stop.touch()
        sender.wait(15)
    finally:
        if sender.poll() is None:
            sender.kill()
            sender.wait(10)
        out.close()
    answers = ns_answers_of(tmp_path / "ns-sender.txt")
    ok = [a for a in answers if a["code"] == 0]
    late = [a for a in ok if a["at"] >= first.at]
    assert not late, f"two masters acknowledged at once: {late[:3]} after {first}"
    after_cut = [a for a in answers if a["at"] > cut_at + 1.0]
    assert after_cut and all(a["code"] != 0 for a in after_cut), after_cut[:5]
    assert all(a.addr != master.addr for a in load.acks if a.at > cut_at + 1.0)

    ip("link", "set", link, "up")  # healed: it learns the new epoch and follows

    async def rejoined() -> bool:
        seen = {r.index: r for r in await cf.replicas(admin, cluster, {0})}
        r = seen.get(0)
        return bool(r and not r.is_master and r.master_id == elected.broker_id
                    and r.epoch == elected.epoch)  # fmt: skip

    await cf.wait_for(rejoined, 40, "broker 0 a slave of the new master")
    again = await cf.steady_master(admin, cluster)
    assert (again.index, again.epoch) == (elected.index, elected.epoch)
    await load.stop_sending()
    # A group of its own reads from the start: the running consumer's long-polling pull
    # hangs on the cut-off master until it times out (the 30 s of RocketMQ's clients).
    acked = load.acked_bodies() | {a["body"] for a in ok}
    missing = acked - await consume_all(cluster.namesrv_addr, acked)
    assert not missing, f"{len(missing)} acknowledged messages lost: {sorted(missing)[:10]}"


def ns_answers_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.startswith("{")]


# -- a slave told of its new master before that master knows ------------------------------


def in_process_replica(root: Path, namesrv: str) -> BrokerController:
    return controller_replica(
        root,
        namesrv,
        heartbeat_timeout_ms=TIMEOUT_MS,
        store={"broker_role": BrokerRole.SYNC_MASTER},
    )


async def test_a_slave_told_of_a_master_before_it_serves_follows_it_when_it_does(
    tmp_path: Path,
) -> None:
    """The controller's news reaches the replicas in no set order (NOTIFY_BROKER_ROLE_
    CHANGED one after the other, each replica's periodic sync in between): a slave may
    learn "b is master at epoch E+1" while b is still a slave and has no HA address to
    give. It must follow b once b serves, not go on replicating from the old master's
    address for the whole epoch (never in sync again: what stalled the kill -9 rounds
    and the partition test above). In process, to make that order certain."""
    ns = namesrv_hosting_controller(tmp_path)
    await ns.start()
    brokers: list[BrokerController] = []
    try:
        await until(lambda: ns.controller is not None and ns.controller.raft.is_leader, 10)
        for name in "abc":
            brokers.append(in_process_replica(tmp_path / name, ns.listen_address))
            await brokers[-1].start()
            if name == "a":
                await until(lambda: brokers[0].replicas is not None
                            and brokers[0].replicas.is_master, 10, "a master")  # fmt: skip
        a, b, c = brokers
        assert a.replicas is not None and b.replicas is not None and c.replicas is not None
        ids = {x.replicas.broker_id for x in brokers if x.replicas is not None}
        await until(lambda: a.replicas is not None and a.replicas.sync_state_set == ids, 15)
        epoch, id_b = a.replicas.master_epoch, b.replicas.broker_id
        assert id_b is not None
        # c hears of the next epoch first, from its own sync, while b is still a slave
        await c.replicas.change_to_slave(b.broker_addr, epoch + 1, id_b)
        async with ControllerAdmin(ns.listen_address) as ctl:
            header, _ = await ctl.elect_master("DefaultCluster", "broker-a", id_b)
        assert header.master_epoch == epoch + 1
        await until(lambda: b.replicas is not None and b.replicas.is_master, 10, "b master")
        b_ha = f"127.0.0.1:{b.ha.port}"
        await until(
            lambda: c.ha_client.master_address == b_ha and c.ha_client.connected,
            10,
            lambda: f"c replicates from {c.ha_client.master_address}, not b's {b_ha}",
        )
        await until(lambda: b.replicas is not None and b.replicas.sync_state_set == ids, 15)
    finally:
        for x in reversed(brokers):
            await x.shutdown()
        await ns.shutdown()

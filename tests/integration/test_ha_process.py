"""Master/slave pairs of real `mq broker` processes: SYNC_MASTER under kill -9, a slave
catching up from empty, and a slave restarted mid-file.

SYNC_MASTER's promise is that an acknowledged message is on the slave: each round sends
from several connections and kills the master with SIGKILL while sends are in flight;
before the master is restarted on the same store, every message it acknowledged is in
the slave's commit log. At the end the slave's log is a byte-for-byte prefix of the
master's, with no record twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from mqcore.errors import MQError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.route import KVTable
from mqcore.store.offline import OfflineStore
from tests.support.clients import RawBrokerClient
from tests.support.polling import until
from tests.support.processes import BrokerProcess, start_namesrv, start_pair_member

pytestmark = pytest.mark.timeout(300)

TOPIC = "HaKillTopic"
ROUNDS = 5
ACKS_PER_ROUND = 300
SENDERS = 4
FAST_REGISTRATION = {"registerNameServerPeriod": "300"}
"""The slave learns a restarted master's new HA port at its next registration."""


async def runtime(addr: str) -> dict[str, str]:
    async with RawBrokerClient(addr) as client:
        r = await client.invoke(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO))
    assert r.code == ResponseCode.SUCCESS, r
    return KVTable.decode(r.body).table


def slave_keys(store: Path) -> list[str]:
    return [
        req.keys
        for _, req in OfflineStore(store).walk_commit_log()
        if not isinstance(req, Exception) and req.keys
    ]


def commit_log(store: Path) -> bytes:
    return b"".join(f.read_bytes() for f in sorted((store / "commitlog").iterdir()))


def slave_connected_to(master: BrokerProcess) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        try:
            return int((await runtime(master.addr)).get("haConnectionCount", "0")) > 0
        except (MQError, OSError):
            return False

    return check


async def kill_round(rnd: int, master: BrokerProcess) -> tuple[list[str], int]:
    """Send from several connections until ACKS_PER_ROUND are acknowledged, SIGKILL the
    master with sends in flight; returns (acknowledged keys, refused sends)."""
    acks: list[str] = []
    refused = 0

    async def sender(n: int) -> None:
        nonlocal refused
        async with RawBrokerClient(master.addr) as client:
            for i in range(100_000):
                key = f"r{rnd}-s{n}-{i}"
                try:
                    r = await client.send(TOPIC, key.encode() * 20, keys=key)
                except (MQError, OSError):
                    return  # the master is gone: an unanswered send proves nothing
                if r.code != ResponseCode.SUCCESS:
                    refused += 1
                    continue
                acks.append(key)
                if len(acks) >= ACKS_PER_ROUND:
                    master.kill()

    await asyncio.wait_for(asyncio.gather(*(sender(n) for n in range(SENDERS))), 120)
    return acks, refused


async def test_sync_master_kill9_rounds_lose_no_acknowledged_message(tmp_path: Path) -> None:
    ns = start_namesrv(tmp_path / "ns")
    slave = start_pair_member(tmp_path / "s", ns.addr, "SLAVE", **FAST_REGISTRATION)
    acked: set[str] = set()
    master: BrokerProcess | None = None
    try:
        for rnd in range(ROUNDS):
            master = start_pair_member(tmp_path / "m", ns.addr, "SYNC_MASTER")
            await until(slave_connected_to(master), 60, "the slave connects", interval=0.05)
            acks, refused = await kill_round(rnd, master)
            assert len(acks) >= ACKS_PER_ROUND and refused == 0
            acked.update(acks)
            # Before the master comes back (it would refill the slave): the slave already
            # holds every acknowledged message. (Its store is read live, from the files.)
            lost = set(acks) - set(slave_keys(slave.store))
            assert not lost, f"round {rnd}: {len(lost)} acknowledged messages not on the slave"
        assert slave.stop() == 0
        on_slave = slave_keys(slave.store)
        assert acked <= set(on_slave)
        assert len(on_slave) == len(set(on_slave)), "a record was replicated twice"
        master_log, slave_log = commit_log(tmp_path / "m" / "store"), commit_log(slave.store)
        end = len(slave_log.rstrip(b"\0"))
        assert master_log[:end] == slave_log[:end]
        print(f"\nSYNC_MASTER kill -9: {ROUNDS} rounds, {len(acked)} acknowledged, 0 lost")
    finally:
        if master is not None:
            master.kill()
        slave.kill()
        ns.stop()


async def test_an_empty_slave_catches_up_and_resumes_after_a_restart(tmp_path: Path) -> None:
    ns = start_namesrv(tmp_path / "ns")
    big_file = {"mappedFileSizeCommitLog": str(64 * 1024 * 1024)}
    master = start_pair_member(tmp_path / "m", ns.addr, "ASYNC_MASTER", **big_file)
    slave: BrokerProcess | None = None
    try:
        async with RawBrokerClient(master.addr) as client:
            for i in range(300):  # ~6 MiB before the slave exists
                r = await client.send_batch(TOPIC, [bytes([i % 251]) * 1000] * 20, queue_id=i % 4)
                assert r.code == ResponseCode.SUCCESS
        master_end = int((await runtime(master.addr))["commitLogMaxOffset"])
        slave = start_pair_member(tmp_path / "s", ns.addr, "SLAVE", **big_file, **FAST_REGISTRATION)
        slave_addr = slave.addr

        async def slave_at(end: int) -> bool:
            return int((await runtime(slave_addr))["commitLogMaxOffset"]) == end

        await until(lambda: slave_at(master_end), 60, "the empty slave catches up", interval=0.05)
        # restarted in the middle of the file, it resumes where it stands
        assert slave.stop() == 0
        async with RawBrokerClient(master.addr) as client:
            for i in range(50):
                await client.send_batch(TOPIC, [b"after" * 200] * 20, queue_id=i % 4)
        master_end = int((await runtime(master.addr))["commitLogMaxOffset"])
        slave = start_pair_member(tmp_path / "s", ns.addr, "SLAVE", **big_file, **FAST_REGISTRATION)
        slave_addr = slave.addr
        await until(lambda: slave_at(master_end), 60, "the restarted slave resumes", interval=0.05)
        assert slave.stop() == 0
        assert master.stop() == 0
        assert commit_log(slave.store) == commit_log(tmp_path / "m" / "store")
    finally:
        master.kill()
        if slave is not None:
            slave.kill()
        ns.stop()

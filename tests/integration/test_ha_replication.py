"""Master/slave replication in one process: byte-equal commit logs, SYNC_MASTER answers,
a slave refusing sends, garbage on the HA port, and a slave ahead of its master."""

from __future__ import annotations

import asyncio
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.message import decode_records
from mqcore.protocol import ResponseCode
from mqcore.protocol.ha import encode_report
from mqcore.store.store_config import BrokerRole
from tests.support.clients import RawBrokerClient
from tests.support.inproc import (
    running_broker,
    running_ha_pair,
    running_namesrv,
    running_slave,
)
from tests.support.polling import until

pytestmark = pytest.mark.timeout(120)

TOPIC = "HaTopic"
PAST_END = (1 << 40).to_bytes(8, "big")


async def connected(master: BrokerController) -> None:
    """Until a slave has reported. (An empty slave connecting later starts at the start of
    the master's last file, as in 4.9.8, so byte-equal checks wait for it first.)"""
    ha = master.ha
    assert ha is not None
    await until(lambda: any(c.request_offset >= 0 for c in ha.connections), 30, "a slave")


async def caught_up(master: BrokerController, slave: BrokerController) -> None:
    """Until the slave's commit log ends where the master's does; then copy the master's
    metadata now (SlaveSynchronize would within 10 s) so the slave serves its topics."""
    await until(
        lambda: slave.store.max_phy_offset == master.store.max_phy_offset, 30, "slave caught up"
    )
    assert slave.slave_sync is not None
    await slave.slave_sync.sync_all()
    assert all(slave.slave_sync.last_results.values()), slave.slave_sync.last_results


def commit_log_bytes(broker: BrokerController) -> dict[str, bytes]:
    files = sorted(broker.store_config.commit_log_path.iterdir())
    return {f.name: f.read_bytes() for f in files}


async def test_slave_copies_the_master_byte_for_byte(tmp_path: Path) -> None:
    rng = random.Random(11)
    async with running_ha_pair(tmp_path) as (_, master, slave):
        await connected(master)
        async with RawBrokerClient(master.broker_addr) as client:
            sent = 0
            while sent < 10_000:
                bodies = [b"x" * rng.randint(1, 4000) for _ in range(100)]
                r = await client.send_batch(TOPIC, bodies, queue_id=sent // 100 % 4)
                assert r.code == ResponseCode.SUCCESS, r
                sent += len(bodies)
            for i in range(20):
                r = await client.send(TOPIC, b"keyed", keys=f"k{i}", queue_id=0)
                assert r.code == ResponseCode.SUCCESS
        await caught_up(master, slave)
        assert slave.ha_client is not None and slave.ha_client.connected
        master_files = commit_log_bytes(master)
        assert len(master_files) > 3  # several files rolled over
        assert commit_log_bytes(slave) == master_files
        async with (
            RawBrokerClient(master.broker_addr) as on_master,
            RawBrokerClient(slave.broker_addr) as on_slave,
        ):
            for qid in range(4):
                want = await on_master.pull_all(TOPIC, qid)
                got = await on_slave.pull_all(TOPIC, qid)
                assert len(got) >= 2500
                assert [m.msg_id for m in got] == [m.msg_id for m in want]
                assert [m.body for m in got] == [m.body for m in want]
        assert len(slave.store.query_by_key(TOPIC, "k7", 10).buffers) == 1


async def test_sync_master_answers_after_the_slave_has_it(tmp_path: Path) -> None:
    sync = {"broker_role": BrokerRole.SYNC_MASTER}
    async with (
        running_namesrv(tmp_path) as ns,
        running_broker(tmp_path / "m", ns.listen_address, store=sync) as master,
        RawBrokerClient(master.broker_addr) as client,
    ):
        alone = await client.send(TOPIC, b"no slave yet")
        assert alone.code == ResponseCode.SLAVE_NOT_AVAILABLE
        async with running_slave(tmp_path / "s", ns.listen_address) as slave:
            await connected(master)
            for i in range(50):
                r = await client.send(TOPIC, f"m{i}".encode())
                assert r.code == ResponseCode.SUCCESS, r
                # acknowledged means the slave holds it already
                assert slave.store.max_phy_offset >= master.store.max_phy_offset


async def test_sync_master_times_out_on_a_slave_that_never_acknowledges(tmp_path: Path) -> None:
    store = {"broker_role": BrokerRole.SYNC_MASTER, "sync_flush_timeout": 300}
    async with running_broker(tmp_path, store=store) as master:
        ha = master.ha
        assert ha is not None
        _, writer = await asyncio.open_connection("127.0.0.1", ha.port)
        try:
            writer.write(encode_report(0))  # connects, then never reports again
            await until(lambda: ha.connection_count == 1)
            async with RawBrokerClient(master.broker_addr) as client:
                r = await client.send(TOPIC, b"unreplicated")
                assert r.code == ResponseCode.FLUSH_SLAVE_TIMEOUT
                # stored all the same: the code says how durable, not whether
                got = await client.pull_all(TOPIC, 0)
                assert [m.body for m in got] == [b"unreplicated"]
        finally:
            writer.close()


async def test_a_slave_refuses_sends(tmp_path: Path) -> None:
    async with running_ha_pair(tmp_path) as (_, master, slave):
        await connected(master)
        async with RawBrokerClient(slave.broker_addr) as client:
            r = await client.send(TOPIC, b"to a slave")
            assert r.code == ResponseCode.SERVICE_NOT_AVAILABLE
            assert "slave" in (r.remark or "")
            assert slave.store.max_phy_offset == 0


@pytest.mark.parametrize(
    ("first", "then", "dropped"),
    [
        (b"\xff" * 8, b"", True),  # a negative offset
        (PAST_END, PAST_END, True),  # an acknowledgement past the master's end
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"", False),  # odd offsets, no harm
    ],
)
async def test_garbage_on_the_ha_port_harms_no_real_slave(
    tmp_path: Path, first: bytes, then: bytes, dropped: bool
) -> None:
    async with running_ha_pair(tmp_path) as (_, master, slave):
        await connected(master)
        ha = master.ha
        assert ha is not None
        async with RawBrokerClient(master.broker_addr) as client:
            await client.send(TOPIC, b"before")
            await caught_up(master, slave)
            reader, writer = await asyncio.open_connection("127.0.0.1", ha.port)
            # a reader that never reads: only its own connection backs up
            _, slow_writer = await asyncio.open_connection("127.0.0.1", ha.port)
            slow_writer.write(encode_report(0))
            writer.write(first)
            if then:
                await until(lambda: any(c.request_offset == 1 << 40 for c in ha.connections))
                writer.write(then)
            for _ in range(200):
                await client.send(TOPIC, b"y" * 2000)
        await caught_up(master, slave)
        assert commit_log_bytes(slave) == commit_log_bytes(master)
        # no report past the end counts as an acknowledgement (SYNC_MASTER relies on it)
        assert ha.push2slave_max_offset <= master.store.max_phy_offset
        if dropped:
            rest = await asyncio.wait_for(reader.read(), 10)  # ends: the peer was dropped
            assert len(rest) % 12 == 0  # heartbeats at most
        writer.close()
        slow_writer.close()


async def test_a_slave_ahead_of_its_master_is_truncated_to_it(tmp_path: Path) -> None:
    master_store = tmp_path / "m" / "store"
    async with running_namesrv(tmp_path) as ns:
        namesrv = ns.listen_address
        for prefix, count in (("old", 100), ("lost", 50)):
            async with (
                running_broker(tmp_path / "m", namesrv) as master,
                RawBrokerClient(master.broker_addr) as client,
            ):
                for i in range(count):
                    await client.send(TOPIC, f"{prefix} {i}".encode())
            if prefix == "old":
                shutil.copytree(master_store, tmp_path / "m-old")
        # The slave holds all 150; the master comes back with 100 (it lost its tail).
        (tmp_path / "s").mkdir()
        shutil.copytree(master_store, tmp_path / "s" / "store")
        shutil.rmtree(master_store)
        shutil.copytree(tmp_path / "m-old", master_store)
        async with (
            running_broker(tmp_path / "m", namesrv) as master,
            running_slave(tmp_path / "s", namesrv) as slave,
        ):
            old_end = master.store.max_phy_offset
            # The slave asks where the master ends before replicating: 150 -> 100.
            await until(lambda: slave.store.max_phy_offset == old_end, 30, "truncation")
            await connected(master)
            async with RawBrokerClient(master.broker_addr) as client:
                for i in range(30):
                    await client.send(TOPIC, f"new {i}".encode())
            await caught_up(master, slave)
            assert commit_log_bytes(slave) == commit_log_bytes(master)
            async with RawBrokerClient(slave.broker_addr) as on_slave:
                bodies = [m.body.decode() for m in await on_slave.pull_all(TOPIC, 0)]
            assert len(bodies) == 130
            assert not [b for b in bodies if b.startswith("lost")]
        # what the slave dropped is kept aside, whole records, for the operator
        (saved,) = (tmp_path / "s" / "store" / "ha-truncated").iterdir()
        kept = decode_records(saved.read_bytes())
        dumped = subprocess.run(
            [sys.executable, "-m", "mqcli.main", "store", "dump", "commitlog", str(saved)],
            capture_output=True,
            text=True,
            check=True,
        )
        assert dumped.stdout.count(TOPIC) == 50
        assert [m.body.decode() for m in kept] == [f"lost {i}" for i in range(50)]

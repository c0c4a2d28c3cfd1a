"""A full disk is an error answer, never a crash: the broker on a 64 MiB tmpfs.

Sends of 100 KiB fill it; the broker refuses further sends with SERVICE_NOT_AVAILABLE
and a disk remark while every acknowledged message stays readable; it restarts on the
full disk (read-only) and accepts writes again once the file system grows.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqcore.errors import MQError
from mqcore.protocol import ResponseCode
from tests.support.clients import RawBrokerClient
from tests.support.processes import BrokerProcess, start_broker

pytestmark = pytest.mark.timeout(180)

TOPIC = "FullTopic"
BODY = 100 * 1024
SETTINGS = {
    "mappedFileSizeCommitLog": str(16 * 1024 * 1024),
    "cleanResourceInterval": "300",
    "flushIntervalCommitLog": "100",
    # RocketMQ deletes the oldest files of a nearly full disk; here the messages stay,
    # so that what is refused, kept and resumed can be checked message by message
    "cleanFileForciblyEnable": "false",
    "diskMaxUsedSpaceRatio": "95",
}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs (mounting needs CAP_SYS_ADMIN: root in CI and here)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def body(i: int) -> bytes:
    return f"{i:08d}".encode() * (BODY // 8)


async def fill(broker: BrokerProcess) -> tuple[list[int], RawBrokerClientAnswer]:
    """Send until three sends in a row are refused; (acknowledged ids, last refusal)."""
    acked: list[int] = []
    refusals: list[RawBrokerClientAnswer] = []
    async with RawBrokerClient(broker.addr) as client:
        for i in range(1000):
            r = await client.send(TOPIC, body(i), queue_id=i % 2, queue_nums=2)
            if r.code == ResponseCode.SUCCESS:
                acked.append(i)
                refusals.clear()
            else:
                refusals.append((r.code, r.remark or ""))
                if len(refusals) == 3:
                    return acked, refusals[-1]
    raise AssertionError("1000 sends of 100 KiB fitted on a 64 MiB disk")


RawBrokerClientAnswer = tuple[int, str]


async def readable(broker: BrokerProcess) -> list[int]:
    async with RawBrokerClient(broker.addr) as client:
        got = [m for q in range(2) for m in await client.pull_all(TOPIC, q)]
    return sorted(int(m.body[:8]) for m in got)


async def test_a_full_disk_refuses_sends_and_keeps_serving(
    tmp_path: Path, small_disk: Path
) -> None:
    broker = start_broker(tmp_path / "b", store=small_disk, **SETTINGS)
    try:
        acked, (code, remark) = await fill(broker)
        assert broker.proc.poll() is None, "the broker died"
        assert code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert "disk" in remark
        assert len(acked) > 300
        assert await readable(broker) == acked  # reads go on

        assert broker.stop() == 0
        broker = start_broker(tmp_path / "b", store=small_disk, **SETTINGS)  # still full
        async with RawBrokerClient(broker.addr) as client:
            r = await client.send(TOPIC, body(9999), queue_id=0, queue_nums=2)
        assert r.code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert await readable(broker) == acked

        # space returns: writes resume by themselves (the next disk check)
        subprocess.run(["mount", "-o", "remount,size=256m", "tmpfs", str(small_disk)], check=True)
        async with RawBrokerClient(broker.addr) as client:
            deadline = asyncio.get_running_loop().time() + 30
            while True:
                try:
                    r = await client.send(TOPIC, body(5000), queue_id=0, queue_nums=2)
                except MQError:
                    continue
                if r.code == ResponseCode.SUCCESS:
                    break
                assert asyncio.get_running_loop().time() < deadline, r.remark
                await asyncio.sleep(0.1)
        assert await readable(broker) == [*acked, 5000]
    finally:
        broker.kill()

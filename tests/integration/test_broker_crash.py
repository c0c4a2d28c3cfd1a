"""SIGKILL a SYNC_FLUSH broker under load: nothing acknowledged is lost.

A client sends from several tasks at once and records every acknowledged message
(queue, offset, body), and commits consumer offsets as it goes. After the kill and a
restart on the same store: every acknowledged message is pullable where the broker
said it was, committed offsets come back (as of the last periodic persist), and after a
clean stop `mq store verify` finds the store consistent.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from mqcore.errors import MQError
from mqcore.protocol import ResponseCode
from tests.support.clients import RawBrokerClient, send_header
from tests.support.processes import mq, start_broker

TOPIC = "CrashTopic"
QUEUES = 4
SENDERS = 8
GROUP = "crash-group"
PERSIST_MS = 200


async def test_sigkill_under_sync_flush_load_loses_no_acknowledged_message(tmp_path: Path) -> None:
    broker = start_broker(
        tmp_path / "b1",
        flushDiskType="SYNC_FLUSH",
        flushConsumerOffsetInterval=str(PERSIST_MS),
    )
    acked: dict[bytes, tuple[int, int]] = {}
    committed: list[tuple[float, int, int]] = []  # (time, queue, offset)
    stop = asyncio.Event()

    async def sender(n: int, client: RawBrokerClient) -> None:
        i = 0
        while not stop.is_set():
            body = f"sender{n}-msg{i}".encode() * 8
            i += 1
            try:
                r = await client.send(
                    TOPIC, body, queue_id=i % QUEUES, queue_nums=QUEUES, keys=body[:20].decode()
                )
            except (MQError, OSError):
                return  # the broker is gone; unacknowledged sends prove nothing
            if r.code == ResponseCode.SUCCESS:
                h = send_header(r)
                acked[body] = (h.queue_id, h.queue_offset)

    async def committer(client: RawBrokerClient) -> None:
        offset = 0
        while not stop.is_set():
            offset += 1
            q = offset % QUEUES
            try:
                await client.update_offset(GROUP, TOPIC, q, offset)
            except (MQError, OSError):
                return
            committed.append((time.monotonic(), q, offset))
            await asyncio.sleep(0.01)

    clients = [RawBrokerClient(broker.addr) for _ in range(SENDERS + 1)]
    try:
        tasks = [asyncio.create_task(sender(n, c)) for n, c in enumerate(clients[:SENDERS])]
        tasks.append(asyncio.create_task(committer(clients[-1])))
        deadline = time.monotonic() + 10
        while len(acked) < 1500 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        kill_time = time.monotonic()
        broker.kill()
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 15)
    finally:
        for c in clients:
            await c.close()
        broker.kill()
    assert len(acked) >= 200, f"only {len(acked)} sends acknowledged before the kill"
    assert (broker.store / "abort").exists()

    again = start_broker(tmp_path / "b2", store=broker.store)
    try:
        async with RawBrokerClient(again.addr) as c:
            stored: dict[bytes, tuple[int, int]] = {}
            for q in range(QUEUES):
                for m in await c.pull_all(TOPIC, q):
                    stored[m.body] = (m.queue_id, m.queue_offset)
            missing = [b for b in acked if b not in stored]
            assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {missing[:3]}"
            moved = {b: (acked[b], stored[b]) for b in acked if acked[b] != stored[b]}
            assert not moved, f"acknowledged messages moved: {list(moved.items())[:3]}"

            # Offsets: what was committed well before the kill (two persist periods) is back.
            safe_before = kill_time - 2 * PERSIST_MS / 1000
            for q in range(QUEUES):
                history = [off for t, qq, off in committed if qq == q]
                safe = [off for t, qq, off in committed if qq == q and t < safe_before]
                code, offset = await c.query_offset(GROUP, TOPIC, q)
                if safe:
                    assert code == ResponseCode.SUCCESS and offset in history
                    assert offset is not None and offset >= safe[-1]
    finally:
        assert again.stop() == 0
    verify = mq("store", "verify", str(broker.store))
    assert verify.returncode == 0, verify.stdout + verify.stderr

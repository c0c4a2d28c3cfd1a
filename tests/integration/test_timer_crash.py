"""Timer messages across a SIGKILL of a real `mq broker` process: none lost, on time.

Messages go out with random deliver times over the next seconds; the broker is killed
with SIGKILL once in between and started again on the same store. Every message must
come out of its topic (duplicates are possible after a crash: counted and reported,
each one a message that was due), and every message whose time fell outside the
broker's downtime must be delivered within a second of it (its first copy's store time).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from pathlib import Path

from mqcore.errors import MQError
from mqcore.protocol import ResponseCode
from tests.support.clients import RawBrokerClient
from tests.support.processes import BrokerProcess, start_broker

TOPIC = "TimerCrash"
COUNT = 200
WINDOW_MS = 6000
KILL_AFTER_S = 2.5
PRECISION = "200"


def now_ms() -> int:
    return int(time.time() * 1000)


async def test_sigkill_loses_no_timer_message(tmp_path: Path) -> None:
    workdir = tmp_path / "b"
    broker: BrokerProcess = start_broker(workdir, timerPrecisionMs=PRECISION)
    addr = {"now": broker.addr}
    due: dict[bytes, int] = {}
    received: list[tuple[bytes, int]] = []  # (body, store time of the copy)
    stop = asyncio.Event()

    async def consume() -> None:
        offset = 0
        client = RawBrokerClient(addr["now"])
        try:
            while not stop.is_set():
                if client.addr != addr["now"]:
                    await client.close()
                    client = RawBrokerClient(addr["now"])
                try:
                    r = await client.pull(TOPIC, 0, offset, suspend_ms=300, timeout=3)
                except (MQError, OSError, TimeoutError):
                    await asyncio.sleep(0.05)  # the broker is down; its successor comes
                    continue
                if r.code == ResponseCode.SUCCESS:
                    received.extend((m.body, m.store_timestamp) for m in r.messages)
                    offset = r.next_begin_offset
                elif r.next_begin_offset > offset:
                    offset = r.next_begin_offset
                else:
                    await asyncio.sleep(0.02)
        finally:
            await client.close()

    consumer = asyncio.create_task(consume())
    try:
        rng = random.Random()
        start = now_ms()
        async with RawBrokerClient(broker.addr) as producer:
            for i in range(COUNT):
                deliver = start + rng.randrange(500, WINDOW_MS)
                body = f"t{i}".encode()
                r = await producer.send(
                    TOPIC, body, queue_nums=1, properties={"TIMER_DELIVER_MS": str(deliver)}
                )
                assert r.code == ResponseCode.SUCCESS, r.remark
                due[body] = deliver
        await asyncio.sleep(max(0.0, start / 1000 + KILL_AFTER_S - time.time()))
        killed = now_ms()
        broker.kill()
        broker = start_broker(workdir, timerPrecisionMs=PRECISION)
        back = now_ms()
        addr["now"] = broker.addr
        deadline = time.monotonic() + (start + WINDOW_MS - now_ms()) / 1000 + 10
        while {b for b, _ in received} != set(due) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        await asyncio.wait_for(consumer, 10)
        broker.stop()

    counts = Counter(b for b, _ in received)
    missing = set(due) - set(counts)
    assert not missing, f"{len(missing)} timer messages lost: {sorted(missing)[:10]}"
    duplicates = sum(n - 1 for n in counts.values())
    print(f"{COUNT} timer messages, broker down {back - killed} ms, {duplicates} duplicates")
    first: dict[bytes, int] = {}
    for body, stored in received:
        first[body] = min(stored, first.get(body, stored))
    late = {
        body.decode(): first[body] - deliver
        for body, deliver in due.items()
        if not killed - 1000 <= deliver <= back + 1000  # due while the broker was away
        and not 0 <= first[body] - deliver < 1000
    }
    assert not late, f"delivered outside [time, time + 1 s): {late}"

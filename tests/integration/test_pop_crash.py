"""POP survives kill -9 (issue 27 §3): `mq broker` processes, a SimpleConsumer.

Thirty messages; twenty received (invisible 2 s), ten of those acknowledged; then the
broker is killed with SIGKILL and started again on the same store. The consumer offsets
are persisted only every minute here, so the offset file the restart finds knows nothing
of the pops: what keeps acknowledged messages from coming back is the revive topic alone
(checkpoints raise the pop offsets again, acks cancel their checkpoints' messages).
Afterwards exactly the other twenty arrive: the ten unacknowledged ones once their
invisible time is over (reconsumed once) and the ten never handed out; none of the
acknowledged ten.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqcore.client.admin import Admin
from mqcore.client.producer import Producer, make_message
from mqcore.client.simple_consumer import SimpleConsumer
from mqcore.message import MessageExt
from tests.support.processes import BrokerProcess, ServerProcess, start_broker, start_namesrv

pytestmark = pytest.mark.timeout(90)

TOPIC = "PopCrash"
GROUP = "pop-crash"
INVISIBLE = 2.0


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[ServerProcess]:
    server = start_namesrv(tmp_path / "ns")
    try:
        yield server
    finally:
        server.stop()


def broker(tmp_path: Path, namesrv: ServerProcess, store: Path) -> BrokerProcess:
    return start_broker(
        tmp_path / "b",
        namesrv.addr,
        store=store,
        reviveInterval="100",
        flushConsumerOffsetInterval="60000",  # the restart finds no pop offsets
    )


async def receive_until(consumer: SimpleConsumer, wanted: int, deadline: float) -> list[MessageExt]:
    """Receive (and ack) until ``wanted`` messages came or the deadline passed."""
    got: list[MessageExt] = []
    while len(got) < wanted and time.monotonic() < deadline:
        for msg in await consumer.receive(32, 30.0, await_duration=0.5):
            got.append(msg)
            await consumer.ack(msg)
    return got


async def test_kill_9_loses_no_unacked_message_and_repeats_no_acked_one(
    tmp_path: Path, namesrv: ServerProcess
) -> None:
    store = tmp_path / "store"
    first = broker(tmp_path, namesrv, store)
    try:
        async with Admin(namesrv.addr) as admin:  # answered once topics.json holds it
            await admin.create_topic(TOPIC, queues=4)
        async with Producer("pop-crash-pg", namesrv=namesrv.addr) as producer:
            bodies = set()
            for i in range(30):
                body = f"crash-{i}"
                assert (await producer.send(make_message(TOPIC, body))).ok
                bodies.add(body)
        acked: set[str] = set()
        unacked: set[str] = set()
        async with SimpleConsumer(GROUP, namesrv=namesrv.addr, await_duration=0.5) as consumer:
            consumer.subscribe(TOPIC)
            deadline = time.monotonic() + 15
            while len(acked) + len(unacked) < 20 and time.monotonic() < deadline:
                room = 20 - len(acked) - len(unacked)
                for msg in await consumer.receive(min(room, 10), INVISIBLE):
                    body = msg.body.decode()
                    if len(acked) < 10:
                        await consumer.ack(msg)
                        acked.add(body)
                    else:
                        unacked.add(body)
            assert (len(acked), len(unacked)) == (10, 10)
            popped_at = time.monotonic()
    finally:
        first.kill()  # SIGKILL: no shutdown, no persisted offsets
    second = broker(tmp_path, namesrv, store)
    try:
        async with SimpleConsumer(GROUP, namesrv=namesrv.addr, await_duration=0.5) as consumer:
            consumer.subscribe(TOPIC)
            # Anything revived (acknowledged or not) is back within INVISIBLE plus a few
            # revive passes of the pop: receive until then, and until all 20 are here.
            horizon = popped_at + INVISIBLE + 3.0
            got = await receive_until(consumer, 20, time.monotonic() + 30)
            got += await receive_until(consumer, 10**6, horizon)
    finally:
        second.stop()
    received = [m.body.decode() for m in got]
    assert not acked & set(received), f"acknowledged messages handed out again: {received}"
    assert sorted(received) == sorted(bodies - acked), received
    again = {m.body.decode(): m.reconsume_times for m in got}
    assert all(again[b] == 1 for b in unacked), again
    assert all(again[b] == 0 for b in bodies - acked - unacked), again

"""Issue 12, defect 1: one heartbeat listing thousands of consumer groups must not stall
the broker. The broker answers it within bounds (refused past the limits, applied in
steps below them), keeps serving other clients meanwhile (the event loop's longest
stall is measured by a probe task), writes the config files a bounded number of times,
and honours SIGTERM promptly while such heartbeats keep coming."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from mqcore.broker.controller import BrokerController
from mqcore.broker.processor.client import HeartbeatLimits, HeartbeatProcessor
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import ConsumerData, HeartbeatData, SubscriptionData
from mqcore.remoting import RemotingClient
from tests.support.clients import RawBrokerClient
from tests.support.inproc import running_broker
from tests.support.polling import until
from tests.support.processes import start_broker

MAX_STALL = 0.5
"""Seconds the loop may be held at once by the process's own work. The unfixed broker held
it for minutes; the heartbeat applied in steps holds it 8-35 ms in a process of its own
and up to 64 ms with three busy loops beside it, but a full run's worker (the suite's
other tests before it, in the same process) once saw 0.24 s, cause not found: the bound
is about ten times the usual worst, far below the defect it guards against."""
MAX_WALL_STALL = 2.0
"""Seconds a wake-up may come late by the clock, whatever the cause (a blocking call on
the loop uses no CPU): only a machine too loaded to run the process comes near it."""


def heartbeat_body(groups: int, prefix: str = "flood") -> bytes:
    subs = [SubscriptionData("TopicTest", "*", sub_version=1)]
    data = HeartbeatData(
        f"127.0.0.1@{prefix}",
        [],
        [ConsumerData(f"{prefix}-{i}", subscription_data_set=list(subs)) for i in range(groups)],
    )
    return data.encode()


def heartbeat_processor(broker: BrokerController) -> HeartbeatProcessor:
    processor = broker.server.dispatcher.processor_for(RequestCode.HEART_BEAT)
    assert isinstance(processor, HeartbeatProcessor)
    return processor


@dataclass
class Stalls:
    """The event loop's longest stall while a probe ran, two ways (seconds)."""

    cpu: float = 0.0
    """How late a 5 ms sleep woke, counted only as far as this process used the CPU
    meanwhile (all its threads): the broker's own work holding the loop, or a thread of
    its holding the GIL, shows in full; the time a loaded machine did not run the process
    at all (a full test run beside another on two cores) does not."""
    wall: float = 0.0
    """How late it woke by the clock, whatever the cause."""

    def check(self) -> None:
        assert self.cpu < MAX_STALL, f"event loop held {self.cpu:.3f} s by the broker's work"
        assert self.wall < MAX_WALL_STALL, f"event loop stalled {self.wall:.3f} s"


@asynccontextmanager
async def stall_probe() -> AsyncIterator[Stalls]:
    """Measure the event loop's longest stall while the block runs."""
    stalls = Stalls()
    loop = asyncio.get_running_loop()

    async def probe() -> None:
        while True:
            start, cpu = loop.time(), time.process_time()
            await asyncio.sleep(0.005)
            late = loop.time() - start - 0.005
            stalls.wall = max(stalls.wall, late)
            stalls.cpu = max(stalls.cpu, min(late, time.process_time() - cpu))

    task = asyncio.create_task(probe())
    try:
        yield stalls
    finally:
        task.cancel()


async def other_client_traffic(addr: str, stop: asyncio.Event) -> list[float]:
    """Send and pull one message after another until ``stop``; each answer's latency."""
    latencies: list[float] = []
    async with RawBrokerClient(addr) as client:
        offset = 0
        while not stop.is_set():
            start = time.monotonic()
            sent = await client.send("Steady", b"tick", queue_id=0)
            assert sent.code == ResponseCode.SUCCESS, sent.remark
            pulled = await client.pull("Steady", 0, offset)
            assert pulled.code == ResponseCode.SUCCESS, pulled.remark
            offset = pulled.next_begin_offset
            latencies.append(time.monotonic() - start)
    return latencies


async def under_load(broker: BrokerController, body: bytes) -> tuple[RemotingCommand, Stalls, int]:
    """The heartbeat's answer while another client sends and pulls, the stalls,
    and how many consumer groups were registered (counted before the client leaves)."""
    stop = asyncio.Event()
    client = RemotingClient()
    try:
        async with stall_probe() as stalls:
            traffic = asyncio.create_task(other_client_traffic(broker.broker_addr, stop))
            request = RemotingCommand.request(RequestCode.HEART_BEAT, {}, body)
            response = await client.invoke(broker.broker_addr, request, timeout=30.0)
            stop.set()
            latencies = await traffic
        registered = len(broker.consumers.groups)
    finally:
        await client.close()
    assert latencies, "the other client was served"
    assert max(latencies) < 2.0, f"send+pull took up to {max(latencies):.3f} s"
    return response, stalls, registered


async def test_a_heartbeat_of_10000_groups_is_refused_without_stalling(tmp_path: Path) -> None:
    body = heartbeat_body(10_000)  # about 3 MB, encoded before the probe starts
    async with running_broker(tmp_path) as broker:
        groups = broker.groups
        response, stalls, registered = await under_load(broker, body)
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert "limit" in (response.remark or "")
        stalls.check()
        assert not [g for g in groups.table if g.startswith("flood-")]  # nothing created
        assert registered == 0


async def test_the_largest_allowed_heartbeat_is_applied_in_steps(tmp_path: Path) -> None:
    limits = HeartbeatLimits()
    count = limits.max_consumer_groups
    body = heartbeat_body(count)
    assert limits.inline_body_bytes < len(body) <= limits.max_body_bytes
    async with running_broker(tmp_path) as broker:
        groups, topics = broker.groups, broker.topic_configs
        persister = heartbeat_processor(broker).persister
        group_writes, topic_writes = groups.writes, topics.writes
        response, stalls, registered = await under_load(broker, body)
        assert response.code == ResponseCode.SUCCESS, response.remark
        stalls.check()
        assert registered == count
        assert all(f"flood-{i}" in groups.table for i in range(count))
        assert all(f"%RETRY%flood-{i}" in topics.table for i in range(count))
        # one write request per file for the whole heartbeat, not one per group; the
        # broker's other writers (the other client's auto-created group and topic) share
        # the coalescing persister, so allow theirs beside it
        await until(lambda: not persister.pending(), what="the persister caught up")
        assert 1 <= groups.writes - group_writes <= 3
        assert 1 <= topics.writes - topic_writes <= 3


async def test_many_heartbeats_creating_groups_coalesce_their_writes(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        groups = broker.groups
        persister = heartbeat_processor(broker).persister
        writes = groups.writes
        client = RemotingClient()
        start = time.monotonic()
        try:
            for i in range(300):
                body = heartbeat_body(1, prefix=f"one-{i}")
                request = RemotingCommand.request(RequestCode.HEART_BEAT, {}, body)
                response = await client.invoke(broker.broker_addr, request, timeout=5.0)
                assert response.code == ResponseCode.SUCCESS, response.remark
        finally:
            await client.close()
        await until(lambda: not persister.pending(), what="the persister caught up")
        elapsed = time.monotonic() - start
        # at most one write per interval, plus the first of the burst and the last
        bound = int(elapsed / persister.interval) + 2
        assert 1 <= groups.writes - writes <= bound
        assert all(f"one-{i}-0" in groups.table for i in range(300))


async def test_oversized_and_over_limit_heartbeats_get_a_clear_error(tmp_path: Path) -> None:
    limits = HeartbeatLimits()
    async with running_broker(tmp_path) as broker:
        client = RemotingClient()
        try:

            async def send(body: bytes) -> RemotingCommand:
                request = RemotingCommand.request(RequestCode.HEART_BEAT, {}, body)
                return await client.invoke(broker.broker_addr, request, timeout=10.0)

            too_big = await send(b" " * (limits.max_body_bytes + 1))
            assert too_big.code == ResponseCode.SYSTEM_ERROR
            assert f"limit of {limits.max_body_bytes}" in (too_big.remark or "")

            many_subs = [
                SubscriptionData(f"T{i}", "*", sub_version=1)
                for i in range(limits.max_subscriptions + 1)
            ]
            data = HeartbeatData("c", [], [ConsumerData("g", subscription_data_set=many_subs)])
            refused = await send(data.encode())
            assert refused.code == ResponseCode.SYSTEM_ERROR
            assert "subscriptions" in (refused.remark or "")

            long_name = HeartbeatData("c", [], [ConsumerData("g" * 256)])
            refused = await send(long_name.encode())
            assert refused.code == ResponseCode.SYSTEM_ERROR
            assert "255" in (refused.remark or "")
            assert "g" not in broker.consumers.groups

            # still serving ordinary heartbeats
            assert (await send(heartbeat_body(2))).code == ResponseCode.SUCCESS
        finally:
            await client.close()


async def test_sigterm_is_honoured_while_big_heartbeats_keep_coming(tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "b")
    try:
        stop = asyncio.Event()
        answered = 0

        async def flood(prefix: str) -> None:
            nonlocal answered
            client = RemotingClient()
            try:
                i = 0
                while not stop.is_set():
                    body = heartbeat_body(HeartbeatLimits().max_consumer_groups, f"{prefix}{i}")
                    request = RemotingCommand.request(RequestCode.HEART_BEAT, {}, body)
                    try:
                        await client.invoke(broker.addr, request, timeout=30.0)
                    except Exception:
                        return  # the broker went away: that is the point
                    answered += 1
                    i += 1
            finally:
                await client.close()

        floods = [asyncio.create_task(flood(p)) for p in ("a", "b")]
        await until(lambda: answered >= 2, timeout=60, what="big heartbeats answered")
        start = time.monotonic()
        loop = asyncio.get_running_loop()
        code = await loop.run_in_executor(None, broker.stop, 30.0)
        took = time.monotonic() - start
        stop.set()
        await asyncio.gather(*floods)
        assert code == 0, (tmp_path / "b" / "stderr.txt").read_text()[-2000:]
        assert took < 10.0, f"SIGTERM took {took:.1f} s"
    finally:
        broker.kill()

"""A server closes idle connections and half-sent frames, and caps connections per host.

Closing is checked by polling with a deadline; "not closed" is checked by calling
``sweep(now)`` with an explicit time, so no assertion rests on how fast the loop runs.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections.abc import AsyncIterator

import pytest

from mqcore.errors import ConfigError
from mqcore.protocol import RemotingCommand, RequestCode, encode
from mqcore.remoting import Channel, ChannelLimits, RemotingClient, RemotingServer
from mqcore.remoting.dispatcher import RequestDispatcher
from tests.support import until

from .test_channel_writes import RecordingTransport

ROUTE = RequestCode.GET_ROUTEINFO_BY_TOPIC
HELD = 9999  # a request code whose processor waits for the test
FOREVER = 10_000.0


async def closed_by_peer(reader: asyncio.StreamReader, timeout: float = 5.0) -> bool:
    """True once the server closed (FIN or RST) within ``timeout``."""
    try:
        async with asyncio.timeout(timeout):
            return await reader.read(1024) == b""
    except ConnectionResetError:
        return True


def answer(channel: Channel, request: RemotingCommand) -> RemotingCommand:
    return RemotingCommand.response_to(request, 0)


@pytest.fixture
def release() -> asyncio.Event:
    return asyncio.Event()


async def start(limits: ChannelLimits, release: asyncio.Event | None = None) -> RemotingServer:
    server = RemotingServer(host="127.0.0.1", port=0, limits=limits)
    server.register(ROUTE, answer)

    async def held(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        assert release is not None
        await release.wait()
        return RemotingCommand.response_to(request, 0)

    server.register(HELD, held)
    await server.start()
    return server


@pytest.fixture
async def quick(release: asyncio.Event) -> AsyncIterator[RemotingServer]:
    """Idle and frame timeouts of 0.3 s, a sweep every 75 ms."""
    server = await start(ChannelLimits(idle_timeout=0.3, frame_timeout=0.3), release)
    yield server
    await server.close()


# -- idle connections -------------------------------------------------------------------------


async def test_a_silent_connection_is_closed_after_the_idle_timeout(
    quick: RemotingServer,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", quick.port)
    try:
        assert await closed_by_peer(reader)
        await until(lambda: not quick.channels)
    finally:
        writer.close()


async def test_a_request_in_progress_is_not_idle(release: asyncio.Event) -> None:
    """A held long-polling pull keeps its connection: the client is silent, not gone."""
    server = await start(ChannelLimits(idle_timeout=FOREVER, frame_timeout=0), release)
    client = RemotingClient()
    addr = server.listen_address
    try:
        pending = asyncio.ensure_future(
            client.invoke(addr, RemotingCommand.request(HELD, {}), timeout=30)
        )
        await until(lambda: any(c.busy for c in server.channels))
        (channel,) = server.channels
        assert server.sweep(now=time.monotonic() + 2 * FOREVER) == 0
        assert not channel.closed
        release.set()
        assert (await pending).code == 0
        await until(lambda: not channel.busy)
        # idle is counted from the answer, not from the request that started the hold
        assert channel.stale(channel.last_active + FOREVER / 2, FOREVER, 0) is None
        assert server.sweep(now=time.monotonic() + 2 * FOREVER) == 1
        await until(lambda: channel.closed)
    finally:
        await client.close()
        await server.close()


async def test_a_client_reconnects_after_its_idle_connection_was_closed() -> None:
    server = await start(ChannelLimits(idle_timeout=FOREVER, frame_timeout=0))
    client = RemotingClient()
    addr = server.listen_address
    try:
        first = await client.channel(addr)
        assert (await client.invoke(addr, RemotingCommand.request(ROUTE, {"topic": "t"}))).code == 0
        assert server.sweep(now=time.monotonic() + 2 * FOREVER) == 1
        await until(lambda: first.closed)
        answer = await client.invoke(addr, RemotingCommand.request(ROUTE, {"topic": "t"}))
        assert answer.code == 0
        assert await client.channel(addr) is not first
    finally:
        await client.close()
        await server.close()


async def test_requests_keep_a_connection_open() -> None:
    server = await start(ChannelLimits(idle_timeout=FOREVER, frame_timeout=0))
    client = RemotingClient()
    addr = server.listen_address
    try:
        await client.invoke(addr, RemotingCommand.request(ROUTE, {"topic": "t"}))
        (channel,) = server.channels
        before = channel.last_active
        await client.invoke(addr, RemotingCommand.request(ROUTE, {"topic": "t"}))
        assert channel.last_active >= before
        assert server.sweep(now=channel.last_active + FOREVER - 1) == 0
        assert server.sweep(now=channel.last_active + FOREVER + 1) == 1
    finally:
        await client.close()
        await server.close()


# -- half-sent frames -------------------------------------------------------------------------


async def test_a_half_sent_frame_is_closed_after_the_frame_timeout() -> None:
    """The idle rule is off: only the frame timeout can close this connection."""
    server = await start(ChannelLimits(idle_timeout=0, frame_timeout=0.3))
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(struct.pack(">I", 100) + b"\x00" * 10)  # 14 of 104 bytes
        await writer.drain()
        assert await closed_by_peer(reader)
        await until(lambda: not server.channels)
    finally:
        writer.close()
        await server.close()


async def test_whole_frames_are_never_a_half_sent_frame() -> None:
    server = await start(ChannelLimits(idle_timeout=0, frame_timeout=0.3))
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(encode(RemotingCommand.request(ROUTE, {"topic": "t"}, opaque=1)))
        await writer.drain()
        await reader.readexactly(4)  # the answer began: the request was read
        (channel,) = server.channels
        assert server.sweep(now=time.monotonic() + FOREVER) == 0
        assert not channel.closed
    finally:
        writer.close()
        await server.close()


async def test_a_frame_is_timed_from_its_first_byte() -> None:
    """Chunks that end inside frames (a busy pipelined producer) restart the clock at each
    new frame; a frame that keeps trickling does not."""
    channel = Channel(RequestDispatcher())
    channel.connection_made(RecordingTransport())  # type: ignore[arg-type]
    frame = encode(RemotingCommand.request(ROUTE, {"topic": "t"}, opaque=1))
    channel.data_received(frame[:-5])
    began = channel.frame_since
    assert channel.stale(began + 0.5, 0, 1.0) is None
    assert channel.stale(began + 1.5, 0, 1.0) is not None
    channel.data_received(frame[-5:-2])  # the same frame, still incomplete
    assert channel.frame_since == began
    ahead = time.monotonic()
    channel.data_received(frame[-2:] + frame[:10])  # done, and the next one begins
    assert channel.frame_since >= ahead
    channel.data_received(frame[10:])
    assert channel.stale(time.monotonic() + FOREVER, 0, 1.0) is None  # nothing pending


# -- connections per address ------------------------------------------------------------------


def test_no_per_address_cap_by_default() -> None:
    """RocketMQ has none: every client behind one NAT or proxy shares its address."""
    from mqcore.broker.config import BrokerConfig
    from mqcore.namesrv.config import NamesrvConfig

    assert ChannelLimits().max_per_address == 0
    assert NamesrvConfig().server_max_connections_per_address == 0
    assert BrokerConfig().server_max_connections_per_address == 0
    assert ChannelLimits.from_config(NamesrvConfig()).max_per_address == 0


async def test_the_default_lets_many_connections_in_and_an_explicit_cap_refuses() -> None:
    opened: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    unlimited = await start(ChannelLimits(idle_timeout=0, frame_timeout=0))
    capped = await start(ChannelLimits(idle_timeout=0, frame_timeout=0, max_per_address=3))
    try:
        for _ in range(8):
            opened.append(await asyncio.open_connection("127.0.0.1", unlimited.port))
        await until(lambda: unlimited.connections_from("127.0.0.1") == 8)
        for _ in range(3):
            opened.append(await asyncio.open_connection("127.0.0.1", capped.port))
        await until(lambda: capped.connections_from("127.0.0.1") == 3)
        reader, writer = await asyncio.open_connection("127.0.0.1", capped.port)
        opened.append((reader, writer))
        assert await closed_by_peer(reader)
        assert capped.connections_from("127.0.0.1") == 3
        assert unlimited.connections_from("127.0.0.1") == 8
    finally:
        for _, w in opened:
            w.close()
        await unlimited.close()
        await capped.close()


async def test_connections_past_the_per_address_cap_are_closed_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = await start(ChannelLimits(idle_timeout=0, frame_timeout=0, max_per_address=2))
    opened: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    try:
        for _ in range(2):
            opened.append(await asyncio.open_connection("127.0.0.1", server.port))
        await until(lambda: server.connections_from("127.0.0.1") == 2)
        with caplog.at_level(logging.WARNING, logger="mq.remoting"):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            opened.append((reader, writer))
            assert await closed_by_peer(reader)
        assert "refused a connection from 127.0.0.1: 2 open" in caplog.text
        assert server.connections_from("127.0.0.1") == 2
        # the first two still work
        writer0 = opened[0][1]
        writer0.write(encode(RemotingCommand.request(ROUTE, {"topic": "t"}, opaque=7)))
        await writer0.drain()
        assert len(await opened[0][0].readexactly(4)) == 4
        # one closes: a new one is let in
        writer0.close()
        await until(lambda: server.connections_from("127.0.0.1") == 1)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        opened.append((reader, writer))
        await until(lambda: server.connections_from("127.0.0.1") == 2)
    finally:
        for _, w in opened:
            w.close()
        await server.close()


async def test_a_flood_of_refusals_logs_a_few_lines(caplog: pytest.LogCaptureFixture) -> None:
    server = await start(ChannelLimits(idle_timeout=0, frame_timeout=0, max_per_address=1))
    writers = []
    try:
        _, first = await asyncio.open_connection("127.0.0.1", server.port)
        writers.append(first)
        await until(lambda: server.connections_from("127.0.0.1") == 1)
        with caplog.at_level(logging.WARNING, logger="mq.remoting"):
            for _ in range(20):
                reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
                writers.append(writer)
                assert await closed_by_peer(reader)
        refusals = [r for r in caplog.records if "refused a connection" in r.getMessage()]
        assert [r.getMessage().rsplit("; ", 1)[1] for r in refusals] == [
            f"{n} refused so far" for n in (1, 2, 4, 8, 16)
        ]
    finally:
        for w in writers:
            w.close()
        await server.close()


# -- configuration ----------------------------------------------------------------------------


def test_limits_come_from_the_config_keys() -> None:
    from mqcore.broker.config import BrokerConfig
    from mqcore.namesrv.config import NamesrvConfig

    props = {
        "serverChannelMaxIdleTimeSeconds": "5",
        "serverFrameReadTimeoutSeconds": "0.5",
        "serverMaxConnectionsPerAddress": "7",
    }
    expected = ChannelLimits(idle_timeout=5, frame_timeout=0.5, max_per_address=7)
    assert ChannelLimits.from_config(NamesrvConfig.from_properties(props)) == expected
    broker = BrokerConfig.from_properties({**props, "brokerIP1": "127.0.0.1"})
    assert ChannelLimits.from_config(broker) == expected
    assert ChannelLimits.from_config(NamesrvConfig()) == ChannelLimits()
    assert ChannelLimits().idle_timeout == 120  # RocketMQ's serverChannelMaxIdleTimeSeconds
    with pytest.raises(ConfigError, match="serverMaxConnectionsPerAddress"):
        ChannelLimits.from_config(NamesrvConfig(server_max_connections_per_address=-1))
    assert ChannelLimits(idle_timeout=0, frame_timeout=0).sweep_interval is None
    assert ChannelLimits(idle_timeout=2, frame_timeout=0).sweep_interval == 0.5

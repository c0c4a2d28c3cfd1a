"""Server/client transports over loopback TCP and the in-memory network."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import struct

import pytest

from mqcore.errors import MQTimeoutError
from mqcore.protocol import (
    NEED_DATA,
    FrameDecoder,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SerializeType,
    encode,
)
from mqcore.protocol.headers import GetRouteInfoRequestHeader
from mqcore.remoting import (
    Channel,
    ChannelClosedError,
    InMemoryNetwork,
    InMemoryRemotingClient,
    RemotingClient,
    RemotingConnectError,
    RemotingServer,
)
from tests.support import until

ROUTE = RequestCode.GET_ROUTEINFO_BY_TOPIC


def echo(channel: Channel, request: RemotingCommand) -> RemotingCommand:
    header = GetRouteInfoRequestHeader.from_command(request)
    return RemotingCommand.response_to(
        request, 0, ext_fields={"topic": header.topic}, body=request.body
    )


@pytest.fixture
async def server() -> RemotingServer:
    srv = RemotingServer(host="127.0.0.1", port=0)
    srv.register(ROUTE, echo)
    await srv.start()
    yield srv  # type: ignore[misc]
    await srv.close()


@pytest.fixture
async def client() -> RemotingClient:
    cli = RemotingClient()
    yield cli  # type: ignore[misc]
    await cli.close()


def addr(server: RemotingServer) -> str:
    return f"127.0.0.1:{server.port}"


async def test_request_response(server: RemotingServer, client: RemotingClient) -> None:
    req = RemotingCommand.request(ROUTE, {"topic": "T"}, b"body")
    resp = await client.invoke(addr(server), req)
    assert resp.is_response and resp.opaque == req.opaque
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields == {"topic": "T"}
    assert resp.body == b"body" and resp.version == 409


async def test_unknown_code_and_bad_header(server: RemotingServer, client: RemotingClient) -> None:
    resp = await client.invoke(addr(server), RemotingCommand.request(9999))
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == " request type 9999 not supported"
    resp = await client.invoke(addr(server), RemotingCommand.request(ROUTE))
    assert resp.code == ResponseCode.SYSTEM_ERROR and "topic" in (resp.remark or "")


async def test_processor_bug_is_system_error(
    server: RemotingServer, client: RemotingClient
) -> None:
    async def broken(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        raise RuntimeError("boom")

    server.register(500, broken)
    resp = await client.invoke(addr(server), RemotingCommand.request(500))
    assert resp.code == ResponseCode.SYSTEM_ERROR and "boom" in (resp.remark or "")


async def test_out_of_order_responses(server: RemotingServer, client: RemotingClient) -> None:
    release = asyncio.Event()

    async def slow(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        await release.wait()
        return RemotingCommand.response_to(request, 0, remark="slow")

    server.register(501, slow)
    slow_call = asyncio.ensure_future(client.invoke(addr(server), RemotingCommand.request(501)))
    fast = await client.invoke(addr(server), RemotingCommand.request(ROUTE, {"topic": "x"}))
    assert fast.ext_fields == {"topic": "x"} and not slow_call.done()
    release.set()
    assert (await slow_call).remark == "slow"


async def test_timeout(server: RemotingServer, client: RemotingClient) -> None:
    never = asyncio.Event()

    async def hang(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        await never.wait()
        raise AssertionError

    server.register(502, hang)
    with pytest.raises(MQTimeoutError):
        await client.invoke(addr(server), RemotingCommand.request(502), timeout=0.05)
    channel = await client.channel(addr(server))
    assert not channel._pending


async def test_oneway_is_never_answered(server: RemotingServer) -> None:
    seen: list[int] = []

    def record(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        seen.append(request.opaque)
        return RemotingCommand.response_to(request, 0)

    server.register(503, record)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(encode(RemotingCommand.request(503, oneway=True, opaque=1)))
    writer.write(encode(RemotingCommand.request(9999, oneway=True, opaque=2)))
    writer.write(encode(RemotingCommand.request(503, opaque=3)))
    decoder = FrameDecoder()
    got: list[RemotingCommand] = []
    async with asyncio.timeout(5):
        while not got:
            decoder.receive_data(await reader.read(65536))
            while (cmd := decoder.next_command()) is not NEED_DATA:
                assert isinstance(cmd, RemotingCommand)
                got.append(cmd)
    assert [c.opaque for c in got] == [3] and seen == [1, 3]
    writer.close()


async def test_binary_request_gets_binary_answer(server: RemotingServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    req = RemotingCommand.request(ROUTE, {"topic": "B"}, serialize_type=SerializeType.ROCKETMQ)
    writer.write(encode(req))
    head = await reader.readexactly(8)
    length, word = struct.unpack(">ii", head)
    assert word >> 24 == 1
    decoder = FrameDecoder()
    decoder.receive_data(head + await reader.readexactly(length - 4))
    resp = decoder.next_command()
    assert isinstance(resp, RemotingCommand) and resp.ext_fields == {"topic": "B"}
    writer.close()


async def test_garbage_closes_only_that_connection(
    server: RemotingServer, client: RemotingClient
) -> None:
    closed: list[Channel] = []
    server.add_close_listener(closed.append)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(struct.pack(">ii", 10, 3) + b"{{{garbage")
    async with asyncio.timeout(5):
        assert await reader.read() == b""  # server closed it
    await until(lambda: len(closed) == 1)
    resp = await client.invoke(addr(server), RemotingCommand.request(ROUTE, {"topic": "ok"}))
    assert resp.code == 0
    writer.close()


async def test_server_initiated_request(server: RemotingServer, client: RemotingClient) -> None:
    channels: list[Channel] = []

    def remember(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        channels.append(channel)
        return RemotingCommand.response_to(request, 0)

    server.register(RequestCode.HEART_BEAT, remember)
    notified: list[str] = []

    def on_notify(channel: Channel, request: RemotingCommand) -> None:
        notified.append(request.ext_fields["consumerGroup"])

    def on_status(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(request, 0, remark="client says hi")

    client.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notify)
    client.register(RequestCode.GET_CONSUMER_RUNNING_INFO, on_status)
    await client.invoke(addr(server), RemotingCommand.request(RequestCode.HEART_BEAT))
    (chan,) = channels
    await chan.invoke_oneway(
        RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g"})
    )
    answer = await chan.invoke(RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO))
    assert answer.remark == "client says hi"
    await until(lambda: notified == ["g"])


async def test_reconnect_after_server_drops(server: RemotingServer, client: RemotingClient) -> None:
    first = await client.channel(addr(server))
    for ch in list(server.channels):
        ch.close()
    await first.wait_closed()
    resp = await client.invoke(addr(server), RemotingCommand.request(ROUTE, {"topic": "again"}))
    assert resp.code == 0 and (await client.channel(addr(server))) is not first


async def test_pending_request_fails_when_connection_drops(
    server: RemotingServer, client: RemotingClient
) -> None:
    async def drop(channel: Channel, request: RemotingCommand) -> None:
        channel.close()

    server.register(504, drop)
    with pytest.raises(ChannelClosedError):
        await client.invoke(addr(server), RemotingCommand.request(504), timeout=5)


async def test_connect_refused() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    async with RemotingClient(connect_timeout=1) as cli:
        with pytest.raises(RemotingConnectError):
            await cli.invoke(f"127.0.0.1:{port}", RemotingCommand.request(ROUTE))


async def test_write_backpressure_pauses_reading() -> None:
    big = b"x" * 256 * 1024

    def fat(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(request, 0, body=big)

    srv = RemotingServer(host="127.0.0.1", port=0, high_water=512 * 1024, low_water=128 * 1024)
    srv.register(505, fat)
    await srv.start()
    try:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", srv.port))
        sock.setblocking(False)
        request = encode(RemotingCommand.request(505))
        loop = asyncio.get_running_loop()
        await loop.sock_sendall(sock, request * 64)  # ~16 MiB of answers, never read
        await until(
            lambda: any(
                ch._transport is not None and not ch._transport.is_reading() for ch in srv.channels
            )
        )
        (channel,) = srv.channels
        assert channel._transport is not None
        # Buffered output stays bounded near the high-water mark, not 16 MiB.
        assert channel._transport.get_write_buffer_size() < 4 * 1024 * 1024
        sock.close()
    finally:
        await srv.close()


async def test_in_memory_network() -> None:
    network = InMemoryNetwork()
    server = RemotingServer()
    server.register(ROUTE, echo)
    closed: list[Channel] = []
    network.serve("ns:9876", server.dispatcher, on_close=closed.append)
    cli = InMemoryRemotingClient(network)
    resp = await cli.invoke("ns:9876", RemotingCommand.request(ROUTE, {"topic": "mem"}))
    assert resp.ext_fields == {"topic": "mem"}
    with pytest.raises(RemotingConnectError):
        await cli.invoke("nowhere:1", RemotingCommand.request(ROUTE))
    await cli.close()
    await until(lambda: len(closed) == 1)


async def test_response_keeps_request_opaque_on_replace() -> None:
    req = RemotingCommand.request(ROUTE)
    other = dataclasses.replace(req, opaque=req.opaque + 1)
    assert RemotingCommand.response_to(other).opaque == req.opaque + 1

"""The same transports on uvloop, whose transports are look-alikes, not asyncio classes."""

from __future__ import annotations

import asyncio
import struct

import pytest

from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.remoting import Channel, RemotingClient, RemotingServer, new_event_loop

uvloop = pytest.importorskip("uvloop")


async def scenario() -> None:
    pushed: list[str] = []
    channels: list[Channel] = []

    def route(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        channels.append(channel)
        return RemotingCommand.response_to(request, 0, body=b"route")

    server = RemotingServer(host="127.0.0.1", port=0, high_water=64 * 1024, low_water=16 * 1024)
    server.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, route)
    await server.start()
    client = RemotingClient()
    client.register(
        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
        lambda ch, req: pushed.append(req.ext_fields["consumerGroup"]),
    )
    addr = f"127.0.0.1:{server.port}"
    try:
        resp = await client.invoke(
            addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC)
        )
        assert resp.body == b"route"
        assert (
            await client.invoke(addr, RemotingCommand.request(7777))
        ).code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        await channels[0].invoke_oneway(
            RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g"})
        )
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(struct.pack(">ii", 8, 4) + b"nope")
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        async with asyncio.timeout(5):
            while pushed != ["g"]:
                await asyncio.sleep(0.005)
    finally:
        await client.close()
        await server.close()


def test_transports_on_uvloop() -> None:
    loop = new_event_loop()
    assert isinstance(loop, uvloop.Loop)
    with asyncio.Runner(loop_factory=lambda: loop) as runner:
        runner.run(scenario())

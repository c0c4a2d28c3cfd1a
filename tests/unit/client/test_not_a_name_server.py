"""A broker's address given as the name server is told apart even when the broker is slow
to answer the probe (a JVM broker on a loaded machine took longer than a request's
timeout to answer its first GET_BROKER_RUNTIME_INFO, and the user got the raw
"request type 206 not supported" instead of the address named as a broker's)."""

from __future__ import annotations

import asyncio

import pytest

from mqcore.client.config import ClientConfig
from mqcore.client.errors import NotANameServerError
from mqcore.client.transport import ClientTransport
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.remoting import Channel, InMemoryNetwork, RequestDispatcher
from mqcore.remoting.memory import InMemoryRemotingClient


def _broker(answer_after: float) -> RequestDispatcher:
    dispatcher = RequestDispatcher()  # codes it does not register: REQUEST_CODE_NOT_SUPPORTED

    async def runtime_info(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(answer_after)
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS)

    dispatcher.register(RequestCode.GET_BROKER_RUNTIME_INFO, runtime_info)
    return dispatcher


@pytest.mark.parametrize("answer_after", [0.0, 0.5])
async def test_a_slow_broker_is_still_named_as_a_broker(answer_after: float) -> None:
    network = InMemoryNetwork()
    network.serve("broker:10911", _broker(answer_after))
    config = ClientConfig(
        request_timeout=0.2,
        remoting_factory=lambda dispatcher: InMemoryRemotingClient(network, dispatcher),
    )
    transport = ClientTransport(["broker:10911"], "test-client", config)
    try:
        request = transport.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        with pytest.raises(NotANameServerError, match="broker:10911 is a broker"):
            await transport.invoke_namesrv(request)
    finally:
        await transport.close()

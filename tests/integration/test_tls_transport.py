"""TLS on the remoting transports: modes, certificates and what a wrong peer sees.

Each scenario runs on asyncio's loop and on uvloop (the servers' default), whose
transports and ``connect_accepted_socket`` differ.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from mqcore.errors import ConfigError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode, encode
from mqcore.remoting import (
    Channel,
    ChannelClosedError,
    RemotingClient,
    RemotingConnectError,
    RemotingServer,
    new_event_loop,
)
from mqcore.remoting.tls import ClientAuth, ServerTls, TlsMode, client_context, server_context
from tests.support.tls_certs import Pki, make_pki

ROUTE = RequestCode.GET_ROUTEINFO_BY_TOPIC
LOOPS = ["asyncio", "uvloop"]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def run_on(loop_name: str, scenario: Callable[[], Awaitable[None]]) -> None:
    if loop_name == "uvloop":
        pytest.importorskip("uvloop")
        loop = new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(asyncio.wait_for(scenario(), 30))
    finally:
        loop.close()


def ok(channel: Channel, request: RemotingCommand) -> RemotingCommand:
    return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=b"pong")


def tls_server(pki: Pki, mode: TlsMode, **kwargs: object) -> RemotingServer:
    ctx = server_context(str(pki.server_cert), str(pki.server_key), **kwargs)  # type: ignore[arg-type]
    server = RemotingServer(host="127.0.0.1", port=0, tls=ServerTls(mode, ctx))
    server.register(ROUTE, ok)
    return server


@asynccontextmanager
async def serving_both(
    pki: Pki, mode: TlsMode
) -> AsyncIterator[tuple[RemotingServer, RemotingClient, RemotingClient]]:
    """A started TLS server in ``mode``, a client that trusts it and a plain client."""
    server = tls_server(pki, mode)
    await server.start()
    secure = RemotingClient(ssl_context=client_context(ca_path=str(pki.ca)))
    plain = RemotingClient()
    try:
        yield server, secure, plain
    finally:
        await secure.close()
        await plain.close()
        await server.close()


async def ping(client: RemotingClient, server: RemotingServer) -> bytes | None:
    resp = await client.invoke(f"127.0.0.1:{server.port}", RemotingCommand.request(ROUTE))
    return resp.body


async def raw_plain_request(port: int) -> bytes:
    """A plain frame on a fresh socket; what comes back before the server closes (a
    close with our frame unread is a reset)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(encode(RemotingCommand.request(ROUTE)))
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), 5)
    except ConnectionResetError:
        return b""
    finally:
        writer.close()


@pytest.mark.parametrize("loop_name", LOOPS)
def test_enforcing_serves_tls_and_closes_plain(pki: Pki, loop_name: str) -> None:
    async def scenario() -> None:
        async with serving_both(pki, TlsMode.ENFORCING) as (server, secure, plain):
            assert await ping(secure, server) == b"pong"
            channel = next(iter(server.channels))
            assert channel.remote_host == "127.0.0.1"
            with pytest.raises(ChannelClosedError):
                await ping(plain, server)
            assert await raw_plain_request(server.port) == b""  # closed, nothing answered
            assert await ping(secure, server) == b"pong"  # the server is fine

    run_on(loop_name, scenario)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_permissive_serves_tls_and_plain_on_one_port(pki: Pki, loop_name: str) -> None:
    async def scenario() -> None:
        async with serving_both(pki, TlsMode.PERMISSIVE) as (server, secure, plain):
            for _ in range(3):
                assert await ping(secure, server) == b"pong"
                assert await ping(plain, server) == b"pong"
            assert len(server.channels) == 2
            ciphers = {
                c._transport.get_extra_info("cipher") is not None  # type: ignore[union-attr]
                for c in server.channels
            }
            assert ciphers == {True, False}  # one TLS, one plain connection

    run_on(loop_name, scenario)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_wrong_ca_is_a_clear_connect_error(pki: Pki, loop_name: str) -> None:
    async def scenario() -> None:
        server = tls_server(pki, TlsMode.ENFORCING)
        await server.start()
        client = RemotingClient(ssl_context=client_context(ca_path=str(pki.other_ca)))
        try:
            with pytest.raises(RemotingConnectError) as info:
                await ping(client, server)
            message = str(info.value)
            assert "not trusted" in message and "--tls-ca" in message
            assert "\n" not in message
        finally:
            await client.close()
            await server.close()

    run_on(loop_name, scenario)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_tls_client_against_a_plain_server_fails_cleanly(pki: Pki, loop_name: str) -> None:
    async def scenario() -> None:
        server = RemotingServer(host="127.0.0.1", port=0)
        server.register(ROUTE, ok)
        await server.start()
        client = RemotingClient(ssl_context=client_context(ca_path=str(pki.ca)))
        plain = RemotingClient()
        try:
            with pytest.raises(RemotingConnectError):
                await ping(client, server)
            assert await ping(plain, server) == b"pong"
        finally:
            await client.close()
            await plain.close()
            await server.close()

    run_on(loop_name, scenario)


def test_client_certificates_when_required(pki: Pki) -> None:
    async def scenario() -> None:
        server = tls_server(
            pki,
            TlsMode.ENFORCING,
            trust_cert_path=str(pki.ca),
            client_auth=ClientAuth.REQUIRE,
        )
        await server.start()
        with_cert = RemotingClient(
            ssl_context=client_context(
                ca_path=str(pki.ca), cert_path=str(pki.client_cert), key_path=str(pki.client_key)
            )
        )
        without = RemotingClient(ssl_context=client_context(ca_path=str(pki.ca)))
        try:
            assert await ping(with_cert, server) == b"pong"
            # TLS 1.3: the client's handshake ends before the server checks; the refusal
            # arrives as an alert on the first read, or as a closed connection.
            with pytest.raises((RemotingConnectError, ChannelClosedError)):
                await ping(without, server)
        finally:
            await with_cert.close()
            await without.close()
            await server.close()

    run_on("asyncio", scenario)


def test_silent_connection_is_closed_after_the_first_byte_timeout(pki: Pki) -> None:
    async def scenario() -> None:
        ctx = server_context(str(pki.server_cert), str(pki.server_key))
        server = RemotingServer(
            host="127.0.0.1",
            port=0,
            tls=ServerTls(TlsMode.PERMISSIVE, ctx, first_byte_timeout=0.2),
        )
        await server.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            assert await asyncio.wait_for(reader.read(), 5) == b""
            writer.close()
        finally:
            await server.close()

    run_on("asyncio", scenario)


def test_server_config_errors_name_the_key(pki: Pki, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"tls\.server\.certPath"):
        server_context(None, str(pki.server_key))
    with pytest.raises(ConfigError, match=r"tls\.server\.certPath/keyPath"):
        server_context(str(tmp_path / "missing.pem"), str(pki.server_key))
    with pytest.raises(ConfigError, match=r"tls\.server\.trustCertPath"):
        server_context(str(pki.server_cert), str(pki.server_key), client_auth=ClientAuth.OPTIONAL)
    with pytest.raises(ConfigError, match="CA file"):
        client_context(ca_path=str(tmp_path / "nope.pem"))
    assert TlsMode("ENFORCING") is TlsMode.ENFORCING
    assert ClientAuth("Require") is ClientAuth.REQUIRE
    assert isinstance(client_context(verify=False), ssl.SSLContext)


def test_close_releases_the_port(pki: Pki) -> None:
    async def scenario() -> None:
        server = tls_server(pki, TlsMode.PERMISSIVE)
        await server.start()
        port = server.port
        await server.close()
        with socket.create_server(("127.0.0.1", port)):
            pass

    run_on("asyncio", scenario)

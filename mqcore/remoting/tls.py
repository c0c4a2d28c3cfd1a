"""Optional TLS for servers and clients, under RocketMQ 4.x's ``tls.*`` property names.

Servers follow ``tls.server.mode``:

* ``disabled`` (our default; RocketMQ's is ``permissive``): plain TCP only. The plain
  path is untouched: a TLS ClientHello is not a frame and closes its connection.
* ``permissive``: one port serves TLS and plain clients. A :class:`TlsListener`
  accepts each connection itself and peeks at its first byte without consuming it:
  0x16 (a TLS handshake record) gets a TLS transport, anything else a plain one, so a
  plain connection runs exactly the transport and protocol of ``disabled``.
* ``enforcing``: only TLS; a connection whose first byte is not 0x16 is closed.

Remoting clients, and HA slaves, always speak first, so peeking never waits on a
healthy peer; a connection that sends nothing is closed after ``first_byte_timeout``.

Certificates: ``tls.server.certPath``/``keyPath`` (PEM; ``keyPassword`` if encrypted);
``tls.server.need.client.auth`` none/optional/require verifies client certificates
against ``tls.server.trustCertPath``. A client (``tls.enable`` in a broker's config, the
``tls`` flag of :class:`~mqcore.client.ClientConfig`) verifies the server's chain against
``tls.client.trustCertPath`` (the system's CAs without one) unless
``tls.test.mode.enable`` says not to, and presents ``tls.client.certPath``/``keyPath``
when given. As in RocketMQ, the host name is not checked against the certificate:
brokers are reached at the addresses name servers hand out, often bare IPs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from mqcore.errors import ConfigError

__all__ = [
    "HANDSHAKE_BYTE",
    "ClientAuth",
    "ClientTlsKeys",
    "ServerTls",
    "ServerTlsKeys",
    "TlsListener",
    "TlsMode",
    "client_context",
    "client_context_from_config",
    "describe_tls_error",
    "server_context",
]

log = logging.getLogger("mq.remoting")

HANDSHAKE_BYTE = 0x16
"""The content type of a TLS handshake record: the first byte a TLS client sends."""
DEFAULT_HANDSHAKE_TIMEOUT = 10.0
DEFAULT_FIRST_BYTE_TIMEOUT = 30.0
"""Longer than a 4.9.8 slave waits before its first report (one heartbeat, 5 s)."""


class TlsMode(StrEnum):
    """RocketMQ's ``tls.server.mode`` values (any case in a config file)."""

    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"

    @classmethod
    def _missing_(cls, value: object) -> TlsMode | None:
        return next((m for m in cls if m.value == str(value).strip().lower()), None)


class ClientAuth(StrEnum):
    """RocketMQ's ``tls.server.need.client.auth`` values (Netty's ClientAuth names)."""

    NONE = "none"
    OPTIONAL = "optional"
    REQUIRE = "require"

    @classmethod
    def _missing_(cls, value: object) -> ClientAuth | None:
        return next((m for m in cls if m.value == str(value).strip().lower()), None)


class ServerTlsKeys(Protocol):
    """The server-side keys (BrokerConfig and NamesrvConfig both have them)."""

    tls_server_mode: TlsMode
    tls_server_cert_path: str | None
    tls_server_key_path: str | None
    tls_server_key_password: str | None
    tls_server_trust_cert_path: str | None
    tls_server_need_client_auth: ClientAuth


class ClientTlsKeys(Protocol):
    """The client-side keys of a broker (its calls to name servers and to its master)."""

    tls_enable: bool
    tls_client_cert_path: str | None
    tls_client_key_path: str | None
    tls_client_key_password: str | None
    tls_client_trust_cert_path: str | None
    tls_test_mode_enable: bool


def _load(what: str, action: Callable[[], object]) -> None:
    """Run a certificate load, turning its OSError/SSLError into one ConfigError line."""
    try:
        action()
    except ssl.SSLError as exc:
        raise ConfigError(f"{what}: {exc.reason or exc}") from None
    except OSError as exc:
        raise ConfigError(f"{what}: {exc.strerror or exc}") from None


def server_context(
    cert_path: str | None,
    key_path: str | None,
    *,
    key_password: str | None = None,
    trust_cert_path: str | None = None,
    client_auth: ClientAuth = ClientAuth.NONE,
) -> ssl.SSLContext:
    """A server context (TLS 1.2+). Raises ConfigError naming the key that is wrong."""
    if not cert_path or not key_path:
        raise ConfigError(
            "TLS needs tls.server.certPath and tls.server.keyPath (PEM files) "
            "unless tls.server.mode=disabled"
        )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    _load(
        f"tls.server.certPath/keyPath ({cert_path}, {key_path})",
        lambda: ctx.load_cert_chain(cert_path, key_path, key_password),
    )
    if client_auth is not ClientAuth.NONE:
        if not trust_cert_path:
            raise ConfigError(
                f"tls.server.need.client.auth={client_auth.value} needs "
                "tls.server.trustCertPath (the CA of the client certificates)"
            )
        _load(
            f"tls.server.trustCertPath ({trust_cert_path})",
            lambda: ctx.load_verify_locations(cafile=trust_cert_path),
        )
        ctx.verify_mode = (
            ssl.CERT_REQUIRED if client_auth is ClientAuth.REQUIRE else ssl.CERT_OPTIONAL
        )
    return ctx


def client_context(
    *,
    ca_path: str | None = None,
    cert_path: str | None = None,
    key_path: str | None = None,
    key_password: str | None = None,
    verify: bool = True,
) -> ssl.SSLContext:
    """A client context: the server's chain checked against ``ca_path`` (the system's
    CAs without one) unless ``verify`` is False; a client certificate when given."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = False  # see the module docstring
    if not verify:
        ctx.verify_mode = ssl.CERT_NONE
    elif ca_path:
        _load(f"TLS CA file {ca_path}", lambda: ctx.load_verify_locations(cafile=ca_path))
    else:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if cert_path or key_path:
        if not cert_path:
            raise ConfigError("a TLS client key needs its certificate (tls.client.certPath)")
        _load(
            f"TLS client certificate {cert_path}",
            lambda: ctx.load_cert_chain(cert_path, key_path, key_password),
        )
    return ctx


def client_context_from_config(config: ClientTlsKeys) -> ssl.SSLContext | None:
    """The context a broker's outgoing connections use, or None (``tls.enable=false``)."""
    if not config.tls_enable:
        return None
    return client_context(
        ca_path=config.tls_client_trust_cert_path,
        cert_path=config.tls_client_cert_path,
        key_path=config.tls_client_key_path,
        key_password=config.tls_client_key_password,
        verify=not config.tls_test_mode_enable,
    )


def describe_tls_error(exc: BaseException) -> str:
    """One line for a failed client handshake, with what to check."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return (
            f"TLS: the server's certificate is not trusted ({exc.verify_message}); "
            "is the CA file (--tls-ca) the one that signed it?"
        )
    if isinstance(exc, ssl.SSLError):
        return f"TLS handshake failed ({exc.reason or exc}); does the server use TLS?"
    return f"TLS handshake failed ({exc or type(exc).__name__}); does the server use TLS?"


@dataclass(frozen=True, slots=True)
class ServerTls:
    """A server's TLS mode and context; build it with :meth:`from_config`."""

    mode: TlsMode
    context: ssl.SSLContext
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT
    first_byte_timeout: float = DEFAULT_FIRST_BYTE_TIMEOUT

    @classmethod
    def from_config(cls, config: ServerTlsKeys) -> ServerTls | None:
        """None when ``tls.server.mode=disabled``; else the context (ConfigError if the
        files are missing or do not load: a server must not start half secured)."""
        mode = TlsMode(config.tls_server_mode)
        if mode is TlsMode.DISABLED:
            return None
        ctx = server_context(
            config.tls_server_cert_path,
            config.tls_server_key_path,
            key_password=config.tls_server_key_password,
            trust_cert_path=config.tls_server_trust_cert_path,
            client_auth=ClientAuth(config.tls_server_need_client_auth),
        )
        return cls(mode, ctx)


class TlsListener:
    """Listens on ``host:port`` and hands each connection to ``factory`` over TLS or
    plain TCP, by its first byte (see the module docstring). Shaped like the parts of
    ``asyncio.Server`` the servers use: ``sockets``, ``close()``, ``wait_closed()``."""

    def __init__(
        self,
        factory: Callable[[], asyncio.BaseProtocol],
        host: str,
        port: int,
        tls: ServerTls,
        *,
        backlog: int = 1024,
    ) -> None:
        self._factory = factory
        self._host = host
        self._port = port
        self._tls = tls
        self._backlog = backlog
        self.sockets: tuple[socket.socket, ...] = ()
        self._accepting: asyncio.Task[None] | None = None
        self._pending: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        sock = socket.create_server((self._host, self._port), family=family, backlog=self._backlog)
        sock.setblocking(False)
        self.sockets = (sock,)
        self._accepting = asyncio.create_task(self._accept_loop(sock), name="tls-accept")

    async def _accept_loop(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(sock)
            except OSError as exc:  # EMFILE and the like: wait, do not spin
                log.warning("accept failed on %s:%d: %s", self._host, self._port, exc)
                await asyncio.sleep(0.1)
                continue
            conn.setblocking(False)
            task = asyncio.create_task(self._open(conn), name="tls-sniff")
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    async def _open(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        peer = _peer(conn)
        try:
            async with asyncio.timeout(self._tls.first_byte_timeout):
                first = await _peek(loop, conn)
        except (OSError, TimeoutError):
            conn.close()
            return
        if not first:
            conn.close()
            return
        use_tls = first[0] == HANDSHAKE_BYTE
        if not use_tls and self._tls.mode is TlsMode.ENFORCING:
            log.warning("refused a plain connection from %s: tls.server.mode=enforcing", peer)
            conn.close()
            return
        try:
            await loop.connect_accepted_socket(
                self._factory,
                conn,
                ssl=self._tls.context if use_tls else None,
                ssl_handshake_timeout=self._tls.handshake_timeout if use_tls else None,
            )
        except (OSError, TimeoutError) as exc:  # ssl.SSLError is an OSError
            log.warning("TLS handshake with %s failed: %s", peer, exc)
            conn.close()

    def close(self) -> None:
        """Stop accepting; connections already handed over stay open."""
        if self._accepting is not None:
            self._accepting.cancel()
        for task in self._pending:
            task.cancel()
        for sock in self.sockets:
            sock.close()

    async def wait_closed(self) -> None:
        tasks = [t for t in (self._accepting, *self._pending) if t is not None]
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._accepting = None


async def _peek(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> bytes:
    """The first byte the peer sent, left in the socket for the transport to read."""
    ready: asyncio.Future[None] = loop.create_future()
    fd = conn.fileno()
    loop.add_reader(fd, _wake, ready)
    try:
        await ready
    finally:
        loop.remove_reader(fd)
    return conn.recv(1, socket.MSG_PEEK)


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


def _peer(conn: socket.socket) -> str:
    try:
        host, port = conn.getpeername()[:2]
    except OSError:
        return "?"
    return f"{host}:{port}"

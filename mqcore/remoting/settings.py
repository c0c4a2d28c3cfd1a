"""`ServerSettings`: the keys every `mq` server takes for its listening ports.

A name server and a broker read the same connection limits and the same
``tls.server.*`` keys (RocketMQ's names) from their config files; one declaration here,
inherited by :class:`~mqcore.namesrv.config.NamesrvConfig` and
:class:`~mqcore.broker.config.BrokerConfig`, keeps their names, defaults and meaning the
same on both.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.common.properties import prop
from mqcore.remoting.server import (
    DEFAULT_FRAME_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_PER_ADDRESS,
)
from mqcore.remoting.tls import ClientAuth, TlsMode

__all__ = ["ServerSettings"]


@dataclass
class ServerSettings:
    """Connection limits and server-side TLS (``snake_case`` maps to ``camelCase``)."""

    server_channel_max_idle_time_seconds: float = DEFAULT_IDLE_TIMEOUT
    """Close a connection silent this long with no request in progress (0: never)."""
    server_frame_read_timeout_seconds: float = DEFAULT_FRAME_TIMEOUT
    """Close a connection whose frame is not complete this long after it began (0: never)."""
    server_max_connections_per_address: int = DEFAULT_MAX_PER_ADDRESS
    """Open connections one remote host may hold; past it new ones are closed (0: no cap)."""
    tls_server_mode: TlsMode = prop("tls.server.mode", TlsMode.DISABLED)  # noqa: RUF009
    """disabled, permissive (TLS and plain clients on one port) or enforcing (TLS only);
    RocketMQ's default is permissive, ours disabled (no certificate to serve)."""
    tls_server_cert_path: str | None = prop("tls.server.certPath", None)
    """The server's certificate chain (PEM)."""
    tls_server_key_path: str | None = prop("tls.server.keyPath", None)
    tls_server_key_password: str | None = prop("tls.server.keyPassword", None)
    tls_server_need_client_auth: ClientAuth = prop(  # noqa: RUF009 (an enum member)
        "tls.server.need.client.auth", ClientAuth.NONE
    )
    """none, optional or require a client certificate, checked against trustCertPath."""
    tls_server_trust_cert_path: str | None = prop("tls.server.trustCertPath", None)

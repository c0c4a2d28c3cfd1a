"""`ServerSettings`: the keys every `mq` server takes for its listening ports.

A name server and a broker read the same connection limits and the same
``tls.server.*`` keys (RocketMQ's names) from their config files; one declaration here,
inherited by :class:`~mqcore.namesrv.config.NamesrvConfig` and
:class:`~mqcore.broker.config.BrokerConfig`, keeps their names, defaults and meaning the
same on both.

GET_BROKER_CONFIG and GET_NAMESRV_CONFIG answer with every field of RocketMQ 4.9.8's
config objects (``Configuration.getAllConfigsFormatString``), so tools that read a key
of 4.9.8 find it. :func:`rocketmq_config_text` renders such a table: ``mq``'s own value
where it has the setting, 4.9.8's default where it has not, then ``mq``'s extra keys.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from mqcore.common.properties import PropertiesConfig, camel, prop
from mqcore.remoting.server import (
    DEFAULT_FRAME_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_PER_ADDRESS,
)
from mqcore.remoting.tls import ClientAuth, TlsMode

__all__ = [
    "NETTY_CLIENT_FIELDS",
    "NETTY_SERVER_FIELDS",
    "JavaDefault",
    "ServerSettings",
    "ServerTlsSettings",
    "available_processors",
    "java_text",
    "rocketmq_config_items",
    "rocketmq_config_text",
]

JavaDefault = str | int | bool | None | Callable[[], "str | int | bool | None"]
"""A 4.9.8 field's default: a value, None (Java null: the key is not printed), or a
function for the ones 4.9.8 computes at start (processor count, environment)."""


def available_processors() -> int:
    """``Runtime.availableProcessors()``, which several 4.9.8 thread-pool defaults use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


NETTY_SERVER_FIELDS: Sequence[tuple[str, JavaDefault]] = (
    ("listenPort", 8888),
    ("serverWorkerThreads", 8),
    ("serverCallbackExecutorThreads", 0),
    ("serverSelectorThreads", 3),
    ("serverOnewaySemaphoreValue", 256),
    ("serverAsyncSemaphoreValue", 64),
    ("serverChannelMaxIdleTimeSeconds", 120),
    ("serverSocketSndBufSize", 0),
    ("serverSocketRcvBufSize", 0),
    ("writeBufferHighWaterMark", 0),
    ("writeBufferLowWaterMark", 0),
    ("serverSocketBacklog", 1024),
    ("serverPooledByteBufAllocatorEnable", True),
    ("useEpollNativeSelector", False),
)
"""4.9.8's ``NettyServerConfig`` fields in declaration order (``NettySystemConfig``
defaults: 0 buffer sizes and water marks, backlog 1024)."""

NETTY_CLIENT_FIELDS: Sequence[tuple[str, JavaDefault]] = (
    ("clientWorkerThreads", 4),
    ("clientCallbackExecutorThreads", available_processors),
    ("clientOnewaySemaphoreValue", 65535),
    ("clientAsyncSemaphoreValue", 65535),
    ("connectTimeoutMillis", 3000),
    ("channelNotActiveInterval", 60_000),
    ("clientChannelMaxIdleTimeSeconds", 120),
    ("clientSocketSndBufSize", 0),
    ("clientSocketRcvBufSize", 0),
    ("clientPooledByteBufAllocatorEnable", False),
    ("clientCloseSocketIfTimeout", True),
    ("useTLS", False),
    ("writeBufferHighWaterMark", 0),
    ("writeBufferLowWaterMark", 0),
)
"""4.9.8's ``NettyClientConfig`` fields (the broker's connections to name servers)."""


def java_text(value: object) -> str | None:
    """A value as Java's ``toString`` writes it: ``true``/``false``, enum names, whole
    numbers without ``.0`` (4.9.8's fields are int/long); None stays None (not printed)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def rocketmq_config_items(
    tables: Iterable[Sequence[tuple[str, JavaDefault]]],
    configs: Iterable[PropertiesConfig],
    overrides: Mapping[str, object] | None = None,
) -> dict[str, str]:
    """Every key of 4.9.8's config ``tables`` (declaration order; a key in two tables
    once, as Java's merged ``Properties``), valued from ``overrides``, else the first of
    ``configs`` with that key, else 4.9.8's default; then the configs' other keys.

    4.9.8 prints its ``Properties`` in hash-table order, which no client relies on (all
    parse the text into a map); declaration order keeps related keys together."""
    own: dict[str, object] = {}
    for config in configs:
        for f in dataclasses.fields(config):  # type: ignore[arg-type]
            own.setdefault(f.metadata.get("key", camel(f.name)), getattr(config, f.name))
    own.update(overrides or {})
    out: dict[str, str] = {}
    for table in tables:
        for key, default in table:
            if key in out:
                continue
            if key not in own:
                own[key] = default() if callable(default) else default
            text = java_text(own[key])
            if text is not None:
                out[key] = text
    for key, value in own.items():
        text = java_text(value)
        if key not in out and text is not None:
            out[key] = text  # one of mq's own keys
    return out


def rocketmq_config_text(items: Mapping[str, str]) -> str:
    """``MixAll.properties2String``: ``key=value`` lines, each ending in a newline."""
    return "".join(f"{key}={value}\n" for key, value in items.items())


@dataclass
class ServerTlsSettings:
    """Server-side TLS under RocketMQ's keys: every server's, the gRPC access point's too
    (``snake_case`` maps to ``camelCase``)."""

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


@dataclass
class _ChannelLimitSettings:
    server_channel_max_idle_time_seconds: float = DEFAULT_IDLE_TIMEOUT
    """Close a connection silent this long with no request in progress (0: never)."""
    server_frame_read_timeout_seconds: float = DEFAULT_FRAME_TIMEOUT
    """Close a connection whose frame is not complete this long after it began (0: never)."""
    server_max_connections_per_address: int = DEFAULT_MAX_PER_ADDRESS
    """Open connections one remote host may hold; past it new ones are closed. 0 (the
    default, as RocketMQ) is no cap: clients behind one NAT or proxy share an address."""


@dataclass
class ServerSettings(ServerTlsSettings, _ChannelLimitSettings):
    """Connection limits and server-side TLS of a remoting server (the limits' keys
    first, as before the TLS ones)."""

"""`NamesrvConfig`: the name server's settings under RocketMQ's property names.

A ``-c`` file is Java properties text (``key=value``, ``#`` comments). Keys are RocketMQ's
(``listenPort``, ``kvConfigPath``, ``orderMessageEnable``, ...); durations are in
milliseconds as in RocketMQ. Unknown keys are logged and ignored, as RocketMQ does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mqcore.common.properties import (
    PropertiesConfig,
    parse_properties,
    prop,
    read_properties_file,
)
from mqcore.protocol import DEFAULT_MAX_FRAME
from mqcore.remoting import DEFAULT_FRAME_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_PER_ADDRESS
from mqcore.remoting.tls import ClientAuth, TlsMode

__all__ = ["NamesrvConfig", "parse_properties"]


@dataclass(slots=True)
class NamesrvConfig(PropertiesConfig):
    """Effective configuration; attribute ``snake_case`` maps to property ``camelCase``."""

    listen_port: int = 9876
    bind_address: str = "0.0.0.0"
    kv_config_path: str = str(Path.home() / "namesrv" / "kvConfig.json")
    order_message_enable: bool = True
    """RocketMQ defaults to false; we honour ORDER_TOPIC_CONFIG unless told otherwise."""
    scan_not_active_broker_interval: int = 5_000
    broker_channel_expired_time: int = 120_000
    frame_max_length: int = DEFAULT_MAX_FRAME
    server_channel_max_idle_time_seconds: float = DEFAULT_IDLE_TIMEOUT
    """Close a connection silent this long with no request in progress (0: never)."""
    server_frame_read_timeout_seconds: float = DEFAULT_FRAME_TIMEOUT
    """Close a connection whose frame is not complete this long after it began (0: never)."""
    server_max_connections_per_address: int = DEFAULT_MAX_PER_ADDRESS
    """Open connections one remote host may hold; past it new ones are closed (0: no cap)."""
    acl_enable: bool = False
    """Check the admin request codes against the plain ACL file (the others stay open)."""
    plain_acl_file: str | None = None
    """The ACL file; default ``$ROCKETMQ_HOME/conf/plain_acl.yml``, else
    ``plain_acl.yml`` beside ``kvConfigPath``."""
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
    log_dir: str = str(Path.home() / "logs" / "mqlogs")
    log_level: str = "INFO"

    @classmethod
    def from_file(cls, path: Path) -> NamesrvConfig:
        """Defaults overridden by a properties file; unknown keys are logged and ignored."""
        config = cls()
        config.update(read_properties_file(path), source=str(path))
        return config

"""`ProxyConfig`: the settings of ``mq proxy`` under RocketMQ 5's proxy key names.

RocketMQ 5 reads them from ``rmq-proxy.json``; ``mq`` reads the same keys from a properties
file (``-c``), as its other servers do, and flags override them. Only the keys ``mq``
acts on are here: an unknown key is reported, not silently taken.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from mqcore.common.properties import PropertiesConfig, prop
from mqcore.common.receive_settings import ReceiveSettings
from mqcore.errors import ConfigError
from mqcore.remoting.settings import ServerTlsSettings

__all__ = ["CLUSTER_MODE", "DEFAULT_GRPC_PORT", "ProxyConfig"]

CLUSTER_MODE = "cluster"
LOCAL_MODE = "local"
DEFAULT_GRPC_PORT = 8081
"""RocketMQ 5's ``grpcServerPort``."""


def _namesrv_from_env() -> str | None:
    """RocketMQ's default: ``NAMESRV_ADDR`` (mq's ``MQ_NAMESRV_ADDR`` first)."""
    return os.environ.get("MQ_NAMESRV_ADDR") or os.environ.get("NAMESRV_ADDR") or None


@dataclass(slots=True)
class ProxyConfig(ReceiveSettings, ServerTlsSettings, PropertiesConfig):
    """Effective configuration; attribute ``snake_case`` maps to property ``camelCase``.
    The gRPC port's TLS keys are a remoting server's (``tls.server.*``): plaintext when
    ``disabled``, TLS only otherwise; an encrypted key (``keyPassword``) is refused, as
    grpc reads the PEM as it is."""

    proxy_mode: str = CLUSTER_MODE
    """``cluster`` (a process of its own in front of a cluster) is what ``mq proxy`` runs;
    ``local`` is a broker's own access point: ``grpcServerPort`` in ``broker.conf``."""
    namesrv_addr: str | None = field(default_factory=_namesrv_from_env)
    """The cluster's name servers, ``host:port;host:port``."""
    grpc_server_port: int = DEFAULT_GRPC_PORT
    """Where the SDKs connect; 0 picks a free port."""
    bind_address: str = "0.0.0.0"
    """mq's own key: the interface the gRPC port listens on (RocketMQ's proxy: all)."""
    use_endpoint_port_from_request: bool = False
    """Routes name the proxy at the host the client connected to and, by default, the
    proxy's ``grpcServerPort``; true keeps the port the client used too (behind a port
    mapping)."""
    enable_acl: bool = prop("enableACL", False)
    """Check each call's signature and rights against ``plainAclFile`` (RocketMQ 5.1's
    proxy key), as a broker with ``aclEnable`` checks its remoting requests."""
    plain_acl_file: str | None = None
    """The accounts ``enableACL`` checks against (re-read when it changes); default
    ``$ROCKETMQ_HOME/conf/plain_acl.yml``."""
    enable_acl_rpc_hook_for_cluster_mode: bool = False
    """Sign what the proxy sends the brokers (a cluster with ``aclEnable``) with its own
    keys: those mq's commands sign with (``--access-key``/``--secret-key``,
    ``MQ_ACCESS_KEY``/``MQ_SECRET_KEY``, the context, ``$ROCKETMQ_HOME/conf/tools.yml``
    as RocketMQ's proxy reads it). The account needs rights on every topic and group
    the clients use: the proxy checks the clients' own rights itself."""
    log_dir: str = str(Path.home() / "logs" / "mqlogs")
    log_level: str = "INFO"

    def __post_init__(self) -> None:
        self.proxy_mode = self.proxy_mode.strip().lower()
        if self.proxy_mode not in (CLUSTER_MODE, LOCAL_MODE):
            raise ConfigError(f"proxyMode must be cluster or local, not {self.proxy_mode!r}")
        if not 0 <= self.grpc_server_port <= 65535:
            raise ConfigError(f"grpcServerPort out of range: {self.grpc_server_port}")
        self.check_receive_settings()

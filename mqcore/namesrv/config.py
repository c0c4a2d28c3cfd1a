"""`NamesrvConfig`: the name server's settings under RocketMQ's property names.

A ``-c`` file is Java properties text (``key=value``, ``#`` comments). Keys are RocketMQ's
(``listenPort``, ``kvConfigPath``, ``orderMessageEnable``, ...); durations are in
milliseconds as in RocketMQ. Unknown keys are logged and ignored, as RocketMQ does.

The printed configuration (``-p``, GET_NAMESRV_CONFIG) has every key of 4.9.8's
``NamesrvConfig`` and ``NettyServerConfig`` (a 4.9.8 default where ``mq`` has no such
setting), then ``mq``'s own keys.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mqcore.common.properties import (
    PropertiesConfig,
    parse_properties,
    read_server_properties,
)
from mqcore.metrics.names import MetricsExporterType
from mqcore.protocol import DEFAULT_MAX_FRAME
from mqcore.remoting.settings import (
    NETTY_SERVER_FIELDS,
    JavaDefault,
    ServerSettings,
    rocketmq_config_items,
    rocketmq_config_text,
)

__all__ = ["NAMESRV_CONFIG_FIELDS", "NamesrvConfig", "parse_properties"]

NAMESRV_CONFIG_FIELDS: tuple[tuple[str, JavaDefault], ...] = (
    ("rocketmqHome", lambda: os.environ.get("ROCKETMQ_HOME")),
    ("kvConfigPath", None),
    ("configStorePath", lambda: str(Path.home() / "namesrv" / "namesrv.properties")),
    ("productEnvName", "center"),
    ("clusterTest", False),
    ("orderMessageEnable", False),
    ("configBlackList", "configBlackList;configStorePath;kvConfigPath"),
)
"""4.9.8's ``NamesrvConfig`` fields in declaration order with their defaults."""

NAMESRV_PROM_PORT = 5556
"""mq's default metrics port of a name server: beside the broker's 5557, so both run on
one host with the defaults."""


@dataclass(slots=True)
class NamesrvConfig(ServerSettings, PropertiesConfig):
    """Effective configuration; attribute ``snake_case`` maps to property ``camelCase``."""

    listen_port: int = 9876
    bind_address: str = "0.0.0.0"
    kv_config_path: str = str(Path.home() / "namesrv" / "kvConfig.json")
    order_message_enable: bool = True
    """RocketMQ defaults to false; we honour ORDER_TOPIC_CONFIG unless told otherwise."""
    scan_not_active_broker_interval: int = 5_000
    broker_channel_expired_time: int = 120_000
    frame_max_length: int = DEFAULT_MAX_FRAME
    acl_enable: bool = False
    """Check the admin request codes against the plain ACL file (the others stay open)."""
    plain_acl_file: str | None = None
    """The ACL file; default ``$ROCKETMQ_HOME/conf/plain_acl.yml``, else
    ``plain_acl.yml`` beside ``kvConfigPath``."""
    log_dir: str = str(Path.home() / "logs" / "mqlogs")
    log_level: str = "INFO"
    enable_controller_in_namesrv: bool = False
    """Also be a controller of RocketMQ 5's controller mode, on this port (its keys,
    ``controllerDLegerPeers`` etc., in the same file)."""
    metrics_exporter_type: MetricsExporterType = MetricsExporterType.DISABLE
    """PROM serves Prometheus metrics (the broker's key; RocketMQ's name server has
    none)."""
    metrics_prom_exporter_port: int = NAMESRV_PROM_PORT
    metrics_prom_exporter_host: str = ""
    """Blank: the name server's ``bindAddress``."""
    metrics_label: str = ""
    """Labels added to every sample, ``"k1:v1,k2:v2"``."""

    def to_properties_text(self) -> str:
        """4.9.8's ``Configuration.getAllConfigsFormatString`` keys (see the module)."""
        return rocketmq_config_text(
            rocketmq_config_items((NAMESRV_CONFIG_FIELDS, NETTY_SERVER_FIELDS), (self,))
        )

    @classmethod
    def from_file(cls, path: Path, *, also_known: frozenset[str] = frozenset()) -> NamesrvConfig:
        """Defaults overridden by a properties file; unknown keys are logged and ignored
        (``also_known``: keys another part reads from the same file, e.g. a hosted
        controller's)."""
        config = cls()
        props = read_server_properties(path)
        own = cls.property_fields()
        config.update(
            {k: v for k, v in props.items() if k in own or k not in also_known}, source=str(path)
        )
        return config

"""`NamesrvConfig`: the name server's settings under RocketMQ's property names.

A ``-c`` file is Java properties text (``key=value``, ``#`` comments). Keys are RocketMQ's
(``listenPort``, ``kvConfigPath``, ``orderMessageEnable``, ...); durations are in
milliseconds as in RocketMQ. Unknown keys are logged and ignored, as RocketMQ does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mqcore.common.properties import PropertiesConfig, parse_properties, read_properties_file
from mqcore.protocol import DEFAULT_MAX_FRAME
from mqcore.remoting import DEFAULT_FRAME_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_PER_ADDRESS

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
    log_dir: str = str(Path.home() / "logs" / "mqlogs")
    log_level: str = "INFO"

    @classmethod
    def from_file(cls, path: Path) -> NamesrvConfig:
        """Defaults overridden by a properties file; unknown keys are logged and ignored."""
        config = cls()
        config.update(read_properties_file(path), source=str(path))
        return config

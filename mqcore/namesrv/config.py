"""`NamesrvConfig`: the name server's settings under RocketMQ's property names.

A ``-c`` file is Java properties text (``key=value``, ``#`` comments). Keys are RocketMQ's
(``listenPort``, ``kvConfigPath``, ``orderMessageEnable``, ...); durations are in
milliseconds as in RocketMQ. Unknown keys are logged and ignored, as RocketMQ does.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mqcore.errors import ConfigError
from mqcore.protocol import DEFAULT_MAX_FRAME
from mqcore.protocol.headers.base import camel

__all__ = ["NamesrvConfig", "parse_properties"]

log = logging.getLogger("mq.namesrv")


def parse_properties(text: str) -> dict[str, str]:
    """Java properties, the common subset: ``k=v``, ``k: v``, ``k v``; ``#``/``!`` comments;
    a trailing backslash continues the line."""
    out: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        cut = len(line)
        for i, ch in enumerate(line):
            if ch in "=: \t":
                cut = i
                break
        key = line[:cut].strip()
        value = line[cut:].lstrip(" \t")
        if value[:1] in ("=", ":"):
            value = value[1:].lstrip(" \t")
        out[key] = value
    return out


@dataclass(slots=True)
class NamesrvConfig:
    """Effective configuration; attribute ``snake_case`` maps to property ``camelCase``."""

    listen_port: int = 9876
    bind_address: str = "0.0.0.0"
    kv_config_path: str = str(Path.home() / "namesrv" / "kvConfig.json")
    order_message_enable: bool = True
    """RocketMQ defaults to false; we honour ORDER_TOPIC_CONFIG unless told otherwise."""
    scan_not_active_broker_interval: int = 5_000
    broker_channel_expired_time: int = 120_000
    frame_max_length: int = DEFAULT_MAX_FRAME
    log_dir: str = str(Path.home() / "logs" / "mqlogs")
    log_level: str = "INFO"

    def update(self, props: dict[str, str], *, source: str = "properties") -> None:
        """Apply properties (only keys we know; values converted to the field's type)."""
        by_key = {camel(f.name): f for f in dataclasses.fields(self)}
        for key, text in props.items():
            f = by_key.get(key)
            if f is None:
                log.warning("%s: unknown name server property %r ignored", source, key)
                continue
            setattr(self, f.name, _convert(key, text, getattr(self, f.name)))

    @classmethod
    def from_file(cls, path: Path) -> NamesrvConfig:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
        config = cls()
        config.update(parse_properties(text), source=str(path))
        return config

    def to_properties(self) -> dict[str, str]:
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[camel(f.name)] = (
                ("true" if value else "false") if isinstance(value, bool) else str(value)
            )
        return out

    def to_properties_text(self) -> str:
        return "".join(f"{k}={v}\n" for k, v in self.to_properties().items())


def _convert(key: str, text: str, current: Any) -> Any:
    text = text.strip()
    if isinstance(current, bool):
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"property {key} must be true or false, not {text!r}")
        return text.lower() == "true"
    if isinstance(current, int):
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"property {key} must be an integer, not {text!r}") from None
    return text

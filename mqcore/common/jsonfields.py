"""Typed access to parsed JSON: a wrong shape becomes :class:`ConfigError` naming the field,
never a KeyError or TypeError deep inside a loader."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from mqcore.errors import ConfigError

__all__ = ["get_bool", "get_int", "get_mapping", "get_str", "int_key", "now_ms"]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def get_mapping(obj: Any, name: str | None = None, *, required: bool = False) -> dict[Any, Any]:
    """``obj[name]`` (or ``obj`` itself) as a dict; a missing optional field gives ``{}``."""
    value = obj if name is None else _field(obj, name, None, required)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{name or 'document'}: expected an object, got {_kind(value)}")
    return value


def get_int(obj: Mapping[str, Any], name: str, default: int | None = None) -> int:
    """An integer field that fits a Java long (a larger one could not be written back)."""
    value = _field(obj, name, default, default is None)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name}: expected an integer, got {_kind(value)}")
    if not -(1 << 63) <= value < 1 << 63:
        raise ConfigError(f"{name}: {value} is out of the range of a Java long")
    return value


def get_bool(obj: Mapping[str, Any], name: str, default: bool) -> bool:
    value = _field(obj, name, default, False)
    if not isinstance(value, bool):
        raise ConfigError(f"{name}: expected true/false, got {_kind(value)}")
    return value


def get_str(obj: Mapping[str, Any], name: str, default: str | None = None) -> str:
    value = _field(obj, name, default, default is None)
    if not isinstance(value, str):
        raise ConfigError(f"{name}: expected a string, got {_kind(value)}")
    return value


def int_key(key: Any, what: str) -> int:
    """A map key that Java holds as Integer/Long: bare (fastjson) or quoted (strict JSON)."""
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    if isinstance(key, str):
        try:
            return int(key)
        except ValueError:
            pass
    raise ConfigError(f"{what}: expected an integer key, got {key!r}")


def _field(obj: Mapping[str, Any], name: str, default: Any, required: bool) -> Any:
    if not isinstance(obj, dict):
        raise ConfigError(f"expected an object holding {name!r}, got {_kind(obj)}")
    if name in obj and obj[name] is not None:
        return obj[name]
    if required:
        raise ConfigError(f"missing field {name!r}")
    return default


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__

"""Java-properties configuration, keyed by RocketMQ's property names.

Broker, store and name server settings are dataclasses whose fields map to RocketMQ's
``camelCase`` keys (``listenPort``, ``mappedFileSizeCommitLog``...), so a RocketMQ user's
``broker.conf`` keeps working. :class:`PropertiesConfig` gives such a dataclass parsing
(with values converted to the field's type, errors naming the key) and printing (``-p``).
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from mqcore.errors import ConfigError

log = logging.getLogger("mq.config")


def camel(name: str) -> str:
    """``listen_port`` -> ``listenPort``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def prop(key: str, default: Any = dataclasses.MISSING, **kwargs: Any) -> Any:
    """A dataclass field whose property name is ``key`` (when it is not ``camel(name)``)."""
    return dataclasses.field(default=default, metadata={"key": key}, **kwargs)


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
        m = re.match(r"([^=:\s]+)\s*[=:\s]?\s*(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def read_properties_file(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not UTF-8 (byte {exc.start} is {exc.object[exc.start]:#x})"
        ) from None
    return parse_properties(text)


TLS_CONFIG_FILE_KEY = "tls.config.file"


def read_server_properties(path: Path) -> dict[str, str]:
    """A name server's or broker's ``-c`` file. A ``tls.config.file`` key in it pulls in
    that file's ``tls.*`` keys (RocketMQ's TLS file; a relative path is taken from the
    config file's directory), whose values win, as 4.9.8 lets the TLS file override."""
    props = read_properties_file(path)
    tls_file = props.pop(TLS_CONFIG_FILE_KEY, "").strip()  # consumed here
    if not tls_file:
        return props
    tls_path = path.parent / Path(tls_file).expanduser()
    tls = read_properties_file(tls_path)
    others = sorted(k for k in tls if not k.startswith("tls."))
    if others:
        raise ConfigError(f"{tls_path}: only tls.* keys belong in a TLS config file, not {others}")
    return {**props, **tls}


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _convert(key: str, hint: Any, raw: Any) -> Any:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if raw is None or str(raw).strip() == "":
            return None
        hint = args[0] if args else str
    text = raw.strip() if isinstance(raw, str) else raw
    try:
        if hint is bool:
            if isinstance(text, bool):
                return text
            low = str(text).lower()
            if low not in ("true", "false"):
                raise ValueError("expected true or false")
            return low == "true"
        if hint is int:
            if isinstance(text, bool):
                raise ValueError("expected an integer")
            return int(text)
        if hint is float:
            return float(text)
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            try:
                return hint(text)
            except ValueError:
                names = ", ".join(str(m.value) for m in hint)
                raise ValueError(f"expected one of {names}") from None
        return str(text)
    except ValueError as exc:
        raise ConfigError(f"bad value for {key}: {raw!r} ({exc})") from None


class PropertiesConfig:
    """Mixin for config dataclasses: parse and print RocketMQ-style properties."""

    ALIASES: typing.ClassVar[Mapping[str, str]] = {}
    """Old or alternative spellings -> canonical key (e.g. ``mapedFileSizeCommitLog``)."""

    @classmethod
    def property_fields(cls) -> dict[str, dataclasses.Field[Any]]:
        fields = {
            f.metadata.get("key", camel(f.name)): f
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        }
        for alias, canonical in cls.ALIASES.items():
            fields[alias] = fields[canonical]
        return fields

    @classmethod
    def parse_values(
        cls, props: Mapping[str, Any], *, warn_unknown: str | None = None
    ) -> dict[str, Any]:
        """Field name -> converted value for the keys this class knows."""
        fields = cls.property_fields()
        hints = _field_types(cls)
        out: dict[str, Any] = {}
        for key, raw in props.items():
            f = fields.get(key)
            if f is None:
                if warn_unknown:
                    log.warning("%s: unknown property %r ignored", warn_unknown, key)
                continue
            out[f.name] = _convert(key, hints[f.name], raw)
        return out

    @classmethod
    def from_properties(cls, props: Mapping[str, Any] | str | Path) -> Self:
        """Build from a mapping or a properties file; unknown keys are ignored (the file
        holds broker, store and other settings side by side)."""
        if isinstance(props, (str, Path)):
            props = read_properties_file(Path(props))
        try:
            return cls(**cls.parse_values(props))
        except ConfigError:
            raise
        except (TypeError, ValueError) as exc:
            raise ConfigError(str(exc)) from exc

    def update(self, props: Mapping[str, Any], *, source: str | None = None) -> None:
        """Apply ``props`` on top of the current values."""
        for name, value in self.parse_values(props, warn_unknown=source).items():
            setattr(self, name, value)
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()

    def to_properties(self) -> dict[str, str]:
        """The effective settings as property strings (``-p``)."""
        out: dict[str, str] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is None:
                continue
            if isinstance(value, enum.Enum):
                value = value.value
            elif isinstance(value, bool):
                value = "true" if value else "false"
            out[f.metadata.get("key", camel(f.name))] = str(value)
        return out

    def to_properties_text(self) -> str:
        return "".join(f"{k}={v}\n" for k, v in self.to_properties().items())

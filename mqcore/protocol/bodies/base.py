"""Shared machinery of the JSON bodies: decode fastjson's dialect, encode strict JSON.

Every body class implements ``to_json()`` (plain dict, Java field names) and
``from_json(obj)``; :class:`RemotingBody` turns those into ``encode()`` / ``decode()``.
Reading is tolerant (unknown fields ignored, missing ones defaulted, as fastjson does);
writing is strict JSON with string keys, which both Java and ali-ons parse (spec §10.3).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Self

import orjson

from mqcore.common import fastjson
from mqcore.common.metadata import JsonModel
from mqcore.errors import ConfigError, MQError

__all__ = [
    "BodyError",
    "MessageQueue",
    "RemotingBody",
    "as_bool",
    "as_dict",
    "as_float",
    "as_int",
    "as_list",
    "as_str",
    "decode_json",
    "int_key_map",
    "mq_key",
    "mq_key_text",
    "mq_list",
    "str_map",
]


class BodyError(MQError, ValueError):
    """A request body that is not the JSON the request code implies."""


def _object_key(obj: dict[Any, Any]) -> Hashable:
    if {"topic", "brokerName", "queueId"} <= obj.keys():
        return MessageQueue.from_json(obj)
    return tuple(sorted(obj.items(), key=lambda kv: str(kv[0])))


def decode_json(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse a body in fastjson's dialect; object keys that are MessageQueues become one."""
    try:
        return fastjson.loads(data, object_key=_object_key)
    except fastjson.FastjsonError as exc:
        raise BodyError(f"body is not JSON: {exc}") from None


def as_dict(value: Any) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BodyError(f"expected a JSON object, got {type(value).__name__}")
    return value


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BodyError(f"expected a JSON array, got {type(value).__name__}")
    return value


_LONG_MIN = -(1 << 63)
_LONG_MAX = (1 << 63) - 1


def as_int(value: Any, default: int = 0) -> int:
    """Integers as fastjson reads them into a Java long: numbers or numeric strings.

    Beyond 64 bits is a BodyError, as in fastjson: such a number could not be encoded
    again (orjson writes 64-bit integers only), so it must not get into the broker.
    """
    if type(value) is int and _LONG_MIN <= value <= _LONG_MAX:
        return value
    if value is None:
        return default
    try:
        number = int(value)  # bool, float (truncated), numeric text
    except (TypeError, ValueError, OverflowError):  # OverflowError: float infinity
        raise BodyError(f"expected an integer, got {value!r}") from None
    if not _LONG_MIN <= number <= _LONG_MAX:
        raise BodyError(f"{value!r} is out of the range of a Java long")
    return number


def as_float(value: Any, default: float = 0.0) -> float:
    """A Java double as fastjson reads it: a number or numeric text. One beyond a double's
    range (``"1E310"``) or not a number reads as ``default``: Java's Infinity or NaN would
    be written as ``null`` and read back as 0, so taking 0 at once keeps what decodes the
    same once sent on."""
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise BodyError(f"expected a number, got {value!r}") from None
    return number if math.isfinite(number) else default


def as_bool(value: Any, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, str):
        return value.lower() == "true"
    return bool(value)


def as_str(value: Any, default: str = "") -> str:
    if value is None:
        return default
    return value if isinstance(value, str) else str(value)


class RemotingBody(JsonModel):
    """Base of JSON bodies: subclasses provide ``to_json`` and ``from_json``; decoding
    also turns fastjson's MessageQueue object keys into :class:`MessageQueue`."""

    __slots__ = ()

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview | str) -> Self:
        """Parse Java's (fastjson), ali-ons' or our own JSON. Raises BodyError, also for
        what a nested config record (TopicConfig, ...) refuses with ConfigError and for a
        number Python cannot convert (``"consumeTps": "x"``)."""
        try:
            return cls.from_json(as_dict(decode_json(data)))
        except BodyError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError, OverflowError) as exc:
            raise BodyError(f"bad {cls.__name__} body: {exc!r}") from None
        except ConfigError as exc:
            raise BodyError(f"bad {cls.__name__} body: {exc}") from None


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    """(topic, brokerName, queueId); ordered as Java's ``compareTo`` (rebalance sorts)."""

    topic: str
    broker_name: str
    queue_id: int

    def to_json(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    @classmethod
    def from_json(cls, obj: Any) -> MessageQueue:
        obj = as_dict(obj)
        return cls(
            as_str(obj.get("topic")), as_str(obj.get("brokerName")), as_int(obj.get("queueId"))
        )


def mq_key_text(mq: MessageQueue) -> str:
    """A MessageQueue map key as strict JSON allows it: the object's JSON as a string.
    fastjson on the Java side turns it back into a MessageQueue (spec §10.3)."""
    return orjson.dumps(mq.to_json()).decode()


def mq_key(key: Any) -> MessageQueue:
    """Read a MessageQueue map key: fastjson object key, or our JSON-in-a-string form."""
    if isinstance(key, MessageQueue):
        return key
    if isinstance(key, str) and key.startswith("{"):
        try:
            return MessageQueue.from_json(orjson.loads(key))
        except orjson.JSONDecodeError:
            pass
    raise BodyError(f"not a MessageQueue key: {key!r}")


def mq_list(items: Iterable[Any]) -> list[MessageQueue]:
    return [MessageQueue.from_json(item) for item in items]


def str_map(obj: Any) -> dict[str, str]:
    return {str(k): as_str(v) for k, v in as_dict(obj).items()}


def int_key_map(obj: Mapping[Any, Any]) -> dict[int, Any]:
    """Java ``Map<Long,…>``: bare integer keys or their quoted form."""
    return {as_int(k): v for k, v in obj.items()}

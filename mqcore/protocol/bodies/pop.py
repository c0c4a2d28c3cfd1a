"""RocketMQ 5's POP JSON: the BATCH_ACK_MESSAGE body, and the checkpoint and ack records
a broker keeps in its revive topic (``PopCheckPoint``, ``AckMsg``, ``BatchAckMsg``).

Field names are 5.x's short JSON names (``so``, ``pt``, ``bm``...), written in the
order fastjson writes them (sorted), so a 5.x broker reading our revive topic, or we
reading its, agree; reading also accepts the long names 5.x accepts. A BatchAck's
``b`` is a ``java.util.BitSet`` as fastjson writes a byte array: base64 of
``BitSet.toByteArray()`` (little-endian, no trailing zero bytes).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, Self

from mqcore.protocol.bodies.base import BodyError, RemotingBody, as_dict, as_list

__all__ = [
    "AckMsg",
    "BatchAck",
    "BatchAckMessageRequestBody",
    "BatchAckMsg",
    "PopCheckPoint",
    "bitset_decode",
    "bitset_encode",
]


def bitset_encode(bits: set[int] | frozenset[int]) -> str:
    """Java's ``BitSet.toByteArray()`` of ``bits``, base64 as fastjson writes bytes."""
    value = 0
    for bit in bits:
        value |= 1 << bit
    raw = value.to_bytes((value.bit_length() + 7) // 8, "little")
    return base64.b64encode(raw).decode("ascii")


def bitset_decode(text: str) -> frozenset[int]:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BodyError(f"bit set is not base64: {text!r}") from None
    value = int.from_bytes(raw, "little")
    return frozenset(i for i in range(value.bit_length()) if value >> i & 1)


def _get(obj: dict[Any, Any], short: str, long: str, default: Any = None) -> Any:
    if short in obj:
        return obj[short]
    return obj.get(long, default)


def _int(obj: dict[Any, Any], short: str, long: str) -> int:
    value = _get(obj, short, long, 0)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise BodyError(f"{short} is not a number: {value!r}")
    return int(value)


def _str(obj: dict[Any, Any], short: str, long: str) -> str | None:
    value = _get(obj, short, long)
    return None if value is None else str(value)


def _sorted(obj: dict[str, Any]) -> dict[str, Any]:
    """fastjson writes a bean's fields sorted by name and leaves out nulls."""
    return {k: obj[k] for k in sorted(obj) if obj[k] is not None}


@dataclass(slots=True)
class BatchAck(RemotingBody):
    """Acks of one pop's messages in one queue: offsets ``start_offset + i`` for each
    bit ``i``; ``retry`` is the receipt's retry mark (``0``/``1``/``2``)."""

    consumer_group: str
    topic: str
    retry: str
    start_offset: int
    queue_id: int
    revive_queue_id: int
    pop_time: int
    invisible_time: int
    bits: frozenset[int] = frozenset()

    def to_json(self) -> dict[str, Any]:
        return _sorted(
            {
                "c": self.consumer_group,
                "t": self.topic,
                "r": self.retry,
                "so": self.start_offset,
                "q": self.queue_id,
                "rq": self.revive_queue_id,
                "pt": self.pop_time,
                "it": self.invisible_time,
                "b": bitset_encode(self.bits),
            }
        )

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        obj = as_dict(obj)
        bits = _get(obj, "b", "bitSet")
        return cls(
            consumer_group=_str(obj, "c", "consumerGroup") or "",
            topic=_str(obj, "t", "topic") or "",
            retry=_str(obj, "r", "retry") or "0",
            start_offset=_int(obj, "so", "startOffset"),
            queue_id=_int(obj, "q", "queueId"),
            revive_queue_id=_int(obj, "rq", "reviveQueueId"),
            pop_time=_int(obj, "pt", "popTime"),
            invisible_time=_int(obj, "it", "invisibleTime"),
            bits=bitset_decode(bits) if isinstance(bits, str) else frozenset(),
        )


@dataclass(slots=True)
class BatchAckMessageRequestBody(RemotingBody):
    """The body of BATCH_ACK_MESSAGE (200151)."""

    broker_name: str | None = None
    acks: list[BatchAck] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return _sorted({"acks": [a.to_json() for a in self.acks], "brokerName": self.broker_name})

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        obj = as_dict(obj)
        name = obj.get("brokerName")
        return cls(
            broker_name=None if name is None else str(name),
            acks=[BatchAck.from_json(a) for a in as_list(obj.get("acks"))],
        )


@dataclass(slots=True)
class PopCheckPoint(RemotingBody):
    """What one pop handed out of one queue (tag ``ck`` in the revive topic): ``num``
    messages at ``start_offset + queue_offset_diff[i]``, invisible until
    ``pop_time + invisible_time``; bit ``i`` of ``bit_map`` set once message ``i`` is
    acknowledged (the revive service sets it as acks arrive)."""

    start_offset: int
    pop_time: int
    invisible_time: int
    num: int
    queue_id: int
    topic: str
    cid: str
    broker_name: str | None = None
    bit_map: int = 0
    revive_offset: int = 0
    queue_offset_diff: list[int] | None = None
    re_put_times: str | None = None
    """How often the revive service wrote this checkpoint again (a text, as in 5.x)."""

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    def index_of_ack(self, ack_offset: int) -> int:
        """The bit of the message at ``ack_offset``, or -1 when it is not in this pop."""
        if ack_offset < self.start_offset:
            return -1
        diff = ack_offset - self.start_offset
        if not self.queue_offset_diff:  # a checkpoint of 5.0's first form
            return diff if diff < self.num else -1
        try:
            return self.queue_offset_diff.index(diff)
        except ValueError:
            return -1

    def ack_offset_by_index(self, index: int) -> int:
        if not self.queue_offset_diff:
            return self.start_offset + index
        return self.start_offset + self.queue_offset_diff[index]

    @property
    def re_put_count(self) -> int:
        if self.re_put_times is None:
            return 0
        try:
            return int(self.re_put_times)
        except ValueError:
            return 127

    def to_json(self) -> dict[str, Any]:
        return _sorted(
            {
                "so": self.start_offset,
                "pt": self.pop_time,
                "it": self.invisible_time,
                "bm": self.bit_map,
                "n": self.num,
                "q": self.queue_id,
                "t": self.topic,
                "c": self.cid,
                "ro": self.revive_offset,
                "d": self.queue_offset_diff,
                "bn": self.broker_name,
                "rp": self.re_put_times,
            }
        )

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        obj = as_dict(obj)
        diff = obj.get("d", obj.get("queueOffsetDiff"))
        return cls(
            start_offset=_int(obj, "so", "startOffset"),
            pop_time=_int(obj, "pt", "popTime"),
            invisible_time=_int(obj, "it", "invisibleTime"),
            bit_map=_int(obj, "bm", "bitMap"),
            num=_int(obj, "n", "num"),
            queue_id=_int(obj, "q", "queueId"),
            topic=_str(obj, "t", "topic") or "",
            cid=_str(obj, "c", "cid") or "",
            revive_offset=_int(obj, "ro", "reviveOffset"),
            queue_offset_diff=None if diff is None else [int(d) for d in as_list(diff)],
            broker_name=_str(obj, "bn", "brokerName"),
            re_put_times=_str(obj, "rp", "rePutTimes"),
        )


@dataclass(slots=True)
class AckMsg(RemotingBody):
    """One acknowledgement (tag ``ack``): the message at ``ack_offset`` of the pop whose
    checkpoint starts at ``start_offset`` and was taken at ``pop_time``."""

    ack_offset: int
    start_offset: int
    consumer_group: str
    topic: str
    queue_id: int
    pop_time: int
    broker_name: str | None = None

    def _fields(self) -> dict[str, Any]:
        return {
            "ao": self.ack_offset,
            "so": self.start_offset,
            "c": self.consumer_group,
            "t": self.topic,
            "q": self.queue_id,
            "pt": self.pop_time,
            "bn": self.broker_name,
        }

    def to_json(self) -> dict[str, Any]:
        return _sorted(self._fields())

    @property
    def ack_offsets(self) -> list[int]:
        return [self.ack_offset]

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        obj = as_dict(obj)
        return cls(
            ack_offset=_int(obj, "ao", "ackOffset"),
            start_offset=_int(obj, "so", "startOffset"),
            consumer_group=_str(obj, "c", "consumerGroup") or "",
            topic=_str(obj, "t", "topic") or "",
            queue_id=_int(obj, "q", "queueId"),
            pop_time=_int(obj, "pt", "popTime"),
            broker_name=_str(obj, "bn", "brokerName"),
        )


@dataclass(slots=True)
class BatchAckMsg(RemotingBody):
    """Several acknowledgements of one pop (tag ``bAck``); ``ao`` is -1 as in 5.x."""

    ack_offset_list: list[int]
    start_offset: int
    consumer_group: str
    topic: str
    queue_id: int
    pop_time: int
    broker_name: str | None = None

    @property
    def ack_offsets(self) -> list[int]:
        return self.ack_offset_list

    def to_json(self) -> dict[str, Any]:
        return _sorted(
            {
                "aol": self.ack_offset_list,
                "ao": -1,
                "so": self.start_offset,
                "c": self.consumer_group,
                "t": self.topic,
                "q": self.queue_id,
                "pt": self.pop_time,
                "bn": self.broker_name,
            }
        )

    @classmethod
    def from_json(cls, obj: Any) -> Self:
        obj = as_dict(obj)
        return cls(
            ack_offset_list=[int(o) for o in as_list(_get(obj, "aol", "ackOffsetList", []))],
            start_offset=_int(obj, "so", "startOffset"),
            consumer_group=_str(obj, "c", "consumerGroup") or "",
            topic=_str(obj, "t", "topic") or "",
            queue_id=_int(obj, "q", "queueId"),
            pop_time=_int(obj, "pt", "popTime"),
            broker_name=_str(obj, "bn", "brokerName"),
        )

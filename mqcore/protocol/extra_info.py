"""RocketMQ 5's POP receipt (``extraInfo``, the ``POP_CK`` property) and the per-queue
offset texts of a POP answer (``ExtraInfoUtil``).

A receipt is space-separated: ``ckQueueOffset popTime invisibleTime reviveQid retry
brokerName queueId [queueOffset]``. ``retry`` is ``0`` for the topic itself, ``1`` for the
pop retry topic ``%RETRY%{group}_{topic}`` and ``2`` for its v2 form
``%RETRY%{group}+{topic}``; a consumer acknowledges with the receipt and the message's
queue offset, so the broker finds the checkpoint the ack belongs to without any state of
its own. ``startOffsetInfo``/``msgOffsetInfo``/``orderCountInfo`` are ``;``-separated
``retry queueId value`` triples (``msgOffsetInfo``'s value a ``,``-separated list).

Sans-IO: text in, values out; anything malformed is a :class:`ExtraInfoError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.errors import MQError
from mqcore.message.const import RETRY_GROUP_TOPIC_PREFIX

__all__ = [
    "POP_ORDER_REVIVE_QUEUE",
    "PROPERTY_FIRST_POP_TIME",
    "PROPERTY_POP_CK",
    "ExtraInfo",
    "ExtraInfoError",
    "build_msg_offset_info",
    "build_start_offset_info",
    "is_pop_retry_topic_v2",
    "order_count_key",
    "parse_msg_offset_info",
    "parse_order_count_info",
    "parse_start_offset_info",
    "pop_retry_topic",
    "pop_retry_topic_v1",
    "pop_retry_topic_v2",
    "real_topic",
    "retry_mark",
    "start_offset_key",
]

SEPARATOR = " "
PROPERTY_POP_CK = "POP_CK"
"""A message's receipt, when the broker put it in the message (rewritten retries)."""
PROPERTY_FIRST_POP_TIME = "1ST_POP_TIME"
"""When the message was first popped (kept across revivals)."""
POP_ORDER_REVIVE_QUEUE = 999
"""The revive queue id a FIFO pop's receipt names (its messages are never revived)."""
NORMAL_TOPIC, RETRY_TOPIC, RETRY_TOPIC_V2 = "0", "1", "2"
_V1_SEPARATOR, _V2_SEPARATOR = "_", "+"


class ExtraInfoError(MQError, ValueError):
    """A receipt or offset-info text that does not have 5.x's form."""


def pop_retry_topic_v1(topic: str, group: str) -> str:
    """``%RETRY%{group}_{topic}``: where a POP group's unacknowledged messages go back."""
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}{_V1_SEPARATOR}{topic}"


def pop_retry_topic_v2(topic: str, group: str) -> str:
    """``%RETRY%{group}+{topic}`` (``enableRetryTopicV2``): parseable back into both."""
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}{_V2_SEPARATOR}{topic}"


def pop_retry_topic(topic: str, group: str, v2: bool = False) -> str:
    """KeyBuilder.buildPopRetryTopic: the v2 form when ``enableRetryTopicV2``."""
    return pop_retry_topic_v2(topic, group) if v2 else pop_retry_topic_v1(topic, group)


def is_pop_retry_topic_v2(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and _V2_SEPARATOR in topic


def retry_mark(topic: str) -> str:
    """The receipt's ``retry`` field for a message read from ``topic``."""
    if is_pop_retry_topic_v2(topic):
        return RETRY_TOPIC_V2
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return RETRY_TOPIC
    return NORMAL_TOPIC


def real_topic(topic: str, group: str, mark: str) -> str:
    """The topic a receipt's message was read from: ``topic`` itself or its retry topic."""
    if mark == NORMAL_TOPIC:
        return topic
    if mark == RETRY_TOPIC:
        return pop_retry_topic_v1(topic, group)
    if mark == RETRY_TOPIC_V2:
        return pop_retry_topic_v2(topic, group)
    raise ExtraInfoError(f"unknown retry mark {mark!r}")


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ExtraInfoError(f"{what} is not a number: {text!r}") from None


@dataclass(frozen=True, slots=True)
class ExtraInfo:
    """One message's receipt (``ExtraInfoUtil.buildExtraInfo``)."""

    ck_queue_offset: int
    """The checkpoint's start offset: the first offset the pop read in that queue."""
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: str
    """``0``, ``1`` or ``2``: see :func:`retry_mark`."""
    broker_name: str
    queue_id: int
    queue_offset: int | None = None
    """The message's own offset (5.x clients always send it; older ones did not)."""

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    @property
    def is_order(self) -> bool:
        return self.revive_qid == POP_ORDER_REVIVE_QUEUE

    def encode(self) -> str:
        parts = [
            str(self.ck_queue_offset),
            str(self.pop_time),
            str(self.invisible_time),
            str(self.revive_qid),
            self.retry,
            self.broker_name,
            str(self.queue_id),
        ]
        if self.queue_offset is not None:
            parts.append(str(self.queue_offset))
        return SEPARATOR.join(parts)

    @classmethod
    def decode(cls, text: str) -> ExtraInfo:
        """Raises ExtraInfoError for fewer than seven fields or a non-number."""
        parts = text.split(SEPARATOR)
        if len(parts) < 7:
            raise ExtraInfoError(f"a receipt has 7 or 8 fields, not {len(parts)}: {text!r}")
        if parts[4] not in (NORMAL_TOPIC, RETRY_TOPIC, RETRY_TOPIC_V2):
            raise ExtraInfoError(f"unknown retry mark {parts[4]!r} in {text!r}")
        return cls(
            ck_queue_offset=_int(parts[0], "ckQueueOffset"),
            pop_time=_int(parts[1], "popTime"),
            invisible_time=_int(parts[2], "invisibleTime"),
            revive_qid=_int(parts[3], "reviveQid"),
            retry=parts[4],
            broker_name=parts[5],
            queue_id=_int(parts[6], "queueId"),
            queue_offset=_int(parts[7], "queueOffset") if len(parts) > 7 else None,
        )

    def real_topic(self, topic: str, group: str) -> str:
        return real_topic(topic, group, self.retry)


def _triple(topic: str, queue_id: int, value: str) -> str:
    return f"{retry_mark(topic)}{SEPARATOR}{queue_id}{SEPARATOR}{value}"


def build_start_offset_info(items: list[tuple[str, int, int]]) -> str:
    """``(topic, queueId, startOffset)`` of each queue read, as ``startOffsetInfo``."""
    return ";".join(_triple(t, q, str(o)) for t, q, o in items)


def build_msg_offset_info(items: list[tuple[str, int, list[int]]]) -> str:
    """``(topic, queueId, offsets)`` of each queue read, as ``msgOffsetInfo``."""
    return ";".join(_triple(t, q, ",".join(map(str, offs))) for t, q, offs in items)


def _split(text: str | None, what: str) -> list[tuple[str, list[str]]]:
    if not text:
        return []
    out: list[tuple[str, list[str]]] = []
    seen: set[str] = set()
    for one in text.split(";"):
        parts = one.split(SEPARATOR)
        if len(parts) != 3:
            raise ExtraInfoError(f"{what}: {one!r} is not 'retry queueId value'")
        key = f"{parts[0]}@{parts[1]}"
        if key in seen:
            raise ExtraInfoError(f"{what}: queue {key} twice in {text!r}")
        seen.add(key)
        out.append((key, parts[2].split(",")))
    return out


def parse_start_offset_info(text: str | None) -> dict[str, int]:
    """``"{retry}@{queueId}" -> startOffset`` (ExtraInfoUtil.parseStartOffsetInfo)."""
    out: dict[str, int] = {}
    for key, values in _split(text, "startOffsetInfo"):
        if len(values) != 1:
            raise ExtraInfoError(f"startOffsetInfo: one offset per queue, not {values}")
        out[key] = _int(values[0], "startOffset")
    return out


def parse_msg_offset_info(text: str | None) -> dict[str, list[int]]:
    """``"{retry}@{queueId}" -> offsets`` (ExtraInfoUtil.parseMsgOffsetInfo)."""
    return {
        key: [_int(v, "msgOffset") for v in values] for key, values in _split(text, "msgOffsetInfo")
    }


def parse_order_count_info(text: str | None) -> dict[str, int]:
    """A FIFO pop's ``orderCountInfo``: ``"{retry}@{queueId}"`` (the queue's least count)
    and ``"{retry}@qo{queueId}%{offset}"`` (one message's) -> times handed out before."""
    out: dict[str, int] = {}
    for key, values in _split(text, "orderCountInfo"):
        if len(values) != 1:
            raise ExtraInfoError(f"orderCountInfo: one count per key, not {values}")
        out[key] = _int(values[0], "orderCount")
    return out


def order_count_key(topic: str, queue_id: int, queue_offset: int) -> str:
    """The key of one message in the parsed ``orderCountInfo``."""
    return f"{retry_mark(topic)}@qo{queue_id}%{queue_offset}"


def start_offset_key(topic: str, queue_id: int) -> str:
    """The key of a queue in the parsed offset infos (``getStartOffsetInfoMapKey``)."""
    return f"{retry_mark(topic)}@{queue_id}"

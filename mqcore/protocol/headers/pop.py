"""Custom headers of RocketMQ 5's POP consumption (POP_MESSAGE, ACK_MESSAGE, PEEK_MESSAGE,
CHANGE_MESSAGE_INVISIBLETIME, NOTIFICATION), with 5.x's field names and Java types.

The receipt a consumer echoes back (``extraInfo``) is not a header of its own: it is the
text of :mod:`mqcore.protocol.extra_info`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.protocol.headers.base import CommandHeader, JavaInt

__all__ = [
    "POLLING_FULL",
    "POLLING_TIMEOUT",
    "AckMessageRequestHeader",
    "ChangeInvisibleTimeRequestHeader",
    "ChangeInvisibleTimeResponseHeader",
    "ConsumeInitMode",
    "NotificationRequestHeader",
    "NotificationResponseHeader",
    "PeekMessageRequestHeader",
    "PollingInfoRequestHeader",
    "PollingInfoResponseHeader",
    "PopMessageRequestHeader",
    "PopMessageResponseHeader",
]


POLLING_FULL = 209
"""RocketMQ 5's answer to a POP when too many are held already. Not a ResponseCode
member: 4.x gave 209 and 210 to ACL answers, and an IntEnum would make them aliases."""
POLLING_TIMEOUT = 210
"""RocketMQ 5's answer to a POP that found nothing within its poll time."""


class ConsumeInitMode:
    """``initMode`` of a POP request: where a group without an offset starts."""

    MIN = 0
    MAX = 1


@dataclass(frozen=True, slots=True)
class PopMessageRequestHeader(CommandHeader):
    """POP_MESSAGE (200050). ``queue_id`` -1 pops from every readable queue of the topic;
    ``invisible_time`` and ``poll_time`` are milliseconds; ``order`` asks for FIFO POP."""

    consumer_group: str
    topic: str
    queue_id: JavaInt
    max_msg_nums: JavaInt
    invisible_time: int
    poll_time: int
    born_time: int
    init_mode: JavaInt
    exp_type: str | None = None
    exp: str | None = None
    order: bool | None = None
    attempt_id: str | None = None

    @property
    def is_order(self) -> bool:
        return bool(self.order)


@dataclass(frozen=True, slots=True)
class PopMessageResponseHeader(CommandHeader):
    """What a consumer needs to build each message's receipt: the pop time, the
    invisible time, the revive queue of the checkpoint, and per queue the checkpoint's
    start offset (``startOffsetInfo``) and the handed-out offsets (``msgOffsetInfo``)."""

    pop_time: int
    invisible_time: int
    revive_qid: JavaInt
    rest_num: int
    start_offset_info: str | None = None
    msg_offset_info: str | None = None
    order_count_info: str | None = None


@dataclass(frozen=True, slots=True)
class PeekMessageRequestHeader(CommandHeader):
    """PEEK_MESSAGE (200052): read without taking (no checkpoint, no offset moved)."""

    topic: str
    queue_id: JavaInt
    max_msg_nums: JavaInt
    consumer_group: str


@dataclass(frozen=True, slots=True)
class AckMessageRequestHeader(CommandHeader):
    """ACK_MESSAGE (200051): one message, by its queue offset and its receipt."""

    consumer_group: str
    topic: str
    queue_id: JavaInt
    extra_info: str
    offset: int


@dataclass(frozen=True, slots=True)
class ChangeInvisibleTimeRequestHeader(CommandHeader):
    """CHANGE_MESSAGE_INVISIBLETIME (200053): the message at ``offset`` becomes visible
    ``invisible_time`` ms from now instead of when its receipt says."""

    consumer_group: str
    topic: str
    queue_id: JavaInt
    extra_info: str
    offset: int
    invisible_time: int


@dataclass(frozen=True, slots=True)
class ChangeInvisibleTimeResponseHeader(CommandHeader):
    """The new receipt's parts: the client rebuilds its extraInfo from these."""

    pop_time: int
    invisible_time: int
    revive_qid: JavaInt


@dataclass(frozen=True, slots=True)
class NotificationRequestHeader(CommandHeader):
    """NOTIFICATION (200054): is there something to pop? Held up to ``poll_time`` ms."""

    consumer_group: str
    topic: str
    queue_id: JavaInt
    poll_time: int
    born_time: int
    order: bool | None = None
    attempt_id: str | None = None


@dataclass(frozen=True, slots=True)
class PollingInfoRequestHeader(CommandHeader):
    """POLLING_INFO (200055): how many POPs of a group are held on a topic's queue."""

    consumer_group: str
    topic: str
    queue_id: JavaInt


@dataclass(frozen=True, slots=True)
class PollingInfoResponseHeader(CommandHeader):
    polling_num: JavaInt = 0


@dataclass(frozen=True, slots=True)
class NotificationResponseHeader(CommandHeader):
    has_msg: bool = False
    polling_full: bool = False

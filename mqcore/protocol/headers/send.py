"""Custom headers of producing and transactions (spec §7, §9.1, §9.2).

SEND_MESSAGE (10) uses long field names; SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320)
the one-letter names ``a``..``n``. Both parse into :class:`SendMessageRequestHeader` through
:func:`decode_send_message_header`, so a broker handles one type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mqcore.protocol.codes import RequestCode
from mqcore.protocol.headers.base import CommandHeader, JavaInt, wire

__all__ = [
    "CheckTransactionStateRequestHeader",
    "EndTransactionRequestHeader",
    "SendMessageRequestHeader",
    "SendMessageRequestHeaderV2",
    "SendMessageResponseHeader",
    "decode_send_message_header",
]


@dataclass(frozen=True, slots=True)
class SendMessageRequestHeader(CommandHeader):
    """SEND_MESSAGE (10), long names; also the parsed form of V2 and batch sends."""

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: JavaInt
    queue_id: JavaInt
    sys_flag: JavaInt
    born_timestamp: int
    flag: JavaInt
    properties: str | None = None
    reconsume_times: JavaInt | None = None
    unit_mode: bool = False
    batch: bool = False
    max_reconsume_times: JavaInt | None = None
    bname: str | None = None

    def to_v2(self) -> SendMessageRequestHeaderV2:
        return SendMessageRequestHeaderV2.from_header(self)


@dataclass(frozen=True, slots=True)
class SendMessageRequestHeaderV2(CommandHeader):
    """SEND_MESSAGE_V2 (310) / SEND_BATCH_MESSAGE (320): the same fields, one-letter keys."""

    producer_group: str = wire("a")
    topic: str = wire("b")
    default_topic: str = wire("c")
    default_topic_queue_nums: JavaInt = wire("d")
    queue_id: JavaInt = wire("e")
    sys_flag: JavaInt = wire("f")
    born_timestamp: int = wire("g")
    flag: JavaInt = wire("h")
    properties: str | None = wire("i", None)
    reconsume_times: JavaInt | None = wire("j", None)
    unit_mode: bool = wire("k", False)
    max_reconsume_times: JavaInt | None = wire("l", None)
    batch: bool = wire("m", False)
    bname: str | None = wire("n", None)

    def to_v1(self) -> SendMessageRequestHeader:
        return SendMessageRequestHeader.from_header(self)


_V2_CODES = (
    RequestCode.SEND_MESSAGE_V2,
    RequestCode.SEND_BATCH_MESSAGE,
    RequestCode.SEND_REPLY_MESSAGE_V2,
)


def decode_send_message_header(cmd: Any) -> SendMessageRequestHeader:
    """The send header of a SEND_MESSAGE / _V2 / SEND_BATCH_MESSAGE request, in one form."""
    if cmd.code in _V2_CODES:
        return _read_v2(cmd.ext_fields)  # type: ignore[no-any-return]
    return _read_v1(cmd.ext_fields)  # type: ignore[no-any-return]


_read_v1 = SendMessageRequestHeader._reader(SendMessageRequestHeader)
_read_v2 = SendMessageRequestHeader._reader(SendMessageRequestHeaderV2)


@dataclass(frozen=True, slots=True)
class SendMessageResponseHeader(CommandHeader):
    """Answer to a send. ``MSG_REGION``/``TRACE_ON`` must be present: the Java client reads
    ``MSG_REGION`` unconditionally (spec §7.1)."""

    msg_id: str
    queue_id: JavaInt
    queue_offset: int
    transaction_id: str | None = None
    msg_region: str = wire("MSG_REGION", "DefaultRegion")
    trace_on: str = wire("TRACE_ON", "true")


@dataclass(frozen=True, slots=True)
class EndTransactionRequestHeader(CommandHeader):
    """END_TRANSACTION (37); ``commit_or_rollback`` 8 commit, 12 rollback, 0 unknown."""

    producer_group: str
    tran_state_table_offset: int
    commit_log_offset: int
    commit_or_rollback: JavaInt
    msg_id: str
    from_transaction_check: bool = False
    transaction_id: str | None = None
    bname: str | None = None


@dataclass(frozen=True, slots=True)
class CheckTransactionStateRequestHeader(CommandHeader):
    """CHECK_TRANSACTION_STATE (39), broker to producer, oneway."""

    tran_state_table_offset: int
    commit_log_offset: int
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None

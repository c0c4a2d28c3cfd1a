"""The receipt handle a 5.x client acknowledges a message with (RocketMQ 5's
``ReceiptHandle``).

It is the broker's POP receipt (``extraInfo``: checkpoint offset, pop time, invisible
time, revive queue, retry mark, broker, queue, message offset) with the message's commit
log offset appended, as RocketMQ 5's proxy builds it: the broker reads the first eight
fields and ignores the rest, and the access point needs the ninth to forward a message to
its dead letter queue (CONSUMER_SEND_MSG_BACK loads the record by that offset).
"""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.protocol import RemotingCommand
from mqcore.protocol.extra_info import ExtraInfo, ExtraInfoError
from mqcore.protocol.headers.pop import ChangeInvisibleTimeResponseHeader
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.status import ProxyError

__all__ = ["ReceiptHandle", "create_handle", "renewed_handle"]

_SEPARATOR = " "


def create_handle(extra_info: str, commit_log_offset: int) -> str:
    """A receipt handle: the broker's receipt and the message's commit log offset."""
    return f"{extra_info}{_SEPARATOR}{commit_log_offset}"


@dataclass(frozen=True, slots=True)
class ReceiptHandle:
    """One decoded handle; ``text`` is what the client sent, passed on to the broker
    unchanged (the broker's own receipt parser reads it)."""

    text: str
    receipt: ExtraInfo
    commit_log_offset: int
    """-1 when the handle has no ninth field (one a 4.x broker's receipt made)."""

    @classmethod
    def decode(cls, text: str) -> ReceiptHandle:
        """The handle's fields; ProxyError when it does not have 5.x's form. RocketMQ 5's
        proxy answers such a handle INTERNAL_SERVER_ERROR (its parser's exception), so
        this does too, with what is wrong as the message."""
        parts = text.split(_SEPARATOR)
        if len(parts) < 8:
            raise ProxyError(
                pb.Code.INTERNAL_SERVER_ERROR, f"Parse failed, dataList size {len(parts)}"
            )
        try:
            receipt = ExtraInfo.decode(_SEPARATOR.join(parts[:8]))
            commit_log_offset = int(parts[8]) if len(parts) > 8 else -1
        except (ExtraInfoError, ValueError) as exc:
            raise ProxyError(pb.Code.INTERNAL_SERVER_ERROR, str(exc)) from None
        return cls(text, receipt, commit_log_offset)

    @property
    def queue_offset(self) -> int:
        offset = self.receipt.queue_offset
        return offset if offset is not None else self.receipt.ck_queue_offset

    @property
    def next_visible_time(self) -> int:
        """When the message is handed out again unless acknowledged (ms since the epoch)."""
        return self.receipt.pop_time + self.receipt.invisible_time

    def check_not_expired(self, now_ms: int) -> None:
        """INVALID_RECEIPT_HANDLE once the message may have been handed out again: its
        receipt no longer names the delivery the client holds (RocketMQ 5's check)."""
        if self.next_visible_time <= now_ms:
            raise ProxyError(pb.Code.INVALID_RECEIPT_HANDLE, "receipt handle is expired")


def renewed_handle(handle: ReceiptHandle, response: RemotingCommand) -> ReceiptHandle:
    """The handle after a successful CHANGE_MESSAGE_INVISIBLETIME: the broker's new
    one-message checkpoint starts at the message, popped at the answer's time."""
    head = ChangeInvisibleTimeResponseHeader.from_command(response)
    old = handle.receipt
    receipt = ExtraInfo(
        ck_queue_offset=handle.queue_offset,
        pop_time=head.pop_time,
        invisible_time=head.invisible_time,
        revive_qid=head.revive_qid,
        retry=old.retry,
        broker_name=old.broker_name,
        queue_id=old.queue_id,
        queue_offset=handle.queue_offset,
    )
    text = create_handle(receipt.encode(), handle.commit_log_offset)
    return ReceiptHandle(text, receipt, handle.commit_log_offset)

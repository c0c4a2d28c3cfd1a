"""RECALL_MESSAGE (370, RocketMQ 5): take back a timer message before its time.

Field names are 5.x's ``RecallMessageRequestHeader`` / ``RecallMessageResponseHeader``;
the handle is what the send's answer carried as ``recallHandle``.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.protocol.headers.base import CommandHeader

__all__ = ["RecallMessageRequestHeader", "RecallMessageResponseHeader"]


@dataclass(frozen=True, slots=True)
class RecallMessageRequestHeader(CommandHeader):
    topic: str
    recall_handle: str
    producer_group: str | None = None


@dataclass(frozen=True, slots=True)
class RecallMessageResponseHeader(CommandHeader):
    msg_id: str

"""Custom headers of the store-level admin requests that :mod:`.admin` does not list."""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.protocol.headers.base import CommandHeader

__all__ = ["GetConsumeStatsInBrokerHeader", "ResumeCheckHalfMessageRequestHeader"]


@dataclass(frozen=True, slots=True)
class GetConsumeStatsInBrokerHeader(CommandHeader):
    """GET_BROKER_CONSUME_STATS (317); Java's field is ``isOrder`` (@CFNotNull): only
    ordered topics when true."""

    is_order: bool


@dataclass(frozen=True, slots=True)
class ResumeCheckHalfMessageRequestHeader(CommandHeader):
    """RESUME_CHECK_HALF_MESSAGE (323): the offset msg id of a half message."""

    msg_id: str | None = None

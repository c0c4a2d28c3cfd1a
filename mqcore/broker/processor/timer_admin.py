"""GET_TIMER_CHECK_POINT (60, RocketMQ 5): this broker's timer checkpoint.

The body is 5.x's ``TimerCheckpoint.encode``: seven big-endian i64 (last read time,
timer log flush position, the two timer-queue offsets, the data version). Slaves copy it
(:mod:`mqcore.broker.timer.slave`), so that one promoted to master knows what its old
master had delivered. Without a running timer store the answer is 5.x's SYSTEM_ERROR.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqcore.broker.processor import reply
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.remoting import Channel, Processor

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext

__all__ = ["handlers"]


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    """GET_TIMER_CHECK_POINT."""

    def get_timer_check_point(_channel: Channel, request: RemotingCommand) -> RemotingCommand:
        service = ctx.timer_service
        checkpoint = service.timer_store.checkpoint if service is not None else None
        if checkpoint is None:
            return reply(request, ResponseCode.SYSTEM_ERROR, "The checkpoint is null")
        return reply(request, body=checkpoint.encode())

    return {RequestCode.GET_TIMER_CHECK_POINT: get_timer_check_point}

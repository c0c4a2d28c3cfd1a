"""END_TRANSACTION (37), oneway from producers: protocol §9.1, store-format §13.

The producer reports its local transaction's outcome for a half message (or answers a
CHECK_TRANSACTION_STATE with ``fromTransactionCheck=true``). The work is
:meth:`TransactionalMessageService.end_transaction`; this module decodes and refuses on a
slave (the service and its check-back are built and started by the controller).

Although producers send it oneway, a two-way request gets the outcome as its answer
(RocketMQ's processor builds one too), which is how tools and tests see a refusal.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mqcore.broker.processor import reply
from mqcore.broker.transaction import (
    TransactionalMessageService,
)
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import EndTransactionRequestHeader, HeaderError
from mqcore.remoting import Channel, Processor

if TYPE_CHECKING:
    from mqcore.broker.config import BrokerConfig
    from mqcore.broker.context import BrokerContext

__all__ = ["EndTransactionProcessor", "handlers"]

log = logging.getLogger("mq.broker.transaction")


class EndTransactionProcessor:
    def __init__(self, config: BrokerConfig, service: TransactionalMessageService):
        self.config = config
        self.service = service

    def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        try:
            header = EndTransactionRequestHeader.from_command(request)
        except HeaderError as exc:
            log.warning("END_TRANSACTION from %s: %s", channel.remote_address, exc)
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        if self.config.broker_id != 0:
            log.warning("END_TRANSACTION from %s on a slave", channel.remote_address)
            return reply(
                request,
                ResponseCode.SLAVE_NOT_AVAILABLE,
                "Can not process transaction message on a slave broker",
            )
        if request.remark:
            log.info(
                "END_TRANSACTION %s from %s: %s",
                header.msg_id,
                channel.remote_address,
                request.remark,
            )
        outcome = self.service.end_transaction(header)
        if outcome is None:
            return None
        return reply(request, outcome.code, outcome.remark)


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    """END_TRANSACTION (the service and its check-back are the controller's)."""
    return {
        RequestCode.END_TRANSACTION: EndTransactionProcessor(
            ctx.config, ctx.transaction_service
        ).process
    }

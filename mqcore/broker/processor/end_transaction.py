"""END_TRANSACTION (37), oneway from producers: protocol §9.1, store-format §13.

The producer reports its local transaction's outcome for a half message (or answers a
CHECK_TRANSACTION_STATE with ``fromTransactionCheck=true``). The work is
:meth:`TransactionalMessageService.end_transaction`; this module decodes, refuses on a
slave, and wires the service and its check-back timer into the broker.

Although producers send it oneway, a two-way request gets the outcome as its answer
(RocketMQ's processor builds one too), which is how tools and tests see a refusal.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mqcore.broker.processor import reply, serve
from mqcore.broker.transaction import (
    TransactionalMessageBridge,
    TransactionalMessageCheckService,
    TransactionalMessageService,
)
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import EndTransactionRequestHeader, HeaderError
from mqcore.remoting import Channel

if TYPE_CHECKING:
    from mqcore.broker.config import BrokerConfig
    from mqcore.broker.controller import BrokerController

__all__ = ["EndTransactionProcessor", "register"]

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


def register(controller: BrokerController) -> TransactionalMessageService:
    """END_TRANSACTION on both servers; the check-back starts with the broker."""
    ctx = controller.context
    bridge = TransactionalMessageBridge(ctx.store, ctx.offsets, ctx.topics, ctx.store_host)
    service = TransactionalMessageService(bridge)
    service.check_service = TransactionalMessageCheckService(
        service,
        config=ctx.config,
        store_config=ctx.store_config,
        producers=ctx.producers,
        persister=ctx.persister,
        every=controller.schedule,
    )
    controller.add_start_hook(service.check_service.start)
    processor = EndTransactionProcessor(ctx.config, service)
    serve(controller.servers, {RequestCode.END_TRANSACTION: processor.process})
    return service

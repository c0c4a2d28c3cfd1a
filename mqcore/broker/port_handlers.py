"""Which processor module serves which port: the main port has them all, the fast (VIP)
port all but pulls, as RocketMQ registers its processors."""

from __future__ import annotations

from mqcore.broker.context import BrokerContext
from mqcore.broker.processor import (
    ack,
    acl_admin,
    admin,
    admin_consumer,
    admin_group,
    admin_store,
    client,
    end_transaction,
    offsets,
    pop,
    pull,
    query,
    recall,
    reply_message,
    send,
    send_back,
    timer_admin,
)
from mqcore.remoting import Processor

__all__ = ["both_ports", "main_port_only"]

_BOTH_PORTS = (
    send,
    offsets,
    client,
    query,
    admin,
    admin_group,
    admin_consumer,
    acl_admin,
    admin_store,
    end_transaction,
    send_back,
    reply_message,
    pop,
    ack,
    recall,
    timer_admin,
)


def both_ports(ctx: BrokerContext) -> dict[int, Processor]:
    """Request code -> handler of every request both ports serve, built over ``ctx``."""
    table: dict[int, Processor] = {}
    for module in _BOTH_PORTS:
        table.update(module.handlers(ctx))
    return table


def main_port_only(ctx: BrokerContext) -> dict[int, Processor]:
    """The pulls: RocketMQ's fast port serves none."""
    return pull.handlers(ctx)

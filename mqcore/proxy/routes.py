"""A route and an assignment as RocketMQ 5's proxy builds them from one broker's queue
data (``RouteActivity``), and the endpoints they name: pure functions."""

from __future__ import annotations

import ipaddress

from mqcore.common.metadata import PERM_READ, PERM_WRITE
from mqcore.proxy.brokers import BrokerQueues
from mqcore.proxy.grpc_v2 import definition_pb2 as pb

__all__ = ["ALL_TYPES", "endpoints_of", "permission", "queues"]

ALL_TYPES = (
    pb.MessageType.NORMAL,
    pb.MessageType.FIFO,
    pb.MessageType.DELAY,
    pb.MessageType.TRANSACTION,
)
"""What every queue accepts: a 4.9.8 topic config has no ``message.type`` attribute, so
every topic is what RocketMQ 5 calls MIXED."""


def endpoints_of(host: str, port: int) -> pb.Endpoints:
    """One address as RocketMQ 5 describes it: IPv4, IPv6 or a domain name."""
    try:
        scheme = (
            pb.AddressScheme.IPv6
            if ipaddress.ip_address(host).version == 6
            else pb.AddressScheme.IPv4
        )
    except ValueError:
        scheme = pb.AddressScheme.DOMAIN_NAME
    return pb.Endpoints(scheme=scheme, addresses=[pb.Address(host=host, port=port)])


def permission(perm: int) -> pb.Permission:
    """A topic's ``PermName`` bits as a 5.x queue's permission."""
    readable, writeable = bool(perm & PERM_READ), bool(perm & PERM_WRITE)
    if readable and writeable:
        return pb.Permission.READ_WRITE
    if readable:
        return pb.Permission.READ
    if writeable:
        return pb.Permission.WRITE
    return pb.Permission.NONE


def queues(config: BrokerQueues, topic: pb.Resource, broker: pb.Broker) -> list[pb.MessageQueue]:
    """RocketMQ 5's route of one broker's queue data: read-only queues first, then
    write-only, then read-write (``min`` of both counts), numbered from 0."""
    readable, writeable = bool(config.perm & PERM_READ), bool(config.perm & PERM_WRITE)
    read_nums, write_nums = config.read_queue_nums, config.write_queue_nums
    kinds: list[pb.Permission] = []
    if readable and writeable:
        both = min(read_nums, write_nums)
        kinds += [pb.Permission.READ] * (read_nums - both)
        kinds += [pb.Permission.WRITE] * (write_nums - both)
        kinds += [pb.Permission.READ_WRITE] * both
    elif writeable:
        kinds += [pb.Permission.WRITE] * write_nums
    elif readable:
        kinds += [pb.Permission.READ] * read_nums
    else:
        kinds += [pb.Permission.NONE] * max(1, read_nums, write_nums)
    return [
        pb.MessageQueue(
            topic=topic,
            id=queue_id,
            permission=kind,
            broker=broker,
            accept_message_types=ALL_TYPES,
        )
        for queue_id, kind in enumerate(kinds)
    ]

"""`Brokers`: the one seam between the gRPC service and the brokers behind it.

RocketMQ 5 runs its proxy in two modes, and only this seam tells them apart, so
:class:`~mqcore.proxy.service.MessagingService` is written once:

* **local** (:mod:`mqcore.proxy.local`): the access point lives in a broker, and a request
  goes to that broker's handlers in process; the gRPC client's own channel is what the
  broker's client tables hold;
* **cluster** (:mod:`mqcore.proxy.cluster`): the access point is a process of its own in
  front of a cluster, and a request goes over remoting to the broker owning the queue,
  found through the name server's routes; the broker sees the proxy's connection.

Everything else (the message mapping, the queue a send goes to, routes, the settings
handshake, which half message a transaction ends) is the service's, the same in both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from mqcore.acl.config import PlainAclConfig
from mqcore.common.metadata import SubscriptionGroupConfig
from mqcore.protocol import RemotingCommand
from mqcore.remoting import Channel

__all__ = ["BrokerQueues", "Brokers", "ClientRelay", "TransactionCheck", "WriteQueue"]


@dataclass(frozen=True, slots=True, order=True)
class BrokerQueues:
    """One broker's queues of a topic (a route's ``QueueData``): what a route, a send
    and an assignment need to know of it."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int


@dataclass(frozen=True, slots=True, order=True)
class WriteQueue:
    """A queue a send may go to: its broker and its id there."""

    broker_name: str
    queue_id: int


ClientRelay = Callable[[RemotingCommand], Awaitable[RemotingCommand]]
"""A broker's request to a gRPC client (CONSUME_MESSAGE_DIRECTLY...) -> the client's answer."""
TransactionCheck = Callable[[RemotingCommand, str], None]
"""``(CHECK_TRANSACTION_STATE, broker name) -> None``: hand a broker's check-back to a
gRPC producer of the message's group (cluster mode: the broker sends it to the proxy)."""


class Brokers(Protocol):
    """The brokers an access point serves; see the module docstring."""

    async def queues(self, topic: str) -> list[BrokerQueues]:
        """Every broker's queues of ``topic``, sorted by broker name; empty when no broker
        has the topic. Raises an ``MQError`` when the brokers cannot be asked."""
        ...

    async def write_queues(self, topic: str) -> list[WriteQueue]:
        """The queues a send of ``topic`` may go to, in RocketMQ 5's order (broker name,
        then queue id): a topic no broker has yet gets those the broker creates on the
        first send (``autoCreateTopicEnable``, 4 queues); empty when none is writable."""
        ...

    async def invoke(
        self,
        broker_name: str,
        channel: Channel,
        request: RemotingCommand,
        *,
        timeout: float | None = None,
    ) -> RemotingCommand:
        """``request`` to the master of ``broker_name`` on behalf of the client whose
        channel is ``channel``; its answer, within ``timeout`` seconds when the request
        crosses a network (None: the default request timeout; a POP the broker may hold
        for its long polling needs longer). Raises an ``MQError`` when it cannot be sent
        or is not answered in time."""
        ...

    async def invoke_each(
        self, topics: Sequence[str], channel: Channel, request: RemotingCommand
    ) -> list[RemotingCommand]:
        """``request`` to the master of every broker of the topics' routes (a heartbeat),
        the answers in broker name order; none when no broker has the topics."""
        ...

    async def group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """The consumer group's config where the brokers know it, else None (defaults)."""
        ...

    def client_closed(
        self, channel: Channel, producer_groups: Sequence[str], consumer_groups: Sequence[str]
    ) -> None:
        """A gRPC client left (or was expired); the groups are those no other client of
        this access point is in, which the brokers may forget (cluster mode sends that in
        a task of its own: a channel closes synchronously)."""
        ...

    def serve_checks(self, check: TransactionCheck) -> None:
        """Where the brokers' transaction check-backs that do not find the client's own
        channel go (cluster mode: every one)."""
        ...

    def serve_client_requests(self, relay: ClientRelay) -> None:
        """Where the brokers' requests to a gRPC client that do not reach the client's
        own channel go (cluster mode: every one, on the proxy's connection)."""
        ...

    def acl(self) -> PlainAclConfig | None:
        """The ACL accounts gRPC calls are checked against, None without ACL."""
        ...

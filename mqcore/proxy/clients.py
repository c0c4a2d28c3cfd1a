"""The gRPC clients the access point knows: their settings, and a channel each that the
broker's client tables hold like any remoting connection (RocketMQ 5's
``GrpcChannelManager``, ``GrpcClientChannel`` and ``GrpcClientSettingsManager``).

A broker reaches a producer through the channel it registered with (the transaction
check-back picks one of the group's channels and sends CHECK_TRANSACTION_STATE). A gRPC
client has no remoting connection, so its channel turns that request into the 5.x
command, ``RecoverOrphanedTransactionCommand``, written to the client's Telemetry stream.
In cluster mode the broker's check-back arrives on the proxy's own connection instead, and
:meth:`ClientRegistry.check_transaction` hands it to a producer of the message's group, as
RocketMQ 5's ``ProxyClientRemotingProcessor`` does.
What an admin asks of a consumer through the broker (CONSUME_MESSAGE_DIRECTLY,
GET_CONSUMER_RUNNING_INFO with the stacks) is asked over the stream too and its answer
awaited (:mod:`mqcore.proxy.relay`); in cluster mode those requests also arrive on the
proxy's connection and :meth:`ClientRegistry.relay` finds the client's channel.
Closing the channel (NotifyClientTermination, or the broker expiring a silent client)
tells the broker's client tables, as a closed connection does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from mqcore.errors import MQError
from mqcore.message.const import PROPERTY_PRODUCER_GROUP, PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
from mqcore.message.model import MessageExt
from mqcore.message.record import decode_record
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import CheckTransactionStateRequestHeader
from mqcore.protocol.headers.admin import GetConsumerRunningInfoRequestHeader
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.proxy.messages import to_proto
from mqcore.proxy.relay import (
    Answer,
    PendingAnswers,
    directly_result,
    running_info_response,
    thread_stack_command,
    verify_command,
)
from mqcore.proxy.transactions import TransactionDataStore
from mqcore.remoting import Channel, ChannelClosedError, RequestDispatcher

__all__ = ["ClientRegistry", "GrpcClientChannel"]

log = logging.getLogger("mq.proxy")

RELAY_TIMEOUT = 8.0
"""Seconds a client has to answer what a broker asks of it through the proxy (the broker
itself waits 10 s)."""
_STREAM_BACKLOG = 1024
"""Commands queued for a client's Telemetry stream at most; more are dropped (a client
that does not read its stream misses check-backs, which the broker repeats)."""


def _decode_check(
    cmd: RemotingCommand, client: str
) -> tuple[CheckTransactionStateRequestHeader, MessageExt] | None:
    """A CHECK_TRANSACTION_STATE's header and half message; None (logged) if unreadable."""
    try:
        return CheckTransactionStateRequestHeader.from_command(cmd), decode_record(cmd.body or b"")
    except (MQError, ValueError) as exc:
        log.warning("unreadable transaction check for %s: %s", client, exc)
        return None


def _host_of(address: str) -> str:
    host = address.rpartition(":")[0] if ":" in address else address
    return host.strip("[]")


class GrpcClientChannel(Channel):
    """A gRPC client as the broker's client tables see it: ``remote_address`` and the
    requests a broker sends to clients, carried over the client's Telemetry stream."""

    def __init__(
        self,
        client_id: str,
        remote_address: str,
        transactions: TransactionDataStore,
        on_close: Callable[[Channel], None] | None = None,
    ) -> None:
        super().__init__(RequestDispatcher(), on_close=on_close)
        self.client_id = client_id
        self.remote_address = remote_address
        self.remote_host = _host_of(remote_address)
        self._transactions = transactions
        self._stream: asyncio.Queue[spb.TelemetryCommand | None] | None = None
        self._answers = PendingAnswers(client_id)

    # -- the Telemetry stream -------------------------------------------------------------
    def attach_stream(self) -> asyncio.Queue[spb.TelemetryCommand | None]:
        """A new stream of the client takes over; the older one (if any) is ended."""
        old, self._stream = self._stream, asyncio.Queue(_STREAM_BACKLOG)
        if old is not None:
            _end(old)
        return self._stream

    def detach_stream(self, stream: asyncio.Queue[spb.TelemetryCommand | None]) -> None:
        if self._stream is stream:
            self._stream = None

    @property
    def has_stream(self) -> bool:
        return self._stream is not None

    def push(self, command: spb.TelemetryCommand) -> None:
        """Queue a command for the client's stream. Raises ChannelClosedError without one."""
        stream = self._stream
        if self.closed or stream is None:
            raise ChannelClosedError(f"gRPC client {self.client_id} has no telemetry stream")
        try:
            stream.put_nowait(command)
        except asyncio.QueueFull:
            log.warning("telemetry stream of %s is full: a command is dropped", self.client_id)

    # -- what the broker sends to clients -------------------------------------------------
    def send(self, cmd: RemotingCommand) -> None:
        """CHECK_TRANSACTION_STATE becomes a RecoverOrphanedTransactionCommand; other
        requests to clients (NOTIFY_CONSUMER_IDS_CHANGED) mean nothing to a 5.x client."""
        if cmd.code != RequestCode.CHECK_TRANSACTION_STATE:
            return
        if self.closed or self._stream is None:
            raise ChannelClosedError(f"gRPC client {self.client_id} has no telemetry stream")
        decoded = _decode_check(cmd, self.client_id)
        if decoded is not None:
            self.recover(*decoded)

    def recover(
        self, header: CheckTransactionStateRequestHeader, message: MessageExt, broker_name: str = ""
    ) -> None:
        """Ask the client to resolve the half ``message`` of ``broker_name`` (noted for its
        EndTransaction). Raises ChannelClosedError without a stream."""
        props = message.properties
        transaction_id = (
            header.transaction_id or props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or ""
        )
        self._transactions.add(
            props.get(PROPERTY_PRODUCER_GROUP, ""),
            transaction_id,
            header.tran_state_table_offset,
            header.commit_log_offset,
            broker_name,
        )
        recover = spb.RecoverOrphanedTransactionCommand(
            message=to_proto(message), transaction_id=transaction_id
        )
        self.push(spb.TelemetryCommand(recover_orphaned_transaction_command=recover))

    async def invoke(self, request: RemotingCommand, timeout: float = 3.0) -> RemotingCommand:
        """CONSUME_MESSAGE_DIRECTLY and GET_CONSUMER_RUNNING_INFO (with the stacks) asked
        over the stream (:mod:`mqcore.proxy.relay`); MQTimeoutError when the client does
        not answer in ``timeout`` s, an MQError for any other request."""
        if self.closed:
            raise ChannelClosedError(f"gRPC client {self.client_id} is gone")
        if request.code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
            message = decode_record(request.body or b"")
            answer = await self._ask(lambda n: verify_command(n, message), timeout, "a verify")
            body = directly_result(answer).encode()
            return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=body)
        if request.code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            if not GetConsumerRunningInfoRequestHeader.from_command(request).jstack_enable:
                raise MQError(
                    f"gRPC client {self.client_id} keeps no running info; ask for its"
                    " thread stacks (jstack) instead"
                )
            answer = await self._ask(thread_stack_command, timeout, "a thread stack request")
            return running_info_response(request, answer)
        raise ChannelClosedError(
            f"gRPC client {self.client_id} answers no remoting request (code {request.code})"
        )

    async def _ask(
        self, command: Callable[[str], spb.TelemetryCommand], timeout: float, what: str
    ) -> Answer:
        return await self._answers.ask(lambda nonce: self.push(command(nonce)), timeout, what)

    def answer(self, nonce: str, status: pb.Status, text: str = "") -> None:
        """The client answered the command ``nonce`` names (a late or unknown one is
        logged and dropped)."""
        if not self._answers.resolve(nonce, Answer(status, text)):
            log.info("gRPC client %s answered %r, which nothing waits for", self.client_id, nonce)

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        self.send(request)

    @property
    def write_buffered(self) -> int:
        return 0

    def close(self) -> None:
        """Gone for the broker (its tables forget the client) and for the stream."""
        if self.closed:
            return
        stream, self._stream = self._stream, None
        if stream is not None:
            _end(stream)
        self._answers.close(f"gRPC client {self.client_id} is gone")
        self.connection_lost(None)

    def abort(self) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<GrpcClientChannel {self.client_id} {self.remote_address}>"


def _end(stream: asyncio.Queue[spb.TelemetryCommand | None]) -> None:
    """Tell a stream's writer to finish (it may be full: then make room for the end)."""
    while True:
        try:
            stream.put_nowait(None)
            return
        except asyncio.QueueFull:
            stream.get_nowait()


class ClientRegistry:
    """Client id -> its last settings and its channel."""

    def __init__(
        self,
        transactions: TransactionDataStore,
        on_close: Callable[[Channel], None] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.transactions = transactions
        self._on_close = on_close
        self._clock = clock
        self._settings: dict[str, pb.Settings] = {}
        self._channels: dict[str, GrpcClientChannel] = {}
        self._last_seen: dict[str, float] = {}
        """Client id -> when it last called, for :meth:`expire` (kept clients only)."""

    def channel(
        self, client_id: str, remote_address: str, *, keep: bool = False
    ) -> GrpcClientChannel:
        """The client's channel; a new one if it has none or the broker closed it. A new
        one is kept for the client's next calls when ``keep`` says so (its Telemetry
        stream) or the client has sent its settings; otherwise it serves one call, so a
        client that never says who it is leaves nothing behind."""
        channel = self._channels.get(client_id)
        if channel is None or channel.closed:
            channel = GrpcClientChannel(client_id, remote_address, self.transactions, self._closed)
            if keep or client_id in self._settings:
                self._channels[client_id] = channel
        if self._channels.get(client_id) is channel:
            self._last_seen[client_id] = self._clock()
        return channel

    def _closed(self, channel: Channel) -> None:
        """A channel closed (the broker expired a silent client, or the client left): the
        broker forgets it in every group, and the client's settings go with its channel,
        as RocketMQ 5 drops them when a client unregisters."""
        if self._on_close is not None:
            self._on_close(channel)
        if not isinstance(channel, GrpcClientChannel):
            return
        if self._channels.get(channel.client_id) is channel:
            del self._channels[channel.client_id]
            self._settings.pop(channel.client_id, None)
            self._last_seen.pop(channel.client_id, None)

    def settings(self, client_id: str) -> pb.Settings | None:
        return self._settings.get(client_id)

    def expire(self, idle: float) -> list[GrpcClientChannel]:
        """Close the channels of clients silent for more than ``idle`` seconds (an SDK
        heartbeats every 10 s): what a broker does to the gRPC clients of its own access
        point, done by the proxy in cluster mode, where the brokers see only the proxy."""
        now = self._clock()
        silent = [
            channel
            for client_id, channel in self._channels.items()
            if now - self._last_seen.get(client_id, now) > idle
        ]
        for channel in silent:
            log.info("gRPC client %s silent for %g s: forgotten", channel.client_id, idle)
            channel.close()
        return silent

    def groups_only_of(self, client_id: str) -> tuple[list[str], list[str]]:
        """The producer and consumer groups of ``client_id`` that no other client is in
        (a 5.x producer's groups are its topics)."""
        own_producers, own_consumers = _groups(self._settings.get(client_id))
        for other, settings in self._settings.items():
            if other != client_id:
                producers, consumers = _groups(settings)
                own_producers -= producers
                own_consumers -= consumers
        return sorted(own_producers), sorted(own_consumers)

    async def relay(self, request: RemotingCommand) -> RemotingCommand:
        """A broker's request for the client its ``clientId`` names (cluster mode: it
        arrives on the proxy's connection), asked of that client; the broker relays the
        answer to the admin who asked."""
        client_id = request.ext_fields.get("clientId", "")
        group = request.ext_fields.get("consumerGroup", "")
        channel = self._channels.get(client_id)
        if channel is None or channel.closed:
            return RemotingCommand.response_to(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{group}> <{client_id}> not online",
            )
        try:
            return await channel.invoke(request, RELAY_TIMEOUT)
        except MQError as exc:
            return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR, str(exc))

    def check_transaction(self, cmd: RemotingCommand, broker_name: str) -> None:
        """A broker's check-back for the message's group, handed to one of its producers
        with a Telemetry stream (the first found); dropped, and logged, when there is
        none: the broker asks again later."""
        decoded = _decode_check(cmd, f"group of {broker_name}")
        if decoded is None:
            return
        group = decoded[1].properties.get(PROPERTY_PRODUCER_GROUP, "")
        for client_id, settings in self._settings.items():
            channel = self._channels.get(client_id)
            if channel is None or not channel.has_stream or channel.closed:
                continue
            if group in _groups(settings)[0]:
                try:
                    channel.recover(*decoded, broker_name)
                    return
                except ChannelClosedError:
                    continue
        log.warning(
            "transaction check of %s from %s: no producer of %r",
            decoded[0].msg_id,
            broker_name,
            group,
        )

    def update_settings(self, client_id: str, settings: pb.Settings) -> None:
        self._settings[client_id] = settings

    def remove(self, client_id: str) -> pb.Settings | None:
        """Forget a client that terminated: its settings (returned) and channel (closed)."""
        self._last_seen.pop(client_id, None)
        channel = self._channels.pop(client_id, None)
        if channel is not None:
            channel.close()
        return self._settings.pop(client_id, None)

    def close(self) -> None:
        for client_id in list(self._channels):
            self.remove(client_id)
        self._settings.clear()

    def __len__(self) -> int:
        return len(self._settings)


def _groups(settings: pb.Settings | None) -> tuple[set[str], set[str]]:
    """The producer groups (its topics) and consumer group of a client's settings."""
    if settings is None:
        return set(), set()
    if settings.HasField("publishing"):
        return {topic.name for topic in settings.publishing.topics}, set()
    if settings.HasField("subscription"):
        return set(), {settings.subscription.group.name}
    return set(), set()

"""`MessagingService`: each ``apache.rocketmq.v2.MessagingService`` call as the remoting
requests a 4.x client would send, handed to the brokers through the
:class:`~mqcore.proxy.brokers.Brokers` seam (in process in local mode, over remoting in
cluster mode: the calls are the same in both).

Independent of grpc itself (the transport is :mod:`mqcore.proxy.server`'s): each call gets
the request message and a :class:`CallContext` (who calls, from where) and returns the
response message, whose ``status`` says what RocketMQ 5's proxy would (see
:mod:`mqcore.proxy.status`). A :class:`ProxyError` raised by a check becomes that status.

What the access point does itself, as RocketMQ 5's proxy does: the queue of a send among
every broker's write queues (by message group, :mod:`mqcore.proxy.queue_select`), a
producer's group (its topic), the settings handshake and the note of where each half
message is, broker included (END_TRANSACTION needs it). The consumer calls are
:mod:`mqcore.proxy.consumer`'s, over the same seam and the same ``_request``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence

from mqcore.client.recall import recall_handle_broker
from mqcore.common.metadata import PERM_READ, SubscriptionGroupConfig
from mqcore.errors import MQError
from mqcore.filter.tags import build_subscription_data
from mqcore.message.const import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    SysFlag,
)
from mqcore.message.ids import decode_offset_msg_id
from mqcore.message.properties import encode_properties
from mqcore.message.record import encode_batch_body
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import ConsumerData, HeartbeatData, ProducerData, SubscriptionData
from mqcore.protocol.bodies.route import MASTER_ID
from mqcore.protocol.codes import LanguageCode
from mqcore.protocol.headers import (
    EndTransactionRequestHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
)
from mqcore.protocol.headers.recall import (
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
)
from mqcore.proxy.acl import authorize
from mqcore.proxy.brokers import Brokers
from mqcore.proxy.clients import ClientRegistry, GrpcClientChannel
from mqcore.proxy.consumer import ConsumerService, ReceiveLimits
from mqcore.proxy.context import CallContext
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.proxy.messages import OutgoingMessage, outgoing
from mqcore.proxy.queue_select import QueueSelector
from mqcore.proxy.routes import permission
from mqcore.proxy.routes import queues as route_queues
from mqcore.proxy.settings import merge_settings
from mqcore.proxy.status import ProxyError, brokers_failing, ok, status, status_of_response
from mqcore.proxy.transactions import TransactionDataStore
from mqcore.proxy.validation import validate_consumer_group, validate_topic
from mqcore.remoting import Channel

__all__ = ["MessagingService"]

log = logging.getLogger("mq.proxy")

_DEFAULT_TOPIC_QUEUE_NUMS = 4
"""Queues of a topic a send creates (``defaultTopicQueueNums`` of the send header)."""
_NO_ROUTE = "No topic route info in name server for the topic: {}"
_SEND_FAILURES: dict[int, tuple[pb.Code, str]] = {
    ResponseCode.FLUSH_DISK_TIMEOUT: (pb.Code.MASTER_PERSISTENCE_TIMEOUT, "FLUSH_DISK_TIMEOUT"),
    ResponseCode.FLUSH_SLAVE_TIMEOUT: (pb.Code.SLAVE_PERSISTENCE_TIMEOUT, "FLUSH_SLAVE_TIMEOUT"),
    ResponseCode.SLAVE_NOT_AVAILABLE: (pb.Code.HA_NOT_AVAILABLE, "SLAVE_NOT_AVAILABLE"),
}
"""Stored, but not as durably as asked: the status the proxy gives each such send."""
_RESOLUTIONS = {
    pb.TransactionResolution.COMMIT: SysFlag.TRANSACTION_COMMIT_TYPE,
    pb.TransactionResolution.ROLLBACK: SysFlag.TRANSACTION_ROLLBACK_TYPE,
}


def _language(call: CallContext) -> LanguageCode:
    try:
        return LanguageCode[call.language.upper()]
    except KeyError:
        return LanguageCode.OTHER


class MessagingService:
    """The calls of ``apache.rocketmq.v2.MessagingService`` this access point serves."""

    def __init__(
        self,
        brokers: Brokers,
        endpoints: Callable[[pb.Endpoints], pb.Endpoints],
        *,
        transactions: TransactionDataStore | None = None,
        receive_limits: ReceiveLimits | None = None,
    ) -> None:
        self.brokers = brokers
        self.endpoints = endpoints
        """Where clients reach this access point (answered in routes, for every broker),
        given the endpoints the client says it used (perhaps none)."""
        self.transactions = transactions or TransactionDataStore()
        self.clients = ClientRegistry(self.transactions, on_close=self._client_closed)
        self.selector = QueueSelector()
        brokers.serve_checks(self.clients.check_transaction)
        brokers.serve_client_requests(self.clients.relay)
        self.consumer = ConsumerService(
            brokers, self._request, self.clients.settings, self._command, receive_limits
        )
        """ReceiveMessage, AckMessage, ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue."""

    # -- plumbing -------------------------------------------------------------------------
    def _channel(self, call: CallContext) -> GrpcClientChannel:
        return self.clients.channel(call.client_id, call.remote_address)

    async def _request(
        self,
        call: CallContext,
        broker_name: str,
        request: RemotingCommand,
        timeout: float | None = None,
    ) -> RemotingCommand:
        """One request through the ACL (when on) to the broker ``broker_name``, answered
        within ``timeout`` seconds (None: the brokers' default; a long poll needs more)."""
        authorize(self.brokers.acl(), call.access_key, request)
        with brokers_failing():
            return await self.brokers.invoke(
                broker_name, self._channel(call), request, timeout=timeout
            )

    def _client_closed(self, channel: Channel) -> None:
        """A client's channel closed: the brokers forget it, and the groups it alone was
        in (cluster mode: the broker sees one connection, the proxy's, for all)."""
        producers: Sequence[str] = ()
        consumers: Sequence[str] = ()
        if isinstance(channel, GrpcClientChannel):
            producers, consumers = self.clients.groups_only_of(channel.client_id)
        self.brokers.client_closed(channel, producers, consumers)

    def _command(
        self, call: CallContext, code: int, ext: dict[str, str], body: bytes = b""
    ) -> RemotingCommand:
        return RemotingCommand.request(code, ext, body, language=_language(call))

    def _broker(self, name: str, requested: pb.Endpoints) -> pb.Broker:
        """A broker as routes name it: its name, at this access point."""
        return pb.Broker(name=name, id=MASTER_ID, endpoints=self.endpoints(requested))

    # -- QueryRoute -----------------------------------------------------------------------
    async def query_route(
        self, request: spb.QueryRouteRequest, call: CallContext
    ) -> spb.QueryRouteResponse:
        """Every broker's queues of the topic, every one reached at this access point."""
        validate_topic(request.topic)
        authorize(self.brokers.acl(), call.access_key, None, topic=request.topic.name)
        with brokers_failing():
            brokers = await self.brokers.queues(request.topic.name)
        if not brokers:
            raise ProxyError(pb.Code.TOPIC_NOT_FOUND, _NO_ROUTE.format(request.topic.name))
        queues = [
            queue
            for broker in brokers
            for queue in route_queues(
                broker, request.topic, self._broker(broker.broker_name, request.endpoints)
            )
        ]
        return spb.QueryRouteResponse(status=ok(), message_queues=queues)

    # -- Heartbeat ------------------------------------------------------------------------
    async def heartbeat(
        self, request: spb.HeartbeatRequest, call: CallContext
    ) -> spb.HeartbeatResponse:
        settings = self.clients.settings(call.client_id)
        if settings is None:
            raise ProxyError(
                pb.Code.UNRECOGNIZED_CLIENT_TYPE, "cannot find client settings for this client"
            )
        if settings.client_type == pb.ClientType.PRODUCER:
            answer = await self._register_producer(call, settings)
        elif settings.client_type in (pb.ClientType.PUSH_CONSUMER, pb.ClientType.SIMPLE_CONSUMER):
            validate_consumer_group(request.group)
            answer = await self._register_consumer(call, settings, request.group.name)
        else:
            raise ProxyError(
                pb.Code.UNRECOGNIZED_CLIENT_TYPE, pb.ClientType.Name(settings.client_type)
            )
        return spb.HeartbeatResponse(status=answer)

    async def _register_producer(self, call: CallContext, settings: pb.Settings) -> pb.Status:
        """HEART_BEAT naming each topic as a producer group (RocketMQ 5's rule)."""
        topics = [topic.name for topic in settings.publishing.topics]
        groups = [ProducerData(topic) for topic in topics]
        return await self._heartbeat(call, topics, HeartbeatData(call.client_id, groups, []))

    async def _register_consumer(
        self, call: CallContext, settings: pb.Settings, group: str
    ) -> pb.Status:
        subscriptions: list[SubscriptionData] = []
        for entry in settings.subscription.subscriptions:
            kind = "SQL92" if entry.expression.type == pb.FilterType.SQL else "TAG"
            try:
                subscriptions.append(
                    build_subscription_data(entry.topic.name, entry.expression.expression, kind)
                )
            except MQError:
                raise ProxyError(
                    pb.Code.ILLEGAL_FILTER_EXPRESSION, "expression format is not correct"
                ) from None
        active = settings.client_type == pb.ClientType.SIMPLE_CONSUMER
        consumer = ConsumerData(
            group,
            consume_type="CONSUME_ACTIVELY" if active else "CONSUME_PASSIVELY",
            subscription_data_set=subscriptions,
        )
        topics = [entry.topic.name for entry in settings.subscription.subscriptions]
        data = HeartbeatData(call.client_id, [], [consumer])
        return await self._heartbeat(call, topics, data)

    async def _heartbeat(
        self, call: CallContext, topics: Sequence[str], data: HeartbeatData
    ) -> pb.Status:
        """HEART_BEAT to every broker of the topics' routes; the first refusal is the
        answer."""
        request = self._command(call, RequestCode.HEART_BEAT, {}, data.encode())
        authorize(self.brokers.acl(), call.access_key, request)
        with brokers_failing():
            responses = await self.brokers.invoke_each(topics, self._channel(call), request)
        for response in responses:
            if response.code != ResponseCode.SUCCESS:
                return status_of_response(response)
        return ok()

    # -- SendMessage ----------------------------------------------------------------------
    async def send_message(
        self, request: spb.SendMessageRequest, call: CallContext
    ) -> spb.SendMessageResponse:
        if not request.messages:
            raise ProxyError(pb.Code.MESSAGE_CORRUPTED, "no message to send")
        topic = request.messages[0].topic
        validate_topic(topic)
        messages: list[OutgoingMessage] = []
        for message in request.messages:
            if message.topic != topic:
                raise ProxyError(pb.Code.MESSAGE_CORRUPTED, "topic in message is not same")
            messages.append(outgoing(message, call.remote_address))
        with brokers_failing():
            queues = await self.brokers.write_queues(topic.name)
        if not queues:
            raise ProxyError(pb.Code.FORBIDDEN, "no writable queue")
        group = messages[0].message_group if len(messages) == 1 else ""
        queue = queues[self.selector.select(len(queues), group)]
        command = self._send_command(call, messages, queue.queue_id)
        response = await self._request(call, queue.broker_name, command)
        entries = self._send_entries(messages, response, queue.broker_name)
        codes = {entry.status.code for entry in entries}
        answer = status(pb.Code.MULTIPLE_RESULTS if len(codes) > 1 else codes.pop())
        return spb.SendMessageResponse(status=answer, entries=entries)

    def _send_command(
        self, call: CallContext, messages: list[OutgoingMessage], queue_id: int
    ) -> RemotingCommand:
        first = messages[0]
        batch = len(messages) > 1
        header = SendMessageRequestHeader(
            producer_group=first.topic,
            topic=first.topic,
            default_topic=AUTO_CREATE_TOPIC_KEY_TOPIC,
            default_topic_queue_nums=_DEFAULT_TOPIC_QUEUE_NUMS,
            queue_id=queue_id,
            sys_flag=first.sys_flag,
            born_timestamp=first.born_timestamp,
            flag=0,
            properties=None if batch else encode_properties(first.properties).decode(),
            reconsume_times=0,
            batch=batch,
        ).to_v2()
        if batch:
            code = RequestCode.SEND_BATCH_MESSAGE
            body = encode_batch_body((0, m.body, m.properties) for m in messages)
        else:
            code, body = RequestCode.SEND_MESSAGE_V2, first.body
        return self._command(call, code, header.to_ext_fields(), body)

    def _send_entries(
        self, messages: list[OutgoingMessage], response: RemotingCommand, broker_name: str
    ) -> list[spb.SendResultEntry]:
        """One entry a message: its id and queue offset, or why it is not as durable as
        asked. A refused send raises: the call's status says why, with no entries."""
        code = response.code
        failed = _SEND_FAILURES.get(code)
        if failed is not None:
            failure = status(failed[0], f"send message failed, sendStatus={failed[1]}")
            return [spb.SendResultEntry(status=failure) for _ in messages]
        if code != ResponseCode.SUCCESS:
            refused = status_of_response(response)
            raise ProxyError(refused.code, refused.message)
        header = SendMessageResponseHeader.from_command(response)
        recall_handle = response.ext_fields.get("recallHandle") or ""
        entries = []
        for i, message in enumerate(messages):
            message_id = message.properties[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX]
            offset = header.queue_offset + i
            transaction_id = ""
            if message.sys_flag & SysFlag.TRANSACTION_PREPARED_TYPE:
                transaction_id = message_id  # the broker's transactionId: the unique key
                self._note_half_message(message, header, offset, broker_name)
            entries.append(
                spb.SendResultEntry(
                    status=ok(),
                    message_id=message_id,
                    transaction_id=transaction_id,
                    offset=offset,
                    recall_handle=recall_handle,
                )
            )
        return entries

    def _note_half_message(
        self,
        message: OutgoingMessage,
        header: SendMessageResponseHeader,
        offset: int,
        broker_name: str,
    ) -> None:
        try:
            commit_log_offset = decode_offset_msg_id(header.msg_id.split(",")[0])[2]
        except MQError as exc:
            log.warning("half message %s: no commit log offset in %r: %s", message, header, exc)
            return
        message_id = message.properties[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX]
        self.transactions.add(message.topic, message_id, offset, commit_log_offset, broker_name)

    # -- QueryAssignment ------------------------------------------------------------------
    async def query_assignment(
        self, request: spb.QueryAssignmentRequest, call: CallContext
    ) -> spb.QueryAssignmentResponse:
        """Each readable broker as one assignment (queue id -1): a 5.x consumer receives
        from the broker, which picks the queue (POP). A FIFO group gets an assignment a
        queue of each such broker instead, as RocketMQ 5 answers (its receives still pop
        from the whole broker the assignment names, in order)."""
        validate_topic(request.topic)
        validate_consumer_group(request.group)
        authorize(self.brokers.acl(), call.access_key, None, topic=request.topic.name)
        with brokers_failing():
            brokers = await self.brokers.queues(request.topic.name)
        if not brokers:
            raise ProxyError(pb.Code.TOPIC_NOT_FOUND, _NO_ROUTE.format(request.topic.name))
        with brokers_failing():
            group = await self.brokers.group_config(request.group.name)
        fifo = group is not None and group.consume_message_orderly
        assignments = [
            pb.Assignment(
                message_queue=pb.MessageQueue(
                    topic=request.topic,
                    id=queue_id,
                    permission=permission(broker.perm),
                    broker=self._broker(broker.broker_name, request.endpoints),
                )
            )
            for broker in brokers
            if broker.perm & PERM_READ and broker.read_queue_nums > 0
            for queue_id in (range(broker.read_queue_nums) if fifo else (-1,))
        ]
        if not assignments:
            return spb.QueryAssignmentResponse(
                status=status(pb.Code.FORBIDDEN, "no readable queue")
            )
        return spb.QueryAssignmentResponse(status=ok(), assignments=assignments)

    # -- EndTransaction -------------------------------------------------------------------
    async def end_transaction(
        self, request: spb.EndTransactionRequest, call: CallContext
    ) -> spb.EndTransactionResponse:
        """END_TRANSACTION for the half message noted at its send or check. Answered OK
        once handed to the broker, as RocketMQ 5's proxy sends it oneway."""
        validate_topic(request.topic)
        if not request.transaction_id.strip():
            raise ProxyError(pb.Code.INVALID_TRANSACTION_ID, "transaction id cannot be empty")
        group = request.topic.name
        data = self.transactions.take(group, request.transaction_id)
        if data is None:
            raise ProxyError(pb.Code.INTERNAL_SERVER_ERROR, "cannot found transaction data")
        header = EndTransactionRequestHeader(
            producer_group=group,
            tran_state_table_offset=data.tran_state_table_offset,
            commit_log_offset=data.commit_log_offset,
            commit_or_rollback=_RESOLUTIONS.get(request.resolution, SysFlag.TRANSACTION_NOT_TYPE),
            msg_id=request.message_id,
            from_transaction_check=request.source == pb.TransactionSource.SOURCE_SERVER_CHECK,
            transaction_id=request.transaction_id,
        )
        command = self._command(call, RequestCode.END_TRANSACTION, header.to_ext_fields())
        response = await self._request(call, data.broker_name, command)
        if response.code != ResponseCode.SUCCESS:
            log.warning(
                "END_TRANSACTION of %s refused: %s %s",
                request.transaction_id,
                response.code,
                response.remark,
            )
        return spb.EndTransactionResponse(status=ok())

    # -- RecallMessage --------------------------------------------------------------------
    async def recall_message(
        self, request: spb.RecallMessageRequest, call: CallContext
    ) -> spb.RecallMessageResponse:
        """RECALL_MESSAGE at the broker the handle names (the timer message is parked
        there): the recalled message's id. A handle that does not parse is
        INTERNAL_SERVER_ERROR, as RocketMQ 5's proxy answers it; a broker's refusal keeps
        its remark."""
        validate_topic(request.topic)
        try:
            broker_name = recall_handle_broker(request.recall_handle)
        except MQError as exc:
            raise ProxyError(pb.Code.INTERNAL_SERVER_ERROR, str(exc)) from None
        header = RecallMessageRequestHeader(
            topic=request.topic.name, recall_handle=request.recall_handle
        )
        command = self._command(call, RequestCode.RECALL_MESSAGE, header.to_ext_fields())
        response = await self._request(call, broker_name, command)
        if response.code != ResponseCode.SUCCESS:
            refused = status_of_response(response)
            raise ProxyError(refused.code, refused.message)
        message_id = RecallMessageResponseHeader.from_command(response).msg_id
        return spb.RecallMessageResponse(status=ok(), message_id=message_id)

    # -- NotifyClientTermination ----------------------------------------------------------
    async def notify_client_termination(
        self, request: spb.NotifyClientTerminationRequest, call: CallContext
    ) -> spb.NotifyClientTerminationResponse:
        """The client leaves: the brokers forget it in every group (its channel closes)."""
        settings = self.clients.settings(call.client_id)
        if settings is None:
            raise ProxyError(
                pb.Code.UNRECOGNIZED_CLIENT_TYPE, "cannot find client settings for this client"
            )
        if settings.client_type in (pb.ClientType.PUSH_CONSUMER, pb.ClientType.SIMPLE_CONSUMER):
            validate_consumer_group(request.group)
        elif settings.client_type != pb.ClientType.PRODUCER:
            raise ProxyError(
                pb.Code.UNRECOGNIZED_CLIENT_TYPE, pb.ClientType.Name(settings.client_type)
            )
        self.clients.remove(call.client_id)
        return spb.NotifyClientTerminationResponse(status=ok())

    # -- Telemetry ------------------------------------------------------------------------
    async def telemetry(
        self, requests: AsyncIterator[spb.TelemetryCommand], call: CallContext
    ) -> AsyncIterator[spb.TelemetryCommand]:
        """The client's commands in, the server's out: the answer to its settings, then
        whatever the broker asks of it (transaction checks). Ends when the client ends its
        side or another stream of the client takes over; raises ProxyError to abort."""
        channel = self.clients.channel(call.client_id, call.remote_address, keep=True)
        stream = channel.attach_stream()
        failure: list[ProxyError] = []
        reader = asyncio.create_task(self._read_telemetry(requests, call, channel, stream, failure))
        try:
            while True:
                command = await stream.get()
                if command is None:
                    break
                yield command
        finally:
            reader.cancel()
            channel.detach_stream(stream)
        if failure:
            raise failure[0]

    async def _read_telemetry(
        self,
        requests: AsyncIterator[spb.TelemetryCommand],
        call: CallContext,
        channel: GrpcClientChannel,
        stream: asyncio.Queue[spb.TelemetryCommand | None],
        failure: list[ProxyError],
    ) -> None:
        try:
            async for command in requests:
                kind = command.WhichOneof("command")
                if kind == "settings":
                    stream.put_nowait(await self._client_settings(command.settings, call))
                elif kind == "thread_stack_trace":
                    trace = command.thread_stack_trace
                    channel.answer(trace.nonce, command.status, trace.thread_stack_trace)
                elif kind == "verify_message_result":
                    channel.answer(command.verify_message_result.nonce, command.status)
                elif kind == "verify_message_command":  # the Node.js SDK's way to answer
                    channel.answer(command.verify_message_command.nonce, command.status)
        except ProxyError as exc:
            failure.append(exc)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the stream broke: end it
            log.info("telemetry stream of %s ended: %s", call.client_id, exc)
        stream.put_nowait(None)

    async def _client_settings(
        self, settings: pb.Settings, call: CallContext
    ) -> spb.TelemetryCommand:
        """Register the client as what its settings say, keep them, answer the merged ones."""
        group_config: SubscriptionGroupConfig | None = None
        try:
            if settings.HasField("publishing"):
                for topic in settings.publishing.topics:
                    validate_topic(topic)
                answer = await self._register_producer(call, settings)
            elif settings.HasField("subscription"):
                validate_consumer_group(settings.subscription.group)
                group = settings.subscription.group.name
                answer = await self._register_consumer(call, settings, group)
                with brokers_failing():
                    group_config = await self.brokers.group_config(group)
            else:
                raise ProxyError(
                    pb.Code.BAD_REQUEST, "there is no publishing or subscription data in settings"
                )
        except ProxyError as exc:
            raise ProxyError(exc.code, f"process client telemetryCommand failed. {exc}") from None
        if answer.code != pb.Code.OK:
            log.warning("settings of %s: the broker refused: %s", call.client_id, answer.message)
        self.clients.update_settings(call.client_id, settings)
        merged = merge_settings(settings, group_config)
        return spb.TelemetryCommand(status=ok(), settings=merged)

    # -- not served (yet) -----------------------------------------------------------------
    def not_implemented(self, name: str) -> pb.Status:
        """What a call the broker cannot serve answers: NOT_IMPLEMENTED, as RocketMQ 5's
        proxy maps a broker's REQUEST_CODE_NOT_SUPPORTED."""
        return status(pb.Code.NOT_IMPLEMENTED, f"{name} is not supported by this broker")

    def close(self) -> None:
        """Forget every client (their channels close, so the broker forgets them too)
        and the handles renewed for them."""
        self.consumer.close()
        self.clients.close()

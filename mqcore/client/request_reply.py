"""Request/reply over the broker, as in RocketMQ 4.6+ (``DefaultMQProducer.request``).

The requester sends an ordinary message carrying ``CORRELATION_ID`` (a fresh UUID),
``REPLY_TO_CLIENT`` (its client id) and ``TTL`` (the timeout in ms), and waits. The broker
adds ``CLUSTER`` on store. A consumer of the topic answers with
:func:`create_reply_message` (``<cluster>_REPLY_TOPIC``, ``MSG_TYPE=reply`` and the
request's correlation properties) and sends it with any producer: a reply goes out as
SEND_REPLY_MESSAGE_V2, and the broker pushes it to the requester's connection
(PUSH_REPLY_MESSAGE_TO_CLIENT) at once instead of waiting for a pull.

Here: the per-client table of waiting requests (RocketMQ's ``RequestFutureHolder``, one
per :class:`~mqcore.client.instance.ClientInstance` since the reply arrives over that
instance's connections) and the handler of the pushed reply.
:meth:`Producer.request <mqcore.client.producer.Producer.request>` waits in the table;
:meth:`MQClientAPI.send_message <mqcore.client.api.MQClientAPI.send_message>` sends a
reply (``reply=True``).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import TYPE_CHECKING

from mqcore.errors import CorruptRecordError, MQClientError, MQTimeoutError
from mqcore.message import Message, MessageExt, SysFlag, decode_properties
from mqcore.message.const import (
    PROPERTY_CLUSTER,
    PROPERTY_CORRELATION_ID,
    PROPERTY_MESSAGE_REPLY_TO_CLIENT,
    PROPERTY_MESSAGE_TTL,
    PROPERTY_MESSAGE_TYPE,
    PROPERTY_REPLY_MESSAGE_ARRIVE_TIME,
    REPLY_TOPIC_POSTFIX,
)
from mqcore.message.model import HostAddr
from mqcore.message.record import inflate_body
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import HeaderError
from mqcore.protocol.headers.reply import ReplyMessageRequestHeader

if TYPE_CHECKING:
    from mqcore.remoting import Channel, RequestDispatcher

__all__ = [
    "REPLY_MESSAGE_FLAG",
    "ReplyMessageError",
    "RequestFutureTable",
    "RequestTimeoutError",
    "create_reply_message",
    "is_reply_message",
    "prepare_request",
    "register_reply_handler",
    "reply_topic",
]

log = logging.getLogger("mq.client.reply")

REPLY_MESSAGE_FLAG = "reply"
"""``MSG_TYPE`` of a reply (4.9.8's ``MixAll.REPLY_MESSAGE_FLAG``)."""


class RequestTimeoutError(MQTimeoutError):
    """The request was sent but no reply came within the timeout."""


class ReplyMessageError(MQClientError, ValueError):
    """The message cannot be answered: it is not a request (no ``CLUSTER``)."""


def reply_topic(cluster: str) -> str:
    """``<cluster>_REPLY_TOPIC``, which every broker of the cluster has from its start."""
    return f"{cluster}_{REPLY_TOPIC_POSTFIX}"


def is_reply_message(msg: Message) -> bool:
    return msg.properties.get(PROPERTY_MESSAGE_TYPE) == REPLY_MESSAGE_FLAG


def prepare_request(msg: Message, client_id: str, timeout: float) -> str:
    """Mark ``msg`` as a request from ``client_id``; returns its correlation id."""
    correlation_id = str(uuid.uuid4())
    msg.properties[PROPERTY_CORRELATION_ID] = correlation_id
    msg.properties[PROPERTY_MESSAGE_REPLY_TO_CLIENT] = client_id
    msg.properties[PROPERTY_MESSAGE_TTL] = str(int(timeout * 1000))
    return correlation_id


def create_reply_message(request: Message, body: bytes | str) -> Message:
    """The reply to a received request (4.9.8's ``MessageUtil.createReplyMessage``).

    Raises :class:`ReplyMessageError` when ``request`` has no ``CLUSTER`` property, i.e.
    did not come through a broker as a request."""
    cluster = request.properties.get(PROPERTY_CLUSTER)
    if not cluster:
        raise ReplyMessageError(
            "create reply message fail, requestMessage error, "
            f"property[{PROPERTY_CLUSTER}] is null."
        )
    reply = Message(reply_topic(cluster), body.encode() if isinstance(body, str) else body)
    reply.properties[PROPERTY_MESSAGE_TYPE] = REPLY_MESSAGE_FLAG
    for name in (PROPERTY_CORRELATION_ID, PROPERTY_MESSAGE_REPLY_TO_CLIENT, PROPERTY_MESSAGE_TTL):
        value = request.properties.get(name)
        if value is not None:
            reply.properties[name] = value
    return reply


class RequestFutureTable:
    """Correlation id -> the future its requester awaits."""

    def __init__(self) -> None:
        self._futures: dict[str, asyncio.Future[MessageExt]] = {}

    def __len__(self) -> int:
        return len(self._futures)

    def register(self, correlation_id: str) -> asyncio.Future[MessageExt]:
        future: asyncio.Future[MessageExt] = asyncio.get_running_loop().create_future()
        self._futures[correlation_id] = future
        return future

    def remove(self, correlation_id: str) -> None:
        self._futures.pop(correlation_id, None)

    def complete(self, reply: MessageExt) -> bool:
        """Hand ``reply`` to its requester; False when nobody waits for it (any more)."""
        future = self._futures.pop(reply.properties.get(PROPERTY_CORRELATION_ID, ""), None)
        if future is None or future.done():
            return False
        future.set_result(reply)
        return True


def register_reply_handler(dispatcher: RequestDispatcher, table: RequestFutureTable) -> None:
    """Serve PUSH_REPLY_MESSAGE_TO_CLIENT (4.9.8's ``receiveReplyMessage``)."""

    def on_push_reply(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        received = int(time.time() * 1000)
        try:
            header = ReplyMessageRequestHeader.from_command(request)
        except HeaderError as exc:
            return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR, str(exc))
        try:
            reply = decode_reply(header, bytes(request.body), received)
        except Exception:
            log.exception("unknown error reading a reply from %s", channel.remote_address)
            return RemotingCommand.response_to(
                request, ResponseCode.SYSTEM_ERROR, "process reply message fail"
            )
        if not table.complete(reply):
            log.warning(
                "receive reply message, but not matched any request, CorrelationId: %s ,"
                " reply from host: %s",
                reply.properties.get(PROPERTY_CORRELATION_ID),
                header.born_host,
            )
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS)

    dispatcher.register(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, on_push_reply)


def decode_reply(header: ReplyMessageRequestHeader, body: bytes, received: int) -> MessageExt:
    """The pushed reply as a message (body inflated; ``ARRIVE_TIME`` = ``received``)."""
    if header.sys_flag & SysFlag.COMPRESSED_FLAG:
        try:
            body = inflate_body(body, header.sys_flag)
        except CorruptRecordError as exc:
            log.warning("reply body does not inflate, kept as sent: %s", exc)
    properties = decode_properties((header.properties or "").encode("utf-8"))
    properties[PROPERTY_REPLY_MESSAGE_ARRIVE_TIME] = str(received)
    return MessageExt(
        topic=header.topic,
        body=body,
        flag=header.flag,
        properties=properties,
        queue_id=header.queue_id,
        born_timestamp=header.born_timestamp,
        born_host=_host(header.born_host),
        store_timestamp=header.store_timestamp,
        store_host=_host(header.store_host),
        reconsume_times=header.reconsume_times or 0,
    )


def _host(text: str) -> HostAddr:
    ip, _, port = text.rpartition(":")
    return (ip.strip("[]") or "0.0.0.0", int(port) if port.isdigit() else 0)

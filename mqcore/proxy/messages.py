"""Messages between the two shapes: a 5.x ``apache.rocketmq.v2.Message`` and the properties,
flags and body a 4.x broker stores (RocketMQ 5's ``SendMessageActivity`` and
``GrpcConverter``).

A 5.x message carries as fields what a 4.x message carries as properties: its tag, keys,
unique id, message group (``__SHARDINGKEY``), delivery time (``TIMER_DELIVER_MS``, honoured
by the timer store), transaction flag and born host and time. The producer group of a
gRPC producer is its topic, as in RocketMQ 5 (so a transaction check-back finds the
producers of the topic).
"""

from __future__ import annotations

import hashlib
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from mqcore.message.const import (
    PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_SHARDING_KEY,
    PROPERTY_TAGS,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    SysFlag,
)
from mqcore.message.model import MessageExt
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.status import ProxyError
from mqcore.proxy.validation import (
    MAX_MESSAGE_SIZE,
    MAX_USER_PROPERTY_SIZE,
    SYSTEM_PROPERTIES_5X,
    validate_message_group,
    validate_message_key,
    validate_tag,
    validate_user_properties,
)

__all__ = [
    "MAX_DELAY_MS",
    "MAX_TRANSACTION_RECOVERY_SECONDS",
    "PROPERTY_BORN_HOST",
    "PROPERTY_BORN_TIMESTAMP",
    "PROPERTY_TIMER_DELIVER_MS",
    "PROPERTY_TRACE_CONTEXT",
    "OutgoingMessage",
    "message_type_of",
    "outgoing",
    "to_proto",
]

PROPERTY_TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
"""When a delayed 5.x message is due (ms since the epoch); the timer store honours it."""
PROPERTY_TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
PROPERTY_TRACE_CONTEXT = "TRACE_CONTEXT"
PROPERTY_BORN_HOST = "__BORNHOST"
PROPERTY_BORN_TIMESTAMP = "BORN_TIMESTAMP"
PROPERTY_POP_CK = "POP_CK"
PROPERTY_DLQ_ORIGIN_TOPIC = "DLQ_ORIGIN_TOPIC"
PROPERTY_DLQ_ORIGIN_MESSAGE_ID = "DLQ_ORIGIN_MESSAGE_ID"

MAX_DELAY_MS = 24 * 3600 * 1000
"""``maxDelayTimeMills``: a delivery time at most a day ahead."""
MAX_TRANSACTION_RECOVERY_SECONDS = 3600
"""``maxTransactionRecoverySecond``: the longest orphaned-transaction recovery time."""
_KEY_SEPARATOR = " "


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    """One 5.x message as a 4.x send carries it."""

    topic: str
    body: bytes
    properties: dict[str, str]
    sys_flag: int
    born_timestamp: int
    message_group: str


def _millis(ts: object) -> int:
    seconds: int = getattr(ts, "seconds", 0)
    nanos: int = getattr(ts, "nanos", 0)
    return seconds * 1000 + nanos // 1_000_000


def _body(message: pb.Message) -> tuple[bytes, int]:
    """The body to store and its compressed flag. A GZIP body is inflated (at most the
    largest body): a 4.x record's compressed flag means zlib, which 4.x consumers inflate."""
    body = message.body
    if not body:
        raise ProxyError(pb.Code.MESSAGE_BODY_EMPTY, "message body cannot be empty")
    if len(body) > MAX_MESSAGE_SIZE:
        raise ProxyError(
            pb.Code.MESSAGE_BODY_TOO_LARGE, f"message body cannot exceed the max {MAX_MESSAGE_SIZE}"
        )
    if message.system_properties.body_encoding != pb.Encoding.GZIP:
        return body, 0
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        plain = inflater.decompress(body, MAX_MESSAGE_SIZE + 1)
    except zlib.error as exc:
        raise ProxyError(pb.Code.MESSAGE_CORRUPTED, f"body is not gzip: {exc}") from None
    if len(plain) > MAX_MESSAGE_SIZE or inflater.unconsumed_tail:
        raise ProxyError(
            pb.Code.MESSAGE_BODY_TOO_LARGE, f"message body cannot exceed the max {MAX_MESSAGE_SIZE}"
        )
    if not inflater.eof:
        raise ProxyError(pb.Code.MESSAGE_CORRUPTED, "gzip body is truncated")
    return plain, 0


def outgoing(
    message: pb.Message, remote_address: str, now_ms: int | None = None
) -> OutgoingMessage:
    """Check one message and build what a SEND_MESSAGE_V2 of it carries; raises
    :class:`ProxyError` with the proxy's code for what it refuses."""
    sp = message.system_properties
    topic = message.topic.name
    body, sys_flag = _body(message)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    user = dict(message.user_properties)
    size = validate_user_properties(user)
    props: dict[str, str] = dict(user)
    validate_tag(sp.tag)
    if sp.tag:
        props[PROPERTY_TAGS] = sp.tag
    size += len(sp.tag.encode())
    for key in sp.keys:
        validate_message_key(key)
        size += len(key.encode())
    if sp.keys:
        props[PROPERTY_KEYS] = _KEY_SEPARATOR.join(sp.keys)
    if size > MAX_USER_PROPERTY_SIZE:
        raise ProxyError(
            pb.Code.MESSAGE_PROPERTIES_TOO_LARGE,
            f"the total size of user property is too large, max is {MAX_USER_PROPERTY_SIZE}",
        )
    if not sp.message_id.strip():
        raise ProxyError(pb.Code.ILLEGAL_MESSAGE_ID, "message id cannot be empty")
    props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = sp.message_id
    if sp.message_type == pb.MessageType.TRANSACTION:
        sys_flag |= SysFlag.TRANSACTION_PREPARED_TYPE
        props[PROPERTY_TRANSACTION_PREPARED] = "true"
        if sp.HasField("orphaned_transaction_recovery_duration"):
            seconds = sp.orphaned_transaction_recovery_duration.seconds
            if seconds > MAX_TRANSACTION_RECOVERY_SECONDS:
                raise ProxyError(
                    pb.Code.BAD_REQUEST,
                    "the max transaction recovery time of message is too large, max is "
                    f"{MAX_TRANSACTION_RECOVERY_SECONDS}",
                )
            props[PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS] = str(seconds)
    if sp.HasField("delivery_timestamp"):
        deliver_ms = _millis(sp.delivery_timestamp)
        if deliver_ms - now > MAX_DELAY_MS:
            raise ProxyError(
                pb.Code.ILLEGAL_DELIVERY_TIME,
                f"the max delay time of message is too large, max is {MAX_DELAY_MS}",
            )
        props[PROPERTY_TIMER_DELIVER_MS] = str(deliver_ms)
    props[PROPERTY_RECONSUME_TIME] = str(sp.delivery_attempt)
    props[PROPERTY_PRODUCER_GROUP] = topic
    if sp.message_group:
        validate_message_group(sp.message_group)
        props[PROPERTY_SHARDING_KEY] = sp.message_group
    if sp.trace_context:
        props[PROPERTY_TRACE_CONTEXT] = sp.trace_context
    born_host = sp.born_host if sp.born_host.strip() else remote_address
    if born_host.strip():
        props[PROPERTY_BORN_HOST] = born_host
    born = now
    if sp.HasField("born_timestamp"):
        born = _millis(sp.born_timestamp)
        props[PROPERTY_BORN_TIMESTAMP] = str(born)
    return OutgoingMessage(topic, body, props, sys_flag, born, sp.message_group)


def message_type_of(properties: Mapping[str, str]) -> pb.MessageType:
    """What a stored message is, by its properties (``TopicMessageType``'s rule)."""
    if properties.get(PROPERTY_TRANSACTION_PREPARED) == "true":
        return pb.MessageType.TRANSACTION
    if (
        PROPERTY_DELAY_TIME_LEVEL in properties
        or PROPERTY_TIMER_DELIVER_MS in properties
        or PROPERTY_TIMER_DELAY_SEC in properties
    ):
        return pb.MessageType.DELAY
    if PROPERTY_SHARDING_KEY in properties:
        return pb.MessageType.FIFO
    return pb.MessageType.NORMAL


def _host(addr: tuple[str, int]) -> str:
    host, port = addr
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def to_proto(msg: MessageExt) -> pb.Message:
    """A stored message as a 5.x client receives it (a transaction check, a delivery)."""
    props = msg.properties
    sp = pb.SystemProperties(
        message_id=props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or msg.msg_id,
        body_digest=pb.Digest(
            type=pb.DigestType.MD5, checksum=hashlib.md5(msg.body).hexdigest().upper()
        ),
        body_encoding=(
            pb.Encoding.GZIP if msg.sys_flag & SysFlag.COMPRESSED_FLAG else pb.Encoding.IDENTITY
        ),
        message_type=message_type_of(props),
        born_host=props.get(PROPERTY_BORN_HOST) or _host(msg.born_host),
        store_host=_host(msg.store_host),
        queue_id=msg.queue_id,
        queue_offset=msg.queue_offset,
        delivery_attempt=msg.reconsume_times + 1,
    )
    sp.born_timestamp.FromMilliseconds(msg.born_timestamp)
    sp.store_timestamp.FromMilliseconds(msg.store_timestamp)
    if PROPERTY_TAGS in props:
        sp.tag = props[PROPERTY_TAGS]
    if PROPERTY_KEYS in props:
        sp.keys.extend(props[PROPERTY_KEYS].split(_KEY_SEPARATOR))
    if PROPERTY_TIMER_DELIVER_MS in props and props[PROPERTY_TIMER_DELIVER_MS].isdigit():
        sp.delivery_timestamp.FromMilliseconds(int(props[PROPERTY_TIMER_DELIVER_MS]))
    if PROPERTY_SHARDING_KEY in props:
        sp.message_group = props[PROPERTY_SHARDING_KEY]
    if PROPERTY_POP_CK in props:
        sp.receipt_handle = props[PROPERTY_POP_CK]
    if PROPERTY_TRACE_CONTEXT in props:
        sp.trace_context = props[PROPERTY_TRACE_CONTEXT]
    origin_topic = props.get(PROPERTY_DLQ_ORIGIN_TOPIC)
    origin_id = props.get(PROPERTY_DLQ_ORIGIN_MESSAGE_ID)
    if origin_topic is not None and origin_id is not None:
        sp.dead_letter_queue.topic = origin_topic
        sp.dead_letter_queue.message_id = origin_id
    user = {k: v for k, v in props.items() if k not in SYSTEM_PROPERTIES_5X}
    return pb.Message(
        topic=pb.Resource(name=msg.topic),
        user_properties=user,
        system_properties=sp,
        body=msg.body,
    )

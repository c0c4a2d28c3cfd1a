"""The checks RocketMQ 5's proxy makes before a call reaches the broker (``GrpcValidator``
and the send activity's message checks), each refusing with the code the SDKs expect.

Limits are the proxy's defaults (``ProxyConfig``): they bound what one gRPC message may
carry before any of it is turned into a remoting request.
"""

from __future__ import annotations

from collections.abc import Mapping

from mqcore.message.const import STRING_HASH_SET
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.status import ProxyError
from mqcore.store.metadata.topic import TopicNameError, is_system_topic, validate_topic_name

__all__ = [
    "MAX_MESSAGE_GROUP_SIZE",
    "MAX_MESSAGE_SIZE",
    "MAX_USER_PROPERTY_SIZE",
    "SYSTEM_PROPERTIES_5X",
    "USER_PROPERTY_MAX_NUM",
    "validate_consumer_group",
    "validate_message_group",
    "validate_message_key",
    "validate_tag",
    "validate_topic",
    "validate_user_properties",
]

MAX_MESSAGE_SIZE = 4 * 1024 * 1024
"""``maxMessageSize``: the largest body, also told to producers in their settings."""
MAX_USER_PROPERTY_SIZE = 16 * 1024
"""Bytes of user properties, tag and keys together."""
USER_PROPERTY_MAX_NUM = 128
MAX_MESSAGE_GROUP_SIZE = 64
"""A message group must be shorter than this many UTF-8 bytes."""
_GROUP_MAX_LENGTH = 255
_SYS_GROUP_PREFIX = "CID_RMQ_SYS_"

SYSTEM_PROPERTIES_5X = STRING_HASH_SET | {
    "EXTEND_UNIQ_INFO",
    "POP_CK",
    "POP_CK_OFFSET",
    "1ST_POP_TIME",
    "DUP_INFO",
    "INNER_MULTI_QUEUE_OFFSET",
    "TIMER_DELAY_MS",
    "TIMER_DELAY_SEC",
    "TIMER_DELIVER_MS",
    "TIMER_ENQUEUE_MS",
    "TIMER_DEQUEUE_MS",
    "TIMER_ROLL_TIMES",
    "TIMER_OUT_MS",
    "TIMER_DEL_UNIQKEY",
    "TIMER_DELAY_LEVEL",
    "__BORNHOST",
    "BORN_TIMESTAMP",
    "DLQ_ORIGIN_TOPIC",
    "DLQ_ORIGIN_MESSAGE_ID",
    "__CRC32#",
}
"""Names a user property may not take: 4.x's system names and those 5.x added."""


def _has_control_character(text: str) -> bool:
    """Java's ``Character.isISOControl``: U+0000-U+001F and U+007F-U+009F."""
    return any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text)


def validate_topic(topic: pb.Resource) -> None:
    """A name RocketMQ accepts, and not a system topic (ILLEGAL_TOPIC)."""
    try:
        validate_topic_name(topic.name)
    except TopicNameError as exc:
        raise ProxyError(pb.Code.ILLEGAL_TOPIC, str(exc)) from None
    if is_system_topic(topic.name):
        raise ProxyError(pb.Code.ILLEGAL_TOPIC, "cannot access system topic")


def validate_consumer_group(group: pb.Resource) -> None:
    """A group name RocketMQ accepts, and not a system group (ILLEGAL_CONSUMER_GROUP)."""
    name = group.name
    if not name or not name.strip():
        raise ProxyError(pb.Code.ILLEGAL_CONSUMER_GROUP, "the specified group is blank")
    if any(not (c.isascii() and (c.isalnum() or c in "%|_-")) for c in name):
        raise ProxyError(
            pb.Code.ILLEGAL_CONSUMER_GROUP,
            f"the specified group[{name}] contains illegal characters, "
            "allowing only ^[%|a-zA-Z0-9_-]+$",
        )
    if len(name) > _GROUP_MAX_LENGTH:
        raise ProxyError(
            pb.Code.ILLEGAL_CONSUMER_GROUP,
            f"the specified group is longer than group max length {_GROUP_MAX_LENGTH}.",
        )
    if name.startswith(_SYS_GROUP_PREFIX):
        raise ProxyError(pb.Code.ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")


def validate_tag(tag: str) -> None:
    if not tag:
        return
    if not tag.strip():
        raise ProxyError(
            pb.Code.ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace"
        )
    if "|" in tag:
        raise ProxyError(pb.Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
    if _has_control_character(tag):
        raise ProxyError(pb.Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")


def validate_message_key(key: str) -> None:
    if not key:
        return
    if not key.strip():
        raise ProxyError(
            pb.Code.ILLEGAL_MESSAGE_KEY, "key cannot be the char sequence of whitespace"
        )
    if _has_control_character(key):
        raise ProxyError(pb.Code.ILLEGAL_MESSAGE_KEY, "key cannot contain control character")


def validate_message_group(group: str) -> None:
    if not group:
        return
    if not group.strip():
        raise ProxyError(
            pb.Code.ILLEGAL_MESSAGE_GROUP, "message group cannot be the char sequence of whitespace"
        )
    if len(group.encode()) >= MAX_MESSAGE_GROUP_SIZE:
        raise ProxyError(
            pb.Code.ILLEGAL_MESSAGE_GROUP,
            f"message group exceed the max size {MAX_MESSAGE_GROUP_SIZE}",
        )
    if _has_control_character(group):
        raise ProxyError(
            pb.Code.ILLEGAL_MESSAGE_GROUP, "message group cannot contain control character"
        )


def validate_user_properties(properties: Mapping[str, str]) -> int:
    """Count, names and characters of user properties; their size in UTF-8 bytes."""
    if len(properties) > USER_PROPERTY_MAX_NUM:
        raise ProxyError(
            pb.Code.MESSAGE_PROPERTIES_TOO_LARGE,
            f"too many user properties, max is {USER_PROPERTY_MAX_NUM}",
        )
    size = 0
    for key, value in properties.items():
        if key in SYSTEM_PROPERTIES_5X:
            raise ProxyError(
                pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property is used by system: {key}"
            )
        if _has_control_character(key):
            raise ProxyError(
                pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
                "the key of property cannot contain control character",
            )
        if _has_control_character(value):
            raise ProxyError(
                pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
                "the value of property cannot contain control character",
            )
        size += len(key.encode()) + len(value.encode())
    return size

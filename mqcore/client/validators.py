"""Client-side name and message checks (RocketMQ's ``Validators``), shared by the
producer, the consumers and the admin, so none of them imports another for them."""

from __future__ import annotations

import re

from mqcore.client.errors import InvalidGroupError, InvalidMessageError
from mqcore.message import Message

__all__ = [
    "GROUP_MAX_LENGTH",
    "MAX_MESSAGE_SIZE",
    "TOPIC_MAX_LENGTH",
    "validate_group",
    "validate_message",
    "validate_topic",
]

MAX_MESSAGE_SIZE = 4 * 1024 * 1024
"""Largest body (and batch) a 4.x broker accepts by default (``maxMessageSize``)."""
TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 255
_VALID_NAME = re.compile(r"^[%|a-zA-Z0-9_-]+$")
_NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)


def validate_topic(topic: str) -> None:
    """RocketMQ's client-side topic rules (``Validators.checkTopic``)."""
    if not topic or not topic.strip():
        raise InvalidMessageError("the topic is blank")
    if not _VALID_NAME.fullmatch(topic):
        raise InvalidMessageError(
            f"topic {topic!r} contains illegal characters; allowed: letters, digits, % | _ -"
        )
    if len(topic) > TOPIC_MAX_LENGTH:
        raise InvalidMessageError(f"topic is longer than {TOPIC_MAX_LENGTH} characters")
    if topic in _NOT_ALLOWED_SEND_TOPICS:
        raise InvalidMessageError(f"sending to system topic {topic} is not allowed")


def validate_group(group: str) -> None:
    """RocketMQ's client-side group rules (``Validators.checkGroup``): not blank, only
    letters, digits and ``% | _ -``, at most 255 characters. Raises InvalidGroupError."""
    if not group or not group.strip():
        raise InvalidGroupError("the group name is blank")
    if not _VALID_NAME.fullmatch(group):
        raise InvalidGroupError(
            f"group {group!r} contains illegal characters; allowed: letters, digits, % | _ -"
        )
    if len(group) > GROUP_MAX_LENGTH:
        raise InvalidGroupError(f"group name is longer than {GROUP_MAX_LENGTH} characters")


def validate_message(msg: Message, max_size: int = MAX_MESSAGE_SIZE) -> None:
    validate_topic(msg.topic)
    if not msg.body:
        raise InvalidMessageError(f"message to {msg.topic} has an empty body")
    if len(msg.body) > max_size:
        raise InvalidMessageError(
            f"message body of {len(msg.body)} bytes is over the maximum of {max_size}"
        )

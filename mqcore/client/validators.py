"""Client-side name and message checks (RocketMQ's ``Validators``), shared by the
producer, the consumers and the admin, so none of them imports another for them."""

from __future__ import annotations

import re

from mqcore.client.errors import InvalidGroupError, InvalidMessageError
from mqcore.errors import MQClientError
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
    _check_name(topic, "topic", "topic", TOPIC_MAX_LENGTH, InvalidMessageError)
    if topic in _NOT_ALLOWED_SEND_TOPICS:
        raise InvalidMessageError(f"sending to system topic {topic} is not allowed")


def validate_group(group: str) -> None:
    """RocketMQ's client-side group rules (``Validators.checkGroup``): not blank, only
    letters, digits and ``% | _ -``, at most 255 characters. Raises InvalidGroupError."""
    _check_name(group, "group", "group name", GROUP_MAX_LENGTH, InvalidGroupError)


def _check_name(
    name: str, kind: str, label: str, max_length: int, error: type[MQClientError]
) -> None:
    """The rule topics and groups share: not blank, only ``[%|a-zA-Z0-9_-]``, not too long."""
    if not name or not name.strip():
        raise error(f"the {label} is blank")
    if not _VALID_NAME.fullmatch(name):
        raise error(
            f"{kind} {name!r} contains illegal characters; allowed: letters, digits, % | _ -"
        )
    if len(name) > max_length:
        raise error(f"{label} is longer than {max_length} characters")


def validate_message(msg: Message, max_size: int = MAX_MESSAGE_SIZE) -> None:
    validate_topic(msg.topic)
    if not msg.body:
        raise InvalidMessageError(f"message to {msg.topic} has an empty body")
    if len(msg.body) > max_size:
        raise InvalidMessageError(
            f"message body of {len(msg.body)} bytes is over the maximum of {max_size}"
        )

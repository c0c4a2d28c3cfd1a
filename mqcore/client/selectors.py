"""Queue selectors for ordered sends (RocketMQ's ``MessageQueueSelector`` and the
stock ``SelectMessageQueueBy*``), apart from the producer so that tools and the
blocking facade can name them without importing the send path."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

from mqcore.common.javahash import java_string_hash
from mqcore.message import Message
from mqcore.protocol.bodies import MessageQueue

__all__ = ["MessageQueueSelector", "select_by_hash", "select_by_random", "select_fixed"]

MessageQueueSelector: TypeAlias = Callable[[Sequence[MessageQueue], Message, Any], MessageQueue]
"""``(queues, message, arg) -> queue``: RocketMQ's ``MessageQueueSelector``."""


def select_by_hash(queues: Sequence[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
    """Same ``arg`` (an order id), same queue: per-key order (``SelectMessageQueueByHash``;
    strings hash as Java's ``String.hashCode`` so Java producers agree)."""
    h = java_string_hash(arg) if isinstance(arg, str) else hash(arg)
    return queues[abs(h) % len(queues)]


def select_fixed(index: int = 0) -> MessageQueueSelector:
    """Always queue ``index``: one queue, hence global order."""

    def select(queues: Sequence[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
        return queues[index % len(queues)]

    return select


def select_by_random(queues: Sequence[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
    return random.choice(list(queues))

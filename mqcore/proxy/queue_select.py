"""Which queue a gRPC send goes to: the access point chooses, not the SDK.

RocketMQ 5's proxy ignores the queue a 5.x producer names. A message with a message group
(a FIFO message) goes to the write queue its group hashes to, so one group's messages stay
in one queue in order: Guava's ``Hashing.consistentHash`` of the group's
``String.hashCode`` over the number of write queues. Other messages go round robin.
"""

from __future__ import annotations

from mqcore.common.javahash import java_string_hash

__all__ = ["QueueSelector", "consistent_hash"]

_MASK64 = (1 << 64) - 1
_LCG_MULTIPLIER = 2862933555777941757
"""The 64-bit linear congruential generator Guava's consistent hash walks with."""


def consistent_hash(value: int, buckets: int) -> int:
    """Guava's ``Hashing.consistentHash(long, int)``: a bucket in ``[0, buckets)`` that
    moves for only ``1/buckets`` of the inputs when a bucket is added (Lamping and Veach's
    jump hash, with Guava's generator, so every value lands where a RocketMQ 5 proxy puts it).
    """
    if buckets <= 0:
        raise ValueError(f"buckets must be positive: {buckets}")
    state = value & _MASK64
    candidate = 0
    while True:
        state = (_LCG_MULTIPLIER * state + 1) & _MASK64
        step = ((state >> 33) + 1) / 2.0**31
        jump = int((candidate + 1) / step)
        if not 0 <= jump < buckets:
            return candidate
        candidate = jump


class QueueSelector:
    """The queue of each send: by message group when there is one, else round robin."""

    def __init__(self) -> None:
        self._next = 0

    def select(self, write_queue_nums: int, message_group: str) -> int:
        if write_queue_nums <= 0:
            raise ValueError("no writable queue")
        if message_group:
            return consistent_hash(java_string_hash(message_group), write_queue_nums)
        self._next = (self._next + 1) % write_queue_nums
        return self._next

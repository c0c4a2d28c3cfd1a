"""`PopInflightCounter`: how many messages of a group's queue are handed out by POP and not
acknowledged yet, and how many of them are still invisible.

RocketMQ 5 keeps a plain per-queue number (PopInflightMessageCounter: up at a pop, down at
an ack and when a checkpoint is revived, cleared at a FIFO pop, numbers from before the
broker started ignored). A number cannot say which of those messages are still inside
their invisible time and which are overdue, waiting for the revive service to bring them
back; an operator watching a consumer that stopped acking wants exactly that difference.
So this counter remembers, per checkpoint (a pop's start offset and pop time), the offsets
not acknowledged yet and when each becomes visible again. It lives in memory only, as in
5.x: after a restart it knows nothing of earlier pops, and an ack of such a pop matches
nothing here and changes nothing.

Everything runs on the broker's event loop (the processors and the revive service), so
no lock is needed.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["InflightCount", "PopInflightCounter"]

_Checkpoint = tuple[int, int]
"""(start offset, pop time): what a receipt names its checkpoint by."""


@dataclass(frozen=True, slots=True)
class InflightCount:
    """One queue's figures: ``in_flight`` handed out and not acknowledged, ``invisible``
    those of them whose invisible time has not passed yet (the rest are overdue: the revive
    service puts them back when it reaches their checkpoint)."""

    in_flight: int
    invisible: int


class PopInflightCounter:
    def __init__(self) -> None:
        self._queues: dict[tuple[str, str, int], dict[_Checkpoint, dict[int, int]]] = {}
        """(topic, group, queue id) -> checkpoint -> offset -> visible-again time (ms)."""

    def popped(
        self,
        topic: str,
        group: str,
        queue_id: int,
        start_offset: int,
        pop_time: int,
        offsets: list[int],
        visible_at: int,
    ) -> None:
        """A pop (or a change of invisible time, which is a new checkpoint) handed out
        ``offsets`` until ``visible_at``."""
        if not offsets:
            return
        cks = self._queues.setdefault((topic, group, queue_id), {})
        cks.setdefault((start_offset, pop_time), {}).update(dict.fromkeys(offsets, visible_at))

    def acked(
        self,
        topic: str,
        group: str,
        queue_id: int,
        start_offset: int,
        pop_time: int,
        offsets: list[int],
    ) -> None:
        """``offsets`` of that checkpoint are acknowledged (an unknown one changes nothing:
        handed out before this broker started, or counted out already)."""
        cks = self._queues.get((topic, group, queue_id))
        ck = cks.get((start_offset, pop_time)) if cks is not None else None
        if cks is None or ck is None:
            return
        for offset in offsets:
            ck.pop(offset, None)
        if not ck:
            del cks[(start_offset, pop_time)]

    def delayed(
        self,
        topic: str,
        group: str,
        queue_id: int,
        start_offset: int,
        pop_time: int,
        offset: int,
        visible_at: int,
    ) -> None:
        """FIFO: a message's invisible time changed in place (same checkpoint)."""
        ck = self._queues.get((topic, group, queue_id), {}).get((start_offset, pop_time))
        if ck is not None and offset in ck:
            ck[offset] = visible_at

    def revived(
        self, topic: str, group: str, queue_id: int, start_offset: int, pop_time: int
    ) -> None:
        """The revive service finished that checkpoint: what was left of it went back to
        the retry topic (or the DLQ), so it is no longer in flight."""
        cks = self._queues.get((topic, group, queue_id))
        if cks is not None:
            cks.pop((start_offset, pop_time), None)

    def clear_queue(self, topic: str, group: str, queue_id: int) -> None:
        """A FIFO pop of the queue: everything handed out before is handed out again or
        done (5.x clears the queue's count there too)."""
        cks = self._queues.get((topic, group, queue_id))
        if cks is not None:
            cks.clear()

    def clear_group(self, group: str) -> None:
        """The group was deleted."""
        for key in [k for k in self._queues if k[1] == group]:
            del self._queues[key]

    def count(self, topic: str, group: str, queue_id: int, now: int) -> InflightCount | None:
        """The queue's figures at ``now`` (ms); None when the group has not popped from it
        since the broker started (then nothing says it is a POP queue at all). A queue
        popped once stays known, with zeros, until its group is deleted: one small entry
        per (topic, group, queue)."""
        cks = self._queues.get((topic, group, queue_id))
        if cks is None:
            return None
        in_flight = invisible = 0
        for ck in cks.values():
            in_flight += len(ck)
            invisible += sum(1 for at in ck.values() if at > now)
        return InflightCount(in_flight, invisible)

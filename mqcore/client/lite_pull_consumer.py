"""`LitePullConsumer`: RocketMQ's DefaultLitePullConsumer in asyncio -- the caller polls.

Usage::

    async with LitePullConsumer("g1", namesrv="127.0.0.1:9876") as consumer:
        consumer.subscribe("TopicTest", "TagA")          # or consumer.assign([mq, ...])
        while True:
            for msg in await consumer.poll(timeout=1.0):
                handle(msg)

Each owned queue (by rebalance when subscribed, or the caller's list when assigned) has a
background long-polling task that fills a shared buffer, so ``poll`` usually returns at
once. What ``poll`` returned counts as consumed: with ``auto_commit`` (the default) those
offsets go to the broker every ``auto_commit_interval`` seconds and on shutdown; without
it only :meth:`commit_sync` commits. ``seek`` / ``seek_to_begin`` / ``seek_to_end`` move a
queue (buffered messages of it are discarded); ``pause`` / ``resume`` stop and restart
pulling and delivering queues without losing their place.

With ``trace=True`` each pulled batch writes SubBefore/SubAfter trace records as it is
buffered for ``poll`` (as 4.9.8's lite pull consumer does), see :mod:`mqcore.client.trace`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Unpack

from mqcore.client.consumer_base import FLOW_CONTROL_DELAY, ConsumerBase, ConsumerOptions
from mqcore.client.errors import ClientStateError
from mqcore.client.offset_store import ReadOffsetType, RemoteBrokerOffsetStore
from mqcore.client.process_queue import ProcessQueue, QueueEvent
from mqcore.client.rebalance import (
    MessageSelector,
    build_subscription,
)
from mqcore.errors import MQError
from mqcore.message import MessageExt
from mqcore.protocol.bodies import MessageQueue

if TYPE_CHECKING:
    from mqcore.client.instance import ClientInstance

__all__ = ["LitePullConsumer"]

log = logging.getLogger("mq.client.lite")


@dataclass(slots=True)
class _Batch:
    mq: MessageQueue
    pq: ProcessQueue
    msgs: list[MessageExt]


class LitePullConsumer(ConsumerBase):
    """A consumer whose caller asks for messages; see the module docstring.

    The other keyword options, shared with the other consumer, are
    :class:`~mqcore.client.consumer_base.ConsumerOptions`.
    """

    CONSUME_TYPE = "CONSUME_ACTIVELY"
    TASK_PREFIX = "lite"

    def __init__(
        self,
        group: str,
        *,
        auto_commit: bool = True,
        auto_commit_interval: float = 5.0,
        pull_batch_size: int = 10,
        pull_threshold_for_all: int = 10000,
        **options: Unpack[ConsumerOptions],
    ) -> None:
        super().__init__(group, pull_batch_size=pull_batch_size, **options)
        self.auto_commit = auto_commit
        self.auto_commit_interval = auto_commit_interval
        self.pull_threshold_for_all = pull_threshold_for_all
        self._assigned: set[MessageQueue] | None = None
        self._queues: dict[MessageQueue, ProcessQueue] = {}
        """Owned queues: the rebalance table when subscribed, our own when assigned."""
        self._buffer: deque[_Batch] = deque()
        self._stash: dict[MessageQueue, list[_Batch]] = {}
        self._arrived = asyncio.Event()
        self._paused: set[MessageQueue] = set()
        self._last_commit = time.monotonic()

    # -- configuration ---------------------------------------------------------------------
    def subscribe(self, topic: str, selector: str | MessageSelector | None = "*") -> None:
        """Consume ``topic`` with group rebalancing (not combinable with :meth:`assign`)."""
        if self._assigned is not None:
            raise ClientStateError("this consumer uses assign(); subscribe and assign exclude")
        super().subscribe(topic, selector)

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Consume exactly these queues, without rebalancing."""
        if self._subscriptions and self._assigned is None:
            raise ClientStateError("this consumer uses subscribe(); subscribe and assign exclude")
        self._assigned = set(queues)
        for mq in self._assigned:
            self._subscriptions.setdefault(mq.topic, build_subscription(mq.topic, "*"))
        for topic in list(self._subscriptions):
            if all(mq.topic != topic for mq in self._assigned):
                del self._subscriptions[topic]
        if self._running:
            self._spawn(self._apply_assignment(), "assign")

    def assignment(self) -> set[MessageQueue]:
        """The queues this consumer currently pulls."""
        return {mq for mq, pq in self._queues.items() if not pq.dropped}

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        if self._running:
            return
        await super().start()

    async def _open(self, instance: ClientInstance) -> None:
        await self._join(instance, drop_idle_queues=False)
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.start()
        if self._assigned is not None:
            await self._apply_assignment()
        else:
            await self.do_rebalance()
        log.info("lite pull consumer %s started as %s", self._group, instance.client_id)

    def _prepare(self) -> None:
        if self._assigned is None:
            assert self._rebalance is not None
            self._queues = self._rebalance.process_queues  # one table, rebalance's

    async def _close(self, instance: ClientInstance) -> None:
        """Stop pulling, commit (with auto-commit) and leave the group."""
        if not await self._stop_tasks():
            return
        if self.auto_commit:
            await self._persist(sync=False)
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.shutdown()
        for pq in self._queues.values():
            pq.drop()
        self._queues.clear()
        self._buffer.clear()
        await instance.unregister_consumer(self._group)
        log.info("lite pull consumer %s shut down", self._group)

    async def _apply_assignment(self) -> None:
        wanted = self._assigned or set()
        for mq, pq in list(self._queues.items()):
            if mq not in wanted:
                pq.drop()
                await self.remove_queue(mq, pq)
                del self._queues[mq]
        for mq in sorted(wanted - self._queues.keys()):
            pq = ProcessQueue()
            self._queues[mq] = pq
            if not await self.start_queue(mq, pq):
                del self._queues[mq]
        await self.instance.send_heartbeat_to_all_brokers()

    # -- polling ---------------------------------------------------------------------------
    async def poll(self, timeout: float = 5.0) -> list[MessageExt]:
        """The next batch of messages (from one queue), or [] after ``timeout`` seconds."""
        if not self._running:
            raise ClientStateError(f"consumer {self._group} is not started")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            while self._buffer:
                batch = self._buffer.popleft()
                if batch.pq.dropped:
                    continue
                if batch.mq in self._paused:
                    self._stash.setdefault(batch.mq, []).append(batch)
                    continue
                offset = batch.pq.remove(batch.msgs)
                if offset >= 0:
                    assert self._offset_store is not None
                    self._offset_store.update(batch.mq, offset)
                return batch.msgs
            remaining = deadline - loop.time()
            if remaining <= 0 or not self._running:
                return []
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._arrived.wait()

    async def commit_sync(self) -> None:
        """Commit what ``poll`` returned, waiting for the brokers' acknowledgement."""
        await self._persist(sync=True)

    async def committed(self, mq: MessageQueue) -> int | None:
        """The offset committed at the broker (or the local file) for ``mq``."""
        if self._offset_store is None:
            raise ClientStateError(f"consumer {self._group} is not started")
        if isinstance(self._offset_store, RemoteBrokerOffsetStore):
            return await self.api.query_consumer_offset(self._group, mq)
        return await self._offset_store.read(mq, ReadOffsetType.STORE)

    async def _persist(self, *, sync: bool) -> None:
        assert self._offset_store is not None
        self._last_commit = time.monotonic()
        if sync:
            await self._offset_store.persist_all(self.assignment(), sync=True)
            return
        try:
            await self._offset_store.persist_all(self.assignment())
        except (MQError, OSError) as exc:
            log.warning("committing offsets of %s failed: %s", self._group, exc)

    # -- seek / pause ----------------------------------------------------------------------
    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Continue ``mq`` at ``offset`` (within the queue's min..max). Raises
        ClientStateError if the queue is not owned, ValueError if out of range."""
        pq = self._queues.get(mq)
        if pq is None or pq.dropped:
            raise ClientStateError(f"{mq} is not assigned to this consumer")
        low, high = await self.api.min_offset(mq), await self.api.max_offset(mq)
        if not low <= offset <= high:
            raise ValueError(f"offset {offset} of {mq} is outside {low}..{high}")
        await self._restart_at(mq, offset)

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.api.min_offset(mq))

    async def seek_to_end(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.api.max_offset(mq))

    async def _restart_at(self, mq: MessageQueue, offset: int) -> None:
        task = self._pull_tasks.pop(mq, None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        old = self._queues[mq]
        old.drop()
        self._stash.pop(mq, None)
        pq = ProcessQueue()
        pq.fire(QueueEvent.START)
        self._queues[mq] = pq
        assert self._offset_store is not None
        self._offset_store.update(mq, offset)
        self._start_pulling(mq, pq, offset)

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling and delivering these queues (their place is kept)."""
        self._paused.update(queues)

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        for mq in queues:
            self._paused.discard(mq)
            stashed = self._stash.pop(mq, [])
            self._buffer.extendleft(reversed(stashed))
            if stashed:
                self._arrived.set()

    def paused(self) -> set[MessageQueue]:
        return set(self._paused)

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """Every readable queue of ``topic`` (for ``assign``)."""
        return await self.api.topic_queues(topic)

    # -- ClientInstance's ConsumerHandle ----------------------------------------------------
    async def do_rebalance(self) -> None:
        if self._assigned is None:
            await super().do_rebalance()

    async def persist_consumer_offset(self) -> None:
        due = time.monotonic() - self._last_commit >= self.auto_commit_interval - 0.01
        if self._running and self.auto_commit and due:
            await self._persist(sync=False)

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        for mq, offset in offsets.items():
            if mq.topic == topic and mq in self._queues:
                await self._restart_at(mq, offset)

    def _held_queues(self) -> dict[MessageQueue, ProcessQueue]:
        return dict(self._queues)  # assigned or rebalanced, one table

    # -- RebalanceOwner --------------------------------------------------------------------
    async def start_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        offset = await self._start_offset(mq, pq)
        if offset is None:
            return False
        pq.fire(QueueEvent.START)
        assert self._offset_store is not None
        self._offset_store.update(mq, offset)
        self._start_pulling(mq, pq, offset)
        return True

    async def remove_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        assert self._offset_store is not None
        self._stop_pulling(mq)
        self._stash.pop(mq, None)
        if self.auto_commit:
            with contextlib.suppress(MQError, OSError):
                await self._offset_store.persist(mq)
        self._offset_store.remove(mq)
        return True

    # -- pulling ---------------------------------------------------------------------------
    def _flow_controlled(self, pq: ProcessQueue) -> bool:
        if self._over_queue_limits(pq):
            return True
        total = sum(q.msg_count for q in self._queues.values())
        return total > self.pull_threshold_for_all

    async def _pull_loop(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        from mqcore.client.api import PullStatus

        while self._running and not pq.dropped:
            pq.touch_pull()
            if mq in self._paused or self._flow_controlled(pq):
                await asyncio.sleep(FLOW_CONTROL_DELAY)
                continue
            result = await self._pull_once(mq, pq, offset)
            if result is None:
                continue
            if result.status is PullStatus.FOUND and result.messages:
                if self._trace is not None:
                    self._trace.consumed(result.messages)
                pq.put(result.messages, result.next_begin_offset)
                self._buffer.append(_Batch(mq, pq, result.messages))
                self._arrived.set()
            elif result.status is PullStatus.OFFSET_ILLEGAL:
                log.warning(
                    "%s: offset %d of %s is illegal; moving to %d",
                    self._group,
                    offset,
                    mq,
                    result.next_begin_offset,
                )
                if not pq.msg_count:
                    assert self._offset_store is not None
                    self._offset_store.update(mq, result.next_begin_offset)
            elif not pq.msg_count:
                # Nothing buffered: what was skipped (filtered out) counts as consumed.
                assert self._offset_store is not None
                self._offset_store.update(mq, result.next_begin_offset, increase_only=True)
            offset = result.next_begin_offset

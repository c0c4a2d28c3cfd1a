"""`mq consume` without ``-g``: a quick look at a topic that leaves nothing behind.

Reads every queue (or the ``--queue`` ones) as RocketMQ's tools do, pulling as
TOOLS_CONSUMER with no offset to commit, so no consumer group is created, joined or moved
(kcat's ``-C`` without ``-G``). It starts at ``--from`` (default: each queue's first
message), follows new messages with long polling unless ``--no-follow`` (the end pinned at
start), and ``--until TIME`` ends each queue at its first message stored at or after
TIME (once TIME has passed, a queue that is caught up is done too).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Protocol

from mqcli.credentials import client_config
from mqcli.render import broker_of
from mqcli.timespec import Kind, Position
from mqcore.client import Admin, MessageQueue
from mqcore.client.api import PullStatus
from mqcore.errors import MQClientError
from mqcore.filter import compile_sql, compile_tags
from mqcore.message import MessageExt

__all__ = ["Look", "PipeClosed", "QueuePick", "look", "parse_queue_pick"]


class PipeClosed(Exception):
    """Standard output's reader is gone (``| head``): the message was not printed."""


FOLLOW_WAIT = 5.0
"""Seconds the broker holds a pull for a new message while following (long polling)."""


@dataclass(frozen=True)
class QueuePick:
    """``--queue N`` (queue N of every broker) or ``--queue BROKER:N`` (one queue)."""

    queue_id: int
    broker: str | None = None

    def __str__(self) -> str:
        return f"{self.broker}:{self.queue_id}" if self.broker else str(self.queue_id)

    def matches(self, mq: MessageQueue) -> bool:
        return mq.queue_id == self.queue_id and self.broker in (None, mq.broker_name)


def parse_queue_pick(text: str) -> QueuePick:
    """``3`` or ``broker-a:3``; ValueError with the reason otherwise."""
    broker, _, qid = text.rpartition(":")
    if not qid.isdigit():
        raise ValueError(f"--queue {text!r}: give a queue id (3) or BROKER:ID (broker-a:3)")
    return QueuePick(int(qid), broker or None)


@dataclass
class Look:
    """What to read and where to stop."""

    topic: str
    start: Position
    follow: bool
    picks: list[QueuePick]
    until_ms: int | None = None
    tag: str | None = None
    sql: str | None = None


class _SinkLike(Protocol):
    @property
    def full(self) -> bool: ...

    def emit(self, msg: MessageExt, broker: str | None, nack: bool = False) -> None: ...


class _Emit:
    """The sink's side of a look: prints, and says when to stop."""

    def __init__(self, sink: _SinkLike, stop: asyncio.Event) -> None:
        self.sink = sink
        self.stop = stop

    def __call__(self, msg: MessageExt, broker: str | None) -> bool:
        """Print ``msg``; False once nothing more is wanted (then ``msg`` is not printed
        when the look had already ended)."""
        if self.sink.full or self.stop.is_set():
            return False
        try:
            self.sink.emit(msg, broker)
        except PipeClosed:
            self.stop.set()
            return False
        if self.sink.full:
            self.stop.set()
            return False
        return True


async def look(namesrv: str, spec: Look, sink: _SinkLike, stop: asyncio.Event) -> None:
    """Read ``spec`` into ``sink`` until every queue is done or ``stop`` is set."""
    tags = compile_tags(spec.tag) if spec.tag else None
    sql = compile_sql(spec.sql) if spec.sql else None
    emit = _Emit(sink, stop)
    async with Admin(namesrv, client_config=client_config()) as admin:
        queues = await admin.topic_queues(spec.topic)
        if spec.picks:
            queues = [mq for mq in queues if any(p.matches(mq) for p in spec.picks)]
            if not queues:
                raise MQClientError(
                    f"no queue of {spec.topic} matches --queue "
                    + ", ".join(
                        f"{p.broker + ':' if p.broker else ''}{p.queue_id}" for p in spec.picks
                    )
                )
        addrs = admin.broker_addrs()
        ends = {} if spec.follow else {mq: await admin.max_offset(mq) for mq in queues}

        def wanted(msg: MessageExt) -> bool:
            if tags is not None and not tags.match_tag(msg.tags):
                return False
            return sql is None or sql.evaluate(msg.properties)

        async def one(mq: MessageQueue) -> None:
            offset = await spec.start.offset_in(admin, mq)
            not_before = spec.start.value if spec.start.kind is Kind.TIME else 0
            end = ends.get(mq)
            while not stop.is_set():
                if end is not None and offset >= end:
                    return
                passed = spec.until_ms is not None and time.time() * 1000 >= spec.until_ms
                wait = FOLLOW_WAIT if spec.follow and not passed else 0.0
                result = await admin.read_queue(
                    mq, offset, 32, wait=wait, expression=spec.tag or "*"
                )
                if result.status is PullStatus.FOUND:
                    for msg in result.messages:
                        if end is not None and msg.queue_offset >= end:
                            return
                        if spec.until_ms is not None and msg.store_timestamp >= spec.until_ms:
                            return
                        if msg.store_timestamp < not_before or not wanted(msg):
                            continue
                        if not emit(msg, broker_of(addrs, msg.store_host)):
                            return
                elif result.status is PullStatus.NO_NEW_MSG and (not spec.follow or passed):
                    return
                stuck = result.status is not PullStatus.FOUND and result.next_begin_offset == offset
                if stuck and (not spec.follow or passed):
                    return
                if stuck and wait == 0:
                    await asyncio.sleep(1.0)  # answered at once with nothing: do not spin
                offset = max(offset, result.next_begin_offset)

        async def every_queue() -> None:
            async with asyncio.TaskGroup() as group:
                for mq in queues:
                    group.create_task(one(mq))

        runner = asyncio.ensure_future(every_queue())
        stopper = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({runner, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if runner.done():
                runner.result()  # a queue that failed fails the look
        finally:
            for task in (runner, stopper):
                task.cancel()
            await asyncio.gather(runner, stopper, return_exceptions=True)

"""What a consumer answers GET_CONSUMER_RUNNING_INFO: its ConsumerRunningInfo.

mqadmin consumerStatus, the dashboard and `mq group status` ask a consumer, through a
broker it is connected to, what it is doing: its settings, subscriptions, each held
queue's cache and timestamps, per-topic rates, and with ``jstackEnable`` its stacks. A
Java client answers with ``jstack`` output; a Python process has threads and, on its
event loop, tasks: :func:`stack_dump` writes both, each frame as a traceback line, so
a consumer stuck in a listener or a pull shows where.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from types import FrameType
from typing import TYPE_CHECKING

from mqcore import __version__
from mqcore.protocol.bodies import MessageQueue
from mqcore.protocol.bodies.running_info import (
    PROP_CLIENT_VERSION,
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
    PROP_NAMESERVER_ADDR,
    ConsumerRunningInfo,
    ProcessQueueInfo,
)

if TYPE_CHECKING:
    from mqcore.client.consume_stats import ConsumerStats
    from mqcore.client.process_queue import ProcessQueue
    from mqcore.protocol.bodies import SubscriptionData

__all__ = ["CLIENT_VERSION", "process_queue_info", "running_info", "stack_dump"]

CLIENT_VERSION = "V4_9_8"
"""The version our clients announce (heartbeats, PROP_CLIENT_VERSION)."""

MIB = 1024 * 1024


def process_queue_info(pq: ProcessQueue, commit_offset: int) -> ProcessQueueInfo:
    """One held queue as 4.9.8's ``ProcessQueue.fillProcessQueueInfo`` reports it."""
    cached = pq.cached_offsets()
    low, high = cached if cached is not None else (0, 0)
    return ProcessQueueInfo(
        commit_offset=commit_offset,
        cached_msg_min_offset=low,
        cached_msg_max_offset=high,
        cached_msg_count=pq.msg_count,
        cached_msg_size_in_mib=pq.msg_size // MIB,
        locked=pq.locked,
        try_unlock_times=pq.try_unlock_times,
        last_lock_timestamp=pq.wall_clock_ms(pq.last_lock),
        dropped=pq.dropped,
        last_pull_timestamp=pq.wall_clock_ms(pq.last_pull),
        last_consume_timestamp=pq.wall_clock_ms(pq.last_consume),
    )


def running_info(
    *,
    properties: Mapping[str, object],
    consume_type: str,
    namesrv: str,
    started_ms: int,
    subscriptions: list[SubscriptionData],
    queues: Mapping[MessageQueue, ProcessQueue],
    offsets: Mapping[MessageQueue, int],
    stats: ConsumerStats,
    jstack: bool = False,
) -> ConsumerRunningInfo:
    """The ConsumerRunningInfo of a consumer: its own ``properties`` (settings by their
    Java names) and the ``PROP_*`` keys, its subscriptions, a ProcessQueueInfo per held
    queue (``offsets``: the offsets it would commit), each subscribed topic's figures,
    and its stacks when ``jstack``."""
    props = {key: _java_text(value) for key, value in properties.items()}
    props.update(
        {
            PROP_CONSUME_TYPE: consume_type,
            PROP_NAMESERVER_ADDR: namesrv,
            PROP_CLIENT_VERSION: CLIENT_VERSION,
            PROP_CONSUMER_START_TIMESTAMP: str(started_ms),
            "clientVersion": __version__,
            "language": "PYTHON",
        }
    )
    return ConsumerRunningInfo(
        properties=props,
        subscription_set=list(subscriptions),
        mq_table={
            mq: process_queue_info(pq, offsets.get(mq, -1)) for mq, pq in sorted(queues.items())
        },
        status_table=stats.table(sorted({s.topic for s in subscriptions})),
        jstack=stack_dump() if jstack else None,
    )


def _java_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(getattr(value, "value", value))


def stack_dump() -> str:
    """Every thread's stack, then every task's of the running event loop, as text (what
    jstack is to a Java client)."""
    out = [f"{time.strftime('%Y-%m-%d %H:%M:%S')} Python {sys.version.split()[0]} stacks"]
    names = {t.ident: t for t in threading.enumerate()}
    for ident, frame in sorted(sys._current_frames().items()):
        thread = names.get(ident)
        name = thread.name if thread is not None else "?"
        daemon = " daemon" if thread is not None and thread.daemon else ""
        out.append(f'\n"{name}" #{ident}{daemon}')
        out.extend(_frames(traceback.extract_stack(frame)))
    try:
        tasks = sorted(asyncio.all_tasks(), key=lambda t: t.get_name())
    except RuntimeError:  # not called on an event loop
        tasks = []
    for task in tasks:
        state = "done" if task.done() else "pending"
        out.append(f'\n"task {task.get_name()}" {state}')
        frames = _await_chain(task.get_coro())
        if not frames:
            out.append(f"    {task.get_coro()!r}")
        summary = traceback.StackSummary.extract((f, f.f_lineno) for f in frames)
        out.extend(_frames(summary))
    return "\n".join(out) + "\n"


def _await_chain(coro: object) -> list[FrameType]:
    """The frames of a task's coroutine and of what it awaits, outermost first (a task's
    own ``get_stack`` stops at its outermost coroutine)."""
    frames: list[FrameType] = []
    while coro is not None and len(frames) < 100:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            break
        frames.append(frame)
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return frames


def _frames(summary: traceback.StackSummary) -> list[str]:
    lines = []
    for fs in reversed(summary):  # innermost first, as jstack lists them
        lines.append(f"    at {fs.name} ({fs.filename}:{fs.lineno})")
        if fs.line:
            lines.append(f"        {fs.line}")
    return lines

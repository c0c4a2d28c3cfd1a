"""A slave's copy of its master's timer checkpoint (RocketMQ 5's
``SlaveSynchronize.syncTimerCheckPoint``).

A slave runs no timer service: its master delivers, and the deliveries reach the slave
by replication. What the slave needs, should it become master, is to know how far its
master got: the committed read time (slots before it were delivered) and the
timer-queue offset the master had taken into its wheel. So every sync period the slave
asks GET_TIMER_CHECK_POINT and writes the answer to its own ``config/timercheck``; a
timer store that then starts on it without a timer log replays the timer queue,
dropping what the master had delivered (:class:`mqcore.store.timer.TimerMessageStore`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from mqcore.broker.slave_sync import DEFAULT_TIMEOUT, SlaveSyncError, vip_addr
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.remoting import RemotingClient
from mqcore.store.timer import TimerCheckpoint, TimerCheckpointValues

__all__ = ["TimerCheckpointSync"]

log = logging.getLogger("mq.broker.timer")


class TimerCheckpointSync:
    """Copies the master's timer checkpoint into ``path`` while the local timer store
    does not run."""

    def __init__(
        self,
        client: RemotingClient,
        master_addr: Callable[[], str | None],
        path: Path,
        *,
        own_addr: Callable[[], str],
        local_running: Callable[[], bool],
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.client = client
        self.master_addr = master_addr
        self.path = path
        self.own_addr = own_addr
        self.local_running = local_running
        self.timeout = timeout
        self.last: TimerCheckpointValues | None = None
        """The master's checkpoint as last copied."""

    async def sync(self) -> None:
        """One copy; a master that cannot answer is logged, not raised (a periodic task)."""
        addr = self.master_addr()
        if not addr or addr == self.own_addr() or self.local_running():
            return
        try:
            response = await self.client.invoke(
                vip_addr(addr),
                RemotingCommand.request(RequestCode.GET_TIMER_CHECK_POINT),
                self.timeout,
            )
            if response.code != ResponseCode.SUCCESS:
                raise SlaveSyncError(
                    f"GET_TIMER_CHECK_POINT at {addr}: {response.code} {response.remark}"
                )
            values = TimerCheckpointValues.decode(bytes(response.body))
        except Exception as exc:
            log.warning("syncing the timer checkpoint from master %s failed: %s", addr, exc)
            return
        if values == self.last:
            return
        await asyncio.to_thread(self._write, values)
        self.last = values

    def _write(self, values: TimerCheckpointValues) -> None:
        checkpoint = TimerCheckpoint(self.path)
        try:
            checkpoint.last_read_time_ms = values.last_read_time_ms
            checkpoint.master_timer_queue_offset = values.master_timer_queue_offset
            # no timer log here: the master's offset is this store's progress too
            checkpoint.last_timer_queue_offset = values.master_timer_queue_offset
            checkpoint.state_version = values.state_version
            checkpoint.version_timestamp = values.version_timestamp
            checkpoint.version_counter = values.version_counter
        finally:
            checkpoint.close()

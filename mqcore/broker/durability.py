"""When an acknowledged put is durable: the disk flush and the slave, as RocketMQ 4.9.8.

A put whose message asks to wait (``WAIT`` is not "false") is answered only when
- SYNC_FLUSH: the group commit has flushed it (else FLUSH_DISK_TIMEOUT), and
- SYNC_MASTER: a slave has acknowledged it (else FLUSH_SLAVE_TIMEOUT), or at once
  SLAVE_NOT_AVAILABLE when no slave is connected or it is ``haSlaveFallbehindMax`` behind.
Both waits run together, each bounded by ``syncFlushTimeout``; the slave's status wins
when both fail. Either way the message is stored: these codes say how durable it is.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from mqcore.store.results import PutResult, PutStatus
from mqcore.store.store_config import BrokerRole, FlushDiskType, MessageStoreConfig

__all__ = ["Replication", "await_durable", "must_wait", "wait_flushed"]

log = logging.getLogger("mq.broker")


class Replication(Protocol):
    """What a SYNC_MASTER put needs of the HA service."""

    def is_slave_ok(self, master_put_where: int) -> bool: ...

    @property
    def enough_in_sync(self) -> bool: ...

    async def wait_for_slave(self, offset: int, timeout: float) -> bool: ...


def must_wait(result: PutResult, wait: bool, config: MessageStoreConfig) -> bool:
    """Does this put's answer wait for a flush or a slave? (The common case: no.)"""
    if not wait or not result.ok:
        return False
    if result.flush_future is not None and config.flush_disk_type is FlushDiskType.SYNC_FLUSH:
        return True
    return config.broker_role is BrokerRole.SYNC_MASTER


async def await_durable(
    result: PutResult, config: MessageStoreConfig, replication: Replication | None
) -> PutStatus:
    """The status to answer once the put is as durable as ``config`` asks."""
    timeout = config.sync_flush_timeout / 1000
    flush = None
    if result.flush_future is not None:
        flush = asyncio.ensure_future(wait_flushed(result, timeout))  # runs beside the slave wait
    replica_status = PutStatus.PUT_OK
    if config.broker_role is BrokerRole.SYNC_MASTER:
        end = result.wrote_offset + result.wrote_bytes
        if replication is None or not replication.is_slave_ok(end):
            replica_status = PutStatus.SLAVE_NOT_AVAILABLE
        elif not await replication.wait_for_slave(end, timeout):
            replica_status = PutStatus.FLUSH_SLAVE_TIMEOUT
    status = PutStatus.PUT_OK
    if flush is not None and not await flush:
        status = PutStatus.FLUSH_DISK_TIMEOUT
    if replica_status is not PutStatus.PUT_OK:
        status = replica_status
    return status


async def wait_flushed(result: PutResult, timeout: float) -> bool:
    """Whether the group commit covering ``result`` came within ``timeout`` s."""
    assert result.flush_future is not None
    flushed: asyncio.Future[bool] = asyncio.wrap_future(result.flush_future)
    try:
        return bool(await asyncio.wait_for(asyncio.shield(flushed), timeout))
    except TimeoutError:
        return False
    except Exception:
        log.exception("sync flush failed")
        return False

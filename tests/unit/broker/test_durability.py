"""When a put is answered: the flush and the slave, each alone and both together."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

import pytest

from mqcore.broker.durability import await_durable, must_wait
from mqcore.store.results import PutResult, PutStatus
from mqcore.store.store_config import BrokerRole, FlushDiskType, MessageStoreConfig


class FakeSlave:
    enough_in_sync = True

    def __init__(self, *, ok: bool = True, acks: bool = True) -> None:
        self.ok, self.acks = ok, acks
        self.waited_for: list[int] = []

    def is_slave_ok(self, master_put_where: int) -> bool:
        return self.ok

    async def wait_for_slave(self, offset: int, timeout: float) -> bool:
        self.waited_for.append(offset)
        return self.acks


def config(role: BrokerRole, flush: FlushDiskType) -> MessageStoreConfig:
    return MessageStoreConfig(broker_role=role, flush_disk_type=flush, sync_flush_timeout=50)


def put(flushed: bool | None) -> PutResult:
    """A put at 100..130; ``flushed`` None: no flush to wait for (ASYNC_FLUSH)."""
    future: Future[bool] | None = None
    if flushed is not None:
        future = Future()
        if flushed:
            future.set_result(True)  # never set otherwise: the flush times out
    return PutResult(PutStatus.PUT_OK, wrote_offset=100, wrote_bytes=30, flush_future=future)


@pytest.mark.parametrize(
    ("role", "flush", "flushed", "slave", "want"),
    [
        (BrokerRole.ASYNC_MASTER, FlushDiskType.SYNC_FLUSH, True, None, PutStatus.PUT_OK),
        (
            BrokerRole.ASYNC_MASTER,
            FlushDiskType.SYNC_FLUSH,
            False,
            None,
            PutStatus.FLUSH_DISK_TIMEOUT,
        ),
        (BrokerRole.SYNC_MASTER, FlushDiskType.ASYNC_FLUSH, None, FakeSlave(), PutStatus.PUT_OK),
        (
            BrokerRole.SYNC_MASTER,
            FlushDiskType.ASYNC_FLUSH,
            None,
            FakeSlave(acks=False),
            PutStatus.FLUSH_SLAVE_TIMEOUT,
        ),
        (
            BrokerRole.SYNC_MASTER,
            FlushDiskType.ASYNC_FLUSH,
            None,
            FakeSlave(ok=False),
            PutStatus.SLAVE_NOT_AVAILABLE,
        ),
        (
            BrokerRole.SYNC_MASTER,
            FlushDiskType.ASYNC_FLUSH,
            None,
            None,
            PutStatus.SLAVE_NOT_AVAILABLE,
        ),
        # both: the flush failing alone is reported; the slave's failure wins over it
        (
            BrokerRole.SYNC_MASTER,
            FlushDiskType.SYNC_FLUSH,
            False,
            FakeSlave(),
            PutStatus.FLUSH_DISK_TIMEOUT,
        ),
        (
            BrokerRole.SYNC_MASTER,
            FlushDiskType.SYNC_FLUSH,
            False,
            FakeSlave(acks=False),
            PutStatus.FLUSH_SLAVE_TIMEOUT,
        ),
        (BrokerRole.SYNC_MASTER, FlushDiskType.SYNC_FLUSH, True, FakeSlave(), PutStatus.PUT_OK),
    ],
)
async def test_status_after_the_waits(
    role: BrokerRole,
    flush: FlushDiskType,
    flushed: bool | None,
    slave: FakeSlave | None,
    want: PutStatus,
) -> None:
    result = put(flushed)
    cfg = config(role, flush)
    assert must_wait(result, True, cfg)
    assert await asyncio.wait_for(await_durable(result, cfg, slave), 5) is want
    if slave is not None and slave.ok:
        assert slave.waited_for == [130]  # the end of the put


def test_nothing_to_wait_for() -> None:
    async_master = config(BrokerRole.ASYNC_MASTER, FlushDiskType.ASYNC_FLUSH)
    assert not must_wait(put(None), True, async_master)
    sync_both = config(BrokerRole.SYNC_MASTER, FlushDiskType.SYNC_FLUSH)
    assert not must_wait(put(True), False, sync_both)  # WAIT=false (send-backs)
    refused = PutResult(PutStatus.MESSAGE_ILLEGAL)
    assert not must_wait(refused, True, sync_both)

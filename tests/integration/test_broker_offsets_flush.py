"""In-process broker: SYNC_FLUSH answers, time lookups over queues, lag never negative."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mqcore.client import Admin
from mqcore.common.metadata import TopicConfig
from mqcore.protocol import RequestCode, ResponseCode
from mqcore.protocol.headers import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from mqcore.store.store_config import FlushDiskType
from tests.support.clients import RawBrokerClient, TestClient, put, send_header
from tests.support.inproc import running_broker, running_namesrv
from tests.support.polling import until

pytestmark = pytest.mark.timeout(60)


def _now_ms() -> int:
    return int(time.time() * 1000)


async def _clock_past(ms: int) -> None:
    """Wait for the wall clock to pass ``ms`` (store times are ms)."""
    while _now_ms() <= ms:
        await asyncio.sleep(0.001)


class StalledFlush:
    """Replaces the group-commit flusher's ``flush_to``: each call blocks on ``gate``
    (a threading event: the flusher is a thread) before flushing for real."""

    def __init__(self, flusher: Any) -> None:
        self.flusher = flusher
        self.real = flusher.flush_to
        self.gate = threading.Event()
        self.entered = threading.Event()
        flusher.flush_to = self

    def __call__(self, target: int, least_pages: int = 0) -> int:
        self.entered.set()
        self.gate.wait(30)
        return int(self.real(target, least_pages))

    def restore(self) -> None:
        self.gate.set()
        self.flusher.flush_to = self.real


async def test_sync_flush_waits_for_the_group_commit_then_times_out(tmp_path: Path) -> None:
    store = {"flush_disk_type": FlushDiskType.SYNC_FLUSH, "sync_flush_timeout": 5000}
    async with running_broker(tmp_path, store=store) as broker:
        broker.topics.update(TopicConfig("Sync", 1, 1))
        addr = f"127.0.0.1:{broker.server.port}"
        stall = StalledFlush(broker.store._flusher)
        try:
            async with RawBrokerClient(addr) as client:
                # 1. The answer waits for the flush covering the message.
                sending = asyncio.create_task(client.send("Sync", b"durable"))
                await until(stall.entered.is_set, what="the flusher to start a round")
                done, _ = await asyncio.wait({sending}, timeout=0.3)
                assert not done, "answered before the group commit"
                flushed_before = broker.store.commit_log.queue.flushed_where
                stall.gate.set()
                response = await sending
                assert response.code == ResponseCode.SUCCESS, response.remark
                assert broker.store.commit_log.queue.flushed_where > flushed_before

                # 2. A flush slower than syncFlushTimeout: FLUSH_DISK_TIMEOUT, still stored.
                stall.gate.clear()
                stall.entered.clear()
                broker.store_config.sync_flush_timeout = 200
                response = await client.send("Sync", b"late")
                assert response.code == ResponseCode.FLUSH_DISK_TIMEOUT == 10
                assert send_header(response).queue_offset == 1
                stall.gate.set()
                stored = await client.pull_all("Sync", 0)
                assert [m.body for m in stored] == [b"durable", b"late"]
        finally:
            stall.restore()


async def test_earliest_store_time_and_search_by_timestamp(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        addr = f"127.0.0.1:{broker.server.port}"
        times: list[int] = []  # store times of offsets 0..4, >= 10 ms apart
        for _ in range(5):
            times.append(put(broker, "Timed").store_timestamp)
            await _clock_past(times[-1] + 10)
        client = TestClient(addr, "c1")
        try:

            async def search(ts: int) -> int:
                header = SearchOffsetRequestHeader("Timed", 0, ts)
                r = await client.invoke(
                    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header.to_ext_fields()
                )
                return SearchOffsetResponseHeader.from_command(r).offset

            header = GetEarliestMsgStoretimeRequestHeader("Timed", 0)
            r = await client.invoke(RequestCode.GET_EARLIEST_MSG_STORETIME, header.to_ext_fields())
            assert r.code == ResponseCode.SUCCESS
            assert GetEarliestMsgStoretimeResponseHeader.from_command(r).timestamp == times[0]

            for offset in (1, 2, 3):  # inner offsets: exact, and the nearer neighbour
                ts = times[offset]
                found = [await search(ts), await search(ts - 1), await search(ts + 1)]
                assert found == [offset] * 3
            assert await search(times[0] - 10_000) == 0
            assert await search(times[4] + 10_000) == 4
        finally:
            await client.close()


async def test_lag_is_never_negative(tmp_path: Path) -> None:
    async with (
        running_namesrv(tmp_path) as namesrv,
        running_broker(tmp_path, namesrv.listen_address) as broker,
    ):
        await until(lambda: bool(namesrv.routes.live_broker_addrs()), what="registration")
        broker.topics.update(TopicConfig("Lag", 1, 1))
        for _ in range(3):
            put(broker, "Lag")
        client = TestClient(f"127.0.0.1:{broker.server.port}", "c1")
        try:
            header = UpdateConsumerOffsetRequestHeader("g-ahead", "Lag", 0, 50)
            r = await client.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, header.to_ext_fields())
            assert r.code == ResponseCode.SUCCESS
        finally:
            await client.close()
        async with Admin(namesrv.listen_address) as admin:
            (row,) = await admin.consume_progress("g-ahead", "Lag")
        assert (row.broker_offset, row.consumer_offset) == (3, 50)
        assert row.lag == 0 and row.age_ms() == 0

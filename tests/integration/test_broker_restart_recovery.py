"""kill -9 of a broker, then a restart on its store: recovery starts from the checkpoint.

The broker logs one line saying what recovery checked; after a kill it names a point
past most of the store, re-dispatches only what followed the last checkpoint, and every
message is found by key (QUERY_MESSAGE), those before the checkpoint and those after.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

from mqcore.message import decode_records
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import QueryMessageRequestHeader, SendMessageResponseHeader
from tests.support.clients import RawBrokerClient
from tests.support.polling import until
from tests.support.processes import mq, start_broker

TOPIC = "RestartTopic"
OLD = 300
TAIL = 20
_SUMMARY = re.compile(
    r"abnormal recovery from the checkpoint: scanned the commit log from offset ([\d,]+) "
    r"to ([\d,]+), ([\d,]+) records re-dispatched, index kept"
)


def _checkpoint(store: Path) -> tuple[int, int, int]:
    physic, logics, index = struct.unpack(">qqq", (store / "checkpoint").read_bytes()[:24])
    return physic, logics, index


async def _found(client: RawBrokerClient, key: str) -> list[str]:
    header = QueryMessageRequestHeader(TOPIC, key, 32, 0, 2**63 - 1)
    response = await client.invoke(
        RemotingCommand.request(RequestCode.QUERY_MESSAGE, header.to_ext_fields())
    )
    assert response.code == ResponseCode.SUCCESS, (key, response.code, response.remark)
    return [m.properties["KEYS"] for m in decode_records(response.body)]


async def test_restart_after_kill_checks_only_what_followed_the_checkpoint(
    tmp_path: Path,
) -> None:
    broker = start_broker(tmp_path / "b1", flushIntervalConsumeQueue="100")
    try:
        async with RawBrokerClient(broker.addr) as client:
            last = None
            for i in range(OLD):
                r = await client.send(TOPIC, f"old-{i}".encode(), keys=f"old-{i}", queue_id=i % 4)
                assert r.code == ResponseCode.SUCCESS
                last = SendMessageResponseHeader.from_command(r)
            assert last is not None
            pulled = await client.pull(TOPIC, last.queue_id, last.queue_offset, max_nums=1)
            stored_at = pulled.messages[0].store_timestamp
            # The checkpoint catches up with the last old message (flushed and queued).
            await until(
                lambda: min(_checkpoint(broker.store)[:2]) >= stored_at,
                what="the checkpoint names the last old message",
            )
            for i in range(TAIL):
                r = await client.send(TOPIC, f"tail-{i}".encode(), keys=f"tail-{i}")
                assert r.code == ResponseCode.SUCCESS
        broker.kill()
    finally:
        broker.kill()
    assert (broker.store / "abort").exists()

    again = start_broker(tmp_path / "b2", store=broker.store)
    try:
        log = next((tmp_path / "b2" / "logs").glob("broker-*.log")).read_text()
        lines = [line for line in log.splitlines() if "recovery" in line and "scanned" in line]
        assert len(lines) == 1, lines
        m = _SUMMARY.search(lines[0])
        assert m is not None, lines[0]
        scan_from, end, redispatched = (int(g.replace(",", "")) for g in m.groups())
        assert 0 < scan_from < end
        assert 1 <= redispatched < OLD // 2  # the tail, not the store
        async with RawBrokerClient(again.addr) as client:
            for key in ("old-0", f"old-{OLD // 2}", f"old-{OLD - 1}", "tail-0", f"tail-{TAIL - 1}"):
                assert await _found(client, key) == [key]
    finally:
        assert again.stop() == 0
    verify = mq("store", "verify", str(broker.store))
    assert verify.returncode == 0, verify.stdout + verify.stderr

"""A damaged store is noticed at startup, worked around record by record, and reported.

841 messages; five flipped bytes in five bodies and two rewritten consume queue entries.
The broker starts, consumers get the 836 good messages (every one after a damaged record
too), and `GET_BROKER_RUNTIME_INFO` names the seven problems with file and offset.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.route import KVTable
from mqcore.store.offline import OfflineStore
from tests.support.clients import RawBrokerClient
from tests.support.processes import mq, start_broker, start_namesrv

pytestmark = pytest.mark.timeout(120)

TOPIC = "DamageTopic"
COUNT = 841


def body(i: int) -> bytes:
    return f"msg-{i:05d}|".encode() * 10


async def test_a_damaged_store_serves_every_good_message_and_says_what_it_found(
    tmp_path: Path,
) -> None:
    ns = start_namesrv(tmp_path / "ns")
    broker = start_broker(tmp_path / "b", ns.addr)
    try:
        async with RawBrokerClient(broker.addr) as client:
            for i in range(COUNT):
                r = await client.send(TOPIC, body(i), queue_id=i % 4, queue_nums=4)
                assert r.code == ResponseCode.SUCCESS
        assert broker.stop() == 0
        store = broker.store
        walk = OfflineStore(store).walk_commit_log()
        records = [req for _, req in walk if not isinstance(req, Exception)]
        assert len(records) == COUNT
        log_file = store / "commitlog" / f"{0:020d}"
        data = bytearray(log_file.read_bytes())
        damaged = {10, 200, 201, 500, 840}  # two in a row, and the very last one
        for i in damaged:
            at = data.index(body(i), records[i].commit_log_offset)
            data[at + 7] ^= 0x20
        log_file.write_bytes(bytes(data))
        cq_file = store / "consumequeue" / TOPIC / "1" / f"{0:020d}"
        entries = bytearray(cq_file.read_bytes())
        entries[20 * 30 : 20 * 30 + 8] = (123_456_789).to_bytes(8, "big")  # wrong offset
        entries[20 * 60 + 8 : 20 * 60 + 12] = (33).to_bytes(4, "big")  # wrong size
        cq_file.write_bytes(bytes(entries))

        broker = start_broker(tmp_path / "b", ns.addr)
        async with RawBrokerClient(broker.addr) as client:
            got = [m for q in range(4) for m in await client.pull_all(TOPIC, q)]
            r = await client.invoke(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO))
        assert sorted(m.body for m in got) == [body(i) for i in range(COUNT) if i not in damaged]
        info = KVTable.decode(r.body).table
        assert info["storeProblems"] == "7"
        detail = info["storeProblemsDetail"]
        assert detail.count("BODYCRC") == 5 and detail.count("rewritten") == 2
        assert str(records[200].commit_log_offset) in detail
        shown = mq("broker", "status", broker.addr, "--json", "-n", ns.addr)
        assert shown.returncode == 0, shown.stderr
        doc = json.loads(shown.stdout)
        assert doc["storeProblems"] == 7 and len(doc["storeProblemsDetail"]) == 7
        table = mq("broker", "status", broker.addr, "-n", ns.addr, env={"COLUMNS": "200"})
        assert "7 store problem(s) found at startup" in table.stdout
    finally:
        broker.kill()
        ns.stop()

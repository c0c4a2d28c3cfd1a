"""ali-ons produces to and consumes from our broker; our client reads what it wrote."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from interop_support import node, registered

from mqcore.client import Admin, LitePullConsumer, Producer, make_message
from tests.support.inproc import running_broker, running_namesrv

pytestmark = pytest.mark.interop


async def test_alions_producer_to_mq_consumer(tmp_path: Path, alions_dir: Path) -> None:
    async with running_namesrv(tmp_path) as ns, running_broker(tmp_path, ns.listen_address):
        # ali-ons never auto-creates topics (a missing route is an error), so create it.
        async with Admin(namesrv=ns.listen_address) as admin:
            await registered(admin)
            await admin.create_topic("OnsIn", queues=4)
        results = await node(alions_dir, "produce", ns.listen_address, "OnsIn", "10")
        assert [r["status"] for r in results] == ["SEND_OK"] * 10
        consumer = LitePullConsumer("py-reads-ons", namesrv=ns.listen_address)
        consumer.subscribe("OnsIn", "TagA")
        got = []
        async with consumer:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 20
            while len(got) < 5 and loop.time() < deadline:
                got += await consumer.poll(1.0)
        assert sorted(m.body.decode() for m in got) == [f"ons-body-{i}" for i in range(0, 10, 2)]
        assert all(
            m.tags == "TagA" and m.keys == [f"ons-k{m.body.decode().rsplit('-', 1)[1]}"]
            for m in got
        )


async def test_mq_producer_to_alions_consumer(tmp_path: Path, alions_dir: Path) -> None:
    async with running_namesrv(tmp_path) as ns, running_broker(tmp_path, ns.listen_address):
        async with Admin(namesrv=ns.listen_address) as admin:
            await registered(admin)  # the first send needs the broker's route
        async with Producer("py-pg", namesrv=ns.listen_address) as producer:
            for i in range(8):
                await producer.send(
                    make_message(
                        "OnsOut",
                        f"py-body-{i}",
                        tags="T",
                        keys=f"py-k{i}",
                        properties={"n": str(i)},
                    )
                )
        seen = await node(alions_dir, "consume", ns.listen_address, "OnsOut", "ons-cg", "8")
        assert sorted(m["body"] for m in seen) == sorted(f"py-body-{i}" for i in range(8))
        assert all(m["tags"] == "T" for m in seen)
        assert {m["props"]["n"] for m in seen} == {str(i) for i in range(8)}

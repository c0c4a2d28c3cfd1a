"""Third-party clients consume from a slave while its master is down: ali-ons and the
Apache C++-core client (master/slave failover), and every acknowledged message of a topic
the master made a moment before it was killed -9 is read at the slave by ours, ali-ons and
the C++ client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from interop_support import node, registered, run_json_lines

from mqcore.client import Admin, LitePullConsumer, Producer, make_message
from mqcore.client.api import SendStatus
from mqcore.client.rebalance import ConsumeFromWhere
from mqcore.errors import MQError
from tests.support.inproc import running_ha_pair
from tests.support.polling import poll_messages, until
from tests.support.processes import BrokerProcess, start_broker, start_namesrv

pytestmark = pytest.mark.interop

TOPIC = "OnsHa"


@asynccontextmanager
async def master_down_slave_serving(tmp_path: Path) -> AsyncIterator[str]:
    """20 messages on a master and its slave, then the master stopped: the name server."""
    async with running_ha_pair(tmp_path) as (ns, master, slave):
        async with Admin(namesrv=ns.listen_address) as admin:
            await registered(admin)
            await admin.create_topic(TOPIC, queues=4)
        async with Producer("ha-pg", namesrv=ns.listen_address) as producer:
            for i in range(20):
                await producer.send(make_message(TOPIC, f"ha-body-{i}", tags="T"))
        await until(lambda: slave.store.max_phy_offset == master.store.max_phy_offset, 30)
        await until(lambda: slave.store.dispatch_behind_bytes() == 0, 10)  # then it serves
        await master.shutdown()  # unregisters: the route now has the slave only
        yield ns.listen_address


async def test_alions_consumes_from_the_slave_while_the_master_is_down(
    tmp_path: Path, alions_dir: Path
) -> None:
    async with master_down_slave_serving(tmp_path) as namesrv:
        seen = await asyncio.wait_for(
            node(alions_dir, "consume", namesrv, TOPIC, "ons-ha-cg", "20"), 90
        )
    assert sorted(m["body"] for m in seen) == sorted(f"ha-body-{i}" for i in range(20))


async def test_the_cpp_client_consumes_from_the_slave_while_the_master_is_down(
    tmp_path: Path, cpp_client: list[str]
) -> None:
    async with master_down_slave_serving(tmp_path) as namesrv:
        seen = await run_json_lines(
            cpp_client, "consume", namesrv, TOPIC, "cpp-ha-cg", "20", "60",
            env={"HOME": str(tmp_path)},  # the client's logs and offsets stay here
        )  # fmt: skip
    assert sorted(m["body"] for m in seen) == sorted(f"ha-body-{i}" for i in range(20))


FRESH = "HaFresh"
FRESH_COUNT = 60


async def test_a_topic_made_just_before_the_master_was_killed_is_read_at_the_slave(
    tmp_path: Path, alions_dir: Path, cpp_client: list[str]
) -> None:
    """A SYNC_MASTER and its slave as processes; a producer's first message auto-creates a
    topic, and within a second of it the master is killed -9, long before the slave's
    10 s metadata sync: every acknowledged message is read at the slave, by each client."""
    namesrv = start_namesrv(tmp_path / "ns")
    procs: list[BrokerProcess] = []
    try:
        master = start_broker(tmp_path / "m", namesrv.addr, brokerRole="SYNC_MASTER")
        procs.append(master)
        procs.append(start_broker(tmp_path / "s", namesrv.addr, brokerId="1", brokerRole="SLAVE"))
        await _acknowledged_then_master_killed(namesrv.addr, master)
        want = sorted(f"fresh-{i}" for i in range(FRESH_COUNT))

        consumer = LitePullConsumer(
            "py-ha-fresh", namesrv=namesrv.addr, consume_from_where=ConsumeFromWhere.FIRST
        )
        consumer.subscribe(FRESH, "*")
        async with consumer:
            got = await poll_messages(consumer, FRESH_COUNT, 60)
        assert sorted(m.body.decode() for m in got) == want

        ons = await node(
            alions_dir, "consume", namesrv.addr, FRESH, "ons-ha-fresh", str(FRESH_COUNT),
            timeout=90,
        )  # fmt: skip
        assert sorted(m["body"] for m in ons) == want

        cpp = await run_json_lines(
            cpp_client, "consume", namesrv.addr, FRESH, "cpp-ha-fresh", str(FRESH_COUNT), "60",
            env={"HOME": str(tmp_path)},  # the client's logs and offsets stay here
        )  # fmt: skip
        assert sorted(m["body"] for m in cpp) == want
    finally:
        for proc in procs:
            proc.stop()
        namesrv.stop()


async def _acknowledged_then_master_killed(namesrv: str, master: BrokerProcess) -> None:
    """Send FRESH_COUNT messages to a new topic, each acknowledged by the slave too
    (SEND_OK of a SYNC_MASTER), then kill -9 the master within a second of the first."""
    async with Admin(namesrv=namesrv) as admin:

        async def pair_registered() -> bool:
            brokers = (await admin.cluster_info()).broker_addr_table.get("broker-a")
            return brokers is not None and set(brokers.broker_addrs) == {0, 1}

        async def routed() -> bool:
            try:
                await admin.topic_route(FRESH)
            except MQError:
                return False
            return True

        await until(pair_registered, 30, "master and slave registered")
        async with Producer("ha-fresh-pg", namesrv=namesrv) as producer:

            async def slave_acknowledges() -> bool:
                # SYNC_MASTER answers SLAVE_NOT_AVAILABLE until the slave has connected
                result = await producer.send(make_message("HaWarmUp", b"warm"))
                return result.status is SendStatus.SEND_OK

            await until(slave_acknowledges, 30, "the slave acknowledging")
            loop = asyncio.get_running_loop()
            first = loop.time()
            for i in range(FRESH_COUNT):
                result = await producer.send(make_message(FRESH, f"fresh-{i}", tags="F"))
                assert result.status is SendStatus.SEND_OK, result  # the slave has it
            await until(routed, 5, "the name server routing the new topic")
            master.kill()
            elapsed = loop.time() - first
    assert elapsed < 1.0, f"killed {elapsed:.2f} s after the first send, not within 1 s"

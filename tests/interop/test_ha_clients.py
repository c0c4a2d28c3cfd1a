"""Third-party clients consume from a slave while its master is down: ali-ons and the
Apache C++-core client (master/slave failover)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from interop_support import node, registered, run_json_lines

from mqcore.client import Admin, Producer, make_message
from tests.support.inproc import running_ha_pair
from tests.support.polling import until

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
        assert slave.slave_sync is not None
        await slave.slave_sync.sync_all()  # the topic config (SlaveSynchronize, within 10 s)
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

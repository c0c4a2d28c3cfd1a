"""Third-party clients after a controller-mode failover: the master of broker-a goes away,
the controller makes the in-sync slave master (brokerId 0 in the route), and ali-ons and
the Apache C++-core client send to it and read every message acknowledged before and
after, with nothing changed on their side."""

from __future__ import annotations

from pathlib import Path

import pytest
from interop_support import node, run_json_lines

from mqcore.broker.controller import BrokerController
from mqcore.client import Admin, Producer, make_message
from mqcore.client.api import SendStatus
from mqcore.store.store_config import BrokerRole
from tests.support.inproc import controller_replica, namesrv_hosting_controller
from tests.support.polling import until

pytestmark = [
    pytest.mark.interop,
    pytest.mark.timeout(180),
    pytest.mark.filterwarnings(
        r"ignore:Exception ignored in. <_io.FileIO name='[^']*raft\.journal\.meta'"
        ":pytest.PytestUnraisableExceptionWarning"
    ),
]

TOPIC = "CtlClients"


def is_master(broker: BrokerController) -> bool:
    r = broker.replicas
    return r is not None and r.is_master and broker.store_config.broker_role is not BrokerRole.SLAVE


async def test_alions_and_the_cpp_client_follow_a_failover(
    tmp_path: Path, alions_dir: Path, cpp_client: list[str]
) -> None:
    ns = namesrv_hosting_controller(tmp_path)
    await ns.start()
    addr = ns.listen_address
    a = controller_replica(tmp_path / "a", addr)
    b = controller_replica(tmp_path / "b", addr)
    try:
        await a.start()
        await until(lambda: is_master(a), 10, "a elected")
        await b.start()
        assert a.replicas is not None and b.replicas is not None
        await until(
            lambda: len(a.replicas.sync_state_set) == 2 if a.replicas else False,
            15,
            "b in sync",
        )
        async with Producer("ctl-clients-pg", namesrv=addr) as producer:
            for i in range(10):
                result = await producer.send(make_message(TOPIC, f"before-{i}"))
                assert result.status is SendStatus.SEND_OK, result
        await a.shutdown()
        await until(lambda: is_master(b), 10, "b made master")

        async def routed_to_b() -> bool:
            async with Admin(addr) as admin:
                route = await admin.topic_route(TOPIC)
            return any(bd.broker_addrs.get(0) == b.broker_addr for bd in route.broker_datas)

        await until(routed_to_b, 10, "the route naming b as brokerId 0")

        sent = await node(alions_dir, "produce", addr, TOPIC, "5")
        assert [r["status"] for r in sent] == ["SEND_OK"] * 5
        cpp_sent = await run_json_lines(
            cpp_client, "produce-try", addr, TOPIC, "5", env={"HOME": str(tmp_path)}
        )
        assert [r.get("status") for r in cpp_sent] == [0] * 5, cpp_sent  # SEND_OK

        want = sorted(
            [f"before-{i}" for i in range(10)]
            + [f"ons-body-{i}" for i in range(5)]
            + [f"cpp-body-{i}" for i in range(5)]
        )
        seen = await node(alions_dir, "consume", addr, TOPIC, "ons-ctl-cg", "20", timeout=90)
        assert sorted(m["body"] for m in seen) == want
        cpp_seen = await run_json_lines(
            cpp_client, "consume", addr, TOPIC, "cpp-ctl-cg", "20", "60",
            env={"HOME": str(tmp_path)},
        )  # fmt: skip
        assert sorted(m["body"] for m in cpp_seen) == want
    finally:
        await a.shutdown()
        await b.shutdown()
        await ns.shutdown()

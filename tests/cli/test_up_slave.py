"""`mq up --slave`: a master/slave pair from one command (a slave process per broker
name), with `--broker-role SYNC_MASTER` for the master: the pair shows in
`mq cluster list`, a send is acknowledged only once the slave has it, and the slave's own
store then holds the message, indexed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from mqcli.commands.up import _extra_configs, _slave_config
from mqcore.broker.config import BrokerConfig
from mqcore.store.store_config import BrokerRole
from tests.cli.up_support import mq_up
from tests.support.cluster import Cluster, json_lines
from tests.support.polling import until_sync


def _rows(cluster: Cluster) -> dict[int, dict[str, Any]]:
    rows: Any = cluster.json("cluster", "list")
    return {r["brokerId"]: r for r in rows}


def test_up_slave_runs_a_pair_that_replicates_what_the_master_acknowledged(
    tmp_path: Path,
) -> None:
    with mq_up(tmp_path, "--slave", "--broker-role", "SYNC_MASTER") as (cluster, proc):
        assert len(cluster.brokers) == 2
        # the slave registers, connects to its master's HA port; then a SYNC_MASTER
        # can acknowledge sends
        until_sync(
            lambda: (
                len(rows := _rows(cluster)) == 2
                and rows[0].get("haConnectionCount") == 1
                and rows[1].get("haMasterConnected") is True
            ),
            timeout=40,
            what="the slave to register and connect",
        )
        rows = _rows(cluster)
        master, slave = rows[0], rows[1]
        assert master["broker"] == slave["broker"] and master["cluster"] == slave["cluster"]
        assert (master["role"], slave["role"]) == ("SYNC_MASTER", "SLAVE")
        assert {master["addr"], slave["addr"]} == set(cluster.brokers.values())
        before = master["commitLogMaxOffset"]

        sent: Any = cluster.json(
            "produce", "-t", "HaOrders", "--key", "ha-k1", "--body", "replicated"
        )
        # a SYNC_MASTER says SEND_OK only once the slave has the message
        assert sent["sendStatus"] == "SEND_OK", sent
        until_sync(
            lambda: (
                (r := _rows(cluster))[0]["commitLogMaxOffset"] > before
                and r[1].get("commitLogMaxOffset") == r[0]["commitLogMaxOffset"]
                and r[1]["slaveLagBytes"] == 0
            ),
            timeout=30,
            what="the slave to catch up",
        )
        text = cluster.ok("cluster", "list")
        assert "SYNC_MASTER" in text and "SLAVE" in text and "connected" in text
        status = orjson.loads(cluster.ok("broker", "status", slave["addr"], "--json"))
        assert status["role"] == "SLAVE" and status["slaveLagBytes"] == 0

        # The slave's own store (read offline, as on a live broker) holds the message,
        # dispatched into its index.
        slave_store = tmp_path / f"store-{slave['broker']}-s"
        assert (slave_store / "commitlog").is_dir()
        until_sync(
            lambda: (
                cluster.mq(
                    "store", "query", "HaOrders", "ha-k1", "--store", str(slave_store)
                ).returncode
                == 0
            ),
            timeout=20,
            what="the slave's index to hold the key",
        )
        (copy,) = json_lines(
            cluster.ok("store", "query", "HaOrders", "ha-k1", "--store", str(slave_store), "-j")
        )
        assert copy["body"] == "replicated" and copy["uniqKey"] == sent["msgId"]
        assert (copy["queueId"], copy["queueOffset"]) == (sent["queueId"], sent["queueOffset"])
        assert copy["msgId"] == sent["offsetMsgId"]  # same bytes at the same commit log offset
    assert proc.returncode == 0
    assert not (slave_store / "abort").exists()  # the slave was stopped cleanly too


def test_up_slave_and_brokers_give_every_broker_name_a_slave_on_port_plus_5() -> None:
    first = BrokerConfig(broker_name="broker-a", listen_port=10911, broker_ip1="127.0.0.1")
    store = Path("/data/store")
    masters = _extra_configs(first, store, 3, BrokerRole.SYNC_MASTER)
    assert [(c.broker_name, c.listen_port) for c, _ in masters] == [
        ("broker-b", 10921),
        ("broker-c", 10931),
    ]
    assert all(s.broker_role is BrokerRole.SYNC_MASTER for _, s in masters)
    slaves = [_slave_config(c, store) for c in [first, *(c for c, _ in masters)]]
    assert [(c.broker_name, c.broker_id, c.listen_port) for c, _ in slaves] == [
        ("broker-a", 1, 10916),
        ("broker-b", 1, 10926),
        ("broker-c", 1, 10936),
    ]
    assert [s.store_path_root_dir for _, s in slaves] == [
        "/data/store-broker-a-s",
        "/data/store-broker-b-s",
        "/data/store-broker-c-s",
    ]
    assert all(s.broker_role is BrokerRole.SLAVE for _, s in slaves)
    # no slave port is another broker's port, fast port (-2) or HA port (+1)
    taken = {p + d for p in (10911, 10921, 10931) for d in (-2, 0, 1)}
    assert not taken & {p + d for p in (10916, 10926, 10936) for d in (-2, 0)}
    any_port = BrokerConfig(broker_name="x", listen_port=0, broker_ip1="127.0.0.1")
    assert _slave_config(any_port, store)[0].listen_port == 0


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (("--slave", "--broker-port", "65531"), "would pass 65535"),
        (("--broker-role", "SLAVE"), "--broker-role"),
    ],
)
def test_up_slave_wrong_input(tmp_path: Path, args: tuple[str, ...], expect: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "up", "--store", str(tmp_path / "s"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path), "COLUMNS": "200"},
    )
    assert done.returncode == 2 and expect in done.stderr, done.stderr
    assert "Traceback" not in done.stderr

"""Role, HA connection state and slave lag in `mq cluster list` and `mq broker status`,
from runtime tables with the keys `mq` brokers add and without them (RocketMQ 4.9.8),
served by the fakes of status_tables.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import orjson
import pytest
from status_tables import StatusBroker, StatusCluster, runtime, serve_status_tables

from mqcli.ha import ha_state, slave_lag

MIB = 1024 * 1024


def mq(cluster: StatusCluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "COLUMNS": "250",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent-home",
        "MQ_NAMESRV_ADDR": cluster.namesrv,
        **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
    }
    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done


def by_key(rows: Any) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["broker"], r["brokerId"]): r for r in rows}


def status_docs(cluster: StatusCluster, *args: str) -> dict[tuple[str, int], dict[str, Any]]:
    out = mq(cluster, "broker", "status", *args, "--json").stdout
    return by_key(orjson.loads(line) for line in out.splitlines() if line.strip())


def test_ha_state_reads_mq_keys_and_derives_the_rest() -> None:
    master = ha_state(
        {"brokerRole": "SYNC_MASTER", "haConnectionCount": "2", "haPush2SlaveMaxOffset": "90",
         "commitLogMaxOffset": "100"},
        0,
    )  # fmt: skip
    assert (master.role, master.connections, master.acked_offset) == ("SYNC_MASTER", 2, 90)
    assert master.summary() == "2 slaves" and not master.alarming and master.lag_bytes is None
    alone = ha_state({"brokerRole": "SYNC_MASTER", "haConnectionCount": "0"}, 0)
    assert alone.summary() == "no slave" and alone.alarming
    slave = ha_state(
        {"brokerRole": "SLAVE", "haMasterAddress": "h:10912", "haMasterConnected": "false",
         "commitLogMaxOffset": "40"},
        1,
        master_max=100,
    )  # fmt: skip
    assert (slave.role, slave.master_addr, slave.master_connected) == ("SLAVE", "h:10912", False)
    assert slave.lag_bytes == 60 and slave.summary() == "disconnected" and slave.alarming
    # RocketMQ 4.9.8: no role, no HA keys; garbage reads as unknown, never raises
    assert ha_state({}, 0).role == "MASTER" and ha_state({}, 0).summary() == "-"
    rocket = ha_state({"commitLogMaxOffset": "7", "haConnectionCount": "x"}, 2, master_max=7)
    assert (rocket.role, rocket.lag_bytes, rocket.summary()) == ("SLAVE", 0, "-")
    assert not rocket.alarming and rocket.connections is None
    assert ha_state({"brokerRole": "bogus"}, 1).role == "SLAVE"
    assert slave_lag(5, 9) == 0 and slave_lag(None, 9) is None and slave_lag(9, None) is None


@pytest.fixture(scope="module")
def mq_pair() -> Any:
    """broker-a: a SYNC_MASTER with its slave 1 MiB behind; broker-b: an ASYNC_MASTER
    whose slave lost its master; broker-c: a slave whose master is down."""
    with serve_status_tables(
        StatusBroker("broker-a", 0, runtime(5 * MIB, brokerRole="SYNC_MASTER",
                   haConnectionCount="1", haPush2SlaveMaxOffset=str(4 * MIB))),
        StatusBroker("broker-a", 1, runtime(4 * MIB, brokerRole="SLAVE",
                   haMasterAddress="127.0.0.1:10912", haMasterConnected="true")),
        StatusBroker("broker-b", 0, runtime(100, brokerRole="ASYNC_MASTER",
                   haConnectionCount="0", haPush2SlaveMaxOffset="0")),
        StatusBroker("broker-b", 1, runtime(100, brokerRole="SLAVE",
                   haMasterAddress="127.0.0.1:10922", haMasterConnected="false")),
        StatusBroker("broker-c", 0, None),
        StatusBroker("broker-c", 1, runtime(300, brokerRole="SLAVE", haMasterConnected="false")),
    ) as cluster:  # fmt: skip
        yield cluster


def test_cluster_list_json_has_role_ha_state_and_lag(mq_pair: StatusCluster) -> None:
    rows = by_key(orjson.loads(mq(mq_pair, "cluster", "list", "--json").stdout))
    a0, a1 = rows[("broker-a", 0)], rows[("broker-a", 1)]
    assert a0["role"] == "SYNC_MASTER" and a0["haConnectionCount"] == 1
    assert a0["haPush2SlaveMaxOffset"] == 4 * MIB and a0["slaveLagBytes"] is None
    assert a0["commitLogMaxOffset"] == 5 * MIB and a0["haMasterConnected"] is None
    assert a1["role"] == "SLAVE" and a1["slaveLagBytes"] == MIB
    assert a1["haMasterAddress"] == "127.0.0.1:10912" and a1["haMasterConnected"] is True
    assert rows[("broker-b", 1)]["slaveLagBytes"] == 0
    assert rows[("broker-b", 1)]["haMasterConnected"] is False
    down = rows[("broker-c", 0)]
    assert down["up"] is False and down["role"] == "MASTER" and "error" in down
    orphan = rows[("broker-c", 1)]
    assert orphan["up"] is True and orphan["slaveLagBytes"] is None
    # what the command printed before HA is all still there
    for key in ("cluster", "addr", "version", "inTps", "todayIn", "uptimeMs"):
        assert key in a1, key


def test_cluster_list_table_shows_role_ha_and_lag(mq_pair: StatusCluster) -> None:
    text = mq(mq_pair, "cluster", "list", "-o", "table").stdout
    for needle in ("ROLE", "HA", "SLAVE-LAG", "SYNC_MASTER", "ASYNC_MASTER"):
        assert needle in text, needle
    lines = {
        (line.split("│")[2].strip(), line.split("│")[3].strip()): line
        for line in text.splitlines()
        if line.count("│") > 10
    }
    assert "1 slave" in lines[("broker-a", "0")]
    assert "connected" in lines[("broker-a", "1")] and "1.0 MiB" in lines[("broker-a", "1")]
    assert "no slave" in lines[("broker-b", "0")]
    assert "disconnected" in lines[("broker-b", "1")] and "0 B" in lines[("broker-b", "1")]
    assert "down" in lines[("broker-c", "0")]


def test_broker_status_of_a_slave_shows_its_master_and_lag(mq_pair: StatusCluster) -> None:
    """Asked for the slave alone, status still finds the lag (it asks the master)."""
    docs = status_docs(mq_pair, mq_pair.addr("broker-a", 1))
    assert list(docs) == [("broker-a", 1)]
    doc = docs[("broker-a", 1)]
    assert doc["role"] == "SLAVE" and doc["slaveLagBytes"] == MIB
    assert doc["haMasterAddress"] == "127.0.0.1:10912" and doc["haMasterConnected"] is True
    text = mq(mq_pair, "broker", "status", mq_pair.addr("broker-a", 1)).stdout
    assert "master 127.0.0.1:10912, connected, 1.0 MiB behind" in text
    assert "slave 1" in text
    text = mq(mq_pair, "broker", "status", mq_pair.addr("broker-b", 1)).stdout
    assert "DISCONNECTED, 0 B behind" in text


def test_broker_status_of_masters_shows_slaves_and_acknowledged_offset(
    mq_pair: StatusCluster,
) -> None:
    docs = status_docs(mq_pair, "--name", "broker-a")
    assert docs[("broker-a", 0)]["haConnectionCount"] == 1
    assert docs[("broker-a", 0)]["haPush2SlaveMaxOffset"] == 4 * MIB
    assert docs[("broker-a", 1)]["slaveLagBytes"] == MIB
    text = mq(mq_pair, "broker", "status", mq_pair.addr("broker-a", 0)).stdout
    assert "SYNC_MASTER" in text
    assert f"1 slave connected, acknowledged up to {4 * MIB} (1.0 MiB behind)" in text
    text = mq(mq_pair, "broker", "status", mq_pair.addr("broker-b", 0)).stdout
    assert "0 slaves connected" in text and "SLAVE_NOT_AVAILABLE" not in text


def test_a_slave_whose_master_is_down_has_no_lag(mq_pair: StatusCluster) -> None:
    doc = status_docs(mq_pair, mq_pair.addr("broker-c", 1))[("broker-c", 1)]
    assert doc["role"] == "SLAVE" and doc["slaveLagBytes"] is None
    assert doc["haMasterConnected"] is False


@pytest.fixture(scope="module")
def rocketmq_pair() -> Any:
    """What RocketMQ 4.9.8 brokers report: no role and no HA keys at all."""
    with serve_status_tables(
        StatusBroker("broker-a", 0, runtime(2048)),
        StatusBroker("broker-a", 1, runtime(1024)),
    ) as cluster:
        yield cluster


def test_rocketmq_brokers_show_dashes_and_a_computed_lag(rocketmq_pair: StatusCluster) -> None:
    rows = by_key(orjson.loads(mq(rocketmq_pair, "cluster", "list", "--json").stdout))
    master, slave = rows[("broker-a", 0)], rows[("broker-a", 1)]
    assert master["role"] == "MASTER" and slave["role"] == "SLAVE"
    assert master["haConnectionCount"] is None and slave["haMasterConnected"] is None
    assert slave["slaveLagBytes"] == 1024
    text = mq(rocketmq_pair, "cluster", "list", "-o", "table").stdout
    (slave_line,) = [x for x in text.splitlines() if "│ SLAVE" in x]
    assert "1.0 KiB" in slave_line and "│ -" in slave_line
    docs = status_docs(rocketmq_pair)
    assert docs[("broker-a", 1)]["slaveLagBytes"] == 1024
    assert docs[("broker-a", 0)]["role"] == "MASTER"
    text = mq(rocketmq_pair, "broker", "status", rocketmq_pair.addr("broker-a", 1)).stdout
    assert "1.0 KiB behind" in text
    text = mq(rocketmq_pair, "broker", "status", rocketmq_pair.addr("broker-a", 0)).stdout
    assert re.search(r"^HA +-$", text, re.M) and "Traceback" not in text
    assert re.search(r"^loop lag +-$", text, re.M)  # RocketMQ has no such keys
    assert docs[("broker-a", 0)]["loopLag"] is None

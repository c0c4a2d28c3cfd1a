"""Controller mode (RocketMQ 5) in `mq cluster list` and `mq broker status`: the master
epoch and the in-sync set the brokers report (controllerBrokerId, masterEpoch,
masterBrokerId, syncStateSet, syncStateSetEpoch), as columns that show only when some
broker reports them (always with -o wide) and as JSON fields, served by the fakes of
status_tables.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import orjson
import pytest
from status_tables import StatusBroker, StatusCluster, runtime, serve_status_tables

from mqcli.commands.cluster import in_sync_cell, shows_replicas
from mqcli.ha import ha_state, in_sync, replica_state


def mq(cluster: StatusCluster, *args: str, columns: int = 250) -> str:
    env = {
        "COLUMNS": str(columns),
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
    return done.stdout


def by_key(rows: Any) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["broker"], r["brokerId"]): r for r in rows}


def replica(role: str, me: int, master: int, sync: str, epoch: int = 3) -> dict[str, str]:
    """A runtime table of a broker in controller mode (its id at the controller ``me``,
    the master ``master``, the in-sync set ``sync``, master epoch ``epoch``)."""
    ha = (
        {"haMasterAddress": "127.0.0.1:10912", "haMasterConnected": "true"}
        if role == "SLAVE"
        else {"haConnectionCount": "2", "haPush2SlaveMaxOffset": "1000"}
    )
    return runtime(
        1000,
        brokerRole=role,
        controllerBrokerId=str(me),
        masterEpoch=str(epoch),
        masterBrokerId=str(master),
        syncStateSet=sync,
        syncStateSetEpoch="4",
        **ha,
    )


@pytest.fixture(scope="module")
def replicas() -> Any:
    """broker-a in controller mode: master 1 at epoch 3 with 1 and 2 in sync, slave 2
    (in the set), slave 3 (not in it); broker-b: a plain master (no controller keys)."""
    with serve_status_tables(
        StatusBroker("broker-a", 0, replica("SYNC_MASTER", 1, 1, "1,2")),
        StatusBroker("broker-a", 2, replica("SLAVE", 2, 1, "")),
        StatusBroker("broker-a", 3, replica("SLAVE", 3, 1, "")),
        StatusBroker("broker-b", 0, runtime(50, brokerRole="ASYNC_MASTER",
                     haConnectionCount="0", haPush2SlaveMaxOffset="0")),
    ) as cluster:  # fmt: skip
        yield cluster


@pytest.fixture(scope="module")
def plain() -> Any:
    """A master/slave pair of 4.x, no controller mode."""
    with serve_status_tables(
        StatusBroker("broker-a", 0, runtime(100, brokerRole="ASYNC_MASTER",
                     haConnectionCount="1", haPush2SlaveMaxOffset="100")),
        StatusBroker("broker-a", 1, runtime(100, brokerRole="SLAVE", haMasterConnected="true")),
    ) as cluster:  # fmt: skip
        yield cluster


def test_replica_state_reads_the_controller_keys() -> None:
    master = replica_state({"controllerBrokerId": "1", "masterEpoch": "3",
                            "masterBrokerId": "1", "syncStateSet": "2,1",
                            "syncStateSetEpoch": "4"})  # fmt: skip
    assert master is not None and master.is_master
    assert (master.epoch, master.sync_state_set, master.sync_state_set_epoch) == (3, (1, 2), 4)
    assert master.in_sync_text() == "1,2"
    slave = replica_state({"controllerBrokerId": "2", "masterEpoch": "3", "masterBrokerId": "1"})
    assert slave is not None and not slave.is_master and slave.sync_state_set is None
    assert in_sync(slave, master) is True
    out = replica_state({"controllerBrokerId": "3", "masterEpoch": "3", "masterBrokerId": "1"})
    assert in_sync(out, master) is False
    # a slave of another epoch, one without an id yet, or no master known: unknown
    old = replica_state({"controllerBrokerId": "2", "masterEpoch": "2", "masterBrokerId": "1"})
    assert in_sync(old, master) is None
    assert in_sync(replica_state({"controllerBrokerId": "-1", "masterEpoch": "0"}), master) is None
    assert in_sync(slave, None) is None
    # not in controller mode (4.x, RocketMQ itself), or garbage: nothing, never raises
    assert replica_state({"brokerRole": "SLAVE"}) is None
    assert replica_state({"masterEpoch": "x"}) is None
    bad = replica_state({"masterEpoch": "1", "syncStateSet": "1,x"})
    assert bad is not None and bad.sync_state_set is None and bad.in_sync_text() == "-"


def test_ha_state_carries_the_replica_state_and_whether_a_slave_is_in_sync() -> None:
    master_rt = replica("SYNC_MASTER", 1, 1, "1,2")
    master = ha_state(master_rt, 0)
    assert master.epoch_text == "3" and master.in_sync_text == "1,2"
    doc = master.to_json()
    assert doc["masterEpoch"] == 3 and doc["syncStateSet"] == [1, 2]
    assert doc["controllerBrokerId"] == doc["masterBrokerId"] == 1 and doc["inSync"] is None
    slave = ha_state(replica("SLAVE", 2, 1, ""), 2, 1000, master_rt)
    assert slave.in_sync is True and slave.in_sync_text == "yes"
    lagging = ha_state(replica("SLAVE", 3, 1, ""), 3, 1000, master_rt)
    assert lagging.in_sync is False and lagging.in_sync_text == "no"
    assert ha_state(replica("SLAVE", 3, 1, ""), 3).in_sync_text == "-"  # master unknown
    plain = ha_state({"brokerRole": "ASYNC_MASTER"}, 0)
    assert plain.replica is None and plain.epoch_text == plain.in_sync_text == "-"
    assert plain.to_json()["masterEpoch"] is None and plain.to_json()["syncStateSet"] is None


def test_the_columns_show_for_controller_mode_or_wide_output() -> None:
    assert shows_replicas([{"masterEpoch": 0}, {"masterEpoch": None}], "table")
    assert not shows_replicas([{"masterEpoch": None}, {"up": False}], "table")
    assert shows_replicas([{"masterEpoch": None}], "wide")
    assert in_sync_cell({"masterEpoch": 2, "role": "SYNC_MASTER", "syncStateSet": [1]}) == "1"
    assert in_sync_cell({"masterEpoch": 2, "role": "SLAVE", "inSync": False}) == "[red]no[/]"
    assert in_sync_cell({"masterEpoch": None, "role": "SLAVE", "inSync": None}) == "-"


def test_cluster_list_json_has_the_epoch_and_in_sync_set(replicas: StatusCluster) -> None:
    rows = by_key(orjson.loads(mq(replicas, "cluster", "list", "--json")))
    master, in_set, out_of_set = rows[("broker-a", 0)], rows[("broker-a", 2)], rows[("broker-a", 3)]
    assert master["masterEpoch"] == 3 and master["syncStateSet"] == [1, 2]
    assert master["controllerBrokerId"] == master["masterBrokerId"] == 1
    assert master["syncStateSetEpoch"] == 4
    assert (in_set["controllerBrokerId"], in_set["inSync"]) == (2, True)
    assert (out_of_set["controllerBrokerId"], out_of_set["inSync"]) == (3, False)
    assert all(r["masterBrokerId"] == 1 for r in (in_set, out_of_set))
    other = rows[("broker-b", 0)]
    assert other["masterEpoch"] is None and other["syncStateSet"] is None
    assert other["inSync"] is None


def _rows_of(text: str) -> dict[tuple[str, str], list[str]]:
    """Table rows by (broker, bid): their cells, stripped."""
    out = {}
    for line in text.splitlines():
        if line.count("│") > 10:
            cells = [c.strip() for c in line.split("│")[1:-1]]
            out[(cells[1], cells[2])] = cells
    return out


def test_cluster_list_table_shows_epoch_and_in_sync(replicas: StatusCluster) -> None:
    text = mq(replicas, "cluster", "list", "-o", "table")
    header = next(x for x in text.splitlines() if "CLUSTER" in x)
    cells = [c.strip() for c in header.split("┃")[1:-1]]
    assert cells[-4:] == ["HA", "SLAVE-LAG", "EPOCH", "IN-SYNC"]
    rows = _rows_of(text)
    assert rows[("broker-a", "0")][-2:] == ["3", "1,2"]
    assert rows[("broker-a", "2")][-2:] == ["3", "yes"]
    assert rows[("broker-a", "3")][-2:] == ["3", "no"]
    assert rows[("broker-b", "0")][-2:] == ["-", "-"]
    # in a pipe: plain columns, every value whole
    plain = mq(replicas, "cluster", "list")
    assert re.search(r"\bEPOCH\s+IN-SYNC$", plain.splitlines()[0])
    assert re.search(r"\b3\s+1,2$", next(x for x in plain.splitlines() if " 0 " in x))


def test_a_narrow_table_never_cuts_the_in_sync_set(replicas: StatusCluster) -> None:
    """At 120 columns the text columns give way; the address, epoch and set do not."""
    text = mq(replicas, "cluster", "list", "-o", "table", columns=120)
    for bid, set_cell in ((0, "1,2"), (2, "yes"), (3, "no")):
        addr = replicas.addr("broker-a", bid)
        (line,) = [x for x in text.splitlines() if addr in x]
        assert [c.strip() for c in line.split("│")[-3:-1]] == ["3", set_cell], line
    assert max(len(x) for x in text.splitlines()) <= 120


def test_without_controller_mode_the_columns_stay_away_but_wide_shows_them(
    plain: StatusCluster,
) -> None:
    text = mq(plain, "cluster", "list", "-o", "table")
    assert "EPOCH" not in text and "IN-SYNC" not in text
    wide = mq(plain, "cluster", "list", "-o", "wide")
    assert "EPOCH" in wide and "IN-SYNC" in wide
    assert _rows_of(wide)[("broker-a", "1")][-2:] == ["-", "-"]
    assert "EPOCH" not in mq(plain, "cluster", "list")


def test_broker_status_shows_the_controller_line(replicas: StatusCluster) -> None:
    text = mq(replicas, "broker", "status", replicas.addr("broker-a", 0))
    assert re.search(r"controller +replica 1, epoch 3, master, in-sync set 1,2 \(epoch 4\)", text)
    text = mq(replicas, "broker", "status", replicas.addr("broker-a", 3))
    assert re.search(r"controller +replica 3, epoch 3, master is replica 1, NOT in sync", text)
    out = mq(replicas, "broker", "status", replicas.addr("broker-a", 2), "--json")
    doc = orjson.loads(out)
    assert doc["masterEpoch"] == 3 and doc["inSync"] is True and doc["controllerBrokerId"] == 2
    text = mq(replicas, "broker", "status", replicas.addr("broker-b", 0))
    assert "controller" not in text and "epoch" not in text

"""`mq up --replicas N`: RocketMQ 5's controller mode from one command. The name server
hosts a one-node controller and N brokers of broker-a let it choose their master: one
of them is master, the others its slaves in its in-sync set, `mq produce` is
acknowledged, `mq cluster list` shows the epoch and the set, and Ctrl-C stops them all
cleanly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mqcli.commands.up import HEARTBEAT_TIMEOUT_MS, ReplicaTiming, _replica_configs
from mqcore.broker.config import BrokerConfig
from mqcore.store.store_config import BrokerRole
from tests.cli.up_support import mq_up
from tests.support.cluster import Cluster
from tests.support.polling import until_sync

pytestmark = pytest.mark.timeout(240)


def _rows(cluster: Cluster) -> list[dict[str, Any]]:
    rows: Any = cluster.json("cluster", "list")
    return list(rows)


def _settled(rows: list[dict[str, Any]], replicas: int) -> bool:
    """Every replica registered, one master, and every slave in its in-sync set."""
    masters = [r for r in rows if r["brokerId"] == 0]
    slaves = [r for r in rows if r["brokerId"] != 0]
    return (
        len(rows) == replicas
        and all(r["up"] for r in rows)
        and len(masters) == 1
        and masters[0]["masterEpoch"] is not None
        and masters[0]["masterEpoch"] >= 1
        and len(masters[0]["syncStateSet"] or []) == replicas
        and all(s["inSync"] is True for s in slaves)
    )


def _check_settled_cluster(cluster: Cluster, replicas: int, run: int) -> None:
    """One master, every slave in its in-sync set; sends acknowledged and replicated;
    the epoch and the set in the table."""
    until_sync(
        lambda: _settled(_rows(cluster), replicas),
        timeout=60,
        what=lambda: f"one master and its slaves in sync: {_rows(cluster)!r}",
        interval=0.5,
    )
    for i in range(3):
        sent: Any = cluster.json("produce", "-t", "Replicated", "--body", f"run{run}-m{i}")
        assert sent["sendStatus"] == "SEND_OK", sent

    rows = _rows(cluster)
    (master,) = [r for r in rows if r["brokerId"] == 0]
    slaves = [r for r in rows if r["brokerId"] != 0]
    assert {r["broker"] for r in rows} == {"broker-a"}
    assert {r["addr"] for r in rows} == set(cluster.brokers.values())
    assert master["controllerBrokerId"] == master["masterBrokerId"]
    ids = {master["controllerBrokerId"], *(s["controllerBrokerId"] for s in slaves)}
    assert master["syncStateSet"] == sorted(ids) and len(ids) == replicas
    assert master["role"] != "SLAVE" and {s["role"] for s in slaves} == {"SLAVE"}
    epoch = master["masterEpoch"]
    assert all(s["masterEpoch"] == epoch for s in slaves)
    assert all(s["masterBrokerId"] == master["controllerBrokerId"] for s in slaves)
    until_sync(  # the slaves have what was acknowledged
        lambda: all(r["slaveLagBytes"] == 0 for r in _rows(cluster) if r["brokerId"]),
        timeout=30,
        what="the slaves to catch up",
    )
    text = cluster.ok("cluster", "list", "-o", "wide")
    assert "EPOCH" in text and "IN-SYNC" in text
    assert ",".join(map(str, sorted(ids))) in text


def test_up_replicas_elects_a_master_that_acknowledges_and_stops_cleanly(
    tmp_path: Path,
) -> None:
    """Started twice on one store (the controller's journal and the replicas' ids kept),
    each time stopped by a Ctrl-C to the whole process group, as on a terminal."""
    store = tmp_path / "store"
    for run in (1, 2):
        args = ("--replicas", "3", "--heartbeat-timeout", "2000")
        with mq_up(tmp_path, *args, store=store, ctrl_c_group=True) as (cluster, proc):
            assert len(cluster.brokers) == 3
            assert len(set(cluster.brokers.values())) == 3  # each its own address
            _check_settled_cluster(cluster, 3, run)
        assert proc.returncode == 0, run
        assert (store / "controller").is_dir()  # the Raft journal
        for k in range(3):
            replica = store / f"broker-a-r{k}"
            assert (replica / "commitlog").is_dir() and (replica / "brokerIdentity").is_file()
            assert not (replica / "abort").exists(), (run, replica)  # stopped cleanly
    assert "Traceback" not in (tmp_path / "up-stderr.txt").read_text()


def test_replica_configs_lay_out_ports_and_stores_as_slave_pairs_do() -> None:
    first = BrokerConfig(
        broker_name="broker-a",
        listen_port=10911,
        broker_ip1="127.0.0.1",
        namesrv_addr="127.0.0.1:9876",
    )
    timing = ReplicaTiming.for_timeout(HEARTBEAT_TIMEOUT_MS)
    configs = _replica_configs(first, Path("/data/store"), 3, timing)
    assert [(c.broker_name, c.listen_port) for c, _ in configs] == [
        ("broker-a", 10911),
        ("broker-a", 10916),
        ("broker-a", 10921),
    ]
    assert [s.store_path_root_dir for _, s in configs] == [
        "/data/store/broker-a-r0",
        "/data/store/broker-a-r1",
        "/data/store/broker-a-r2",
    ]
    for config, store in configs:
        assert config.enable_controller_mode and config.controller_addr == "127.0.0.1:9876"
        assert config.controller_heart_beat_timeout_mills == 10_000
        assert config.broker_heartbeat_interval == 1000  # RocketMQ 5's defaults
        assert config.sync_broker_metadata_period == config.check_sync_state_set_period == 5000
        assert store.broker_role is BrokerRole.ASYNC_MASTER  # the controller decides
    # no replica's ports (fast -2, listen, HA +1) meet another's
    taken = [p + d for p in (10911, 10916, 10921) for d in (-2, 0, 1)]
    assert len(taken) == len(set(taken))
    any_port = BrokerConfig(broker_name="x", listen_port=0, broker_ip1="127.0.0.1")
    assert {c.listen_port for c, _ in _replica_configs(any_port, Path("/s"), 2, timing)} == {0}


def test_a_shorter_heartbeat_timeout_shortens_the_other_periods() -> None:
    assert ReplicaTiming.for_timeout(10_000) == ReplicaTiming(10_000, 1000, 5000, 5000)
    assert ReplicaTiming.for_timeout(2000) == ReplicaTiming(2000, 200, 1000, 1000)
    assert ReplicaTiming.for_timeout(1000) == ReplicaTiming(1000, 100, 500, 500)
    assert ReplicaTiming.for_timeout(60_000) == ReplicaTiming(60_000, 1000, 5000, 5000)


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (("--replicas", "1"), "must be 2..9"),
        (("--replicas", "10"), "must be 2..9"),
        (("--replicas", "2", "--slave"), "not with --slave"),
        (("--replicas", "2", "--brokers", "2"), "not with --brokers"),
        (("--replicas", "2", "--heartbeat-timeout", "10"), "at least 1000 ms"),
        (("--heartbeat-timeout", "3000"), "only with --replicas N"),
        (("--replicas", "3", "--broker-port", "65530"), "would pass 65535"),
    ],
)
def test_up_replicas_wrong_input(tmp_path: Path, args: tuple[str, ...], expect: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "up", "--store", str(tmp_path / "s"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path), "COLUMNS": "200"},
    )
    assert done.returncode == 2 and expect in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "s").exists()  # refused before anything was made

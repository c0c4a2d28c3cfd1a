"""`mq controller`: a controller process (a one-node Raft group), and the commands that
ask it (status, sync-state, elect) as mqadmin's getControllerMetaData, getSyncStateSet
and electMaster do."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import MqRunner
from tests.support.inproc import free_port
from tests.support.polling import until_sync
from tests.support.processes import ServerProcess, launch


@pytest.fixture
def controller(tmp_path: Path) -> Iterator[ServerProcess]:
    proc = launch(
        [
            "controller",
            "--listen",
            "127.0.0.1:0",
            "--peers",
            f"n0-127.0.0.1:{free_port()}",
            "--self-id",
            "n0",
            "--store",
            str(tmp_path / "raft"),
            "--log-dir",
            str(tmp_path / "logs"),
        ],
        tmp_path / "controller",
        "mq controller",
    )
    try:
        yield proc
    finally:
        assert proc.stop() == 0


def test_status_names_the_leader(controller: ServerProcess, mq: MqRunner) -> None:
    def leads() -> bool:
        out = mq("controller", "status", "-a", controller.addr, "--json", check=True).stdout
        return bool(json.loads(out)[0]["isLeader"])

    until_sync(leads, 15, "the one-node group electing itself")
    [row] = json.loads(mq("controller", "status", "-a", controller.addr, "--json").stdout)
    assert row["controller"] == controller.addr and row["group"] == "DefaultControllerGroup"
    assert row["peers"].startswith("n0-127.0.0.1:")
    table = mq("controller", "status", "-a", controller.addr).stdout
    assert "yes" in table and controller.addr in table


def test_asking_about_an_unknown_broker(controller: ServerProcess, mq: MqRunner) -> None:
    until_sync(
        lambda: mq("controller", "sync-state", "broker-x", "-a", controller.addr).returncode == 0,
        15,
        "a leader to answer",
    )
    data = json.loads(
        mq("controller", "sync-state", "broker-x", "-a", controller.addr, "--json").stdout
    )
    assert data["replicasInfoTable"] == {}
    refused = mq("controller", "elect", "broker-x", "-i", "1", "-a", controller.addr)
    assert refused.returncode == 1
    assert "not registered" in refused.stderr and "Traceback" not in refused.stderr


def test_a_bad_peer_list_is_one_clear_line(mq: MqRunner) -> None:
    result = mq("controller", "--peers", "n0-nowhere", "--self-id", "n0")
    assert result.returncode == 1
    assert "controllerDLegerPeers" in result.stderr and "Traceback" not in result.stderr


def test_no_controller_there(mq: MqRunner) -> None:
    result = mq("controller", "sync-state", "broker-a", "-a", f"127.0.0.1:{free_port()}")
    assert result.returncode == 1 and "leads" in result.stderr

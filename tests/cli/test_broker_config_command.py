"""`mq broker config get|set` against a running broker: every key, a chosen few by name
or pattern, JSON; a change says whether it counts now or at the next start, and an
unknown or forbidden key is refused before anything is sent."""

from __future__ import annotations

import orjson
import pytest

from tests.support.cluster import Cluster

pytestmark = pytest.mark.cluster(brokers=2)


def test_get_every_key_or_the_ones_asked_for(cluster: Cluster) -> None:
    docs = orjson.loads(cluster.ok("broker", "config", "get", "-b", "broker-a", "--json"))
    assert [d["broker"] for d in docs] == ["broker-a"]
    config = docs[0]["config"]
    assert config["brokerName"] == "broker-a" and "fileReservedTime" in config
    assert len(config) > 100  # 4.9.8's broker, netty and store keys
    chosen = orjson.loads(
        cluster.ok("broker", "config", "get", "flushDiskType", "*ReservedTime", "--json")
    )
    assert [d["broker"] for d in chosen] == ["broker-a", "broker-b"]  # every master
    assert set(chosen[0]["config"]) == {"flushDiskType", "fileReservedTime"}
    piped = cluster.ok("broker", "config", "get", "brokerrole", "-b", "broker-b")  # any case
    assert piped.split() == ["KEY", "VALUE", "brokerRole", "ASYNC_MASTER"]


def test_get_an_unknown_key_suggests_the_near_ones(cluster: Cluster) -> None:
    done = cluster.mq("broker", "config", "get", "flushDiskTyp", "-b", "broker-a")
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == "error: no config key 'flushDiskTyp'"
    assert "did you mean flushDiskType?" in done.stderr


def test_set_says_what_counts_now_and_what_at_restart(cluster: Cluster) -> None:
    addr = cluster.brokers["broker-a"]
    changes = ["fileReservedTime=48", "listenPort=10999"]
    rows = orjson.loads(cluster.ok("broker", "config", "set", *changes, "--addr", addr, "--json"))
    effects = {r["key"]: (r["old"], r["new"], r["effect"]) for r in rows}
    assert effects["fileReservedTime"] == ("72", "48", "now")
    assert effects["listenPort"][1:] == ("10999", "at restart")
    assert "listenPort" in rows[0]["remark"]  # mq's broker says where it saved it
    after = orjson.loads(
        cluster.ok("broker", "config", "get", "fileReservedTime", "-b", "broker-a", "--json")
    )
    assert after[0]["config"]["fileReservedTime"] == "48"  # applied at once
    table = cluster.mq("broker", "config", "set", "fileReservedTime=72", "-b", "broker-a")
    assert table.returncode == 0 and "fileReservedTime" in table.stdout and "now" in table.stdout


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        (["fileReservedTme=48"], "error: unknown broker config key 'fileReservedTme': broker"),
        (["brokerConfigPath=/tmp/x"], "error: brokerConfigPath cannot be changed"),
        (["fileReservedTime"], "error: 'fileReservedTime' is not KEY=VALUE"),
    ],
)
def test_set_refuses_before_sending(cluster: Cluster, args: list[str], first_line: str) -> None:
    done = cluster.mq("broker", "config", "set", *args, "-b", "broker-a")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0].startswith(first_line), done.stderr
    assert done.stderr.splitlines()[1].startswith("hint: ")
    config = orjson.loads(
        cluster.ok("broker", "config", "get", "fileReservedTime", "-b", "broker-a", "--json")
    )
    assert config[0]["config"]["fileReservedTime"] == "72"

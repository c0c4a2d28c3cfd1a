"""`mq cluster list` and `mq broker status` (runtime figures and delay levels) against a
real name server and broker; completion of group names."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from typing import Any

import orjson
import pexpect
import pytest

from mqcore.common.core import summary as core_summary
from tests.support.cluster import Cluster

# Level 3 is 3 s here so a test can watch a level fill and drain.
DELAYS = "1s 2s 3s 30s"


pytestmark = pytest.mark.cluster(messageDelayLevel=DELAYS)


def test_cluster_list_shows_the_broker(cluster: Cluster) -> None:
    rows: Any = cluster.json("cluster", "list")
    assert len(rows) == 1
    row = rows[0]
    assert row["cluster"] == "DefaultCluster" and row["broker"] == "broker-a"
    assert row["brokerId"] == 0 and row["addr"] == cluster.broker and row["up"] is True
    assert row["version"] == "V4_9_8"
    assert row["uptimeMs"] >= 0 and row["todayIn"] >= 0
    text = cluster.ok("cluster", "list")
    for needle in ("CLUSTER", "BID", "IN-TPS", "broker-a", cluster.broker, "V4_9_8"):
        assert needle in text
    assert cluster.json("cluster", "list", "-c", "NoSuchCluster") == []


def test_piped_cluster_list_is_plain_columns_with_whole_headers(cluster: Cluster) -> None:
    """`mq cluster list | cat` at 80 columns: every header whole on one line, one line
    per broker, no box and no ellipsis; -o table still draws the fitted table."""
    done = cluster.mq("cluster", "list", columns=80, check=True)
    header, *rows = done.stdout.splitlines()
    assert header.split() == [
        "CLUSTER", "BROKER", "BID", "ROLE", "ADDRESS", "VERSION", "IN-TPS", "OUT-TPS",
        "TODAY-IN", "TODAY-OUT", "UPTIME", "DISK", "HA", "SLAVE-LAG",
    ]  # fmt: skip
    assert len(rows) == 1 and rows[0].split()[:3] == ["DefaultCluster", "broker-a", "0"]
    assert cluster.broker in rows[0] and "…" not in done.stdout and "│" not in done.stdout
    assert "Brokers · 1 row" in done.stderr
    table = cluster.mq("cluster", "list", "-o", "table", columns=80, check=True).stdout
    assert "│" in table and "Brokers · 1 row" in table


def test_broker_status_json_has_the_runtime_keys(cluster: Cluster) -> None:
    docs = [orjson.loads(x) for x in cluster.ok("broker", "status", "--json").splitlines()]
    assert len(docs) == 1
    doc = docs[0]
    for key in (
        "addr",
        "broker",
        "version",
        "uptimeMs",
        "putTps",
        "getTps",
        "messagesToday",
        "commitLog",
        "diskRatio",
        "dispatchBehindBytes",
        "delayLevels",
        "runtime",
    ):
        assert key in doc, key
    assert doc["addr"] == cluster.broker and doc["broker"] == "broker-a"
    assert doc["core"] == doc["runtime"]["mqCore"] == core_summary()  # same venv, same core
    assert set(doc["commitLog"]) == {"minOffset", "maxOffset"}
    assert "scheduleMessageOffset_1" in doc["runtime"]
    lag = doc["loopLag"]  # how late the broker's event loop ran what was due
    assert lag["maxMsLastMinute"] >= 0 and lag["maxMs"] >= lag["maxMsLastMinute"]
    assert len(lag["maxMsPerMinute"]) == 10 and lag["stalls"] >= 0
    assert doc["runtime"]["loopLagMaxMsLastMinute"] == f"{lag['maxMsLastMinute']:.0f}"
    by_addr = orjson.loads(cluster.ok("broker", "status", cluster.broker, "--json"))
    by_name = orjson.loads(cluster.ok("broker", "status", "--name", "broker-a", "--json"))
    assert by_addr["broker"] == by_name["broker"] == "broker-a"
    text = cluster.ok("broker", "status")
    assert "uptime" in text and "commit log" in text and "V4_9_8" in text
    assert core_summary() in text
    assert "ms largest in the last minute" in text


def _levels(s: Cluster) -> dict[int, dict[str, Any]]:
    doc = orjson.loads(s.ok("broker", "status", "--json"))
    return {d["level"]: d for d in doc["delayLevels"]}


def test_delay_levels_show_waiting_messages_and_the_head_due_time(cluster: Cluster) -> None:
    before = int(time.time() * 1000)
    asyncio.run(cluster.produce("Delayed", 2, delay=4))  # 30 s: still waiting below
    levels = _levels(cluster)
    assert 4 in levels, levels
    level = levels[4]
    assert level["delay"] == "30s" and level["waiting"] == 2 and level["maxOffset"] == 2
    assert before + 30_000 <= level["headDueTimestamp"] <= int(time.time() * 1000) + 30_000
    text = cluster.ok("broker", "status")
    assert "Delay levels (SCHEDULE_TOPIC_XXXX)" in text and "HEAD-DUE" in text


def test_broker_status_watch_refreshes_and_shows_a_delivery_rate(cluster: Cluster) -> None:
    child = cluster.pty("broker", "status", "--watch", "1")
    try:
        child.expect("every 1s")
        child.expect("commit log")
        asyncio.run(cluster.produce("Delayed", 5, delay=3))  # 3 s
        child.expect("every 1s")  # second refresh
        child.expect("RATE")
        # The level-3 messages come due and are delivered: some sample shows them gone
        # with a rate measured between two samples.
        child.expect(r"│\s+3 │\s+3s │\s+5 │\s+5 │\s+0 │.*?(\d+\.\d)/s", timeout=20)
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 130 or child.signalstatus is not None


@pytest.mark.parametrize(
    ("args", "code", "expect"),
    [
        (("broker", "status", "--name", "broker-z"), 1, "no broker named broker-z"),
        (("broker", "status", "127.0.0.1:1"), 1, "127.0.0.1:1"),
        (("broker", "status", "-n", "127.0.0.1:1"), 1, "unreachable"),
        (("cluster", "list", "-n", "127.0.0.1:1"), 1, "unreachable"),
        (("broker", "status", "127.0.0.1:1", "--name", "x"), 2, "not both"),
        (("broker", "status", "--watch", "0"), 2, "--watch"),
    ],
)
def test_wrong_input(cluster: Cluster, args: tuple[str, ...], code: int, expect: str) -> None:
    done = cluster.mq(*args)
    assert done.returncode == code, done.stderr
    assert expect in done.stderr
    assert "Traceback" not in done.stderr


def test_group_names_complete_from_the_brokers(cluster: Cluster) -> None:
    cluster.ok("group", "create", "completed-group")
    env = {
        **cluster.env,
        "_MQ_COMPLETE": "complete_bash",
        "COMP_WORDS": "mq group lag comp",
        "COMP_CWORD": "3",
    }
    code = "import sys; sys.argv[0] = 'mq'; from mqcli.main import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=20
    )
    assert done.stdout.split() == ["completed-group"]


def test_cluster_list_formats_wide_shows_every_cell_whole(cluster: Cluster) -> None:
    fitted = cluster.mq("cluster", "list", "-o", "table", columns=80, check=True)
    narrow = fitted.stdout
    wide = cluster.mq("cluster", "list", "-o", "wide", columns=80, check=True).stdout
    # A fitted table hides the figures it cannot fit (and says which); nothing is cut.
    assert "…" not in narrow and cluster.broker in narrow and "DefaultCluster" in narrow
    assert "TODAY-OUT" not in narrow and "TODAY-OUT" in fitted.stderr  # the note, on stderr
    assert "hidden to fit: -o wide shows every column" in fitted.stderr
    assert all(len(line) <= 80 for line in narrow.splitlines())
    assert "…" not in wide and cluster.broker in wide and "DefaultCluster" in wide
    assert "TODAY-OUT" in wide and "UPTIME" in wide
    (row,) = orjson.loads(cluster.ok("cluster", "list", "--format", "json"))
    assert row["addr"] == cluster.broker
    bad = cluster.mq("cluster", "list", "-o", "yaml")
    assert bad.returncode == 1 and bad.stderr.splitlines() == [
        "error: unknown --format 'yaml'",
        "hint: use one of table, wide, json",
    ]
    clash = cluster.mq("cluster", "list", "--json", "-o", "wide")
    assert clash.returncode == 1 and "--json and --format wide disagree" in clash.stderr

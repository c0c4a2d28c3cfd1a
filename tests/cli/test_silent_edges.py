"""What used to pass without a word now ends in one line with a hint: a delay level the
brokers do not have, a reset of a group nobody knows, a broker's address given as the
name server. (Contexts under XDG_CONFIG_HOME: tests/cli/test_context.py.)"""

from __future__ import annotations

import pytest

from tests.support.cluster import Cluster

LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h 3h 4h"  # 20 levels
pytestmark = pytest.mark.cluster(brokers=1, messageDelayLevel=LEVELS)


def test_a_delay_level_the_broker_lacks_is_refused(cluster: Cluster) -> None:
    done = cluster.mq("produce", "-t", "DelayEdge", "--body", "x", "--delay", "99")
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0].startswith("error: --delay 99: broker broker-a has 20 delay levels")
    assert "1=1s" in lines[0] and "20=4h" in lines[0]
    assert lines[1] == "hint: give a level from 1 to 20, or 0 for no delay"
    assert "SEND_OK" not in done.stdout  # nothing was sent


def test_a_level_the_broker_has_is_sent(cluster: Cluster) -> None:
    for level in ("3", "20"):  # a default one, and one only this broker's list has
        done = cluster.mq("produce", "-t", "DelayEdge", "--body", "x", "--delay", level)
        assert done.returncode == 0 and "SEND_OK" in done.stdout, done.stderr


def test_a_reset_of_an_unknown_group_fails(cluster: Cluster) -> None:
    assert cluster.mq("produce", "-t", "ResetEdge", "--body", "x").returncode == 0
    done = cluster.mq("group", "reset", "no-such-group", "-t", "ResetEdge", "--to", "begin", "-y")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: no group named no-such-group: no broker has its subscription or offsets on "
        "ResetEdge",
        "hint: `mq group list` shows the groups; `mq group create no-such-group` makes one",
    ]
    assert cluster.mq("group", "create", "known-group").returncode == 0
    known = cluster.mq("group", "reset", "known-group", "-t", "ResetEdge", "--to", "end", "-y")
    assert known.returncode == 0, known.stderr


@pytest.mark.parametrize("args", [("topic", "list"), ("produce", "-t", "T", "--body", "x")])
def test_a_broker_given_as_the_name_server_is_named_as_such(
    cluster: Cluster, args: tuple[str, ...]
) -> None:
    done = cluster.mq(*args, "-n", cluster.broker)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        f"error: {cluster.broker} is a broker, not a name server"
    )
    assert done.stderr.splitlines()[1].startswith("hint: give the name server's address")
    assert "not supported" not in done.stderr


def test_a_broker_in_the_list_is_skipped_for_a_name_server(cluster: Cluster) -> None:
    """`-n BROKER;NAMESRV` still works: the broker is passed over like a dead server."""
    done = cluster.mq("topic", "list", "-n", f"{cluster.broker};{cluster.namesrv}", "--json")
    assert done.returncode == 0, done.stderr

"""`mq group status` (mqadmin consumerStatus) and `mq message resend --group`
(CONSUME_MESSAGE_DIRECTLY) against a consumer running as `mq consume --push`."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest

from tests.support.cluster import Cluster
from tests.support.polling import until_sync
from tests.support.processes import stop_process

pytestmark = pytest.mark.cluster(brokers=1)

TOPIC, GROUP = "StatusT", "status-g"


def _members(cluster: Cluster) -> list[str]:
    done = cluster.mq("group", "clients", GROUP, "--json")
    if done.returncode != 0:
        return []
    return [c["clientId"] for c in orjson.loads(done.stdout)["connectionSet"]]


@pytest.fixture(scope="module")
def consumer(cluster: Cluster) -> Iterator[str]:
    """A push consumer of GROUP that has consumed what TOPIC holds; its client id."""
    assert cluster.mq("produce", "-t", TOPIC, "--body", "m{{Count}}", "-c", "8").returncode == 0
    proc = cluster.spawn("consume", "--push", "-t", TOPIC, "-g", GROUP, "--from", "first")
    try:
        until_sync(lambda: _members(cluster), 30, "the consumer online")

        def consumed() -> bool:
            doc = orjson.loads(cluster.ok("group", "lag", GROUP, "--json"))
            return doc["totalLag"] == 0 and len(doc["queues"]) > 0

        until_sync(consumed, 30, "the backlog consumed")
        yield _members(cluster)[0]
    finally:
        stop_process(proc)


def test_status_lists_the_members(cluster: Cluster, consumer: str) -> None:
    doc = orjson.loads(cluster.ok("group", "status", GROUP, "--json"))
    assert doc["group"] == GROUP and doc["subscriptionsAgree"] is True
    (member,) = doc["members"]
    assert member["clientId"] == consumer
    assert member["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    queues = [q for q in member["queues"] if q["topic"] == TOPIC]
    assert len(queues) >= 1 and sum(q["commitOffset"] for q in queues) == 8
    assert {"topic", "brokerName", "queueId", "cachedMsgCount", "lastPullTimestamp"} <= set(
        queues[0]
    )
    assert TOPIC in member["statusTable"] and member["problems"] == []
    assert "jstack" not in member
    table = cluster.mq("group", "status", GROUP, "-o", "table", columns=100)
    assert table.returncode == 0
    assert consumer in table.stdout and "…" not in table.stdout and "CLIENT-ID" in table.stdout


def test_status_of_one_member_with_its_stack(cluster: Cluster, consumer: str) -> None:
    done = cluster.mq("group", "status", GROUP, "--client", consumer, "--stack", "-o", "table")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for part in ("PROP_CONSUMEORDERLY", "Subscriptions", "Queues held", "Rates", TOPIC):
        assert part in out, part
    assert f"stack of {consumer}" in out and '"MainThread"' in out and "task " in out
    doc = orjson.loads(cluster.ok("group", "status", GROUP, "-i", consumer, "-s", "--json"))
    assert "MainThread" in doc["members"][0]["jstack"]


def test_status_errors(cluster: Cluster, consumer: str) -> None:
    nobody = cluster.mq("group", "status", "no-such-group")
    assert nobody.returncode == 1 and "no consumer online" in nobody.stderr
    assert "hint:" in nobody.stderr
    stranger = cluster.mq("group", "status", GROUP, "--client", "1.2.3.4@1")
    assert stranger.returncode == 1 and f"members online: {consumer}" in stranger.stderr


def test_resend_to_a_consumer_of_the_group(cluster: Cluster, consumer: str) -> None:
    lines = cluster.ok("query", "-t", TOPIC, "--from", "first", "--json").splitlines()
    msg_id = orjson.loads(lines[0])["msgId"]
    doc = orjson.loads(cluster.ok("message", "resend", msg_id, "--group", GROUP, "--json"))
    assert doc["consumeResult"] == "CR_SUCCESS" and doc["clientId"] == consumer
    assert doc["msgId"] == msg_id and doc["spentTimeMills"] >= 0
    text = cluster.mq("message", "resend", msg_id, "-g", GROUP, "--client", consumer)
    assert text.returncode == 0 and text.stdout.startswith("CR_SUCCESS  ")
    gone = cluster.mq("message", "resend", msg_id, "-g", GROUP, "--client", "1.2.3.4@1")
    assert gone.returncode == 1 and "is not online" in gone.stderr
    orphan = cluster.mq("message", "resend", msg_id, "-g", "nobody-g")
    assert orphan.returncode == 1 and "no consumer online" in orphan.stderr
    lonely = cluster.mq("message", "resend", msg_id, "--client", consumer)
    assert lonely.returncode == 1 and "--client picks a consumer of --group" in lonely.stderr

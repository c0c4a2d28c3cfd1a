"""`mq group list|lag|reset|clients|create|delete|dlq` against a real name server and broker.

The module's cluster holds 20 messages in topic Lagging; each test uses its own groups
(under xdist the tests of a module may run in different workers)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import orjson
import pytest

from mqcore.client import Admin, ConsumeFromWhere, LitePullConsumer
from tests.support.cluster import Cluster


@pytest.fixture(scope="module", autouse=True)
def _seeded(cluster: Cluster) -> None:
    cluster.ok("topic", "create", "-t", "Lagging", "-q", "4")
    asyncio.run(cluster.produce("Lagging", 20))  # every test reads these 20


def _offsets(s: Cluster, group: str) -> dict[int, int]:
    doc: Any = s.json("group", "lag", group, "-t", "Lagging")
    return {q["queueId"]: q["consumerOffset"] for q in doc["queues"]}


def test_lag_is_produced_minus_consumed_with_an_age(cluster: Cluster) -> None:
    consumed = asyncio.run(cluster.consume("Lagging", "laggers", 7))
    assert 7 <= consumed < 20
    doc: Any = cluster.json("group", "lag", "laggers")
    assert doc["group"] == "laggers"
    assert doc["totalLag"] == 20 - consumed
    lagging = [q for q in doc["queues"] if q["lag"] > 0]
    assert lagging and all(q["ageMs"] >= 0 for q in doc["queues"])
    assert all(q["lag"] == q["brokerOffset"] - q["consumerOffset"] for q in lagging)
    assert all(q["firstUnconsumedTimestamp"] for q in lagging)
    assert all(q["lag"] >= 0 for q in doc["queues"])
    done = cluster.mq("group", "lag", "-g", "laggers", check=True)
    # In a pipe: the summary on stderr, plain columns on stdout.
    assert f"{20 - consumed} messages behind" in done.stderr
    assert "apache/rocketmq#3323" in done.stderr
    assert "AGE" in done.stdout and "CONSUMER-OFFSET" in done.stdout
    table = cluster.ok("group", "lag", "-g", "laggers", "-o", "table")
    assert f"{20 - consumed} messages behind" in table and "│" in table


def test_piped_lag_is_plain_columns_with_whole_timestamps(cluster: Cluster) -> None:
    """At 80 columns a pipe gets one line per queue, the store time whole, no box, no
    ellipsis (rpk/kubectl style), and the columns line up under the header."""
    asyncio.run(cluster.consume("Lagging", "piped-lag", 5))
    out = cluster.mq("group", "lag", "piped-lag", columns=80, check=True).stdout
    lines = out.splitlines()
    assert lines[0].split() == [
        "TOPIC", "BROKER", "QUEUE", "BROKER-OFFSET", "CONSUMER-OFFSET", "LAG", "AGE",
        "LAST-CONSUMED",
    ]  # fmt: skip
    assert len(lines) == 5 and "…" not in out and "│" not in out
    stamp = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$")
    stamps = [m for m in (stamp.search(x) for x in lines[1:]) if m]
    assert stamps, out  # the queues consumed from show when, whole, on their own line
    assert {m.start() for m in stamps} == {lines[0].index("LAST-CONSUMED")}


def test_reset_previews_asks_and_applies(cluster: Cluster) -> None:
    asyncio.run(cluster.consume("Lagging", "resetters", 20))
    assert sum(_offsets(cluster, "resetters").values()) == 20

    # Declined: the preview is shown, nothing changes.
    done = cluster.mq(
        "group", "reset", "resetters", "-t", "Lagging", "--to-offset", "1", input="n\n"
    )
    assert done.returncode == 1 and "not applied" in done.stderr
    assert "OLD" in done.stdout and "NEW" in done.stdout and "CHANGE" in done.stdout
    rows = re.findall(r"^broker-a\s+(\d)\s+(\d+)\s+(\d+)", done.stdout, re.M)
    assert len(rows) == 4 and all(new == "1" for _, _, new in rows)
    assert sum(_offsets(cluster, "resetters").values()) == 20

    # Accepted on stdin: applied.
    done = cluster.mq(
        "group", "reset", "resetters", "-t", "Lagging", "--to-offset", "1", input="y\n"
    )
    assert done.returncode == 0, done.stderr
    assert "reset 4 queue(s)" in done.stderr
    assert _offsets(cluster, "resetters") == {0: 1, 1: 1, 2: 1, 3: 1}

    # --to end with --yes: no question, back to the end.
    done = cluster.mq("group", "reset", "-g", "resetters", "-t", "Lagging", "--to", "end", "--yes")
    assert done.returncode == 0 and "Apply" not in done.stderr
    assert sum(_offsets(cluster, "resetters").values()) == 20

    # --to-time an hour ago: everything is newer, so every queue goes back to 0.
    plan: Any = orjson.loads(
        cluster.ok(
            "group", "reset", "resetters", "-t", "Lagging", "--to-time", "-1h", "--yes", "--json"
        )
    )
    assert {q["newOffset"] for q in plan["queues"]} == {0}
    assert sum(q["oldOffset"] for q in plan["queues"]) == 20
    assert set(_offsets(cluster, "resetters").values()) == {0}

    # A time in the future: the end.
    cluster.ok("group", "reset", "resetters", "-t", "Lagging", "--to-time", "+1h", "--yes")
    assert sum(_offsets(cluster, "resetters").values()) == 20


def test_reset_to_takes_the_grammar_of_consume_from(cluster: Cluster) -> None:
    """--to @-1h, --to 2, --to +1 / -1 and --to first read as consume --from does."""
    asyncio.run(cluster.consume("Lagging", "grammar", 20))

    def reset_to(position: str) -> dict[int, int]:
        cluster.ok("group", "reset", "grammar", "-t", "Lagging", "--to", position, "--yes")
        return _offsets(cluster, "grammar")

    ends = _offsets(cluster, "grammar")
    assert set(reset_to("@-1h").values()) == {0}  # every message is newer than an hour
    assert reset_to("@+1h") == ends
    assert set(reset_to("2").values()) == {2}
    assert reset_to("-1") == {q: end - 1 for q, end in ends.items()}
    assert set(reset_to("+1").values()) == {1}
    assert set(reset_to("first").values()) == {0}
    assert reset_to("last") == ends
    # --to-time reads the same times, with or without the @.
    for when in ("@-1h", "-1h"):
        cluster.ok("group", "reset", "grammar", "-t", "Lagging", "--to-time", when, "--yes")
        assert set(_offsets(cluster, "grammar").values()) == {0}
        cluster.ok("group", "reset", "grammar", "-t", "Lagging", "--to", "last", "--yes")


async def _online(cluster: Cluster, group: str) -> LitePullConsumer:
    consumer = LitePullConsumer(
        group, namesrv=cluster.namesrv, consume_from_where=ConsumeFromWhere.FIRST
    )
    consumer.subscribe("Lagging", "A || B")
    await consumer.start()
    return consumer


async def test_clients_lists_a_live_consumer(cluster: Cluster) -> None:
    consumer = await _online(cluster, "livegroup")
    try:
        doc: Any = orjson.loads(
            await asyncio.to_thread(cluster.ok, "group", "clients", "livegroup", "--json")
        )
        text = await asyncio.to_thread(cluster.ok, "group", "clients", "-g", "livegroup")
        wide = await asyncio.to_thread(
            cluster.mq, "group", "clients", "livegroup", "-o", "wide", columns=60
        )
        as_format = await asyncio.to_thread(
            cluster.ok, "group", "clients", "livegroup", "-o", "json"
        )
        # An online group is reset through the broker (which tells the member).
        reset = await asyncio.to_thread(
            cluster.mq, "group", "reset", "livegroup", "-t", "Lagging", "--to", "end", "--yes"
        )
        refused = await asyncio.to_thread(
            cluster.mq, "group", "reset", "livegroup", "-t", "Lagging", "--to-offset", "0", "--yes"
        )
    finally:
        await consumer.shutdown()
    assert [c["clientId"] for c in doc["connectionSet"]] == [consumer.instance.client_id]
    assert doc["subscriptionTable"]["Lagging"]["subString"] == "A || B"
    assert doc["messageModel"] == "CLUSTERING"
    assert consumer.instance.client_id in text and "A || B" in text and "PYTHON" in text
    assert consumer.instance.client_id in wide.stdout and "…" not in wide.stdout
    assert orjson.loads(as_format)["connectionSet"] == doc["connectionSet"]
    assert reset.returncode == 0 and "member(s) told" in reset.stderr, reset.stderr
    assert refused.returncode == 1 and "online" in refused.stderr

    offline = await asyncio.to_thread(cluster.mq, "group", "clients", "nobody-home")
    assert offline.returncode == 1
    assert "no consumer online" in offline.stderr and "Traceback" not in offline.stderr


def test_create_list_delete(cluster: Cluster) -> None:
    out = cluster.ok("group", "create", "made", "--retry-max", "3", "--no-broadcast")
    assert "group made on broker-a: retry max 3" in out
    groups: Any = cluster.json("group", "list")
    made = next(g for g in groups if g["group"] == "made")
    assert made["retryMaxTimes"] == 3 and made["consumeBroadcastEnable"] is False
    assert made["brokerId"] == 0 and made["whichBrokerWhenConsumeSlowly"] == 1  # RocketMQ's
    cluster.ok("group", "create", "from-slave", "--broker-id", "1",
               "--which-broker-when-consume-slowly", "2")  # fmt: skip
    groups = cluster.json("group", "list")
    slave_reader = next(g for g in groups if g["group"] == "from-slave")
    assert (slave_reader["brokerId"], slave_reader["whichBrokerWhenConsumeSlowly"]) == (1, 2)
    assert not any(g["group"] == "TOOLS_CONSUMER" for g in groups)
    assert "made" in cluster.ok("group", "list")
    consumed = asyncio.run(cluster.consume("Lagging", "listed", 1))
    long: Any = cluster.json("group", "list", "--long", "-t", "Lagging")
    listed = next(g for g in long if g["group"] == "listed")
    assert listed["members"] == 0 and listed["lag"] == 20 - consumed
    assert "made" not in {g["group"] for g in long}  # it consumes nothing

    assert cluster.mq("group", "delete", "made", input="n\n").returncode == 1
    assert "made" in {g["group"] for g in cluster.json("group", "list")}  # type: ignore[union-attr]
    cluster.ok("group", "delete", "-g", "made", "--yes")
    assert "made" not in {g["group"] for g in cluster.json("group", "list")}  # type: ignore[union-attr]


def test_dlq_lists_dead_letters(cluster: Cluster) -> None:
    asyncio.run(cluster.produce("%DLQ%deadgroup", 3, tag="Dead"))
    lines = [
        orjson.loads(x) for x in cluster.ok("group", "dlq", "deadgroup", "--json").splitlines()
    ]
    assert len(lines) == 3
    assert {m["topic"] for m in lines} == {"%DLQ%deadgroup"}
    assert sorted(m["body"] for m in lines) == ["body 0", "body 1", "body 2"]
    assert all("originTopic" in m and m["originMsgId"] for m in lines)
    assert all(m["reconsumeTimes"] == 0 for m in lines)
    done = cluster.mq("group", "dlq", "-g", "deadgroup", check=True)
    assert "Dead letters of deadgroup · 3 in %DLQ%deadgroup" in done.stderr
    text = done.stdout
    assert "ORIGIN-TOPIC" in text and "RECONSUME" in text and "Dead" in text
    assert all(m["msgId"] in text and m["originMsgId"] in text for m in lines)
    # Ids are never cut: not in a fitted table at 80 columns, not with -o wide.
    for args in (("-o", "table"), ("-o", "wide")):
        shown = cluster.mq("group", "dlq", "deadgroup", *args, columns=80, check=True).stdout
        assert all(m["msgId"] in shown for m in lines), shown
    assert orjson.loads(cluster.ok("group", "dlq", "deadgroup", "-o", "json").splitlines()[0])
    capped = cluster.ok("group", "dlq", "deadgroup", "--max", "1", "--json")
    assert len(capped.splitlines()) == 1
    cluster.ok("group", "create", "no-dead-letters")
    empty = cluster.mq("group", "dlq", "no-dead-letters")
    assert empty.returncode == 0 and "no dead letters" in empty.stdout
    unknown = cluster.mq("group", "dlq", "nosuchgroup")
    assert unknown.returncode == 1 and "error: no group named nosuchgroup" in unknown.stderr
    assert "no dead letters" not in unknown.stdout


async def _send_back_to_dlq(cluster: Cluster, group: str) -> str:
    """Pull one message of Lagging and send it back with delay level -1 (straight to the
    DLQ, as a consumer past its max reconsume times does); returns its offset msg id,
    which the broker records as ORIGIN_MESSAGE_ID."""
    async with Admin(cluster.namesrv, instance_name="dlq-maker") as admin:
        api = admin.instance.api
        mq = (await admin.instance.subscribe_queues("Lagging"))[0]
        result = await api.pull(mq, group=group, offset=0, max_nums=1, suspend=False)
        msg = result.messages[0]
        await api.consumer_send_msg_back(msg, group, broker_name=mq.broker_name, delay_level=-1)
        return msg.msg_id


def test_dlq_shows_where_a_sent_back_message_came_from(cluster: Cluster) -> None:
    key = asyncio.run(_send_back_to_dlq(cluster, "failing"))
    lines = [orjson.loads(x) for x in cluster.ok("group", "dlq", "failing", "--json").splitlines()]
    assert len(lines) == 1
    assert lines[0]["originTopic"] == "Lagging" and lines[0]["originMsgId"] == key
    text = cluster.ok("group", "dlq", "failing")
    assert "Lagging" in text and key in text


@pytest.mark.parametrize(
    ("args", "code", "expect"),
    [
        (("group", "lag", "ghost"), 1, "no group named ghost"),
        (("group", "delete", "ghost", "--yes"), 1, "no group named ghost"),
        (("group", "reset", "laggers", "-t", "NoSuchTopic", "--to", "end"), 1, "no route"),
        (("group", "lag", "laggers", "-n", "127.0.0.1:1"), 1, "unreachable"),
        (("group", "lag"), 2, "GROUP"),
        (("group", "reset", "laggers", "-t", "Lagging"), 2, "exactly one"),
        (("group", "reset", "laggers", "-t", "Lagging", "--to-time", "yesterday"), 2, "bad time"),
        (("group", "reset", "laggers", "-t", "Lagging", "--to", "middle"), 2, "bad position"),
    ],
)
def test_wrong_input(cluster: Cluster, args: tuple[str, ...], code: int, expect: str) -> None:
    done = cluster.mq(*args)
    assert done.returncode == code
    assert expect in done.stderr
    assert "Traceback" not in done.stderr


def test_lag_and_list_take_format_wide_and_json(cluster: Cluster) -> None:
    asyncio.run(cluster.consume("Lagging", "formats-group", 3))
    wide = cluster.mq("group", "lag", "formats-group", "-o", "wide", columns=60, check=True)
    assert "LAST-CONSUMED" in wide.stdout and "…" not in wide.stdout
    doc: Any = orjson.loads(cluster.ok("group", "lag", "formats-group", "--format", "json"))
    assert doc["group"] == "formats-group" and doc["queues"]
    listed = cluster.mq("group", "list", "-o", "wide", columns=60, check=True).stdout
    assert "formats-group" in listed and "MEMBERS" in listed and "…" not in listed
    rows: Any = orjson.loads(cluster.ok("group", "list", "-o", "json"))
    assert "formats-group" in [r["group"] for r in rows]

"""The Apache RocketMQ client over its C++ core (PyPI ``rocketmq`` 0.4.4, rocketmq-client-cpp
1.2.3 inside) against an in-process mq name server and broker: every send mode it has,
read back by our own client, and the pull consumer reading what our producer wrote. The
push consumer scenarios are in test_cpp_consumers.py; signing is in test_acl_clients.py.

The C++ client runs in a subprocess (cpp_clients.py) with HOME in the test's tmp dir (its
logs and local offsets go there) and every run under a timeout.
"""

from __future__ import annotations

from typing import Any

import pytest
from interop_support import QUEUES, CppClients

from mqcore.client import (
    Admin,
    ConsumeFromWhere,
    LitePullConsumer,
    MessageExt,
    Producer,
    make_message,
)
from mqcore.message.record import decode_batch_body
from tests.support import poll_messages
from tests.support.polling import until

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]


def spec(topic: str, body: str, **fields: Any) -> dict[str, Any]:
    return {"topic": topic, "body": body, **fields}


async def read_all(cluster: CppClients, topic: str, count: int) -> list[MessageExt]:
    """What our own consumer reads of ``topic`` from the first offset (``count`` messages).
    It is assigned every queue: no group membership, no wait for a rebalance."""
    async with LitePullConsumer(
        "our-reader",
        namesrv=cluster.ns,
        consume_from_where=ConsumeFromWhere.FIRST,
        auto_commit=False,
    ) as consumer:
        consumer.assign(await consumer.fetch_message_queues(topic))
        got = await poll_messages(consumer, count, 20)
    assert len(got) == count, [m.body for m in got]
    return got


async def test_sync_and_oneway_sends_keep_tags_keys_and_properties(mq: CppClients) -> None:
    topic = "CppSend"
    await mq.create_topic(topic)
    sends = [
        {"how": "sync", "messages": [spec(topic, "sync-0", tags="TagA", keys="k0 x0",
                                          props={"color": "red"})]},
        {"how": "sync", "messages": [spec(topic, "sync-1", tags="TagB", keys="k1")]},
        {"how": "oneway", "messages": [spec(topic, "oneway-0", tags="TagC", keys="k2",
                                            props={"color": "blue"})]},
        {"how": "async", "messages": [spec(topic, "async-0", tags="TagE", keys="k3")]},
    ]  # fmt: skip
    results = await mq.send("cpp-send-pg", sends)
    assert [r["how"] for r in results] == ["sync", "sync", "oneway", "async"], results
    assert [r.get("status") for r in results] == [0, 0, None, 0], results  # SEND_OK
    got = {m.body.decode(): m for m in await read_all(mq, topic, 4)}
    assert sorted(got) == ["async-0", "oneway-0", "sync-0", "sync-1"]
    assert (got["async-0"].tags, got["async-0"].keys) == ("TagE", ["k3"])
    assert (got["sync-0"].tags, got["sync-0"].keys) == ("TagA", ["k0", "x0"])
    assert got["sync-0"].properties["color"] == "red"
    assert (got["sync-1"].tags, got["sync-1"].keys) == ("TagB", ["k1"])
    assert (got["oneway-0"].tags, got["oneway-0"].keys) == ("TagC", ["k2"])
    assert got["oneway-0"].properties["color"] == "blue"
    for name, result in (("sync-0", results[0]), ("sync-1", results[1]), ("async-0", results[3])):
        # the send result's msgId is the client's unique key, its offset the queue offset
        assert got[name].properties["UNIQ_KEY"] == result["msgId"]
        assert got[name].queue_offset == result["offset"]
    async with Admin(mq.ns) as admin:  # the keys and the msgId are indexed
        by_key = await admin.query_by_key(topic, "x0")
        by_id = await admin.query_by_unique_key(topic, results[3]["msgId"])
    assert [m.body for m in by_key] == [b"sync-0"]
    assert [m.body for m in by_id] == [b"async-0"]


async def test_a_big_body_is_compressed_by_the_client_and_read_back_whole(
    mq: CppClients,
) -> None:
    """cpp 1.2.3 zlib-compresses bodies from 4 KiB on (compressMsgBodyOverHowmuch) and
    sets the compressed sysflag; the broker stores it as is, our consumer inflates it."""
    topic = "CppBig"
    await mq.create_topic(topic)
    body = "".join(f"line {i} of a big body\n" for i in range(800))
    (result,) = await mq.send("cpp-big-pg", [{"how": "sync", "messages": [spec(topic, body)]}])
    assert result.get("status") == 0, result
    (m,) = await read_all(mq, topic, 1)
    assert m.body.decode() == body
    stored = mq.broker.store.look_message(m.commit_log_offset)
    assert stored.sys_flag & 0x1, "stored compressed"
    assert stored.store_size < len(body), "the commit log holds the deflated body"


async def test_a_batch_is_stored_as_one_message_as_4_9_8_reads_its_batch_flag(
    mq: CppClients,
) -> None:
    """rocketmq-client-cpp 1.2.3 sends a batch as SEND_MESSAGE with ``batch`` = "1" (a
    C++ bool through an ostream); 4.9.8 parses flags with Boolean.parseBoolean, so "1" is
    false and the broker stores one message whose body is the encoded batch. mq does the
    same: the inner messages are all in that body, intact."""
    topic = "CppBatch"
    await mq.create_topic(topic)
    batch = [spec(topic, f"batch-{i}", tags="TagD", keys=f"b{i}", props={"n": str(i)})
             for i in range(3)]  # fmt: skip
    (result,) = await mq.send("cpp-batch-pg", [{"how": "batch", "messages": batch}])
    assert result.get("status") == 0, result
    (stored,) = await read_all(mq, topic, 1)
    assert stored.tags is None and stored.queue_offset == result["offset"]
    inner = decode_batch_body(stored.body)
    assert [body for _flag, body, _props in inner] == [b"batch-0", b"batch-1", b"batch-2"]
    for i, (_flag, _body, props) in enumerate(inner):
        assert (props["TAGS"], props["KEYS"], props["n"]) == ("TagD", f"b{i}", str(i))


async def test_orderly_sends_go_to_the_queue_their_argument_selects(mq: CppClients) -> None:
    topic = "CppOrderly"
    await mq.create_topic(topic)
    sends = [
        {"how": "orderly", "arg": arg, "messages": [spec(topic, f"order-{arg}-{seq}")]}
        for seq in range(3)
        for arg in range(6)
    ]
    sends.append({"how": "oneway-orderly", "arg": 7, "messages": [spec(topic, "order-7-0")]})
    results = await mq.send("cpp-orderly-pg", sends)
    assert all("error" not in r for r in results) and len(results) == 19, results
    got = await read_all(mq, topic, 19)
    seqs: dict[str, list[int]] = {}
    for m in sorted(got, key=lambda m: (m.queue_id, m.queue_offset)):
        _, arg, seq = m.body.decode().split("-")
        assert m.queue_id == int(arg) % QUEUES, (m.body, m.queue_id)  # hashing selector
        seqs.setdefault(arg, []).append(int(seq))
    assert seqs == {**{str(a): [0, 1, 2] for a in range(6)}, "7": [0]}, "in order per key"


async def test_a_delayed_message_is_held_then_delivered(mq: CppClients) -> None:
    topic = "CppDelay"
    await mq.create_topic(topic)
    results = await mq.send(
        "cpp-delay-pg",
        [{"how": "sync", "messages": [spec(topic, "later", tags="TagL", delay=2)]}],
    )
    assert results[0].get("status") == 0, results
    assert mq.max_offset(topic) == 0, "held in SCHEDULE_TOPIC_XXXX, not yet in the topic"
    await until(lambda: mq.max_offset(topic) == 1, 15, "the delayed message delivered")
    (m,) = await read_all(mq, topic, 1)
    assert (m.body, m.tags) == (b"later", "TagL")
    assert m.properties["REAL_TOPIC"] == topic
    assert m.store_timestamp - m.born_timestamp >= 1900, "level 2 is 2 s here"


async def test_the_pull_consumer_reads_what_our_producer_wrote(mq: CppClients) -> None:
    topic = "CppPull"
    await mq.create_topic(topic)
    sent = {}
    big = "".join(f"our line {i}\n" for i in range(1000))  # compressed by our producer
    async with Producer("our-pg", namesrv=mq.ns) as producer:
        result = await producer.send(make_message(topic, big, tags="TagZ"))
        sent[big] = ("TagZ", result.msg_id)
        for i in range(8):
            tags = "TagA" if i % 2 == 0 else "TagB"
            msg = make_message(topic, f"ours-{i}", tags=tags, keys=f"key-{i}",
                               properties={"color": f"c{i}"})  # fmt: skip
            result = await producer.send(msg)
            sent[f"ours-{i}"] = (tags, result.msg_id)
    pulled = await mq.run("pull", mq.ns, topic, "cpp-pull-cg")
    assert sorted(p["body"] for p in pulled) == sorted(sent)
    for p in pulled:
        tags, msg_id = sent[p["body"]]
        if p["body"] == big:
            assert (p["tags"], p["props"]) == ("TagZ", {"UNIQ_KEY": msg_id})
            continue
        n = p["body"].split("-")[1]
        assert (p["topic"], p["tags"], p["keys"]) == (topic, tags, f"key-{n}")
        assert p["props"] == {"UNIQ_KEY": msg_id, "color": f"c{n}"}
    only_a = await mq.run("pull", mq.ns, topic, "cpp-pull-cg-a", "TagA")
    assert sorted(p["body"] for p in only_a) == [f"ours-{i}" for i in range(0, 8, 2)]


async def test_a_send_to_an_unknown_topic_creates_it_through_the_default_topic(
    mq: CppClients,
) -> None:
    """autoCreateTopicEnable (the 4.9.8 default): the client finds no route, sends with
    the TBW102 route, and the broker creates the topic with the client's
    defaultTopicQueueNums (4) queues."""
    topic = "CppAutoCreated"
    results = await mq.send(
        "cpp-auto-pg", [{"how": "sync", "messages": [spec(topic, f"auto-{i}")]} for i in range(3)]
    )
    assert [r.get("status") for r in results] == [0, 0, 0], results
    config = mq.broker.topic_configs.select(topic)
    assert config is not None and config.write_queue_nums == QUEUES
    got = await read_all(mq, topic, 3)
    assert sorted(m.body for m in got) == [b"auto-0", b"auto-1", b"auto-2"]

"""The C++-core client's push consumer (rocketmq 0.4.4 / rocketmq-client-cpp 1.2.3) against
an in-process mq broker, reading what our producer wrote: tag filtering with keys and
properties, clustering (two consumers share the queues), broadcasting (each gets all),
orderly consumption under the broker's queue locks, and a failing listener whose message
goes through %RETRY%group to %DLQ%group."""

from __future__ import annotations

import re
from typing import Any

import pytest
from interop_support import QUEUES, CppClients, CppListener
from test_cpp_client import read_all

from mqcore.client import Admin, Producer, make_message
from mqcore.common.metadata import SubscriptionGroupConfig
from mqcore.protocol import RequestCode, ResponseCode
from mqcore.protocol.bodies import MessageQueue
from tests.support.clients import TestClient
from tests.support.inproc import BROKER_NAME
from tests.support.polling import until

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]


def on_queue(queue_id: int) -> Any:
    """A selector for our producer: always ``queue_id``."""
    return lambda mqs, _msg, _arg: mqs[queue_id]


async def owned_queues(mq: CppClients, group: str, topic: str) -> dict[str, set[int]]:
    """Client id -> the queues of ``topic`` it consumes, from each C++ consumer's own
    running info (GET_CONSUMER_RUNNING_INFO through the broker; dropped queues are not
    listed, so this is the settled rebalance, not what the broker guesses)."""
    owned: dict[str, set[int]] = {}
    client = TestClient(mq.broker.broker_addr, "cpp-test@1")
    try:
        for client_id in mq.broker.consumers.client_ids(group):
            fields = {"consumerGroup": group, "clientId": client_id, "jstackEnable": "false"}
            answer = await client.invoke(RequestCode.GET_CONSUMER_RUNNING_INFO, fields)
            assert answer.code == ResponseCode.SUCCESS, answer.remark
            pattern = rf'"queueId"\s*:\s*(\d+),\s*"topic"\s*:\s*"{re.escape(topic)}"'
            owned[client_id] = {int(q) for q in re.findall(pattern, answer.body.decode())}
    finally:
        await client.close()
    return owned


async def settled(mq: CppClients, group: str, topic: str, want: list[set[int]]) -> None:
    """Poll the consumers' running info until they own ``want`` (one set per consumer)."""
    latest: dict[str, set[int]] = {}

    async def check() -> bool:
        nonlocal latest
        latest = await owned_queues(mq, group, topic)
        return sorted(map(sorted, latest.values())) == sorted(map(sorted, want))

    await until(check, 20, lambda: f"rebalance not settled: {latest}, want {want}", interval=0.2)


async def members(mq: CppClients, group: str, *listeners: CppListener) -> None:
    """Every listener's consumer has registered (heartbeat) with the broker."""
    ids = mq.broker.consumers.client_ids
    try:
        await until(lambda: len(ids(group)) == len(listeners), 20)
    except AssertionError:
        states = "; ".join(map(str, listeners))
        raise AssertionError(f"members of {group}: {ids(group)}; {states}") from None


async def stop_all(*listeners: CppListener) -> None:
    for listener in listeners:
        await listener.stop()


async def test_the_push_consumer_filters_by_tag_and_sees_keys_and_properties(
    mq: CppClients,
) -> None:
    topic = "CppPushTags"
    await mq.create_topic(topic)
    sent: dict[str, str] = {}
    async with Producer("our-pg", namesrv=mq.ns) as producer:
        for i in range(9):  # one queue: the last TagA comes after every TagC
            tags = ("TagA", "TagB", "TagC")[i % 3]
            msg = make_message(topic, f"m-{i}", tags=tags, keys=[f"key-{i}", "common"],
                               properties={"color": f"c{i}"})  # fmt: skip
            result = await producer.send(msg, selector=on_queue(1))
            sent[f"m-{i}"] = result.msg_id
    listener = await mq.listen(topic, "cpp-tags-cg", "--expression", "TagA || TagB",
                               "--props", "color,UNIQ_KEY")  # fmt: skip
    try:
        got = await listener.wait_for(6)
        sub = mq.broker.consumers.find_subscription("cpp-tags-cg", topic)
    finally:
        await listener.stop()
    assert sub is not None and sub.tags_set == {"TagA", "TagB"}, sub  # from its heartbeat
    assert [m["body"] for m in listener.messages] == [f"m-{i}" for i in (0, 1, 3, 4, 6, 7)]
    for m in got:
        i = int(m["body"].split("-")[1])
        assert (m["topic"], m["tags"], m["keys"]) == (topic, ("TagA", "TagB")[i % 3],
                                                      f"key-{i} common")  # fmt: skip
        assert m["props"] == {"color": f"c{i}", "UNIQ_KEY": sent[m["body"]]}
        assert (m["queueId"], m["reconsumeTimes"]) == (1, 0)
    # the group's offset was committed: a new consumer of it resumes after m-8
    async with Producer("our-pg", namesrv=mq.ns) as producer:
        for i, tags in ((9, "TagA"), (10, "TagC"), (11, "TagB")):
            await producer.send(make_message(topic, f"m-{i}", tags=tags), selector=on_queue(1))
    again = await mq.listen(topic, "cpp-tags-cg", "--expression", "TagA || TagB")
    try:
        assert [m["body"] for m in await again.wait_for(2)] == ["m-9", "m-11"]
    finally:
        await again.stop()


async def test_clustering_consumers_share_the_queues(mq: CppClients) -> None:
    topic, group = "CppClients", "cpp-cluster-cg"
    await mq.create_topic(topic)
    a = await mq.listen(topic, group)
    b = await mq.listen(topic, group)
    try:
        await members(mq, group, a, b)
        await settled(mq, group, topic, [{0, 1}, {2, 3}])
        owned = await owned_queues(mq, group, topic)
        async with Producer("our-pg", namesrv=mq.ns) as producer:
            for i in range(20):
                await producer.send(make_message(topic, f"c-{i}", tags="T"),
                                    selector=on_queue(i % QUEUES))  # fmt: skip
        await until(lambda: len(a.messages) + len(b.messages) >= 20, 20, "20 consumed")
    finally:
        await stop_all(a, b)
    # a clean shutdown commits the offsets and unregisters (UNREGISTER_CLIENT)
    assert mq.broker.offsets.query_all(group, topic) == {q: 5 for q in range(4)}
    assert mq.broker.consumers.client_ids(group) == []
    bodies = sorted(m["body"] for m in a.messages + b.messages)
    assert bodies == sorted(f"c-{i}" for i in range(20)), "each message once"
    for listener in (a, b):
        queues = {m["queueId"] for m in listener.messages}
        assert len(queues) == 2 and queues in owned.values(), (queues, owned)
        for m in listener.messages:
            assert int(m["body"].split("-")[1]) % QUEUES == m["queueId"]


async def test_broadcasting_consumers_each_get_every_message(mq: CppClients) -> None:
    topic, group = "CppBroadcast", "cpp-broadcast-cg"
    await mq.create_topic(topic)
    # cpp 1.2.3 keeps broadcasting offsets in $HOME/.rocketmq_offsets/<ip>@<instance
    # name>/<group> (OffsetStore.cpp:48), so two consumers of a group on one host need
    # instance names of their own: with the default both share one file, and starting
    # together they race on creating its folder (exists() then create_directories(),
    # OffsetStore.cpp:57-62), which fails the loser's start
    a = await mq.listen(topic, group, "--broadcasting", "--instance", "bc-a")
    b = await mq.listen(topic, group, "--broadcasting", "--instance", "bc-b")
    try:
        await members(mq, group, a, b)
        await settled(mq, group, topic, [{0, 1, 2, 3}, {0, 1, 2, 3}])
        # broadcasting starts at the queues' end: produce once both poll every queue
        await mq.polled(topic, per_queue=2)
        async with Producer("our-pg", namesrv=mq.ns) as producer:
            for i in range(8):
                await producer.send(make_message(topic, f"b-{i}", keys=f"k{i}"))
        await a.wait_for(8)
        await b.wait_for(8)
    finally:
        await stop_all(a, b)
    for listener in (a, b):
        got = {m["body"]: m for m in listener.messages}
        assert sorted(got) == [f"b-{i}" for i in range(8)], "each consumer gets all, once"
        assert all(got[f"b-{i}"]["keys"] == f"k{i}" for i in range(8))
    # offsets stay with the consumers (local files under $HOME), not at the broker
    assert mq.broker.offsets.query_all(group, topic) == {}


async def test_the_orderly_consumer_locks_its_queues_and_keeps_their_order(
    mq: CppClients,
) -> None:
    topic, group = "CppOrderlyPush", "cpp-orderly-cg"
    await mq.create_topic(topic)
    async with Producer("our-pg", namesrv=mq.ns) as producer:
        for seq in range(5):
            for q in range(QUEUES):
                msg = make_message(topic, f"o-{q}-{seq}", keys=f"order-{q}")
                await producer.send(msg, selector=on_queue(q))
    listener = await mq.listen(topic, group, "--orderly")
    try:
        await listener.wait_for(5 * QUEUES)
        (client_id,) = mq.broker.consumers.client_ids(group)
        locks = mq.broker.locks
        held = [locks.holder(group, MessageQueue(topic, BROKER_NAME, q)) for q in range(QUEUES)]
    finally:
        await listener.stop()
    assert held == [client_id] * QUEUES, "the orderly consumer locked every queue it owns"
    after = [locks.holder(group, MessageQueue(topic, BROKER_NAME, q)) for q in range(QUEUES)]
    # its shutdown unlocks them (UNLOCK_BATCH_MQ), all but one: cpp 1.2.3's
    # Rebalance::unlockAll leaves out the first queue it meets per broker (its vector is
    # created without it), so that one stays locked until rebalanceLockMaxLiveTime
    assert after.count(None) == QUEUES - 1, after
    for q in range(QUEUES):
        seqs = [m["body"] for m in listener.messages if m["queueId"] == q]
        assert seqs == [f"o-{q}-{s}" for s in range(5)], "consumed in queue order"


async def test_a_failing_listener_retries_then_the_message_goes_to_the_dlq(
    mq: CppClients,
) -> None:
    """The C++ client sends CONSUMER_SEND_MSG_BACK without maxReconsumeTimes (cpp 1.2.3
    ConsumerSendMsgBackRequestHeader has group, delayLevel and offset only), so the
    group's retryMaxTimes decides: 2 here, so three deliveries (reconsume times 0, 1, 2),
    the retries from %RETRY%group one delay level (1 s here) apart, then %DLQ%group.
    The body is big enough to be stored compressed: every copy keeps it whole."""
    topic, group = "CppRetry", "cpp-retry-cg"
    doomed = "".join(f"doomed line {i}\n" for i in range(400))
    await mq.create_topic(topic)
    async with Admin(mq.ns) as admin:
        await admin.create_subscription_group(SubscriptionGroupConfig(group, retry_max_times=2))
    async with Producer("our-pg", namesrv=mq.ns) as producer:
        sent = await producer.send(make_message(topic, doomed, tags="TagF", keys="kf",
                                                properties={"color": "grey"}))  # fmt: skip
    listener = await mq.listen(topic, group, "--fail-below", "99",
                               "--props", "color,RETRY_TOPIC,UNIQ_KEY")  # fmt: skip
    dlq = f"%DLQ%{group}"
    try:
        got = await listener.wait_for(3, timeout=25)
        await until(lambda: mq.broker.store.get_max_offset_in_queue(dlq, 0) == 1, 15, "DLQ")
    finally:
        await listener.stop()
    assert [m["reconsumeTimes"] for m in got] == [0, 1, 2]
    assert len(listener.messages) == 3, "nothing is delivered after the DLQ"
    for m in got:
        assert (m["topic"], m["body"], m["tags"], m["keys"]) == (topic, doomed, "TagF", "kf")
        assert (m["props"]["color"], m["props"]["UNIQ_KEY"]) == ("grey", sent.msg_id)
    assert [m["props"].get("RETRY_TOPIC") for m in got] == [None, topic, topic]
    assert mq.broker.store.get_max_offset_in_queue(f"%RETRY%{group}", 0) == 2
    (dead,) = await read_all(mq, dlq, 1)
    assert (dead.body.decode(), dead.tags, dead.keys) == (doomed, "TagF", ["kf"])
    assert dead.sys_flag & 0x1, "the DLQ copy is the compressed record, flag and all"
    assert (dead.reconsume_times, dead.properties["RETRY_TOPIC"]) == (3, topic)
    assert dead.properties["ORIGIN_MESSAGE_ID"] and dead.properties["color"] == "grey"

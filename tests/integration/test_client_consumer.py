"""PushConsumer and LitePullConsumer end to end against an in-process name server + broker.

Every wait is a poll with a deadline (:func:`until`); nothing sleeps to synchronise.
Consumers of one group in one process get distinct ``instance_name``s, as RocketMQ needs
(one consumer per group per client instance).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from mqcore.client.consume_service import ConsumeContext, ConsumeOrderlyStatus, ConsumeStatus
from mqcore.client.errors import ClientStateError
from mqcore.client.instance import ClientConfig, ClientInstance
from mqcore.client.lite_pull_consumer import LitePullConsumer
from mqcore.client.process_queue import ProcessQueue
from mqcore.client.producer import Producer, make_message, select_by_hash
from mqcore.client.push_consumer import PushConsumer
from mqcore.client.rebalance import ConsumeFromWhere, MessageModel, MessageSelector
from mqcore.errors import MQBrokerError
from mqcore.message import MessageExt
from mqcore.protocol import ResponseCode
from mqcore.protocol.bodies import MessageQueue
from tests.support import poll_messages, until
from tests.support.inproc import BROKER_NAME, LiveCluster

_names = itertools.count()

# Retries are delayed by level 3 + n: keep every level at 1 s for the retry test.
STORE = {"message_delay_level": " ".join(["1s"] * 18)}
pytestmark = [pytest.mark.timeout(60), pytest.mark.cluster(store=STORE)]


def consumer_offset(cluster: LiveCluster, group: str, topic: str) -> dict[int, int]:
    return dict(cluster.broker.offsets.query_all(group, topic))


async def produce(
    cluster: LiveCluster, topic: str, count: int, *, tags: Callable[[int], str] = lambda i: "A"
) -> list[str]:
    """Send ``count`` messages with bodies ``m<i>``, keys ``k<i>``; returns bodies."""
    bodies = []
    async with Producer(f"pg{next(_names)}", namesrv=cluster.addr) as producer:
        for i in range(count):
            msg = make_message(topic, f"m{i}", tags=tags(i), keys=[f"k{i}", f"x{i}"])
            result = await producer.send(msg)
            assert result.ok
            bodies.append(f"m{i}")
    return bodies


def owned(consumer: PushConsumer, topic: str) -> set[MessageQueue]:
    impl = consumer._rebalance
    return set(impl.queues_of(topic)) if impl is not None else set()


class Collector:
    """A listener that records what it got, by body."""

    def __init__(self, status: Callable[[MessageExt], ConsumeStatus] | None = None) -> None:
        self.msgs: list[MessageExt] = []
        self.status = status

    def __call__(self, msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        result = ConsumeStatus.CONSUME_SUCCESS
        for msg in msgs:
            if self.status is not None and self.status(msg) is ConsumeStatus.RECONSUME_LATER:
                result = ConsumeStatus.RECONSUME_LATER
        self.msgs.extend(msgs)
        return result

    def bodies(self) -> list[str]:
        return [m.body.decode() for m in self.msgs]


def push(
    cluster: LiveCluster, group: str, topic: str, expr: str = "*", **kw: object
) -> PushConsumer:
    kw.setdefault("instance_name", f"i{next(_names)}")
    consumer = PushConsumer(
        group,
        namesrv=cluster.addr,
        consume_from_where=ConsumeFromWhere.FIRST,
        offset_store_dir=str(cluster.tmp / "offsets"),
        **kw,  # type: ignore[arg-type]
    )
    consumer.subscribe(topic, expr)
    return consumer


async def test_push_tags_and_contents_exact(cluster: LiveCluster) -> None:
    await cluster.create_topic("T1", queues=2)
    # Each queue gets A, B, A, B, ... and ends with a B the broker filters out.
    sent = await produce(cluster, "T1", 40, tags=lambda i: "A" if i % 4 < 2 else "B")
    got = Collector()
    consumer = push(cluster, "g-tags", "T1", "A || C")
    consumer.register_listener(got)
    async with consumer:
        await until(lambda: len(got.msgs) >= 20, what="20 messages with tag A")
        assert sorted(got.bodies()) == sorted(b for i, b in enumerate(sent) if i % 4 < 2)
        for msg in got.msgs:
            i = int(msg.body[1:])
            assert msg.topic == "T1" and msg.tags == "A"
            assert msg.keys == [f"k{i}", f"x{i}"]
            assert msg.unique_key
    # Shutdown commits; the filtered-out tag B messages are skipped past, not left behind.
    assert sum(consumer_offset(cluster, "g-tags", "T1").values()) == 40
    assert len(got.msgs) == 20


async def test_lite_pull_subscribe_and_commit(cluster: LiveCluster) -> None:
    await cluster.create_topic("T2")
    sent = await produce(cluster, "T2", 30)
    consumer = LitePullConsumer(
        "g-lite",
        namesrv=cluster.addr,
        consume_from_where=ConsumeFromWhere.FIRST,
        auto_commit=False,
        instance_name="lite1",
    )
    consumer.subscribe("T2", "*")
    async with consumer:
        got = await poll_messages(consumer, 30, 20)
        assert sorted(m.body.decode() for m in got) == sorted(sent)
        assert await consumer.poll(timeout=0.1) == []
        assert len(consumer.assignment()) == 4
        await consumer.commit_sync()
        assert sum(consumer_offset(cluster, "g-lite", "T2").values()) == 30
        mq = min(consumer.assignment())
        assert await consumer.committed(mq) == consumer_offset(cluster, "g-lite", "T2")[0]


async def test_lite_pull_assign_seek_pause(cluster: LiveCluster) -> None:
    await cluster.create_topic("T3", queues=2)
    await produce(cluster, "T3", 20)
    consumer = LitePullConsumer("g-assign", namesrv=cluster.addr, instance_name="lite2")
    await consumer.start()
    try:
        queues = await consumer.fetch_message_queues("T3")
        q0, q1 = queues
        consumer.assign([q0, q1])
        await until(lambda: consumer.assignment() == {q0, q1}, what="assignment")
        # LAST for a never-committed group on a young queue starts at 0 (spec §8.5).
        got = await poll_messages(consumer, 20, 10)
        assert len(got) == 20
        per_queue = collections.Counter(m.queue_id for m in got)
        consumer.pause([q1])
        await consumer.seek(q0, 3)
        await consumer.seek_to_begin(q1)
        again = await poll_messages(consumer, per_queue[0] - 3, 10, poll_timeout=0.3)
        assert sorted(m.queue_offset for m in again) == list(range(3, per_queue[0]))
        assert all(m.queue_id == 0 for m in again)
        assert await consumer.poll(timeout=0.3) == []  # q1 is paused
        consumer.resume([q1])
        resumed = await poll_messages(consumer, per_queue[1], 10, poll_timeout=0.3)
        assert sorted(m.queue_offset for m in resumed) == list(range(per_queue[1]))
        await consumer.seek_to_end(q0)
        with pytest.raises(ValueError):
            await consumer.seek(q0, 10_000)
    finally:
        await consumer.shutdown()


async def test_clustering_three_members_disjoint_union(cluster: LiveCluster) -> None:
    await cluster.create_topic("T4", queues=6)
    sent = await produce(cluster, "T4", 60)
    collectors = [Collector() for _ in range(3)]
    consumers = []
    for got in collectors:
        consumer = push(cluster, "g-three", "T4")
        consumer.register_listener(got)
        consumers.append(consumer)
    try:
        for consumer in consumers:
            await consumer.start()
        total = lambda: sum(len(c.msgs) for c in collectors)  # noqa: E731
        await until(lambda: total() >= 60, what="all 60 messages")
        await until(lambda: all(len(owned(c, "T4")) == 2 for c in consumers), what="2 each")
        bodies = [set(c.bodies()) for c in collectors]
        assert set().union(*bodies) == set(sent)
        # Queues moved while members joined: a message may be seen twice, never lost.
        mine = [owned(c, "T4") for c in consumers]
        assert all(a.isdisjoint(b) for a, b in itertools.combinations(mine, 2))
    finally:
        for consumer in consumers:
            await consumer.shutdown()


async def test_broadcasting_and_second_group(cluster: LiveCluster) -> None:
    await cluster.create_topic("T5")
    sent = await produce(cluster, "T5", 24)
    members = [Collector(), Collector()]
    other = Collector()
    consumers = []
    for got in members:
        consumer = push(cluster, "g-bcast", "T5", message_model=MessageModel.BROADCASTING)
        consumer.register_listener(got)
        consumers.append(consumer)
    second = push(cluster, "g-second", "T5")
    second.register_listener(other)
    consumers.append(second)
    try:
        for consumer in consumers:
            await consumer.start()
        await until(lambda: all(len(m.msgs) >= 24 for m in [*members, other]), what="3 copies")
        for got in [*members, other]:
            assert sorted(got.bodies()) == sorted(sent)
        await consumers[0].persist_consumer_offset()
        store = consumers[0]._offset_store
        assert store is not None and sum(store.offsets().values()) == 24
        assert consumer_offset(cluster, "g-bcast", "T5") == {}  # never sent to the broker
    finally:
        for consumer in consumers:
            await consumer.shutdown()


async def test_orderly_per_key_order(cluster: LiveCluster) -> None:
    await cluster.create_topic("T6")
    keys = [f"order-{k}" for k in range(5)]
    async with Producer("pg-order", namesrv=cluster.addr) as producer:
        for step in range(10):
            for key in keys:
                msg = make_message("T6", f"{key}:{step}", tags="A", keys=[key])
                assert (await producer.send(msg, selector=select_by_hash, arg=key)).ok
    seen: dict[str, list[int]] = collections.defaultdict(list)
    active: set[int] = set()
    overlap = False

    async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeOrderlyStatus:
        nonlocal overlap
        if ctx.message_queue.queue_id in active:
            overlap = True
        active.add(ctx.message_queue.queue_id)
        await asyncio.sleep(0)
        for msg in msgs:
            key, step = msg.body.decode().split(":")
            seen[key].append(int(step))
        active.discard(ctx.message_queue.queue_id)
        return ConsumeOrderlyStatus.SUCCESS

    consumer = push(cluster, "g-order", "T6")
    consumer.register_listener(listener, orderly=True)
    async with consumer:
        await until(lambda: sum(map(len, seen.values())) >= 50, what="50 ordered messages")
        locks = cluster.broker.locks.table.get("g-order", {})
        assert {mq.queue_id for mq in locks if mq.topic == "T6"} == {0, 1, 2, 3}
    assert not overlap
    assert all(steps == list(range(10)) for steps in seen.values()) and len(seen) == 5
    assert not cluster.broker.locks.table.get("g-order")  # released


async def test_restart_resumes_from_committed_offset(cluster: LiveCluster) -> None:
    await cluster.create_topic("T7", queues=1)
    sent = await produce(cluster, "T7", 20)
    first: list[str] = []
    stuck = asyncio.Event()

    async def slow(msgs: list[MessageExt], ctx: ConsumeContext) -> None:
        if msgs[0].body == b"m8":
            stuck.set()
            await asyncio.Event().wait()  # in flight when the consumer stops
        first.extend(m.body.decode() for m in msgs)

    consumer = push(cluster, "g-restart", "T7", consume_thread_max=1, await_termination=0.2)
    consumer.register_listener(slow)
    async with consumer:
        await until(stuck.is_set, what="m8 in flight")
    assert first == [f"m{i}" for i in range(8)]
    assert consumer_offset(cluster, "g-restart", "T7") == {0: 8}

    second = Collector()
    consumer = push(cluster, "g-restart", "T7")
    consumer.register_listener(second)
    async with consumer:
        await until(lambda: len(second.msgs) >= 12, what="the rest")
    assert consumer_offset(cluster, "g-restart", "T7") == {0: 20}
    # No loss; the only message seen twice would be the unacknowledged m8 (it was not).
    assert sorted(first + second.bodies()) == sorted(sent)


async def test_rebalance_on_join_and_leave(cluster: LiveCluster) -> None:
    await cluster.create_topic("T8", queues=4)
    a_got, b_got = Collector(), Collector()
    # The periodic rebalance is out of reach (300 s) and the waits short: only the
    # broker's NOTIFY_CONSUMER_IDS_CHANGED can make ``a`` give up and take back queues.
    slow = {"rebalance_interval": 300.0}
    a = push(cluster, "g-join", "T8", client_config=ClientConfig("ia", **slow))
    a.register_listener(a_got)
    b = push(cluster, "g-join", "T8", client_config=ClientConfig("ib", **slow))
    b.register_listener(b_got)

    async with a:
        await until(lambda: len(owned(a, "T8")) == 4, what="a owns all")
        await b.start()
        try:
            await until(
                lambda: len(owned(a, "T8")) == 2 and len(owned(b, "T8")) == 2,
                timeout=5.0,
                what="2 + 2 after the join notification",
            )
            assert owned(a, "T8").isdisjoint(owned(b, "T8"))
            sent = await produce(cluster, "T8", 20)
            await until(lambda: len(a_got.msgs) + len(b_got.msgs) >= 20, what="20 messages")
            assert sorted(a_got.bodies() + b_got.bodies()) == sorted(sent)
            assert a_got.msgs and b_got.msgs
        finally:
            await b.shutdown()
        await until(
            lambda: len(owned(a, "T8")) == 4, timeout=5.0, what="a owns all again after the leave"
        )


async def test_reconsume_later_goes_through_retry_topic(cluster: LiveCluster) -> None:
    await cluster.create_topic("T9", queues=1)
    attempts: collections.Counter[str] = collections.Counter()

    def status(msg: MessageExt) -> ConsumeStatus:
        attempts[msg.body.decode()] += 1
        if msg.body == b"m1" and attempts["m1"] == 1:
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    got = Collector(status)
    consumer = push(cluster, "g-retry", "T9")
    consumer.register_listener(got)
    await produce(cluster, "T9", 3)
    async with consumer:
        await until(lambda: len(got.msgs) >= 3, what="first deliveries")
        retry_topic = "%RETRY%g-retry"
        store = cluster.broker.store
        await until(
            lambda: (
                store.get_max_offset_in_queue(retry_topic, 0) > 0
                or store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 2) > 0
            ),
            what="the failed message sent back",
        )
        await until(lambda: attempts["m1"] >= 2, timeout=30, what="redelivery of m1")
        first = next(m for m in got.msgs if m.body == b"m1")
        again = [m for m in got.msgs if m.body == b"m1"][-1]
        assert again.topic == "T9" and again.reconsume_times == 1
        props = again.properties
        assert props.get("RETRY_TOPIC") == "T9"
        # The broker's CONSUMER_SEND_MSG_BACK stored it (the client's fallback copy would
        # carry RECONSUME_TIME and MAX_RECONSUME_TIMES): delay level 3 + 0 through the
        # schedule topic, the original's offset msgId as ORIGIN_MESSAGE_ID.
        assert "RECONSUME_TIME" not in props and "MAX_RECONSUME_TIMES" not in props
        assert props.get("ORIGIN_MESSAGE_ID") == first.msg_id
        assert props.get("DELAY") == "3" and props.get("WAIT") == "false"
        assert props.get("REAL_TOPIC") == "%RETRY%g-retry" and props.get("REAL_QID") == "0"
        assert attempts["m0"] == attempts["m2"] == 1


async def test_sql92_subscription_checked_at_start(tmp_path: Path) -> None:
    async with LiveCluster(tmp_path / "plain", store=STORE).running(BROKER_NAME) as plain:
        await plain.create_topic("S1")
        consumer = PushConsumer("g-sql", namesrv=plain.addr, instance_name="sql1")
        consumer.subscribe("S1", MessageSelector.by_sql("a > 5"))
        consumer.register_listener(Collector())
        with pytest.raises(MQBrokerError, match="enablePropertyFilter"):
            await consumer.start()
        # The failed start left nothing running.
        assert not consumer.started
    sql_cluster = LiveCluster(
        tmp_path / "sql", store=STORE, settings={"enable_property_filter": True}
    )
    async with sql_cluster.running(BROKER_NAME) as sql:
        await sql.create_topic("S1")
        bad = LitePullConsumer("g-sql", namesrv=sql.addr, instance_name="sql2")
        bad.subscribe("S1", MessageSelector.by_sql("a >"))
        with pytest.raises(MQBrokerError) as info:
            await bad.start()
        assert info.value.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
        async with Producer("pg-sql", namesrv=sql.addr) as producer:
            for i in range(10):
                tags = "x" if i % 2 else "y"
                msg = make_message("S1", f"s{i}", tags=tags, properties={"a": str(i)})
                assert (await producer.send(msg)).ok
        got = Collector()
        good = PushConsumer(
            "g-sql",
            namesrv=sql.addr,
            instance_name="sql3",
            consume_from_where=ConsumeFromWhere.FIRST,
        )
        good.subscribe("S1", MessageSelector.by_sql("a > 5 AND TAGS = 'x'"))
        good.register_listener(got)
        async with good:
            data = good.consumer_data().subscription_data_set
            assert {(d.topic, d.expression_type) for d in data} == {
                ("S1", "SQL92"),
                ("%RETRY%g-sql", "TAG"),
            }
            await until(lambda: len(got.msgs) >= 2, what="the two matching messages")
            assert sorted(got.bodies()) == ["s7", "s9"]


async def test_one_consumer_per_group_per_instance(cluster: LiveCluster) -> None:
    await cluster.create_topic("T10")
    shared = ClientInstance(cluster.addr, instance_name="dup")
    first = push(cluster, "g-dup", "T10", instance=shared)
    first.register_listener(Collector())
    second = push(cluster, "g-dup", "T10", instance=shared)
    second.register_listener(Collector())
    async with first:
        with pytest.raises(ClientStateError, match="already used"):
            await second.start()
        assert first.instance.consumers["g-dup"] is first
    await shared.shutdown()


async def test_lite_pull_members_rebalance(cluster: LiveCluster) -> None:
    await cluster.create_topic("T11", queues=4)
    a = LitePullConsumer("g-lite2", namesrv=cluster.addr, instance_name="la")
    b = LitePullConsumer("g-lite2", namesrv=cluster.addr, instance_name="lb")
    a.subscribe("T11")
    b.subscribe("T11")
    async with a:
        await until(lambda: len(a.assignment()) == 4, what="a owns all")
        async with b:
            await until(lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, what="2 + 2")
            assert a.assignment().isdisjoint(b.assignment())
        await until(lambda: len(a.assignment()) == 4, what="a owns all again")


async def test_max_reconsume_times_ends_in_dlq(cluster: LiveCluster) -> None:
    await cluster.create_topic("T12", queues=1)
    got = Collector(lambda m: ConsumeStatus.RECONSUME_LATER)
    consumer = push(cluster, "g-dlq", "T12", max_reconsume_times=1)
    consumer.register_listener(got)
    await produce(cluster, "T12", 1)
    store = cluster.broker.store
    async with consumer:
        await until(
            lambda: store.get_max_offset_in_queue("%DLQ%g-dlq", 0) == 1,
            timeout=30,
            what="the message in the DLQ",
        )
        # One retry through the broker's send-back, none through the client's fallback
        # copy (RocketMQ counts that copy as a retry already).
        assert 1 <= len(got.msgs) <= 2
        assert all(m.body == b"m0" and m.topic == "T12" for m in got.msgs)


async def test_flow_control_bounds_the_cache(cluster: LiveCluster) -> None:
    await cluster.create_topic("T13", queues=1)
    await produce(cluster, "T13", 40)
    gate = asyncio.Event()
    got: list[MessageExt] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> None:
        await gate.wait()
        got.extend(msgs)

    consumer = push(cluster, "g-flow", "T13", pull_batch_size=4, pull_threshold_for_queue=5)
    consumer.register_listener(listener)
    held_back = 0
    check = consumer._flow_controlled

    def counting(pq: ProcessQueue) -> bool:
        nonlocal held_back
        blocked = check(pq)
        held_back += blocked
        return blocked

    consumer._flow_controlled = counting  # type: ignore[method-assign]
    async with consumer:
        await until(lambda: held_back >= 3, what="the pull loop holding back")
        impl = consumer._rebalance
        assert impl is not None
        pq = next(pq for mq, pq in impl.process_queues.items() if mq.topic == "T13")
        assert 5 < pq.msg_count <= 5 + 4  # stops once over the threshold
        gate.set()
        await until(lambda: len(got) == 40, what="everything after the release")


async def test_position_is_the_next_offset_to_consume(cluster: LiveCluster) -> None:
    await cluster.create_topic("TPos", queues=2)
    await produce(cluster, "TPos", 10)
    ends = {qid: cluster.broker.store.get_max_offset_in_queue("TPos", qid) for qid in (0, 1)}
    q0 = MessageQueue("TPos", "broker-a", 0)
    lite = LitePullConsumer(
        "g-pos-lite", namesrv=cluster.addr, consume_from_where=ConsumeFromWhere.FIRST,
        auto_commit=False, instance_name="pos-lite",
    )  # fmt: skip
    lite.subscribe("TPos")
    assert lite.position(q0) is None  # not started
    async with lite:
        assert lite.position(MessageQueue("Other", "broker-a", 0)) is None  # not owned
        got: list[MessageExt] = []
        got += await poll_messages(lite, 10, 10)
        assert {mq.queue_id: lite.position(mq) for mq in lite.assignment()} == ends
        assert await lite.committed(q0) in (None, 0)  # position is local: nothing committed
    assert lite.position(q0) is None  # shut down

    collector = Collector()
    consumer = push(cluster, "g-pos-push", "TPos")
    consumer.register_listener(collector)
    async with consumer:
        await until(lambda: len(collector.msgs) >= 10, what="10 messages")
        mine = owned(consumer, "TPos")
        await until(
            lambda: {mq.queue_id: consumer.position(mq) for mq in mine} == ends,
            what="positions at the queue ends",
        )

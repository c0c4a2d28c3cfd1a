"""POP consumption (RocketMQ 5, issue 27) against an in-process broker, through the
SimpleConsumer: receive and ack, invisibility running out, changing it, batch acks,
retries ending in the DLQ, long polling, and what the revive topic holds.

The revive service runs every 50 ms here (``reviveInterval``) and invisible times are
fractions of a second, so every wait is short; each is a poll with a deadline.
"""

from __future__ import annotations

import asyncio
import time
from itertools import count

import pytest

from mqcore.broker.pop.keys import REVIVE_GROUP, revive_topic
from mqcore.client.admin import Admin
from mqcore.client.producer import Producer, make_message
from mqcore.client.simple_consumer import SimpleConsumer, receipt
from mqcore.client.sync import SyncSimpleConsumer
from mqcore.common.metadata import SubscriptionGroupConfig
from mqcore.message import MessageExt
from mqcore.message.record import decode_record
from mqcore.protocol.extra_info import pop_retry_topic_v1
from mqcore.store.results import GetStatus
from tests.support.inproc import LiveCluster
from tests.support.polling import until

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.cluster(topics={"T": 2}, revive_interval=50, revive_queue_num=2),
]

_groups = count()


def group_name() -> str:
    return f"pop-g{next(_groups)}"


async def send(cluster: LiveCluster, n: int, topic: str = "T", tags: str = "a") -> list[str]:
    async with Producer(f"pp{next(_groups)}", namesrv=cluster.addr) as producer:
        bodies = [f"m{i}-{time.monotonic_ns()}" for i in range(n)]
        for body in bodies:
            result = await producer.send(make_message(topic, body, tags=tags))
            assert result.ok
        return bodies


async def consumer(cluster: LiveCluster, group: str, topic: str = "T") -> SimpleConsumer:
    c = cluster.track(SimpleConsumer(group, namesrv=cluster.addr, await_duration=0.2))
    c.subscribe(topic)
    await c.start()
    return c


async def receive_all(c: SimpleConsumer, n: int, invisible: float) -> list[MessageExt]:
    got: list[MessageExt] = []

    async def more() -> bool:
        got.extend(await c.receive(32, invisible))
        return len(got) >= n

    await until(more, 10.0, lambda: f"{len(got)} of {n} received")
    return got


def settled(cluster: LiveCluster) -> bool:
    """The revive service has read everything and no checkpoint waits any more."""
    revive = cluster.broker.pop.revive
    revive.revive_once()
    return revive.pending_count == 0


async def test_acked_messages_are_not_handed_out_again(cluster: LiveCluster) -> None:
    bodies = await send(cluster, 5)
    c = await consumer(cluster, group_name())
    got = await receive_all(c, 5, invisible=5.0)
    assert sorted(m.body.decode() for m in got) == sorted(bodies)
    for m in got:
        assert m.topic == "T"
        assert receipt(m).queue_offset == m.queue_offset
        await c.ack(m)
    await until(lambda: settled(cluster), 5.0, "checkpoints settled")
    assert await c.receive(32, 0.3, await_duration=0) == []
    assert cluster.broker.pop.revive.revived == 0


async def test_unacked_message_comes_back_from_the_retry_topic(cluster: LiveCluster) -> None:
    group = group_name()
    [body] = await send(cluster, 1)
    c = await consumer(cluster, group)
    [first] = await receive_all(c, 1, invisible=0.2)
    assert first.reconsume_times == 0
    [again] = await receive_all(c, 1, invisible=5.0)
    assert again.body.decode() == body
    assert again.reconsume_times == 1
    assert again.topic == "T"  # rewritten from the retry topic, its receipt in POP_CK
    assert receipt(again).real_topic("T", group) == pop_retry_topic_v1("T", group)
    await c.ack(again)
    await until(lambda: settled(cluster), 5.0, "checkpoints settled")
    assert await c.receive(32, 0.2, await_duration=0) == []


async def test_change_invisible_duration(cluster: LiveCluster) -> None:
    group = group_name()
    await send(cluster, 2)
    c = await consumer(cluster, group)
    a, b = await receive_all(c, 2, invisible=30.0)
    await c.change_invisible_duration(a, 0.1)  # back soon
    await c.change_invisible_duration(b, 30.0)
    await c.ack(b)  # with its new receipt: acknowledged for good
    [back] = await receive_all(c, 1, invisible=30.0)
    assert back.body == a.body and back.reconsume_times == 1
    await c.ack(back)
    await until(lambda: settled(cluster), 5.0, "checkpoints settled")
    assert cluster.broker.pop.revive.revived == 1


async def test_batch_ack(cluster: LiveCluster) -> None:
    await send(cluster, 6)
    c = await consumer(cluster, group_name())
    got = await receive_all(c, 6, invisible=5.0)
    await c.ack_batch(got)
    await until(lambda: settled(cluster), 5.0, "checkpoints settled")
    assert cluster.broker.pop.revive.revived == 0
    assert await c.receive(32, 0.3, await_duration=0) == []


async def test_retries_end_in_the_dlq(cluster: LiveCluster) -> None:
    group = group_name()
    cluster.broker.groups.update(SubscriptionGroupConfig(group, retry_max_times=1))
    [body] = await send(cluster, 1)
    c = await consumer(cluster, group)
    [first] = await receive_all(c, 1, invisible=0.1)
    [second] = await receive_all(c, 1, invisible=0.1)
    assert (first.reconsume_times, second.reconsume_times) == (0, 1)
    store = cluster.broker.store
    dlq = f"%DLQ%{group}"
    await until(lambda: store.get_max_offset_in_queue(dlq, 0) == 1, 5.0, "the dead letter")
    result = store.get_messages(dlq, 0, 0, 1)
    dead = decode_record(result.buffers[0])
    assert dead.body.decode() == body and dead.reconsume_times == 2
    assert await c.receive(32, 0.1, await_duration=0) == []


async def test_receive_is_held_until_a_message_arrives(cluster: LiveCluster) -> None:
    c = await consumer(cluster, group_name())
    await c.receive(32, 1.0, await_duration=0)  # the group starts at the queues' end
    started = time.monotonic()
    waiting = asyncio.ensure_future(c.receive(32, 1.0, await_duration=10.0))
    await until(lambda: cluster.broker.long_polling.topic_held_count("T") == 1, 5.0, "held")
    [body] = await send(cluster, 1)
    got = await asyncio.wait_for(waiting, 5.0)
    assert [m.body.decode() for m in got] == [body]
    assert time.monotonic() - started < 5.0


async def test_checkpoints_and_acks_are_records_of_the_revive_topic(cluster: LiveCluster) -> None:
    group = group_name()
    await send(cluster, 1)
    c = await consumer(cluster, group)
    [m] = await receive_all(c, 1, invisible=30.0)
    await c.ack(m)
    store = cluster.broker.store
    topic = revive_topic(cluster.broker.config.broker_cluster_name)
    qid = receipt(m).revive_qid
    records = []
    offset = 0
    while True:
        result = store.get_messages(topic, qid, offset, 32)
        if result.status is not GetStatus.FOUND:
            break
        records += [decode_record(b) for b in result.buffers]
        offset = result.next_begin_offset
    ours = [r for r in records if group.encode() in r.body]
    assert [r.tags for r in ours] == ["ck", "ack"]
    assert b'"c":"' + group.encode() + b'"' in ours[0].body
    assert b'"ao":' + str(m.queue_offset).encode() in ours[1].body
    await until(lambda: settled(cluster), 5.0, "checkpoints settled")
    done = cluster.broker.offsets.query(REVIVE_GROUP, topic, qid)
    assert done is not None and done >= ours[-1].queue_offset


async def test_the_blocking_facade(cluster: LiveCluster) -> None:
    [body] = await send(cluster, 1)
    group = group_name()

    def script() -> list[str]:  # what a script does, in a thread beside the broker's loop
        with SyncSimpleConsumer(group, namesrv=cluster.addr, await_duration=2.0) as c:
            c.subscribe("T")
            got = c.receive(32, 5.0)
            c.change_invisible_duration(got[0], 30.0)
            c.ack(got[0])
            return [m.body.decode() for m in got]

    assert await asyncio.to_thread(script) == [body]
    await until(lambda: settled(cluster), 5.0, "checkpoints settled")
    assert cluster.broker.pop.revive.revived == 0


async def fifo_consumer(cluster: LiveCluster, group: str) -> SimpleConsumer:
    await cluster.create_topic("F", 1)
    c = cluster.track(SimpleConsumer(group, namesrv=cluster.addr, await_duration=0.2, fifo=True))
    c.subscribe("F")
    await c.start()
    return c


async def test_fifo_hands_a_queue_out_in_order_and_blocks_it_while_in_flight(
    cluster: LiveCluster,
) -> None:
    c = await fifo_consumer(cluster, group_name())
    bodies = await send(cluster, 3, topic="F")
    got = await receive_all(c, 3, invisible=5.0)
    assert [m.body.decode() for m in got] == bodies
    assert all(m.reconsume_times == 0 and receipt(m).is_order for m in got)
    assert await c.receive(32, 5.0, await_duration=0) == []  # in flight: blocked
    await c.ack(got[0])
    assert await c.receive(32, 5.0, await_duration=0) == []  # the other two still are
    await c.change_invisible_duration(got[1], 0.0)
    await c.change_invisible_duration(got[2], 0.0)
    again = await receive_all(c, 2, invisible=5.0)  # the same two, in order, once more
    assert [m.body.decode() for m in again] == bodies[1:]
    assert [m.reconsume_times for m in again] == [1, 1]
    for m in again:
        await c.ack(m)
    [later] = await send(cluster, 1, topic="F")
    [m] = await receive_all(c, 1, invisible=5.0)
    assert (m.body.decode(), m.reconsume_times) == (later, 0)
    assert cluster.broker.pop.revive.pending_count == 0  # FIFO writes no checkpoint


async def test_fifo_messages_come_again_after_their_invisible_time(cluster: LiveCluster) -> None:
    c = await fifo_consumer(cluster, group_name())
    bodies = await send(cluster, 2, topic="F")
    first = await receive_all(c, 2, invisible=0.2)
    assert [m.body.decode() for m in first] == bodies
    again = await receive_all(c, 2, invisible=5.0)
    assert [m.body.decode() for m in again] == bodies
    assert [m.reconsume_times for m in again] == [1, 1]
    await c.ack_batch(again)
    assert cluster.broker.offsets.query(c.group, "F", 0) == 2


async def test_a_pop_groups_progress_shows_as_a_pull_groups(cluster: LiveCluster) -> None:
    group = group_name()
    await send(cluster, 4)
    c = await consumer(cluster, group)
    got = await receive_all(c, 4, invisible=5.0)
    async with Admin(cluster.addr) as admin:
        progress = await admin.consume_progress(group, "T")
    assert sum(p.broker_offset for p in progress) == 4
    assert sum(p.lag for p in progress) == 0  # handed out, checkpointed: not lag any more
    await c.ack_batch(got)


async def test_a_held_fifo_receive_is_answered_when_the_queue_frees_itself(
    cluster: LiveCluster,
) -> None:
    c = await fifo_consumer(cluster, group_name())
    [body] = await send(cluster, 1, topic="F")
    [first] = await receive_all(c, 1, invisible=0.3)
    started = time.monotonic()
    again = await c.receive(32, 5.0, await_duration=10.0)  # held while the queue is blocked
    assert [(m.body.decode(), m.reconsume_times) for m in again] == [(body, 1)]
    assert time.monotonic() - started < 5.0  # not at the end of the poll time
    assert first.queue_offset == again[0].queue_offset

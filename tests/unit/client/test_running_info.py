"""A consumer's running info: the per-topic figures (ConsumerStats), 4.9.8's
ConsumerRunningInfo JSON both ways (the Java client writes MessageQueue keys as objects),
and the stack dump that stands for jstack."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from mqcore.client.consume_stats import ConsumerStats
from mqcore.client.process_queue import ProcessQueue
from mqcore.client.running_info import running_info, stack_dump
from mqcore.message import MessageExt
from mqcore.protocol.bodies import MessageQueue, SubscriptionData
from mqcore.protocol.bodies.running_info import (
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rates_over_the_last_minute_and_failures_over_the_hour() -> None:
    clock = Clock()
    stats = ConsumerStats(clock=clock)
    for _ in range(30):  # 30 s of one pull (10 messages, 40 ms) and one call a second
        stats.pulled("T", 40.0, 10)
        stats.consumed("T", 2.0, ok=9, failed=1)
        clock.now += 1
    st = stats.status("T")
    assert st.pull_rt == 40.0 and st.consume_rt == 2.0
    assert st.pull_tps == pytest.approx(10.0) and st.consume_ok_tps == pytest.approx(9.0)
    assert st.consume_failed_tps == pytest.approx(1.0) and st.consume_failed_msgs == 30
    clock.now += 120  # two quiet minutes: no rates, the failures still count for the hour
    st = stats.status("T")
    assert st.pull_tps == 0 and st.consume_ok_tps == 0 and st.consume_failed_msgs == 30
    clock.now += 3600  # and after the hour, nothing
    assert stats.status("T").consume_failed_msgs == 0
    assert stats.table(["T", "Other"])["Other"].pull_tps == 0


def _msg(offset: int) -> MessageExt:
    return MessageExt(topic="T", body=b"x" * 10, queue_id=0, queue_offset=offset)


def test_running_info_round_trips_and_reads_javas_object_keys() -> None:
    pq = ProcessQueue()
    pq.put([_msg(5), _msg(6), _msg(9)])
    mq = MessageQueue("T", "broker-a", 0)
    info = running_info(
        properties={"consumerGroup": "g", "unitMode": False},
        consume_type="CONSUME_PASSIVELY",
        namesrv="ns:9876",
        started_ms=1234,
        subscriptions=[SubscriptionData("T")],
        queues={mq: pq},
        offsets={mq: 5},
        stats=ConsumerStats(),
    )
    held = info.mq_table[mq]
    assert (held.commit_offset, held.cached_msg_count) == (5, 3)
    assert (held.cached_msg_min_offset, held.cached_msg_max_offset) == (5, 9)
    assert held.last_pull_timestamp > 0
    assert info.properties["unitMode"] == "false"
    assert info.properties[PROP_CONSUMER_START_TIMESTAMP] == "1234"
    again = ConsumerRunningInfo.decode(info.encode())
    assert again == info
    java = info.to_json()  # as fastjson writes it: the MessageQueue key as a bare object
    body = orjson.dumps({**java, "mqTable": {}}).decode()
    key = orjson.dumps(mq.to_json()).decode()
    value = orjson.dumps(java["mqTable"][next(iter(java["mqTable"]))]).decode()
    java_text = body.replace('"mqTable":{}', f'"mqTable":{{{key}:{value}}}')
    from_java = ConsumerRunningInfo.decode(java_text)
    assert from_java.mq_table == info.mq_table
    assert from_java.properties[PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"


def test_direct_result_reads_and_judges() -> None:
    ok = ConsumeMessageDirectlyResult.decode(b'{"consumeResult":"CR_SUCCESS","spentTimeMills":3}')
    assert ok.ok and ok.spent_time_mills == 3 and ok.auto_commit
    assert not ConsumeMessageDirectlyResult(consume_result="CR_THROW_EXCEPTION").ok


async def test_the_stack_dump_shows_threads_and_what_tasks_await() -> None:
    gate = asyncio.Event()

    async def waiting_listener() -> None:
        await gate.wait()

    task = asyncio.create_task(waiting_listener(), name="mq-push-consume-7")
    await asyncio.sleep(0)
    try:
        text = stack_dump()
    finally:
        gate.set()
        await task
    assert '"MainThread"' in text
    assert '"task mq-push-consume-7" pending' in text
    assert "at waiting_listener" in text and "await gate.wait()" in text

"""Delay levels end to end (issue 6 §1, §5) against an in-process name server and broker.

The broker runs a shortened level table (level n = n s for 1-4, 1 s up to 17, 2 s for
18) so every level can be exercised in seconds. "On time" means: the delivered copy's
store time is no earlier than the schedule copy's store time + the level's delay, and
no later than that + :data:`SLACK_MS`. Every wait is a poll with a deadline.
"""

from __future__ import annotations

import asyncio
import json
import struct
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.client.consume_service import ConsumeContext, ConsumeStatus
from mqcore.client.producer import Producer, make_message
from mqcore.client.push_consumer import PushConsumer
from mqcore.client.rebalance import ConsumeFromWhere
from mqcore.common import fastjson
from mqcore.common.metadata import TopicConfig
from mqcore.message import MessageExt
from mqcore.message.const import SCHEDULE_TOPIC
from mqcore.message.ids import decode_offset_msg_id
from mqcore.message.record import decode_record
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.route import KVTable
from mqcore.protocol.headers import SendMessageRequestHeader
from mqcore.remoting import RemotingClient
from tests.support import until
from tests.support.inproc import LIVE_STORE, LiveCluster, broker_controller

TABLE = "1s 2s 3s 4s " + "1s " * 13 + "2s"
DELAY_MS = {1: 1000, 2: 2000, 3: 3000, 4: 4000, 18: 2000}
SLACK_MS = 1500
pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.cluster(store={**LIVE_STORE, "message_delay_level": TABLE}),
]


def make_broker(store: Path, namesrv: str | None, **store_settings: Any) -> BrokerController:
    settings = {**LIVE_STORE, "message_delay_level": TABLE, **store_settings}
    return broker_controller(store, namesrv, store=settings)


async def create_topic(cluster: LiveCluster, topic: str) -> str:
    """Create a one-queue topic and wait for its route; the name server's address."""
    await cluster.create_topic(topic, 1)
    return cluster.addr


def raw_properties(view: memoryview) -> bytes:
    """The PROPERTIES bytes of an IPv4 v1 record, read straight from the layout."""
    (body_len,) = struct.unpack_from(">i", view, 84)
    p = 88 + body_len
    p += 1 + view[p]
    (length,) = struct.unpack_from(">h", view, p)
    return bytes(view[p + 2 : p + 2 + length])


def schedule_copy(broker: BrokerController, offset_msg_id: str) -> MessageExt:
    return broker.store.look_message(decode_offset_msg_id(offset_msg_id)[2])


async def runtime_info(broker: BrokerController) -> dict[str, str]:
    client = RemotingClient()
    try:
        resp = await client.invoke(
            broker.broker_addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 5.0
        )
    finally:
        await client.close()
    assert resp.code == ResponseCode.SUCCESS
    return KVTable.decode(resp.body).table


async def send_v1(broker: BrokerController, topic: str, properties: str) -> RemotingCommand:
    """SEND_MESSAGE (10, long field names) as an older or non-Java client sends it."""
    header = SendMessageRequestHeader(
        producer_group="pg-raw",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=properties,
        reconsume_times=0,
    )
    client = RemotingClient()
    try:
        return await client.invoke(
            broker.broker_addr,
            RemotingCommand.request(RequestCode.SEND_MESSAGE, header.to_ext_fields(), b"raw"),
            5.0,
        )
    finally:
        await client.close()


def real_queue(broker: BrokerController, topic: str) -> list[MessageExt]:
    got = broker.store.get_messages(topic, 0, 0, 100)
    return [decode_record(b) for b in got.buffers]


async def test_levels_deliver_on_time_with_keys_tags_and_properties(
    cluster: LiveCluster, tmp_path: Path
) -> None:
    broker = cluster.broker
    namesrv = await create_topic(cluster, "D1")
    received: list[MessageExt] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        received.extend(msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        "g-delay",
        namesrv=namesrv,
        consume_from_where=ConsumeFromWhere.FIRST,
        offset_store_dir=str(tmp_path / "offsets"),
    )
    consumer.subscribe("D1", "TagA")
    consumer.register_listener(listener)
    sent = {}
    async with consumer, Producer("pg-delay", namesrv=namesrv) as producer:
        for i, level in enumerate((1, 1, 2, 3)):
            msg = make_message(
                "D1",
                f"m{i}",
                tags="TagA",
                keys=[f"k{i}", "shared"],
                properties={"color": "blue", "n": str(i)},
                delay_level=level,
            )
            result = await producer.send(msg)
            assert result.ok
            sent[result.msg_id] = (level, result)
        # The answer mixes the queue asked for with the schedule queue's offset.
        offsets = sorted((lv, r.queue_offset) for lv, r in sent.values())
        assert offsets == [(1, 0), (1, 1), (2, 0), (3, 0)]
        assert {r.message_queue.queue_id for _, r in sent.values()} == {0}
        await until(lambda: len(received) >= 4, timeout=10, what="4 deliveries")
    assert len(received) == 4
    for msg in received:
        uniq = msg.properties["UNIQ_KEY"]
        level, result = sent[uniq]
        original = schedule_copy(broker, result.offset_msg_id)
        assert (original.topic, original.queue_id) == (SCHEDULE_TOPIC, level - 1)
        late = msg.store_timestamp - (original.store_timestamp + DELAY_MS[level])
        assert 0 <= late <= SLACK_MS, (level, late)
        i = msg.body.decode()[1:]
        assert msg.topic == "D1" and msg.queue_id == 0 and msg.tags == "TagA"
        assert msg.keys == [f"k{i}", "shared"]
        assert msg.properties["color"] == "blue" and msg.properties["n"] == i
        assert msg.properties["DELAY"] == str(level)
        assert msg.properties["REAL_TOPIC"] == "D1" and msg.properties["REAL_QID"] == "0"
        stored = broker.store.get_message(msg.commit_log_offset)
        original_raw = broker.store.get_message(original.commit_log_offset)
        assert raw_properties(stored) == raw_properties(original_raw)
    # Searchable by key in the real topic (the index entry of the delivered copy).
    assert len(broker.store.query_by_key("D1", "shared").buffers) == 4


async def test_level_18_and_clamping_above_the_maximum(cluster: LiveCluster) -> None:
    broker = cluster.broker
    namesrv = await create_topic(cluster, "D18")
    async with Producer("pg-18", namesrv=namesrv) as producer:
        results = [
            await producer.send(make_message("D18", f"m{lv}", delay_level=lv)) for lv in (18, 40)
        ]
    copies = [schedule_copy(broker, r.offset_msg_id) for r in results]
    assert [(c.queue_id, c.properties["DELAY"]) for c in copies] == [(17, "18"), (17, "18")]
    await until(lambda: len(real_queue(broker, "D18")) == 2, timeout=10, what="delivery")
    for msg in real_queue(broker, "D18"):
        original = next(c for c in copies if c.body == msg.body)
        late = msg.store_timestamp - (original.store_timestamp + DELAY_MS[18])
        assert 0 <= late <= SLACK_MS


async def test_send_message_v1_delay_and_runtime_info(cluster: LiveCluster) -> None:
    broker = cluster.broker
    broker.topics.update(TopicConfig("DV1", 1, 1))
    # ali-ons style: trailing separator, no UNIQ_KEY or WAIT.
    resp = await send_v1(broker, "DV1", "DELAY\x014\x02TAGS\x01TagB\x02")
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert resp.ext_fields["queueId"] == "0" and resp.ext_fields["queueOffset"] == "0"
    copy = schedule_copy(broker, resp.ext_fields["msgId"])
    assert (copy.topic, copy.queue_id) == (SCHEDULE_TOPIC, 3)
    info = await runtime_info(broker)
    assert info["scheduleMessageOffset_4"] == "0,1"
    assert info["scheduleMessageHeadDue_4"] == str(copy.store_timestamp + 4000)
    assert info["scheduleMessageOffset_1"] == "0,0"
    assert len([k for k in info if k.startswith("scheduleMessageOffset_")]) == 18
    await until(lambda: len(real_queue(broker, "DV1")) == 1, timeout=10, what="delivery")
    delivered = real_queue(broker, "DV1")[0]
    assert delivered.tags == "TagB" and delivered.body == b"raw"
    assert 0 <= delivered.store_timestamp - copy.store_timestamp - 4000 <= SLACK_MS
    info = await runtime_info(broker)
    assert info["scheduleMessageOffset_4"] == "1,1"
    assert info["scheduleMessageHeadDue_4"] == "-1"
    await until(lambda: broker.schedule_service.delivery_tps(4, 600) > 0, what="delivery rate")


async def test_delivered_copy_keeps_wait_as_4_9_8_stores_it(cluster: LiveCluster) -> None:
    """A plain send stores no ``WAIT`` (4.9.8 drops those 9 bytes), but 4.9.8's delay
    rewrite re-serializes the properties with it: the schedule copy and the delivered
    message carry ``WAIT=true``, with ``DELAY``/``REAL_TOPIC``/``REAL_QID`` kept, in its
    ``HashMap`` order (the order a real 4.9.8 broker stored for this key set)."""
    broker = cluster.broker
    broker.topics.update(TopicConfig("DW", 1, 1))
    plain = await send_v1(broker, "DW", "WAIT\x01true\x02UNIQ_KEY\x01U0")
    assert plain.code == ResponseCode.SUCCESS, plain.remark
    resp = await send_v1(broker, "DW", "DELAY\x011\x02WAIT\x01true\x02UNIQ_KEY\x01U1")
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    await until(lambda: len(real_queue(broker, "DW")) == 2, timeout=10, what="delivery")
    first, delivered = real_queue(broker, "DW")
    assert first.properties == {"UNIQ_KEY": "U0", "CLUSTER": "DefaultCluster"}
    expected = (
        b"REAL_TOPIC\x01DW\x02UNIQ_KEY\x01U1\x02CLUSTER\x01DefaultCluster\x02"
        b"DELAY\x011\x02WAIT\x01true\x02REAL_QID\x010"
    )
    copy = schedule_copy(broker, resp.ext_fields["msgId"])
    assert raw_properties(broker.store.get_message(copy.commit_log_offset)) == expected
    assert raw_properties(broker.store.get_message(delivered.commit_log_offset)) == expected


async def store_inspect(store: Path) -> dict[str, object]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mqcli.main",
        "store",
        "inspect",
        str(store),
        "--json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    doc: dict[str, object] = json.loads(out)
    return doc


async def test_progress_survives_a_clean_restart_exactly_once(tmp_path: Path) -> None:
    store = tmp_path / "store"
    broker = make_broker(store, None)
    await broker.start()
    try:
        broker.topics.update(TopicConfig("DR", 1, 1))
        for i in range(3):
            assert (await send_v1(broker, "DR", f"DELAY\x011\x02KEYS\x01a{i}")).code == 0
        for i in range(3):
            assert (await send_v1(broker, "DR", f"DELAY\x014\x02KEYS\x01b{i}")).code == 0
        await until(lambda: len(real_queue(broker, "DR")) == 3, timeout=10, what="level 1")
        assert broker.store.get_max_offset_in_queue("DR", 0) == 3
        head_due = broker.store.consume_queue(SCHEDULE_TOPIC, 3).entry(0)[2]  # type: ignore[union-attr]
    finally:
        await broker.shutdown()

    doc = fastjson.loads((store / "config" / "delayOffset.json").read_text())  # bare int keys
    assert doc["offsetTable"][1] == 3 and doc["offsetTable"].get(4, 0) == 0
    levels = {row["level"]: row for row in store_inspect_rows(await store_inspect(store))}
    assert (levels[1]["delivered"], levels[1]["waiting"]) == (3, 0)
    assert (levels[4]["delivered"], levels[4]["waiting"], levels[4]["max_offset"]) == (0, 3, 3)
    assert levels[4]["head_due_timestamp"] == head_due

    broker = make_broker(store, None)
    await broker.start()
    try:
        await until(lambda: len(real_queue(broker, "DR")) >= 6, timeout=10, what="level 4")
        assert broker.delay_offsets.get(4) == 3
        assert broker.delay_offsets.get(1) == 3
        keys = sorted(m.properties["KEYS"] for m in real_queue(broker, "DR"))
        assert keys == ["a0", "a1", "a2", "b0", "b1", "b2"]  # each exactly once
    finally:
        await broker.shutdown()


def store_inspect_rows(doc: dict[str, object]) -> list[dict[str, int]]:
    rows = doc["delay_levels"]
    assert isinstance(rows, list)
    return rows


async def test_progress_reaches_the_disk_soon_without_a_stop(tmp_path: Path) -> None:
    """A kill -9 must not replay every delivered delay: the progress is written soon after
    a delivery, not only at the (here: minute-long) periodic flush or a clean stop."""
    store = tmp_path / "store"
    broker = make_broker(store, None, flush_delay_offset_interval=60_000)
    await broker.start()
    try:
        broker.topics.update(TopicConfig("DK", 1, 1))
        for i in range(3):
            assert (await send_v1(broker, "DK", f"DELAY\x011\x02KEYS\x01k{i}")).code == 0
        await until(lambda: len(real_queue(broker, "DK")) == 3, timeout=10, what="delivery")
        offsets = store / "config" / "delayOffset.json"

        def on_disk() -> int:
            if not offsets.exists():
                return 0
            return int(fastjson.loads(offsets.read_text())["offsetTable"].get(1, 0))

        await until(lambda: on_disk() == 3, timeout=10, what="delay progress on disk")
    finally:
        await broker.shutdown()

"""Retries and dead letters (issue 6 §2, §5): CONSUMER_SEND_MSG_BACK as RocketMQ answers
it (raw requests against an in-process broker), and a push consumer whose listener keeps
failing ending in ``%DLQ%<group>`` after its maximum with the right reconsume counts.
Every wait is a poll with a deadline.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mqcore.broker.config import BrokerConfig
from mqcore.broker.controller import BrokerController
from mqcore.client.consume_service import ConsumeContext, ConsumeStatus
from mqcore.client.producer import Producer, make_message
from mqcore.client.push_consumer import PushConsumer
from mqcore.client.rebalance import ConsumeFromWhere
from mqcore.common.metadata import SubscriptionGroupConfig, TopicConfig
from mqcore.message import MessageExt
from mqcore.message.const import SCHEDULE_TOPIC
from mqcore.message.record import decode_record
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import ConsumerSendMsgBackRequestHeader, SendMessageRequestHeader
from mqcore.remoting import RemotingClient
from mqcore.store.store_config import MessageStoreConfig
from tests.support.clients import put
from tests.support.inproc import running_broker, running_namesrv
from tests.support.polling import until

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[BrokerController]:
    async with running_broker(tmp_path) as running:
        yield running


async def send_back(
    broker: BrokerController,
    offset: int,
    *,
    group: str = "g",
    delay_level: int = 0,
    max_reconsume_times: int | None = 16,
    version: int | None = None,
    fields: dict[str, str] | None = None,
) -> RemotingCommand:
    if fields is None:
        fields = ConsumerSendMsgBackRequestHeader(
            offset=offset,
            group=group,
            delay_level=delay_level,
            origin_msg_id="ignored",
            origin_topic="T",
            max_reconsume_times=max_reconsume_times,
        ).to_ext_fields()
    kw = {} if version is None else {"version": version}
    request = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, fields, **kw)
    client = RemotingClient()
    try:
        return await client.invoke(broker.broker_addr, request, 5.0)
    finally:
        await client.close()


def last(broker: BrokerController, topic: str, queue_id: int) -> MessageExt:
    store = broker.store
    got = store.get_messages(topic, queue_id, store.get_max_offset_in_queue(topic, queue_id) - 1, 1)
    assert got.buffers, f"nothing in {topic}/{queue_id}"
    return decode_record(got.buffers[0])


def stored(broker: BrokerController, reconsume_times: int = 0) -> MessageExt:
    """A consumed message of topic T (with an existing reconsume count)."""
    msg = put(broker, "T", keys="k1", uniq="U1", body=b"payload")
    if not reconsume_times:
        return msg
    msg.reconsume_times = reconsume_times
    msg.properties = {"TAGS": "TagA", "UNIQ_KEY": "U1"}
    result = broker.store.put_message(msg)
    assert result.ok
    return broker.store.look_message(result.wrote_offset)


async def test_send_back_schedules_a_retry_copy(broker: BrokerController) -> None:
    original = stored(broker)
    resp = await send_back(broker, original.commit_log_offset)
    assert resp.code == ResponseCode.SUCCESS and not resp.ext_fields
    copy = last(broker, SCHEDULE_TOPIC, 2)  # level 3 + 0 reconsumes
    assert copy.properties["REAL_TOPIC"] == "%RETRY%g" and copy.properties["REAL_QID"] == "0"
    assert copy.properties["RETRY_TOPIC"] == "T"
    assert copy.properties["ORIGIN_MESSAGE_ID"] == original.msg_id
    assert copy.properties["DELAY"] == "3" and copy.properties["WAIT"] == "false"
    assert copy.properties["KEYS"] == "k1" and copy.properties["UNIQ_KEY"] == "U1"
    assert copy.reconsume_times == 1
    assert (copy.body, copy.flag, copy.sys_flag) == (original.body, original.flag, 0)
    assert (copy.born_timestamp, copy.born_host) == (original.born_timestamp, original.born_host)
    retry = broker.topics.select("%RETRY%g")
    assert retry is not None and retry.read_queue_nums == 1 and retry.perm == 6


async def test_request_delay_level_and_resent_retry_keeps_origin(broker: BrokerController) -> None:
    original = stored(broker)
    assert (await send_back(broker, original.commit_log_offset, delay_level=2)).code == 0
    first = last(broker, SCHEDULE_TOPIC, 1)
    # The retry copy failing again: RETRY_TOPIC and ORIGIN_MESSAGE_ID are kept, level 3 + 1.
    assert (await send_back(broker, first.commit_log_offset)).code == 0
    second = last(broker, SCHEDULE_TOPIC, 3)
    assert second.reconsume_times == 2
    assert second.properties["RETRY_TOPIC"] == "T"
    assert second.properties["ORIGIN_MESSAGE_ID"] == original.msg_id


async def test_dead_letter_after_max_or_negative_level(broker: BrokerController) -> None:
    for reconsume, level, max_times in ((16, 0, 16), (0, -1, 16), (3, 0, 3)):
        msg = stored(broker, reconsume)
        before = broker.store.get_max_offset_in_queue("%DLQ%g", 0)
        resp = await send_back(
            broker, msg.commit_log_offset, delay_level=level, max_reconsume_times=max_times
        )
        assert resp.code == ResponseCode.SUCCESS
        assert broker.store.get_max_offset_in_queue("%DLQ%g", 0) == before + 1
        dead = last(broker, "%DLQ%g", 0)
        assert dead.reconsume_times == reconsume + 1
        assert dead.properties["DELAY"] == "0" and dead.properties["RETRY_TOPIC"] == "T"
        assert dead.properties["ORIGIN_MESSAGE_ID"] == msg.msg_id
    dlq = broker.topics.select("%DLQ%g")
    assert dlq is not None and (dlq.read_queue_nums, dlq.write_queue_nums, dlq.perm) == (1, 1, 6)
    assert broker.store.get_max_offset_in_queue(SCHEDULE_TOPIC, 2) == 0


async def test_group_retry_max_times_unless_header_overrides(broker: BrokerController) -> None:
    broker.groups.update(SubscriptionGroupConfig("g", retry_max_times=1))
    msg = stored(broker, reconsume_times=1)
    # No maxReconsumeTimes: the group's 1 applies -> DLQ.
    assert (await send_back(broker, msg.commit_log_offset, max_reconsume_times=None)).code == 0
    assert broker.store.get_max_offset_in_queue("%DLQ%g", 0) == 1
    # An old client (< V3_4_9) is not trusted with its header value either.
    assert (
        await send_back(broker, msg.commit_log_offset, max_reconsume_times=5, version=100)
    ).code == 0
    assert broker.store.get_max_offset_in_queue("%DLQ%g", 0) == 2
    # From V3_4_9 on the header's value wins: a retry (level 3 + 1).
    assert (await send_back(broker, msg.commit_log_offset, max_reconsume_times=5)).code == 0
    assert broker.store.get_max_offset_in_queue("%DLQ%g", 0) == 2
    assert broker.store.get_max_offset_in_queue(SCHEDULE_TOPIC, 3) == 1


async def test_retry_queue_nums_zero_drops(broker: BrokerController) -> None:
    broker.groups.update(SubscriptionGroupConfig("g0", retry_queue_nums=0))
    msg = stored(broker)
    max_phy = broker.store.max_phy_offset
    resp = await send_back(broker, msg.commit_log_offset, group="g0")
    assert resp.code == ResponseCode.SUCCESS
    assert broker.store.max_phy_offset == max_phy
    assert broker.topics.select("%RETRY%g0") is None


async def test_errors(tmp_path: Path) -> None:
    async with running_broker(tmp_path, auto_create_subscription_group=False) as broker:
        msg = stored(broker)
        resp = await send_back(broker, 987_654_321)
        assert resp.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST  # checked first
        broker.groups.update(SubscriptionGroupConfig("g"))
        for offset in (987_654_321, -1, msg.commit_log_offset + 1):
            resp = await send_back(broker, offset)
            assert resp.code == ResponseCode.SYSTEM_ERROR
            assert resp.remark == f"look message by offset failed, {offset}"
        resp = await send_back(broker, 0, fields={"group": "g", "delayLevel": "0"})
        assert resp.code == ResponseCode.SYSTEM_ERROR and "offset" in (resp.remark or "")
        # the broker is fine afterwards
        assert (await send_back(broker, msg.commit_log_offset)).code == ResponseCode.SUCCESS


async def test_failing_consumer_ends_in_dlq_with_reconsume_counts(tmp_path: Path) -> None:
    async with running_namesrv(tmp_path) as namesrv:
        broker = BrokerController(
            BrokerConfig(
                listen_port=0,
                bind_address="127.0.0.1",
                broker_ip1="127.0.0.1",
                broker_name="broker-a",
                namesrv_addr=namesrv.listen_address,
            ),
            MessageStoreConfig(
                store_path_root_dir=str(tmp_path / "store"),
                mapped_file_size_commit_log=4 * 1024 * 1024,
                mapped_file_size_consume_queue=20 * 10_000,
                max_hash_slot_num=1000,
                max_index_num=4000,
                message_delay_level=" ".join(["1s"] * 18),
            ),
        )
        await broker.start()
        try:
            broker.topics.update(TopicConfig("R1", 1, 1))
            routes = namesrv.routes
            await until(lambda: routes.pick_topic_route_data("R1") is not None, 15, "route")
            attempts: list[MessageExt] = []

            def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
                attempts.extend(msgs)
                return ConsumeStatus.RECONSUME_LATER

            consumer = PushConsumer(
                "g-fail",
                namesrv=namesrv.listen_address,
                consume_from_where=ConsumeFromWhere.FIRST,
                max_reconsume_times=2,
                offset_store_dir=str(tmp_path / "offsets"),
            )
            consumer.subscribe("R1", "*")
            consumer.register_listener(listener)
            started = time.monotonic()
            async with consumer:
                async with Producer("pg-fail", namesrv=namesrv.listen_address) as producer:
                    assert (await producer.send(make_message("R1", "doomed", keys="kd"))).ok
                store = broker.store
                await until(
                    lambda: store.get_max_offset_in_queue("%DLQ%g-fail", 0) == 1,
                    timeout=20,
                    what="the dead letter",
                )
            assert time.monotonic() - started >= 2.0  # two 1 s retries in between
            assert [m.reconsume_times for m in attempts] == [0, 1, 2]
            assert all(m.topic == "R1" and m.body == b"doomed" for m in attempts)
            dead = last(broker, "%DLQ%g-fail", 0)
            assert dead.reconsume_times == 3 and dead.body == b"doomed"
            assert dead.properties["RETRY_TOPIC"] == "R1" and dead.properties["KEYS"] == "kd"
            assert dead.properties["ORIGIN_MESSAGE_ID"] == attempts[0].msg_id
            assert "RECONSUME_TIME" not in dead.properties  # the broker's path, not the fallback
            assert store.get_max_offset_in_queue("%RETRY%g-fail", 0) == 2
            assert store.get_max_offset_in_queue(SCHEDULE_TOPIC, 2) == 1  # level 3
            assert store.get_max_offset_in_queue(SCHEDULE_TOPIC, 3) == 1  # level 4
        finally:
            await broker.shutdown()


async def test_client_fallback_copy_through_the_send_path(broker: BrokerController) -> None:
    """A consumer that could not send back resends a copy to %RETRY% itself: delayed like
    any send, and redirected to the DLQ (undelayed) once its retries are used up."""
    client = RemotingClient()
    try:
        for reconsume in (1, 16):
            header = SendMessageRequestHeader(
                producer_group="CLIENT_INNER_PRODUCER",
                topic="%RETRY%g",
                default_topic="TBW102",
                default_topic_queue_nums=4,
                queue_id=0,
                sys_flag=0,
                born_timestamp=int(time.time() * 1000),
                flag=0,
                properties="RETRY_TOPIC\x01T\x02DELAY\x014\x02RECONSUME_TIME\x011",
                reconsume_times=reconsume,
                max_reconsume_times=16,
            )
            request = RemotingCommand.request(
                RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), b"copy"
            )
            resp = await client.invoke(broker.broker_addr, request, 5.0)
            assert resp.code == ResponseCode.SUCCESS, resp.remark
    finally:
        await client.close()
    delayed = last(broker, SCHEDULE_TOPIC, 3)
    assert delayed.properties["REAL_TOPIC"] == "%RETRY%g" and delayed.reconsume_times == 1
    dead = last(broker, "%DLQ%g", 0)
    assert dead.reconsume_times == 16 and dead.body == b"copy"
    assert broker.store.get_max_offset_in_queue(SCHEDULE_TOPIC, 3) == 1

"""Consumer- and producer-facing admin codes (CONSUME_MESSAGE_DIRECTLY and
INVOKE_BROKER_TO_GET_CONSUMER_STATUS relays, CLONE_GROUP_OFFSET,
QUERY_CORRECTION_OFFSET, QUERY_CONSUME_TIME_SPAN, GET_ALL_PRODUCER_INFO,
VIEW_BROKER_STATS_DATA) against an in-process broker, as raw frames."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
from answering_consumer import AnsweringConsumer

from mqcore.protocol import RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    MessageQueue,
    QueryConsumeTimeSpanBody,
)
from mqcore.protocol.bodies.consumer_admin import (
    BrokerStatsData,
    GetConsumerStatusBody,
    ProducerTableInfo,
    QueryCorrectionOffsetBody,
)
from mqcore.protocol.headers import (
    CloneGroupOffsetRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    CreateTopicRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    ViewBrokerStatsDataRequestHeader,
)
from tests.support.clients import TestClient, put
from tests.support.inproc import BROKER_NAME, running_broker

LONG_MAX = (1 << 63) - 1


def _create(topic: str, queues: int) -> dict[str, str]:
    return CreateTopicRequestHeader(
        topic, "TBW102", queues, queues, 6, "SINGLE_TAG", order=False
    ).to_ext_fields()


async def test_relays_to_a_live_consumer(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        admin = TestClient(broker.broker_addr, "10.0.0.1@admin")
        consumer = AnsweringConsumer(broker.broker_addr, "10.0.0.2@c1", "gDirect", "Direct")
        try:
            await admin.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Direct", 1))
            msg = put(broker, "Direct", 0, body=b"direct-body")
            await consumer.heartbeat()

            header = ConsumeMessageDirectlyResultRequestHeader(
                "gDirect", consumer.client_id, msg.msg_id
            )
            resp = await admin.invoke(RequestCode.CONSUME_MESSAGE_DIRECTLY, header.to_ext_fields())
            assert resp.code == ResponseCode.SUCCESS
            assert orjson.loads(resp.body)["consumeResult"] == "CR_SUCCESS"
            relayed = consumer.received[-1]
            assert relayed.ext_fields["brokerName"] == BROKER_NAME
            assert relayed.ext_fields["msgId"] == msg.msg_id
            assert bytes(relayed.body) == bytes(broker.store.get_message(msg.commit_log_offset))

            offline = ConsumeMessageDirectlyResultRequestHeader("gDirect", "nobody", msg.msg_id)
            resp = await admin.invoke(RequestCode.CONSUME_MESSAGE_DIRECTLY, offline.to_ext_fields())
            assert resp.code == ResponseCode.SYSTEM_ERROR
            assert resp.remark == "The Consumer <gDirect> <nobody> not online"

            # running info: relayed with the request's fields; 4.9.8's remark when offline
            header2 = GetConsumerRunningInfoRequestHeader("gDirect", consumer.client_id, True)
            resp = await admin.invoke(
                RequestCode.GET_CONSUMER_RUNNING_INFO, header2.to_ext_fields()
            )
            assert resp.code == ResponseCode.SUCCESS
            assert orjson.loads(resp.body)["properties"]["PROP_CONSUMER_START_TIMESTAMP"] == "1"
            assert consumer.received[-1].ext_fields["jstackEnable"] == "true"
            header2 = GetConsumerRunningInfoRequestHeader("gDirect", "nobody")
            resp = await admin.invoke(
                RequestCode.GET_CONSUMER_RUNNING_INFO, header2.to_ext_fields()
            )
            assert (resp.code, resp.remark) == (
                ResponseCode.SYSTEM_ERROR,
                "The Consumer <gDirect> <nobody> not online",
            )

            # consumer status: every member's offsets by client id
            fields = GetConsumerStatusRequestHeader("Direct", "gDirect").to_ext_fields()
            resp = await admin.invoke(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, fields)
            assert resp.code == ResponseCode.SUCCESS
            table = GetConsumerStatusBody.decode(resp.body).consumer_table
            assert table == {consumer.client_id: {MessageQueue("Direct", BROKER_NAME, 0): 7}}
            assert consumer.received[-1].code == RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT
            assert consumer.received[-1].ext_fields["group"] == "gDirect"
            fields = GetConsumerStatusRequestHeader("Direct", "nobody-group").to_ext_fields()
            resp = await admin.invoke(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, fields)
            assert resp.code == ResponseCode.SYSTEM_ERROR
            assert resp.remark == "No Any Consumer online in the consumer group: [nobody-group]"
        finally:
            await consumer.close()
            await admin.close()


async def test_clone_and_correction_offsets(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        admin = TestClient(broker.broker_addr, "10.0.0.1@admin")
        try:
            for topic in ("T1", "T2"):
                await admin.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, _create(topic, 2))
                for i in range(10):
                    put(broker, topic, i % 2)
            offsets = broker.offsets
            offsets.commit("src", "T1", 0, 4)
            offsets.commit("src", "T1", 1, 2)
            offsets.commit("src", "T2", 0, 5)
            offsets.commit("dst", "T1", 1, 1)

            fields = CloneGroupOffsetRequestHeader("src", "dst", "T1").to_ext_fields()
            resp = await admin.invoke(RequestCode.CLONE_GROUP_OFFSET, fields)
            assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, None)
            assert offsets.query_all("dst", "T1") == {0: 4, 1: 2}
            assert offsets.query_all("dst", "T2") == {}
            # no topic: every topic of the source group
            fields = CloneGroupOffsetRequestHeader("src", "all", None).to_ext_fields()
            await admin.invoke(RequestCode.CLONE_GROUP_OFFSET, fields)
            assert offsets.query_all("all", "T2") == {0: 5}
            # online source subscribed to T1 only: T2 is skipped unless offline
            await admin.heartbeat(["src"], topics=["T1"])
            fields = CloneGroupOffsetRequestHeader("src", "on", None).to_ext_fields()
            await admin.invoke(RequestCode.CLONE_GROUP_OFFSET, fields)
            assert offsets.query_all("on", "T2") == {} and offsets.query_all("on", "T1")
            header = CloneGroupOffsetRequestHeader("src", "off", None, offline=True)
            await admin.invoke(RequestCode.CLONE_GROUP_OFFSET, header.to_ext_fields())
            assert offsets.query_all("off", "T2") == {0: 5}

            # correction: min over groups of T1 (src 4/2, dst 4/2, all 4/2, on 4/2, off 4/2)
            offsets.commit("slow", "T1", 0, 1)
            fields = QueryCorrectionOffsetHeader("slow", "T1").to_ext_fields()
            body = QueryCorrectionOffsetBody.decode(
                (await admin.invoke(RequestCode.QUERY_CORRECTION_OFFSET, fields)).body
            )
            assert body.correction_offsets == {0: 1, 1: 2}
            # slow filtered out: queue 0's min is 4, and slow (compared) is behind it
            fields = QueryCorrectionOffsetHeader("slow", "T1", "slow").to_ext_fields()
            body = QueryCorrectionOffsetBody.decode(
                (await admin.invoke(RequestCode.QUERY_CORRECTION_OFFSET, fields)).body
            )
            assert body.correction_offsets == {0: LONG_MAX, 1: 2}
            assert offsets.query("slow", "T1", 0) == 1  # filtering deletes nothing
        finally:
            await admin.close()


async def test_time_span_producers_and_stats(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        admin = TestClient(broker.broker_addr, "10.0.0.1@admin")
        try:
            await admin.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Span", 2))
            msgs = [put(broker, "Span", 0) for _ in range(3)]
            broker.offsets.commit("gs", "Span", 0, 1)
            fields = QueryConsumeTimeSpanRequestHeader("Span", "gs").to_ext_fields()
            asked = int(time.time() * 1000)
            resp = await admin.invoke(RequestCode.QUERY_CONSUME_TIME_SPAN, fields)
            answered = time.time() * 1000
            spans = QueryConsumeTimeSpanBody.decode(resp.body).consume_time_span_set
            assert [s.message_queue.queue_id for s in spans] == [0, 1]
            q0 = spans[0]
            assert q0.min_time_stamp == msgs[0].store_timestamp
            assert q0.max_time_stamp == msgs[2].store_timestamp
            assert q0.consume_time_stamp == msgs[0].store_timestamp
            # the age of the first unconsumed message, by the broker's clock while it answered
            unconsumed = msgs[1].store_timestamp
            assert asked - unconsumed <= q0.delay_time <= answered - unconsumed + 1
            fields = QueryConsumeTimeSpanRequestHeader("Nope", "gs").to_ext_fields()
            resp = await admin.invoke(RequestCode.QUERY_CONSUME_TIME_SPAN, fields)
            assert (resp.code, resp.remark) == (
                ResponseCode.TOPIC_NOT_EXIST,
                "topic[Nope] not exist",
            )

            # producers: the group with its connection, as Java formats the address
            await admin.heartbeat(producer_groups=["pg"])
            resp = await admin.invoke(RequestCode.GET_ALL_PRODUCER_INFO)
            assert list(orjson.loads(resp.body)) == ["data"]
            infos = ProducerTableInfo.decode(resp.body).data["pg"]
            assert [i.client_id for i in infos] == [admin.client_id]
            assert infos[0].remote_ip.startswith("/127.0.0.1:")
            assert abs(infos[0].last_update_timestamp - time.time() * 1000) < 10_000

            # statistics: one put of 3 messages, 300 bytes
            broker.stats.on_put("Span", 3, 300)
            broker.stats.sample()
            fields = ViewBrokerStatsDataRequestHeader("TOPIC_PUT_NUMS", "Span").to_ext_fields()
            resp = await admin.invoke(RequestCode.VIEW_BROKER_STATS_DATA, fields)
            assert resp.code == ResponseCode.SUCCESS
            assert list(orjson.loads(resp.body)) == ["statsDay", "statsHour", "statsMinute"]
            data = BrokerStatsData.decode(resp.body)
            assert data.stats_hour.sum == data.stats_day.sum == 3
            assert data.stats_day.avgpt == 3.0
            fields = ViewBrokerStatsDataRequestHeader("TOPIC_PUT_SIZE", "Span").to_ext_fields()
            data = BrokerStatsData.decode(
                (await admin.invoke(RequestCode.VIEW_BROKER_STATS_DATA, fields)).body
            )
            assert data.stats_day.sum == 300
            cluster = broker.config.broker_cluster_name
            fields = ViewBrokerStatsDataRequestHeader("BROKER_PUT_NUMS", cluster).to_ext_fields()
            data = BrokerStatsData.decode(
                (await admin.invoke(RequestCode.VIEW_BROKER_STATS_DATA, fields)).body
            )
            assert data.stats_day.sum >= 3
            for name, key in (("TOPIC_PUT_NUMS", "Nope"), ("SNDBCK_PUT_NUMS", "Span")):
                fields = ViewBrokerStatsDataRequestHeader(name, key).to_ext_fields()
                resp = await admin.invoke(RequestCode.VIEW_BROKER_STATS_DATA, fields)
                assert resp.code == ResponseCode.SYSTEM_ERROR
                assert resp.remark == f"The stats <{name}> <{key}> not exist"
        finally:
            await admin.close()

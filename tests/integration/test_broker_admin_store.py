"""Store-level admin codes (cleanExpiredCQ, cleanUnusedTopic, deleteExpiredCommitLog,
queryCq, brokerConsumeStats) against an in-process broker, as raw frames."""

from __future__ import annotations

import time
from pathlib import Path

import orjson

from mqcore.common import fastjson
from mqcore.message.const import PROPERTY_TRANSACTION_CHECK_TIMES, RMQ_SYS_TRANS_HALF_TOPIC
from mqcore.message.model import MessageExt
from mqcore.protocol import RequestCode, ResponseCode
from mqcore.protocol.bodies import MessageQueue
from mqcore.protocol.bodies.store_admin import ConsumeStatsList, QueryConsumeQueueResponseBody
from mqcore.protocol.headers import CreateTopicRequestHeader, QueryConsumeQueueRequestHeader
from mqcore.protocol.headers.store_admin import (
    GetConsumeStatsInBrokerHeader,
    ResumeCheckHalfMessageRequestHeader,
)
from mqcore.store.consume_queue import ENTRY
from mqcore.store.metadata import SubscriptionGroupConfig
from tests.support.clients import TestClient, put
from tests.support.inproc import BROKER_NAME, running_broker


def _create(topic: str, queues: int, *, order: bool = False) -> dict[str, str]:
    return CreateTopicRequestHeader(
        topic, "TBW102", queues, queues, 6, "SINGLE_TAG", order=order
    ).to_ext_fields()


def _not_now_hour() -> str:
    """A deleteWhen hour that is not the current one: only a request deletes files."""
    return f"{(time.localtime().tm_hour + 12) % 24:02d}"


def _cq(topic: str, qid: int, index: int, count: int, group: str | None = None) -> dict[str, str]:
    return QueryConsumeQueueRequestHeader(topic, qid, index, count, group).to_ext_fields()


async def test_query_consume_queue_units_and_group_filter_data(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        client = TestClient(broker.broker_addr, "10.0.0.1@admin")
        try:
            await client.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Cq", 2))
            msgs = [put(broker, "Cq", 1, body=b"x" * (10 + i)) for i in range(5)]
            cq = broker.store.consume_queue("Cq", 1)
            assert cq is not None

            resp = await client.invoke(RequestCode.QUERY_CONSUME_QUEUE, _cq("Cq", 1, 1, 3))
            assert resp.code == ResponseCode.SUCCESS and resp.remark is None
            raw = orjson.loads(resp.body)
            assert list(raw) == ["maxQueueIndex", "minQueueIndex", "queueData"]
            assert (raw["maxQueueIndex"], raw["minQueueIndex"]) == (5, 0)
            units = raw["queueData"]
            assert [u["physicOffset"] for u in units] == [m.commit_log_offset for m in msgs[1:4]]
            assert [u["physicSize"] for u in units] == [m.store_size for m in msgs[1:4]]
            assert [u["tagsCode"] for u in units] == [cq.entry(i)[2] for i in (1, 2, 3)]  # type: ignore[index]
            assert list(units[0]) == ["eval", "physicOffset", "physicSize", "tagsCode"]
            assert units[0]["eval"] is False

            # count past the end: what is written; an index past it: SUCCESS, a remark only
            resp = await client.invoke(RequestCode.QUERY_CONSUME_QUEUE, _cq("Cq", 1, 3, 100))
            assert len(QueryConsumeQueueResponseBody.decode(resp.body).queue_data or []) == 2
            resp = await client.invoke(RequestCode.QUERY_CONSUME_QUEUE, _cq("Cq", 1, 5, 1))
            assert resp.code == ResponseCode.SUCCESS and not resp.body
            assert resp.remark == "Index 5 of 1@Cq is not exist!"
            # no consume queue (never written to): SYSTEM_ERROR
            for topic, qid in (("Cq", 0), ("Nope", 0)):
                resp = await client.invoke(RequestCode.QUERY_CONSUME_QUEUE, _cq(topic, qid, 0, 1))
                assert resp.code == ResponseCode.SYSTEM_ERROR
                assert resp.remark == f"{qid}@{topic} is not exist!"

            # a group: offline, then online (TAG: no filter data, fastjson's "null")
            resp = await client.invoke(RequestCode.QUERY_CONSUME_QUEUE, _cq("Cq", 1, 0, 1, "g1"))
            body = QueryConsumeQueueResponseBody.decode(resp.body)
            assert body.filter_data == "g1@Cq is not online!" and body.subscription_data is None
            await client.heartbeat(["g1"], topics=["Cq"])
            resp = await client.invoke(RequestCode.QUERY_CONSUME_QUEUE, _cq("Cq", 1, 0, 1, "g1"))
            body = QueryConsumeQueueResponseBody.decode(resp.body)
            assert body.filter_data == "null"
            assert body.subscription_data is not None and body.subscription_data.topic == "Cq"

            # with SQL92 filter data registered, the pretty JSON of it
            broker.filters.register_sql("Cq", "g1", "a > 1", "SQL92", 1, 1000)
            resp = await client.invoke(RequestCode.QUERY_CONSUME_QUEUE, _cq("Cq", 1, 0, 1, "g1"))
            body = QueryConsumeQueueResponseBody.decode(resp.body)
            data = broker.filters.get("Cq", "g1")
            assert data is not None
            assert body.filter_data == fastjson.dumps_pretty(data.to_json())
            assert '"expression":"a > 1"' in (body.filter_data or "")
        finally:
            await client.close()


async def test_broker_consume_stats_every_group(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        client = TestClient(broker.broker_addr, "10.0.0.2@admin")
        try:
            await client.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Plain", 2))
            await client.invoke(
                RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Ordered", 1, order=True)
            )
            for i in range(6):
                put(broker, "Plain", i % 2)
            for _ in range(4):
                put(broker, "Ordered", 0)
            for group in ("gA", "gB"):
                broker.groups.update(SubscriptionGroupConfig(group))
            offsets = broker.offsets
            offsets.commit("gA", "Plain", 0, 1)  # lag 2
            offsets.commit("gA", "Plain", 1, 3)  # lag 0
            offsets.commit("gA", "Ordered", 0, 1)  # lag 3
            offsets.commit("gB", "Plain", 0, 3)
            offsets.commit("gB", "Gone", 0, 3)  # no such topic: left out

            fields = GetConsumeStatsInBrokerHeader(False).to_ext_fields()
            assert fields == {"isOrder": "false"}
            resp = await client.invoke(RequestCode.GET_BROKER_CONSUME_STATS, fields)
            assert resp.code == ResponseCode.SUCCESS
            raw = orjson.loads(resp.body)
            assert list(raw) == ["brokerAddr", "consumeStatsList", "totalDiff"]
            assert raw["brokerAddr"] == broker.broker_addr
            stats = ConsumeStatsList.decode(resp.body)
            by_group = {g: s for entry in stats.consume_stats_list for g, s in entry.items()}
            assert {"gA", "gB", "TOOLS_CONSUMER"} <= by_group.keys()
            assert by_group["TOOLS_CONSUMER"] == []
            ga = by_group["gA"]
            assert len(ga) == 2
            tables = {next(iter(s.offset_table)).topic: s.offset_table for s in ga}
            q0 = tables["Plain"][MessageQueue("Plain", BROKER_NAME, 0)]
            assert (q0.broker_offset, q0.consumer_offset) == (3, 1)
            assert q0.last_timestamp == broker.store.get_message_store_timestamp("Plain", 0, 0)
            assert tables["Ordered"][MessageQueue("Ordered", BROKER_NAME, 0)].consumer_offset == 1
            # gA: 2 + 0 + 3, gB: Plain q0 0 and q1 never committed (3 - 0)
            assert stats.total_diff == 5 + 0 + 3

            # isOrder: only ordered topics
            fields = GetConsumeStatsInBrokerHeader(True).to_ext_fields()
            stats = ConsumeStatsList.decode(
                (await client.invoke(RequestCode.GET_BROKER_CONSUME_STATS, fields)).body
            )
            by_group = {g: s for entry in stats.consume_stats_list for g, s in entry.items()}
            assert [next(iter(s.offset_table)).topic for s in by_group["gA"]] == ["Ordered"]
            assert by_group["gB"] == [] and stats.total_diff == 3

            # an online group that no longer subscribes to a topic: that topic is left out
            await client.heartbeat(["gA"], topics=["Ordered"])
            fields = GetConsumeStatsInBrokerHeader(False).to_ext_fields()
            stats = ConsumeStatsList.decode(
                (await client.invoke(RequestCode.GET_BROKER_CONSUME_STATS, fields)).body
            )
            by_group = {g: s for entry in stats.consume_stats_list for g, s in entry.items()}
            assert [next(iter(s.offset_table)).topic for s in by_group["gA"]] == ["Ordered"]

            # isOrder is @CFNotNull
            resp = await client.invoke(RequestCode.GET_BROKER_CONSUME_STATS, {})
            assert resp.code == ResponseCode.SYSTEM_ERROR and "isOrder" in (resp.remark or "")
        finally:
            await client.close()


async def test_delete_expired_commit_log_then_clean_expired_cq(tmp_path: Path) -> None:
    store = {"file_reserved_time": 0, "delete_when": _not_now_hour()}
    async with running_broker(tmp_path, store=store) as broker:
        client = TestClient(broker.broker_addr, "10.0.0.3@admin")
        try:
            await client.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Old", 1))
            await client.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, _create("New", 1))
            body = b"o" * 4000
            while broker.store.max_phy_offset < 1024 * 1024 + 8192:  # into the second file
                put(broker, "Old", 0, body=body)
            put(broker, "New", 0)
            old_max = broker.store.get_max_offset_in_queue("Old", 0)
            broker.store.flush()
            assert broker.store.min_phy_offset == 0

            resp = await client.invoke(RequestCode.DELETE_EXPIRED_COMMITLOG)
            assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, None)
            assert broker.store.min_phy_offset == 1024 * 1024  # the first file is gone
            # "Old" still has its last entries (in the second file): not expired yet
            await client.invoke(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
            assert broker.store.consume_queue("Old", 0) is not None

            # fill a third file with "New" only, delete again: every "Old" record is gone
            while broker.store.max_phy_offset < 2 * 1024 * 1024 + 8192:
                put(broker, "New", 0, body=body)
            broker.store.flush()
            await client.invoke(RequestCode.DELETE_EXPIRED_COMMITLOG)
            assert broker.store.min_phy_offset == 2 * 1024 * 1024
            old_dir = tmp_path / "store" / "consumequeue" / "Old" / "0"
            assert old_dir.is_dir() and broker.store.get_max_offset_in_queue("Old", 0) == old_max

            resp = await client.invoke(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
            assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, None)
            assert broker.store.consume_queue("Old", 0) is None and not old_dir.exists()
            assert broker.store.consume_queue("New", 0) is not None
            # as in 4.9.8, the destroyed queue starts again at offset 0
            again = put(broker, "Old", 0)
            assert again.queue_offset == 0
            cq = broker.store.consume_queue("Old", 0)
            assert cq is not None and cq.entry(0) is not None
            assert ENTRY.size == 20
        finally:
            await client.close()


async def test_clean_unused_topic_destroys_queues_of_unknown_topics(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        client = TestClient(broker.broker_addr, "10.0.0.4@admin")
        try:
            await client.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Kept", 1))
            put(broker, "Kept", 0)
            put(broker, "Stray", 0)  # written, but not in the topic table
            assert broker.topics.select("Stray") is None
            resp = await client.invoke(RequestCode.CLEAN_UNUSED_TOPIC)
            assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, None)
            assert broker.store.consume_queue("Stray", 0) is None
            assert not (tmp_path / "store" / "consumequeue" / "Stray" / "0").exists()
            assert broker.store.consume_queue("Kept", 0) is not None
            assert broker.store.get_max_offset_in_queue("Kept", 0) == 1
        finally:
            await client.close()


async def test_resume_check_half_message_puts_it_back_with_no_checks(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        client = TestClient(broker.broker_addr, "10.0.0.5@admin")
        try:
            half = MessageExt(
                topic=RMQ_SYS_TRANS_HALF_TOPIC,
                body=b"half",
                properties={
                    "REAL_TOPIC": "Orders",
                    "REAL_QID": "0",
                    PROPERTY_TRANSACTION_CHECK_TIMES: "5",
                },
                born_host=("127.0.0.1", 5000),
                store_host=("127.0.0.1", broker.server.port),
            )
            stored = broker.store.put_message(half)
            assert stored.ok
            first = broker.store.look_message(stored.wrote_offset)
            before = broker.store.get_max_offset_in_queue(RMQ_SYS_TRANS_HALF_TOPIC, 0)

            fields = ResumeCheckHalfMessageRequestHeader(first.msg_id).to_ext_fields()
            resp = await client.invoke(RequestCode.RESUME_CHECK_HALF_MESSAGE, fields)
            assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, None)
            assert broker.store.get_max_offset_in_queue(RMQ_SYS_TRANS_HALF_TOPIC, 0) == before + 1
            phy = broker.store.get_commit_log_offset_in_queue(RMQ_SYS_TRANS_HALF_TOPIC, 0, before)
            again = broker.store.look_message(phy)
            assert again.body == b"half" and again.properties["REAL_TOPIC"] == "Orders"
            assert again.properties[PROPERTY_TRANSACTION_CHECK_TIMES] == "0"

            nowhere = "0" * 16 + f"{1 << 40:016X}"  # an id past the end of the commit log
            for bad in ("nothex", nowhere):
                fields = ResumeCheckHalfMessageRequestHeader(bad).to_ext_fields()
                resp = await client.invoke(RequestCode.RESUME_CHECK_HALF_MESSAGE, fields)
                assert resp.code == ResponseCode.SYSTEM_ERROR
                assert resp.remark == (
                    "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."
                )
        finally:
            await client.close()

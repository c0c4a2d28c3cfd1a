"""Admin codes against a real in-process broker (and name server) over loopback."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from mqcore.common.properties import parse_properties
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    DelayOffsetSerializeWrapper,
    GroupList,
    KVTable,
    MessageQueue,
    ResetOffsetBody,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
    TopicStatsTable,
)
from mqcore.protocol.headers import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetBrokerConfigResponseHeader,
    GetConsumeStatsRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
)
from mqcore.remoting import RemotingClient
from tests.support.clients import TestClient, put
from tests.support.inproc import BROKER_NAME, running_broker, running_namesrv
from tests.support.polling import until


def create_fields(topic: str, queues: int = 4, perm: int = 6) -> dict[str, str]:
    return CreateTopicRequestHeader(
        topic, "TBW102", queues, queues, perm, "SINGLE_TAG", order=False
    ).to_ext_fields()


async def route(namesrv_addr: str, topic: str) -> RemotingCommand:
    async with RemotingClient() as client:
        request = RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic).to_ext_fields()
        )
        return await client.invoke(namesrv_addr, request)


async def test_topic_create_route_stats_delete(tmp_path: Path) -> None:
    async with (
        running_namesrv(tmp_path) as namesrv,
        running_broker(tmp_path, namesrv.listen_address) as broker,
    ):
        client = TestClient(broker.broker_addr, "admin")
        try:
            resp = await client.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, create_fields("Orders"))
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            topics = json.loads((tmp_path / "store" / "config" / "topics.json").read_text())
            assert topics["topicConfigTable"]["Orders"]["writeQueueNums"] == 4

            # the broker re-registers at once: the name server routes the topic
            routes: list[RemotingCommand] = []

            async def routed() -> bool:
                routes.append(await route(namesrv.listen_address, "Orders"))
                return routes[-1].code == ResponseCode.SUCCESS

            await until(routed, 5, "route never appeared")
            data = TopicRouteData.decode(routes[-1].body)
            assert [(q.broker_name, q.write_queue_nums) for q in data.queue_datas] == [
                (BROKER_NAME, 4)
            ]

            resp = await client.invoke(RequestCode.GET_ALL_TOPIC_CONFIG)
            wrapper = TopicConfigSerializeWrapper.decode(resp.body)
            assert wrapper.topic_config_table["Orders"].perm == 6
            assert "TBW102" in wrapper.topic_config_table
            assert wrapper.data_version.counter >= 1

            # refused names
            for bad in ("bad topic!", "SCHEDULE_TOPIC_XXXX", broker.config.broker_cluster_name):
                resp = await client.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, create_fields(bad))
                assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark, bad

            # per-queue min/max offsets and last store time
            for _ in range(3):
                put(broker, "Orders", 1)
            fields = GetTopicStatsInfoRequestHeader("Orders").to_ext_fields()
            stats = TopicStatsTable.decode(
                (await client.invoke(RequestCode.GET_TOPIC_STATS_INFO, fields)).body
            )
            assert len(stats.offset_table) == 4
            q1 = stats.offset_table[MessageQueue("Orders", BROKER_NAME, 1)]
            assert (q1.min_offset, q1.max_offset) == (0, 3)
            assert abs(q1.last_update_timestamp - time.time() * 1000) < 60_000
            assert stats.offset_table[MessageQueue("Orders", BROKER_NAME, 0)].max_offset == 0
            fields = GetTopicStatsInfoRequestHeader("Nope").to_ext_fields()
            resp = await client.invoke(RequestCode.GET_TOPIC_STATS_INFO, fields)
            assert resp.code == ResponseCode.TOPIC_NOT_EXIST

            resp = await client.invoke(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)
            assert "SCHEDULE_TOPIC_XXXX" in TopicList.decode(resp.body).topic_list

            # delete: gone from the broker, and from the route once it re-registered
            fields = DeleteTopicRequestHeader("Orders").to_ext_fields()
            assert (await client.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, fields)).code == 0
            assert broker.topics.select("Orders") is None
            fields = DeleteTopicRequestHeader("TBW102").to_ext_fields()
            resp = await client.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, fields)
            assert resp.code == ResponseCode.SYSTEM_ERROR
        finally:
            await client.close()


async def test_consume_stats_offsets_and_groups(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        client = TestClient(broker.broker_addr, "admin")
        try:
            resp = await client.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, create_fields("Lag", 2))
            assert resp.code == 0
            for i in range(10):  # N = 10: 5 per queue
                put(broker, "Lag", i % 2)
            # the group committed M = 3 of queue 0 and 5 of queue 1
            broker.offsets.commit("g1", "Lag", 0, 3)
            broker.offsets.commit("g1", "Lag", 1, 5)
            broker.stats.on_get("g1", "Lag", 8, 800)

            for topic in ("Lag", None):  # one topic, or every topic with offsets
                fields = GetConsumeStatsRequestHeader("g1", topic).to_ext_fields()
                resp = await client.invoke(RequestCode.GET_CONSUME_STATS, fields)
                assert resp.code == ResponseCode.SUCCESS
                stats = ConsumeStats.decode(resp.body)
                q0 = stats.offset_table[MessageQueue("Lag", BROKER_NAME, 0)]
                q1 = stats.offset_table[MessageQueue("Lag", BROKER_NAME, 1)]
                assert (q0.broker_offset, q0.consumer_offset) == (5, 3)
                assert (q1.broker_offset, q1.consumer_offset) == (5, 5)
                lag = sum(o.broker_offset - o.consumer_offset for o in stats.offset_table.values())
                assert lag == 2
                expected_ts = broker.store.get_message_store_timestamp("Lag", 0, 2)
                assert q0.last_timestamp == expected_ts > 0
                assert stats.consume_tps >= 0.0

            resp = await client.invoke(RequestCode.GET_ALL_CONSUMER_OFFSET)
            offsets = ConsumerOffsetSerializeWrapper.decode(resp.body).offset_table
            assert offsets["Lag@g1"] == {0: 3, 1: 5}

            broker.delay_offsets.update(3, 7)
            resp = await client.invoke(RequestCode.GET_ALL_DELAY_OFFSET)
            assert DelayOffsetSerializeWrapper.decode(resp.body).offset_table == {3: 7}

            # consumers by topic: stored offsets and live subscriptions
            await client.heartbeat(["live-group"], topics=["Lag"])
            fields = QueryTopicConsumeByWhoRequestHeader("Lag").to_ext_fields()
            resp = await client.invoke(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, fields)
            assert GroupList.decode(resp.body).group_list == {"g1", "live-group"}

            # subscription groups: create, list, delete (with offsets)
            body = SubscriptionGroupConfig("gX", retry_max_times=3, consume_enable=False).encode()
            resp = await client.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
            assert resp.code == ResponseCode.SUCCESS
            resp = await client.invoke(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
            table = SubscriptionGroupWrapper.decode(resp.body).subscription_group_table
            assert table["gX"].retry_max_times == 3 and not table["gX"].consume_enable
            assert "live-group" in table and "TOOLS_CONSUMER" in table
            saved = json.loads((tmp_path / "store/config/subscriptionGroup.json").read_text())
            assert saved["subscriptionGroupTable"]["gX"]["retryMaxTimes"] == 3
            resp = await client.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=b"{}")
            assert resp.code == ResponseCode.SYSTEM_ERROR
            for group in ("gX", "g1"):
                fields = DeleteSubscriptionGroupRequestHeader(group, remove_offset=True)
                resp = await client.invoke(
                    RequestCode.DELETE_SUBSCRIPTIONGROUP, fields.to_ext_fields()
                )
                assert resp.code == ResponseCode.SUCCESS
            assert broker.groups.find("gX") is None
            assert broker.offsets.query("g1", "Lag", 0) is None
        finally:
            await client.close()


async def test_reset_offset_by_timestamp(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        admin = TestClient(broker.broker_addr, "admin")
        consumer = TestClient(broker.broker_addr, "10.0.0.9@c")
        try:
            await admin.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, create_fields("Reset", 1))
            first = [put(broker, "Reset") for _ in range(3)]
            # a timestamp strictly between the third and fourth message
            while int(time.time() * 1000) <= first[-1].store_timestamp:
                pass
            ts = int(time.time() * 1000)
            while int(time.time() * 1000) <= ts:
                pass
            for _ in range(2):
                put(broker, "Reset")
            broker.offsets.commit("g1", "Reset", 0, 5)

            def fields(timestamp: int, force: bool = True) -> dict[str, str]:
                return ResetOffsetRequestHeader("Reset", "g1", timestamp, force).to_ext_fields()

            reset = RequestCode.INVOKE_BROKER_TO_RESET_OFFSET
            # nobody online: refused, nothing changed
            resp = await admin.invoke(reset, fields(ts))
            assert resp.code == ResponseCode.CONSUMER_NOT_ONLINE
            assert broker.offsets.query("g1", "Reset", 0) == 5

            await consumer.heartbeat(["g1"], topics=["Reset"])
            resp = await admin.invoke(reset, fields(ts))
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            mq = MessageQueue("Reset", BROKER_NAME, 0)
            assert ResetOffsetBody.decode(resp.body).offset_table == {mq: 3}
            assert broker.offsets.query("g1", "Reset", 0) == 3
            code = RequestCode.RESET_CONSUMER_CLIENT_OFFSET
            await until(lambda: consumer.count(code) == 1, what="RESET_CONSUMER_CLIENT_OFFSET")
            notice = consumer.received[code][0]
            assert notice.is_oneway
            assert ResetOffsetRequestHeader.from_command(notice).timestamp == ts
            assert ResetOffsetBody.decode(notice.body).offset_table == {mq: 3}

            # not forced: moving forward keeps the current offset; -1 = to the end
            resp = await admin.invoke(reset, fields(-1, force=False))
            assert ResetOffsetBody.decode(resp.body).offset_table == {mq: 3}
            resp = await admin.invoke(reset, fields(-1))
            assert ResetOffsetBody.decode(resp.body).offset_table == {mq: 5}
            resp = await admin.invoke(reset, fields(0))
            assert ResetOffsetBody.decode(resp.body).offset_table == {mq: 0}

            bad = ResetOffsetRequestHeader("Reset", "nobody", 0, True).to_ext_fields()
            resp = await admin.invoke(reset, bad)
            assert resp.code == ResponseCode.SYSTEM_ERROR
            bad = ResetOffsetRequestHeader("NoTopic", "g1", 0, True).to_ext_fields()
            assert (await admin.invoke(reset, bad)).code == ResponseCode.SYSTEM_ERROR
        finally:
            await admin.close()
            await consumer.close()


async def test_runtime_info_shows_the_largest_loop_stall(tmp_path: Path) -> None:
    """The broker runs in this test's loop: holding it 400 ms is a stall the broker's
    monitor must report. It wakes every 100 ms, so it sees at least 300 ms of it (a
    loaded machine only makes the stall look longer)."""
    async with running_broker(tmp_path) as broker:
        client = TestClient(broker.broker_addr, "admin")
        try:

            async def runtime() -> dict[str, str]:
                resp = await client.invoke(RequestCode.GET_BROKER_RUNTIME_INFO)
                return KVTable.decode(resp.body).table

            info = await runtime()
            for key in ("loopLagMs", "loopLagMaxMsLastMinute", "loopLagMaxMs", "loopStallCount"):
                assert int(info[key]) >= 0, key
            assert len(info["loopLagMaxMsPerMinute"].split(",")) == 10
            await until(lambda: broker.loop_lag.samples > 0, 10, "the monitor measuring")
            time.sleep(0.4)  # holds the broker's loop
            seen: dict[str, str] = {}

            async def stall_reported() -> bool:
                seen.update(await runtime())
                return int(seen["loopLagMaxMsLastMinute"]) >= 250

            await until(stall_reported, 10, lambda: seen)
            assert int(seen["loopLagMaxMs"]) >= 250
            assert int(seen["loopStallCount"]) >= 1
        finally:
            await client.close()


async def test_the_name_server_logs_a_loop_stall(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_namesrv(tmp_path) as namesrv:
        monitor = namesrv.loop_lag
        await until(lambda: monitor.samples > 0, 10, "the monitor measuring")
        with caplog.at_level(logging.WARNING, logger="mq.loop"):
            time.sleep(0.4)  # holds the name server's loop
            await until(lambda: monitor.stalls > 0, 10, "the stall seen")
        assert "name server: the event loop stalled for" in caplog.text
        assert monitor.figures().max_ms_last_minute >= 250


async def test_runtime_info_and_broker_config(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        client = TestClient(broker.broker_addr, "admin")
        try:
            for _ in range(4):
                put(broker, "Info")
            broker.stats.on_put("Info", 4, 400)
            broker.stats.sample()
            resp = await client.invoke(RequestCode.GET_BROKER_RUNTIME_INFO)
            info = KVTable.decode(resp.body).table
            assert info["brokerVersionDesc"] == "V4_9_8"
            assert info["brokerVersion"] == "409"
            assert int(info["commitLogMaxOffset"]) == broker.store.max_phy_offset > 0
            assert info["commitLogMinOffset"] == "0"
            assert info["msgPutTotalTodayNow"] == "4"
            assert info["msgGetTotalTodayNow"] == "0"
            assert len(info["putTps"].split(" ")) == 3
            float(info["getTransferedTps"].split(" ")[0])
            assert abs(int(info["bootTimestamp"]) - time.time() * 1000) < 60_000
            assert info["runtime"].startswith("[ 0 days, 0 hours")
            # 4.9.8 answers -1 while fewer than 2 * maxMessageSize bytes follow the oldest
            assert info["earliestMessageTimeStamp"] == "-1"
            assert abs(int(info["earliestStoredMessageTimeStamp"]) - time.time() * 1000) < 60_000
            assert 0.0 <= float(info["commitLogDiskRatio"]) <= 1.0
            # 4.9.8's ratio: rounded up to two decimals, per commit log path too
            assert info["commitLogDiskRatio"] == repr(round(float(info["commitLogDiskRatio"]), 2))
            commit_log_dir = str(tmp_path / "store" / "commitlog")
            assert info[f"commitLogDiskRatio_{commit_log_dir}"] == info["commitLogDiskRatio"]
            assert info["consumeQueueDiskRatio"] == info["commitLogDiskRatio"]
            assert info["commitLogDirCapacity"].startswith("Total : ")
            assert info["EndTransactionQueueSize"] == "0"
            assert info["EndTransactionThreadPoolQueueCapacity"] == "100000"
            assert info["remainTransientStoreBufferNumbs"] == "2147483647"
            backlog = broker.store.commit_log.max_offset - broker.store.commit_log.flushed_where
            assert info["remainHowManyDataToFlush"] == f"{backlog} B"
            assert info["dispatchMaxBuffer"] == "0"
            assert info["putMessageFailedTimes"] == "0"
            assert info["putMessageDistributeTime"] == "null"  # no minute has passed
            assert info["putLatency99"] == info["putLatency999"] == "0.00"
            assert int(info["putMessageEntireTimeMax"]) >= 0
            assert int(info["getMessageEntireTimeMax"]) >= 0
            # every append of the store counts (the 4 puts), not the broker's send count
            assert info["putMessageTimesTotal"] == "4"
            assert info["putMessageSizeTotal"] == str(broker.store.max_phy_offset)
            assert info["putMessageAverageSize"] == repr(broker.store.max_phy_offset / 4)
            assert int(info["dispatchBehindBytes"]) >= 0
            assert info["scheduleMessageOffset_1"] == "0,0"
            assert len([k for k in info if k.startswith("scheduleMessageOffset_")]) == 18
            assert all(isinstance(v, str) for v in info.values())

            resp = await client.invoke(RequestCode.GET_BROKER_CONFIG)
            assert resp.code == ResponseCode.SUCCESS
            props = parse_properties(bytes(resp.body).decode())
            assert props["brokerName"] == "broker-a"
            assert props["autoCreateTopicEnable"] == "true"
            assert "fileReservedTime" in props
            version = json.loads(GetBrokerConfigResponseHeader.from_command(resp).version)
            assert version["counter"] == 0

            body = b"autoCreateTopicEnable=false\nfileReservedTime=24\n"
            resp = await client.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=body)
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            assert broker.config.auto_create_topic_enable is False
            assert broker.store_config.file_reserved_time == 24
            saved = parse_properties((tmp_path / "store/config/broker.properties").read_text())
            assert saved["autoCreateTopicEnable"] == "false"
            resp = await client.invoke(RequestCode.GET_BROKER_CONFIG)
            assert parse_properties(bytes(resp.body).decode())["fileReservedTime"] == "24"
            version = json.loads(GetBrokerConfigResponseHeader.from_command(resp).version)
            assert version["counter"] == 1

            # bad values are refused as a whole; black-listed keys as 4.9.8 refuses them
            for bad in (
                b"listenPort=x\nfileReservedTime=1",
                b"defaultTopicQueueNums=zero",
                b"logLevel=LOUD\nfileReservedTime=1",
                b"sendMessageThreadPoolNums=many\nfileReservedTime=1",
            ):
                resp = await client.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=bad)
                assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark
            for black in (b"brokerConfigPath=/tmp/x", b"rocketmqHome=/x\nfileReservedTime=1"):
                resp = await client.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=black)
                assert resp.code == ResponseCode.NO_PERMISSION
                assert resp.remark == "Can not update config in black list."
            resp = await client.invoke(
                RequestCode.UPDATE_BROKER_CONFIG, body=b"defaultTopicQueueNums=0"
            )
            assert resp.code == ResponseCode.SYSTEM_ERROR
            assert broker.store_config.file_reserved_time == 24
            assert broker.config.default_topic_queue_nums == 8
        finally:
            await client.close()

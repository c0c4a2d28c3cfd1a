"""What a broker refuses from one client, and how it bounds that client's connections.

Issue 12, defects 6 and 7: idle connections are closed (but not one holding a pull);
out-of-range header numbers, a topic of no queues, impossible offset updates are answered
with an error and leave nothing behind; QUERY_MESSAGE stays capped.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from mqcore.message import decode_records
from mqcore.namesrv.config import NamesrvConfig
from mqcore.namesrv.controller import NamesrvController
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import (
    PullMessageRequestHeader,
    PullSysFlag,
    QueryMessageRequestHeader,
    SendMessageRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from tests.support.clients import TestClient, put
from tests.support.inproc import running_broker


def send_fields(topic: str, **changes: int) -> dict[str, str]:
    values = {
        "default_topic_queue_nums": 4,
        "queue_id": 0,
        "sys_flag": 0,
        "born_timestamp": 1_700_000_000_000,
        "flag": 0,
    }
    values.update(changes)
    return SendMessageRequestHeader("pg", topic, "TBW102", **values).to_v2().to_ext_fields()


def offset_fields(topic: str, queue_id: int, offset: int) -> dict[str, str]:
    return UpdateConsumerOffsetRequestHeader("cg", topic, queue_id, offset).to_ext_fields()


# -- defect 6: connections --------------------------------------------------------------------


async def test_broker_closes_idle_connections_but_not_a_held_pull(tmp_path: Path) -> None:
    async with running_broker(tmp_path, server_channel_max_idle_time_seconds=1.0) as broker:
        assert broker.server.limits.idle_timeout == 1.0
        assert broker.fast_server.limits.idle_timeout == 1.0
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.server.port)
        try:
            async with asyncio.timeout(10):
                assert await reader.read(100) == b""  # closed by the broker
        finally:
            writer.close()

        broker.topics.create_in_send("Held", "TBW102", 1)
        put(broker, "Held", 0)
        client = TestClient(broker.broker_addr, "puller")
        try:
            header = PullMessageRequestHeader(
                consumer_group="held-cg",
                topic="Held",
                queue_id=0,
                queue_offset=1,  # nothing there yet: the pull is held
                max_msg_nums=32,
                sys_flag=PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION,
                commit_offset=0,
                suspend_timeout_millis=3000,  # three idle timeouts
                sub_version=0,
                subscription="*",
            )
            channel = await client.remoting.channel(broker.broker_addr)
            response = await client.invoke(RequestCode.PULL_MESSAGE, header.to_ext_fields())
            assert response.code in (
                ResponseCode.PULL_NOT_FOUND,
                ResponseCode.PULL_RETRY_IMMEDIATELY,
            )
            assert await client.remoting.channel(broker.broker_addr) is channel  # never dropped
        finally:
            await client.close()


# -- defect 7: requests -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "remark"),
    [
        ("sys_flag", 2**40, "<f> is not valid: 1099511627776 is out of the range of a Java int"),
        ("born_timestamp", 2**70, "<g> is not valid: 1180591620717411303424 is out of the range"),
    ],
)
async def test_send_with_numbers_out_of_range_gets_a_remark_not_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, field: str, value: int, remark: str
) -> None:
    async with running_broker(tmp_path) as broker:
        client = TestClient(broker.broker_addr, "producer")
        try:
            end = broker.store.max_phy_offset
            with caplog.at_level(logging.DEBUG):
                fields = send_fields("Ranges", **{field: value})
                response = await client.invoke(RequestCode.SEND_MESSAGE_V2, fields, b"body")
            assert response.code == ResponseCode.SYSTEM_ERROR
            assert remark in (response.remark or "")
            assert "format" not in (response.remark or "")
            assert not [r for r in caplog.records if r.exc_info]  # no traceback logged
            assert broker.store.max_phy_offset == end
            ok = await client.invoke(RequestCode.SEND_MESSAGE_V2, send_fields("Ranges"), b"x")
            assert ok.code == ResponseCode.SUCCESS  # the connection and broker go on
        finally:
            await client.close()


@pytest.mark.parametrize("queue_nums", [-3, 0])
async def test_a_send_asking_for_no_queues_creates_no_topic(
    tmp_path: Path, queue_nums: int
) -> None:
    async with running_broker(tmp_path) as broker:
        client = TestClient(broker.broker_addr, "producer")
        try:
            fields = send_fields("NoQueues", default_topic_queue_nums=queue_nums)
            response = await client.invoke(RequestCode.SEND_MESSAGE_V2, fields, b"body")
            assert response.code == ResponseCode.SYSTEM_ERROR
            assert f"defaultTopicQueueNums={queue_nums}" in (response.remark or "")
            assert broker.topics.select("NoQueues") is None
            assert not (broker.store_config.root / "config" / "topics.json").exists() or (
                "NoQueues" not in (broker.store_config.root / "config" / "topics.json").read_text()
            )
        finally:
            await client.close()


async def test_offset_updates_for_no_queue_or_a_negative_offset_are_refused(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path) as broker:
        broker.topics.create_in_send("Offsets", "TBW102", 4)
        offsets = broker.offsets
        client = TestClient(broker.broker_addr, "consumer")
        try:
            refused = [
                ("Offsets", 10**6, 5, ResponseCode.SYSTEM_ERROR, "queueId[1000000] is illegal"),
                ("Offsets", 4, 5, ResponseCode.SYSTEM_ERROR, "topic[Offsets] has 4 queues"),
                ("Offsets", -1, 5, ResponseCode.SYSTEM_ERROR, "queueId[-1] is illegal"),
                ("Offsets", 0, -9, ResponseCode.SYSTEM_ERROR, "commitOffset[-9] is illegal"),
                ("Nowhere", 0, 5, ResponseCode.TOPIC_NOT_EXIST, "topic[Nowhere] not exist"),
            ]
            for topic, queue_id, offset, code, remark in refused:
                fields = offset_fields(topic, queue_id, offset)
                response = await client.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, fields)
                assert (response.code, topic, queue_id) == (code, topic, queue_id)
                assert remark in (response.remark or "")
                assert offsets.query("cg", topic, queue_id) is None
            # oneway, as clients send them: refused all the same
            bad = offset_fields("Offsets", 0, -9)
            oneway = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, bad, oneway=True)
            await client.remoting.invoke_oneway(broker.broker_addr, oneway)
            good = offset_fields("Offsets", 3, 7)
            response = await client.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, good)
            assert response.code == ResponseCode.SUCCESS
            assert offsets.query("cg", "Offsets", 3) == 7
            assert offsets.query("cg", "Offsets", 0) is None  # the oneway came first
        finally:
            await client.close()


async def test_query_message_max_num_is_capped(tmp_path: Path) -> None:
    """As 4.9.8: at most ``maxMsgsNumBatch`` records per broker, whatever maxNum asks; a
    maxNum past a Java int is a header error."""
    async with running_broker(tmp_path) as broker:
        for _ in range(70):
            put(broker, "Many", 0, keys="same")
        cap = broker.store_config.max_msgs_num_batch
        client = TestClient(broker.broker_addr, "tool")
        try:
            for max_num in (10**6, 2**31 - 1):
                fields = QueryMessageRequestHeader("Many", "same", max_num, 0, 2**63 - 1)
                response = await client.invoke(RequestCode.QUERY_MESSAGE, fields.to_ext_fields())
                assert response.code == ResponseCode.SUCCESS
                assert len(decode_records(response.body)) == cap < 70
            fields = QueryMessageRequestHeader("Many", "same", 2**40, 0, 2**63 - 1)
            response = await client.invoke(RequestCode.QUERY_MESSAGE, fields.to_ext_fields())
            assert response.code == ResponseCode.SYSTEM_ERROR
            assert "<maxNum> is not valid" in (response.remark or "")
        finally:
            await client.close()


async def test_name_server_closes_idle_connections(tmp_path: Path) -> None:
    config = NamesrvConfig(
        listen_port=0,
        bind_address="127.0.0.1",
        kv_config_path=str(tmp_path / "kvConfig.json"),
        server_channel_max_idle_time_seconds=0.3,
        server_max_connections_per_address=5,
    )
    namesrv = NamesrvController(config)
    await namesrv.start()
    try:
        assert namesrv.server.limits.max_per_address == 5
        reader, writer = await asyncio.open_connection("127.0.0.1", namesrv.port)
        try:
            async with asyncio.timeout(5):
                assert await reader.read(100) == b""  # closed by the name server
        finally:
            writer.close()
    finally:
        await namesrv.shutdown()

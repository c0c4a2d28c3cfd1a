"""Client management against a real in-process broker over loopback TCP: heartbeats,
consumer lists, NOTIFY_CONSUMER_IDS_CHANGED, close/unregister/expiry, orderly locks."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    CheckClientRequestBody,
    ConsumerConnection,
    ConsumerData,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    ProducerConnection,
    SubscriptionData,
    UnlockBatchRequestBody,
)
from mqcore.protocol.headers import (
    GetConsumerConnectionListRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetProducerConnectionListRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    UnregisterClientRequestHeader,
)
from tests.support.clients import TestClient
from tests.support.inproc import BROKER_NAME, running_broker
from tests.support.polling import until

NOTIFY = RequestCode.NOTIFY_CONSUMER_IDS_CHANGED


async def consumer_ids(client: TestClient, group: str) -> list[str] | None:
    fields = GetConsumerListByGroupRequestHeader(group).to_ext_fields()
    resp = await client.invoke(RequestCode.GET_CONSUMER_LIST_BY_GROUP, fields)
    if resp.code != ResponseCode.SUCCESS:
        assert resp.code == ResponseCode.SYSTEM_ERROR
        assert resp.remark == f"no consumer for this group, {group}"
        return None
    return sorted(GetConsumerListByGroupResponseBody.decode(resp.body).consumer_id_list)


async def test_heartbeat_membership_and_notifications(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        a = TestClient(broker.broker_addr, "10.0.0.1@a")
        b = TestClient(broker.broker_addr, "10.0.0.2@b")
        try:
            assert await consumer_ids(a, "g1") is None
            assert (await a.heartbeat(["g1"], ["pg"])).code == ResponseCode.SUCCESS
            assert await consumer_ids(a, "g1") == ["10.0.0.1@a"]

            # the group and its retry topic were created and persisted (off the loop, soon)
            config_dir = tmp_path / "store" / "config"

            def table(name: str, key: str) -> dict[str, Any]:
                path = config_dir / name
                doc = json.loads(path.read_text()) if path.exists() else {}
                found: dict[str, Any] = doc.get(key, {})
                return found

            await until(lambda: "g1" in table("subscriptionGroup.json", "subscriptionGroupTable"))
            await until(lambda: "%RETRY%g1" in table("topics.json", "topicConfigTable"))
            assert table("topics.json", "topicConfigTable")["%RETRY%g1"]["perm"] == 6

            # a second member joining: the first is told, with the group in the header
            before = a.count(NOTIFY)
            assert (await b.heartbeat(["g1"])).code == ResponseCode.SUCCESS
            await until(lambda: a.count(NOTIFY) > before, what="NOTIFY to the first member")
            notice = a.received[NOTIFY][-1]
            assert notice.is_oneway
            assert NotifyConsumerIdsChangedRequestHeader.from_command(notice).consumer_group == "g1"
            assert await consumer_ids(a, "g1") == ["10.0.0.1@a", "10.0.0.2@b"]

            # admin views of the same state
            fields = GetConsumerConnectionListRequestHeader("g1").to_ext_fields()
            resp = await a.invoke(RequestCode.GET_CONSUMER_CONNECTION_LIST, fields)
            conn = ConsumerConnection.decode(resp.body)
            assert sorted(c.client_id for c in conn.connection_set) == ["10.0.0.1@a", "10.0.0.2@b"]
            assert conn.message_model == "CLUSTERING"
            assert set(conn.subscription_table) == {"TopicTest"}
            assert all(c.client_addr.startswith("127.0.0.1:") for c in conn.connection_set)
            fields = GetProducerConnectionListRequestHeader("pg").to_ext_fields()
            resp = await a.invoke(RequestCode.GET_PRODUCER_CONNECTION_LIST, fields)
            assert resp.code == ResponseCode.SUCCESS
            producers = ProducerConnection.decode(resp.body).connection_set
            assert [p.client_id for p in producers] == ["10.0.0.1@a"]

            # UNREGISTER_CLIENT of b: a is told again, b is gone
            count = a.count(NOTIFY)
            fields = UnregisterClientRequestHeader(
                "10.0.0.2@b", consumer_group="g1"
            ).to_ext_fields()
            assert (await b.invoke(RequestCode.UNREGISTER_CLIENT, fields)).code == 0
            await until(lambda: a.count(NOTIFY) > count, what="NOTIFY after unregister")
            assert await consumer_ids(a, "g1") == ["10.0.0.1@a"]

            # b comes back, then its connection closes: a is told, b is gone
            await b.heartbeat(["g1"])
            assert await consumer_ids(a, "g1") == ["10.0.0.1@a", "10.0.0.2@b"]
            count = a.count(NOTIFY)
            await b.close()
            await until(lambda: a.count(NOTIFY) > count, what="NOTIFY after close")
            assert await consumer_ids(a, "g1") == ["10.0.0.1@a"]
        finally:
            await a.close()
            await b.close()
        # a's connection closing empties the group (the broker still runs)
        await until(lambda: broker.consumers.get_group("g1") is None, what="group gone")
        assert broker.producers.group_channels("pg") == []


async def test_silent_clients_expire(tmp_path: Path) -> None:
    async with running_broker(
        tmp_path, channel_expired_timeout=400, client_scan_interval=100
    ) as broker:
        a = TestClient(broker.broker_addr, "a")
        b = TestClient(broker.broker_addr, "b")
        try:
            await a.heartbeat(["g1"])
            await b.heartbeat(["g1"])
            assert await consumer_ids(a, "g1") == ["a", "b"]
            count = a.count(NOTIFY)
            # a keeps heart-beating (every 30 s in real life, 50 ms here), b stays silent
            async with asyncio.timeout(5):
                while True:
                    await a.heartbeat(["g1"])
                    if await consumer_ids(a, "g1") == ["a"]:
                        break
                    await asyncio.sleep(0.05)  # the heartbeat period, not a synchronisation
            await until(lambda: a.count(NOTIFY) > count, what="NOTIFY after expiry")
            # the expired client's connection was closed by the broker
            await until(lambda: not b.remoting._channels, what="b's connection closed")
        finally:
            await a.close()
            await b.close()


async def test_orderly_locks_contend_and_expire(tmp_path: Path) -> None:
    async with running_broker(tmp_path, rebalance_lock_max_live_time=300) as broker:
        a = TestClient(broker.broker_addr, "a")
        b = TestClient(broker.broker_addr, "b")
        q0, q1, q2 = (MessageQueue("TopicTest", BROKER_NAME, i) for i in range(3))

        async def lock(client: TestClient, *mqs: MessageQueue) -> set[MessageQueue]:
            body = LockBatchRequestBody("g1", client.client_id, set(mqs)).encode()
            resp = await client.invoke(RequestCode.LOCK_BATCH_MQ, body=body)
            assert resp.code == ResponseCode.SUCCESS
            return LockBatchResponseBody.decode(resp.body).lock_ok_mq_set

        try:
            assert await lock(a, q0, q1) == {q0, q1}
            assert await lock(b, q1, q2) == {q2}
            # unlock releases only the requester's own queues
            body = UnlockBatchRequestBody("g1", "b", {q1, q2}).encode()
            assert (await b.invoke(RequestCode.UNLOCK_BATCH_MQ, body=body)).code == 0
            assert broker.locks.holder("g1", q1) == "a"
            assert broker.locks.holder("g1", q2) is None
            # a stops refreshing: after rebalanceLockMaxLiveTime b gets q1
            granted: set[MessageQueue] = set()

            async def b_gets_q1() -> bool:
                nonlocal granted
                granted = await lock(b, q1)
                return granted == {q1}

            async with asyncio.timeout(5):
                while not await b_gets_q1():
                    await asyncio.sleep(0.05)
            assert await lock(a, q0, q1) == {q0}
        finally:
            await a.close()
            await b.close()


async def test_bad_requests_get_codes_and_the_broker_keeps_serving(tmp_path: Path) -> None:
    async with running_broker(tmp_path, enable_property_filter=True) as broker:
        a = TestClient(broker.broker_addr, "a")
        try:
            resp = await a.invoke(RequestCode.HEART_BEAT, body=b"{not json")
            assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark
            resp = await a.invoke(RequestCode.LOCK_BATCH_MQ, body=b"[1,2]")
            assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark
            resp = await a.invoke(RequestCode.GET_CONSUMER_LIST_BY_GROUP)
            assert resp.code == ResponseCode.SYSTEM_ERROR and "consumerGroup" in (resp.remark or "")
            resp = await a.invoke(RequestCode.UNREGISTER_CLIENT)
            assert resp.code == ResponseCode.SYSTEM_ERROR and "clientID" in (resp.remark or "")

            async def check(kind: str, expr: str) -> int:
                sub = SubscriptionData("TopicTest", expr, expression_type=kind)
                body = CheckClientRequestBody("a", "g1", sub).encode()
                return (await a.invoke(RequestCode.CHECK_CLIENT_CONFIG, body=body)).code

            assert await check("TAG", "TagA || TagB") == ResponseCode.SUCCESS
            assert await check("SQL92", "a > 5 AND b = 'x'") == ResponseCode.SUCCESS
            assert await check("SQL92", "a >>> ") == ResponseCode.SUBSCRIPTION_PARSE_FAILED
            assert await check("XPATH", "/a") == ResponseCode.SUBSCRIPTION_PARSE_FAILED
            broker.config.enable_property_filter = False
            assert await check("SQL92", "a > 5") == ResponseCode.SYSTEM_ERROR
            # still serving
            assert (await a.heartbeat(["g1"])).code == ResponseCode.SUCCESS
            assert await consumer_ids(a, "g1") == ["a"]

            # SQL92 subscriptions are kept in consumerFilter.json's table while on
            broker.config.enable_property_filter = True
            sql = SubscriptionData("TopicTest", "a > 5", sub_version=9, expression_type="SQL92")
            data = HeartbeatData("a", [], [ConsumerData("g2", subscription_data_set=[sql])])
            assert (await a.invoke(RequestCode.HEART_BEAT, body=data.encode())).code == 0
            stored = broker.filters.get("TopicTest", "g2")
            assert stored is not None and stored.expression == "a > 5"
            assert stored.client_version == 9
        finally:
            await a.close()


async def test_consumer_running_info_is_relayed_to_the_client(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        consumer = TestClient(broker.broker_addr, "10.0.0.1@run")
        admin = TestClient(broker.broker_addr, "admin")

        def running_info(channel: object, request: RemotingCommand) -> RemotingCommand:
            header = GetConsumerRunningInfoRequestHeader.from_command(request)
            body = json.dumps({"properties": {"group": header.consumer_group}}).encode()
            return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=body)

        consumer.remoting.register(RequestCode.GET_CONSUMER_RUNNING_INFO, running_info)
        try:
            await consumer.heartbeat(["g1"])
            fields = GetConsumerRunningInfoRequestHeader("g1", "10.0.0.1@run").to_ext_fields()
            resp = await admin.invoke(RequestCode.GET_CONSUMER_RUNNING_INFO, fields)
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            assert json.loads(bytes(resp.body)) == {"properties": {"group": "g1"}}
            fields = GetConsumerRunningInfoRequestHeader("g1", "nobody").to_ext_fields()
            resp = await admin.invoke(RequestCode.GET_CONSUMER_RUNNING_INFO, fields)
            assert resp.code == ResponseCode.SYSTEM_ERROR and "not online" in (resp.remark or "")
        finally:
            await consumer.close()
            await admin.close()

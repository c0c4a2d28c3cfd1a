"""Admin's broker-level operations (BrokerAdminMixin) against an in-process name server
and two brokers."""

from __future__ import annotations

import pytest
from answering_consumer import AnsweringConsumer

from mqcore.client import Admin
from mqcore.errors import MQBrokerError, MQClientError
from mqcore.protocol import ResponseCode
from mqcore.protocol.bodies import MessageQueue
from mqcore.store.metadata import SubscriptionGroupConfig
from tests.support.clients import put
from tests.support.inproc import LiveCluster

pytestmark = [pytest.mark.timeout(60), pytest.mark.cluster(brokers=("broker-a", "broker-b"))]


async def test_consume_stats_queue_units_and_housekeeping(cluster: LiveCluster) -> None:
    async with Admin(cluster.addr) as admin:
        masters = await admin.masters_of()
        assert sorted(masters) == ["broker-a", "broker-b"]
        assert await admin.masters_of(broker_name="broker-b") == {
            "broker-b": cluster.brokers["broker-b"].broker_addr
        }
        with pytest.raises(MQClientError, match="no master for broker 'nope'"):
            await admin.masters_of(broker_name="nope")

        await admin.create_topic("Units", queues=2)
        await cluster.wait_route("Units", brokers=2)
        a = cluster.brokers["broker-a"]
        msgs = [put(a, "Units", 0) for _ in range(4)]
        a.groups.update(SubscriptionGroupConfig("gU"))
        a.offsets.commit("gU", "Units", 0, 1)

        stats = await admin.broker_consume_stats(a.broker_addr)
        assert stats.broker_addr == a.broker_addr and stats.total_diff == 3
        by_group = {g: s for e in stats.consume_stats_list for g, s in e.items()}
        wrapper = by_group["gU"][0].offset_table[MessageQueue("Units", "broker-a", 0)]
        assert (wrapper.broker_offset, wrapper.consumer_offset) == (4, 1)
        assert (await admin.broker_consume_stats(a.broker_addr, order_only=True)).total_diff == 0

        body, remark = await admin.query_consume_queue(a.broker_addr, "Units", 0, 2, 5)
        assert body is not None and remark is None
        assert [u.physic_offset for u in body.queue_data or []] == [
            m.commit_log_offset for m in msgs[2:]
        ]
        body, remark = await admin.query_consume_queue(a.broker_addr, "Units", 0, 9, 1)
        assert body is None and remark == "Index 9 of 0@Units is not exist!"
        with pytest.raises(MQBrokerError) as err:
            await admin.query_consume_queue(a.broker_addr, "Units", 1, 0, 1)
        assert err.value.code == ResponseCode.SYSTEM_ERROR

        # housekeeping reaches every broker named; a stray topic's queues go
        b = cluster.brokers["broker-b"]
        put(b, "Stray", 0)
        addrs = list(masters.values())
        await admin.clean_expired_consume_queue(addrs)
        await admin.delete_expired_commit_log(addrs)
        assert b.store.consume_queue("Stray", 0) is not None
        await admin.clean_unused_topic(addrs)
        assert b.store.consume_queue("Stray", 0) is None
        assert a.store.get_max_offset_in_queue("Units", 0) == 4


async def test_offsets_clients_and_stats(cluster: LiveCluster) -> None:
    async with Admin(cluster.addr) as admin:
        await admin.create_topic("Offs", queues=1)
        await cluster.wait_route("Offs", brokers=2)
        a, b = cluster.brokers["broker-a"], cluster.brokers["broker-b"]
        for broker in (a, b):
            for _ in range(3):
                put(broker, "Offs", 0)
            broker.offsets.commit("src", "Offs", 0, 2)

        assert await admin.clone_group_offset("src", "dst", "Offs") == sorted(
            [a.broker_addr, b.broker_addr]
        )
        assert a.offsets.query_all("dst", "Offs") == {0: 2}
        assert b.offsets.query_all("dst", "Offs") == {0: 2}

        a.offsets.commit("slow", "Offs", 0, 1)
        assert await admin.correction_offsets(a.broker_addr, "Offs", "slow") == {0: 1}
        assert await admin.correction_offsets(a.broker_addr, "Offs", "slow", ["slow"]) == {
            0: (1 << 63) - 1
        }

        spans = await admin.consume_time_span("Offs", "src")
        assert [s.message_queue.broker_name for s in spans] == ["broker-a", "broker-b"]
        assert all(s.consume_time_stamp > 0 and s.delay_time >= 0 for s in spans)

        # a live consumer: its status and a message consumed directly
        consumer = AnsweringConsumer(a.broker_addr, "10.0.0.7@live", "gLive", "Offs")
        try:
            await consumer.heartbeat()
            status = await admin.consumer_status("gLive", "Offs")
            assert status == {"10.0.0.7@live": {MessageQueue("Offs", "broker-a", 0): 7}}
            msg = put(a, "Offs", 0)
            result = await admin.consume_message_directly(
                a.broker_addr, "gLive", "10.0.0.7@live", msg.msg_id
            )
            assert result["consumeResult"] == "CR_SUCCESS"
            with pytest.raises(MQBrokerError, match="not online"):
                await admin.consume_message_directly(a.broker_addr, "gLive", "gone", msg.msg_id)
        finally:
            await consumer.close()

        producers = await admin.producer_table(a.broker_addr)
        assert all(p.remote_ip.startswith("/") for ps in producers.data.values() for p in ps)

        a.stats.on_put("Offs", 2, 20)
        data = await admin.broker_stats(a.broker_addr, "TOPIC_PUT_NUMS", "Offs")
        assert data.stats_day.sum == 2
        with pytest.raises(MQBrokerError, match="The stats <TOPIC_PUT_NUMS> <Nope> not exist"):
            await admin.broker_stats(a.broker_addr, "TOPIC_PUT_NUMS", "Nope")

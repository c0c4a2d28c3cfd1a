"""ClientInstance against the real name-server processor and fake brokers, in memory."""

from __future__ import annotations

import asyncio
import os
import re

import pytest
from client_fakes import NAMESRV, InMemoryCluster

from mqcore.client.admin import Admin
from mqcore.client.errors import (
    ClientStateError,
    NameServerUnreachableError,
    TopicRouteNotFoundError,
)
from mqcore.client.instance import ClientInstance
from mqcore.client.producer import Producer
from mqcore.errors import MQClientError
from mqcore.protocol import LanguageCode, RemotingCommand, RequestCode
from mqcore.protocol.bodies import (
    ConsumerData,
    MessageQueue,
    ResetOffsetBody,
    SubscriptionData,
)
from mqcore.protocol.headers import (
    GetConsumerRunningInfoRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    ResetOffsetRequestHeader,
)

pytestmark = pytest.mark.cluster(
    brokers={
        "broker-a": ("127.0.0.1:10911", {"T": 4, "TBW102": 8}),
        "broker-b": ("127.0.0.1:10921", {"T": 2}),
    }
)


class StubProducer:
    def __init__(self, group: str) -> None:
        self.group = group


class StubConsumer:
    def __init__(self, group: str, topic: str) -> None:
        self.group = group
        self.topic = topic
        self.rebalanced = asyncio.Event()
        self.resets: list[tuple[str, dict[MessageQueue, int]]] = []

    def consumer_data(self) -> ConsumerData:
        return ConsumerData(self.group, subscription_data_set=[SubscriptionData(self.topic)])

    async def do_rebalance(self) -> None:
        self.rebalanced.set()

    def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        self.resets.append((topic, offsets))


async def test_the_client_is_named_like_rocketmq(cluster: InMemoryCluster) -> None:
    a = ClientInstance(NAMESRV, config=cluster.config())
    b = ClientInstance(NAMESRV, config=cluster.config())
    # the pid (the process's first unnamed instance), then <pid>#<n>: never one id twice
    pid = os.getpid()
    assert re.fullmatch(rf"10\.0\.0\.1@{pid}(#\d+)?", a.client_id), a.client_id
    assert b.client_id.startswith(f"10.0.0.1@{pid}#") and b.client_id != a.client_id
    other = ClientInstance(NAMESRV, instance_name="x", config=cluster.config())
    assert other.client_id == "10.0.0.1@x"
    named = ClientInstance(NAMESRV, config=cluster.config(instance_name="y"))
    assert named.client_id == "10.0.0.1@y"
    with pytest.raises(MQClientError, match="no name server"):
        ClientInstance(" ; ", config=cluster.config())


async def test_roles_share_an_instance_only_when_given_one(cluster: InMemoryCluster) -> None:
    shared = ClientInstance(NAMESRV, config=cluster.config())
    one = Producer("pg1", NAMESRV, instance=shared)
    two = Producer("pg2", NAMESRV, instance=shared)
    own = Producer("pg3", NAMESRV, client_config=cluster.config())
    async with one, two, own, Admin(NAMESRV, instance=shared) as admin:
        assert one.instance is two.instance is admin.instance is shared
        assert own.instance is not shared
        assert set(shared.producers) == {"pg1", "pg2"} and set(own.instance.producers) == {"pg3"}
        with pytest.raises(ClientStateError, match="already used"):
            await Producer("pg1", NAMESRV, instance=shared).start()
        private = own.instance
    assert private.closed  # built by the producer, shut down with it
    assert not shared.closed and not shared.producers  # its owner's to shut down
    await shared.shutdown()
    assert shared.closed
    with pytest.raises(ClientStateError, match="shut down"):
        await Producer("pg4", NAMESRV, instance=shared).start()


async def test_route_publish_queues_and_broker_table(cluster: InMemoryCluster) -> None:
    inst = ClientInstance(NAMESRV, config=cluster.config())
    try:
        info = await inst.find_publish_info("T")
        assert [(q.broker_name, q.queue_id) for q in info.queues] == [
            ("broker-a", 0), ("broker-a", 1), ("broker-a", 2), ("broker-a", 3),
            ("broker-b", 0), ("broker-b", 1),
        ]  # fmt: skip
        assert inst.find_master_addr("broker-b") == "127.0.0.1:10921"
        assert inst.find_broker_addr_in_subscribe("broker-a", 1) == ("127.0.0.1:10911", False)
        assert inst.find_broker_addr_in_subscribe("broker-a", 1, only_this_broker=True) is None
        assert len(await inst.subscribe_queues("T")) == 6
    finally:
        await inst.shutdown()


async def test_unknown_topic_falls_back_to_tbw102_then_errors(cluster: InMemoryCluster) -> None:
    inst = ClientInstance(NAMESRV, config=cluster.config())
    try:
        info = await inst.find_publish_info("NewTopic")
        # TBW102 lives on broker-a with 8 queues; capped at defaultTopicQueueNums = 4
        assert [(q.topic, q.broker_name) for q in info.queues] == [("NewTopic", "broker-a")] * 4
        with pytest.raises(TopicRouteNotFoundError, match="autoCreateTopicEnable"):
            await inst.get_route("Nope")
    finally:
        await inst.shutdown()

    cluster.register("broker-a", {"T": 4})  # TBW102 gone: no auto-create
    cluster.routes.delete_topic("TBW102")
    inst = ClientInstance(NAMESRV, config=cluster.config())
    try:
        with pytest.raises(TopicRouteNotFoundError, match="no route for topic Other"):
            await inst.find_publish_info("Other")
    finally:
        await inst.shutdown()


async def test_name_server_failover_and_clear_error(cluster: InMemoryCluster) -> None:
    inst = ClientInstance(f"127.0.0.1:1;{NAMESRV}", config=cluster.config())
    try:
        assert (await inst.get_route("T")).broker_datas
        assert inst.namesrv_addrs[inst.transport._ns_index] == NAMESRV
    finally:
        await inst.shutdown()
    inst = ClientInstance("127.0.0.1:1", config=cluster.config())
    try:
        with pytest.raises(
            NameServerUnreachableError, match=r"127.0.0.1:1 unreachable.*mq namesrv"
        ):
            await inst.get_route("T")
    finally:
        await inst.shutdown()


async def test_heartbeat_unregister_and_language(cluster: InMemoryCluster) -> None:
    inst = ClientInstance(NAMESRV, config=cluster.config())
    await inst.get_route("T")
    await inst.register_producer(StubProducer("pg"))
    a, b = cluster.brokers["broker-a"], cluster.brokers["broker-b"]
    assert [hb.client_id for hb in a.heartbeats] == [inst.client_id]
    assert [p.group_name for p in a.heartbeats[0].producer_data_set] == ["pg"]
    assert b.heartbeats and not b.heartbeats[0].consumer_data_set
    consumer = StubConsumer("cg", "T")
    await inst.register_consumer(consumer)
    assert [c.group_name for c in a.heartbeats[-1].consumer_data_set] == ["cg"]
    with pytest.raises(Exception, match="already used"):
        await inst.register_producer(StubProducer("pg"))
    request = inst.request(RequestCode.HEART_BEAT)
    assert request.language is LanguageCode.PYTHON
    await inst.unregister_consumer("cg")
    await inst.unregister_producer("pg")
    assert not inst.closed  # the last user left: the instance stays its owner's
    await inst.shutdown()
    assert {(u.consumer_group, u.producer_group) for u in a.unregistered} == {
        ("cg", None),
        (None, "pg"),
    }
    assert all(u.client_id == inst.client_id for u in b.unregistered)


async def test_requests_brokers_send_reach_the_consumer(cluster: InMemoryCluster) -> None:
    inst = ClientInstance(NAMESRV, config=cluster.config())
    consumer = StubConsumer("cg", "T")
    await inst.register_consumer(consumer)
    try:
        channel = cluster.brokers["broker-a"].channels[0]
        notify = RemotingCommand.request(
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
            NotifyConsumerIdsChangedRequestHeader("cg").to_ext_fields(),
            oneway=True,
        )
        await channel.invoke_oneway(notify)
        await asyncio.wait_for(consumer.rebalanced.wait(), 2)

        mq = MessageQueue("T", "broker-a", 1)
        reset = RemotingCommand.request(
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
            ResetOffsetRequestHeader("T", "cg", 0, True).to_ext_fields(),
            ResetOffsetBody({mq: 7}).encode(),
        )
        assert (await channel.invoke(reset)).code == 0
        assert consumer.resets == [("T", {mq: 7})]

        info = RemotingCommand.request(
            RequestCode.GET_CONSUMER_RUNNING_INFO,
            GetConsumerRunningInfoRequestHeader("cg", inst.client_id).to_ext_fields(),
        )
        response = await channel.invoke(info)
        assert response.code == 0 and b"subscriptionSet" in bytes(response.body)
        missing = RemotingCommand.request(
            RequestCode.GET_CONSUMER_RUNNING_INFO,
            GetConsumerRunningInfoRequestHeader("nope", inst.client_id).to_ext_fields(),
        )
        assert (await channel.invoke(missing)).code == 1
    finally:
        await inst.unregister_consumer("cg")
        await inst.shutdown()

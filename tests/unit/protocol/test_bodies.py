"""JSON bodies: parse what Java (fastjson) and ali-ons emit, write strict JSON."""

from __future__ import annotations

import json

import pytest

from mqcore.protocol.bodies import (
    BodyError,
    BrokerData,
    ClusterInfo,
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    HeartbeatData,
    KVTable,
    LockBatchRequestBody,
    MessageQueue,
    RegisterBrokerBody,
    ResetOffsetBody,
    TopicList,
    TopicRouteData,
    TopicStatsTable,
)

LEGACY_ROUTE = (
    b'{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},'
    b'"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},'
    b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,'
    b'"writeQueueNums":4}]}'
)
STANDARD_ROUTE = LEGACY_ROUTE.replace(b"{0:", b'{"0":').replace(b",1:", b',"1":')


def test_route_legacy_and_standard_forms() -> None:
    legacy = TopicRouteData.decode(LEGACY_ROUTE)
    assert legacy.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911", 1: "127.0.0.1:10921"}
    assert TopicRouteData.decode(STANDARD_ROUTE) == legacy
    # We emit exactly the standard form the Java name server sends to 4.9.4+ clients.
    assert legacy.encode() == STANDARD_ROUTE
    json.loads(legacy.encode())


def test_register_broker_body_from_spec() -> None:
    body = (
        b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,'
        b'"timestamp":1700000000000},"topicConfigTable":{"TopicTest":{"order":false,"perm":6,'
        b'"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest",'
        b'"topicSysFlag":0,"writeQueueNums":4}}}}'
    )
    parsed = RegisterBrokerBody.decode(body)
    wrapper = parsed.topic_config_serialize_wrapper
    assert wrapper.data_version.counter == 3
    assert wrapper.topic_config_table["TopicTest"].write_queue_nums == 4
    assert parsed.encode() == body


def test_cluster_info_with_bare_keys() -> None:
    body = (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"},'
        b'"brokerName":"broker-a","cluster":"DefaultCluster"}},'
        b'"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
    )
    info = ClusterInfo.decode(body)
    assert info.broker_addr_table["broker-a"] == BrokerData(
        "DefaultCluster", "broker-a", {0: "127.0.0.1:10911"}
    )
    assert info.cluster_addr_table == {"DefaultCluster": {"broker-a"}}
    assert ClusterInfo.decode(info.encode()) == info


def test_heartbeat_from_java_and_ali_ons() -> None:
    java = (
        b'{"clientID":"192.168.1.10@12345","consumerDataSet":[{"consumeFromWhere":'
        b'"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"g1",'
        b'"messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,'
        b'"codeSet":[2598919,2598920],"expressionType":"TAG","subString":"TagA || TagB",'
        b'"subVersion":1700000000000,"tagsSet":["TagA","TagB"],"topic":"TopicTest"}],'
        b'"unitMode":false}],"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}]}'
    )
    hb = HeartbeatData.decode(java)
    assert hb.client_id == "192.168.1.10@12345"
    sub = hb.consumer_data_set[0].subscription_data_set[0]
    assert sub.tags_set == {"TagA", "TagB"} and sub.code_set == {2598919, 2598920}
    assert hb.encode() == java
    ali = (
        b'{"clientID":"x@1","producerDataSet":[],"consumerDataSet":[{"groupName":"g",'
        b'"subscriptionDataSet":[{"topic":"t","subString":"*","tagsSet":[],"codeSet":[]}]}]}'
    )
    assert (
        HeartbeatData.decode(ali).consumer_data_set[0].subscription_data_set[0].expression_type
        == "TAG"
    )


MQ = MessageQueue("TopicTest", "broker-a", 0)


def test_message_queue_keys_both_forms() -> None:
    java = (
        b'{"consumeTps":1.5,"offsetTable":{{"brokerName":"broker-a","queueId":0,'
        b'"topic":"TopicTest"}:{"brokerOffset":100,"consumerOffset":90,'
        b'"lastTimestamp":1700000000000}}}'
    )
    stats = ConsumeStats.decode(java)
    assert stats.offset_table[MQ].consumer_offset == 90 and stats.consume_tps == 1.5
    strict = stats.encode()
    json.loads(strict)
    assert ConsumeStats.decode(strict) == stats
    table = TopicStatsTable.decode(
        b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}:'
        b'{"lastUpdateTimestamp":1700000000000,"maxOffset":100,"minOffset":0}}}'
    )
    assert table.offset_table[MQ].max_offset == 100
    reset = ResetOffsetBody({MQ: 5})
    assert ResetOffsetBody.decode(reset.encode()) == reset


def test_small_bodies() -> None:
    assert ConsumerOffsetSerializeWrapper.decode(
        b'{"offsetTable":{"TopicTest@g1":{0:12,1:7}}}'
    ).offset_table == {"TopicTest@g1": {0: 12, 1: 7}}
    assert TopicList.decode(b'{"topicList":["TopicTest","%RETRY%g1"]}').topic_list == {
        "TopicTest",
        "%RETRY%g1",
    }
    assert KVTable.decode(b'{"table":{"TopicTest":"broker-a:4"}}').table == {
        "TopicTest": "broker-a:4"
    }
    lock = LockBatchRequestBody.decode(
        b'{"clientId":"c","consumerGroup":"g1","mqSet":[{"brokerName":"broker-a","queueId":0,'
        b'"topic":"TopicTest"}]}'
    )
    assert lock.mq_set == {MQ}


@pytest.mark.parametrize("data", [b"", b"[1]", b"{", b'{"queueDatas":5}', b"\xff"])
def test_garbage_bodies_raise_body_error(data: bytes) -> None:
    with pytest.raises(BodyError):
        TopicRouteData.decode(data)

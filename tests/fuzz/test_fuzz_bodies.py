"""Every JSON body codec: any bytes, any JSON and valid bodies with wrong types give a body
or BodyError (ConfigError for the config records that are bodies too), and a body that
decodes encodes again (a server echoes what clients sent, e.g. subscriptions)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fuzzing import JSON_VALUES, fuzz, mutated, perturbed_json
from hypothesis import given
from hypothesis import strategies as st

from mqcore.common import fastjson
from mqcore.common.fastjson import FastjsonError
from mqcore.common.metadata import JsonModel
from mqcore.errors import ConfigError
from mqcore.protocol import bodies
from mqcore.protocol.bodies import (
    BodyError,
    BrokerData,
    ClusterInfo,
    ConsumerData,
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    DataVersion,
    HeartbeatData,
    LockBatchRequestBody,
    MessageQueue,
    OffsetWrapper,
    ProducerData,
    QueueData,
    RemotingBody,
    SubscriptionData,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicRouteData,
)

BODY_CLASSES: list[type[JsonModel]] = sorted(
    (
        cls
        for name in bodies.__all__
        if isinstance(cls := getattr(bodies, name), type)
        and issubclass(cls, JsonModel)
        and cls is not RemotingBody
    ),
    key=lambda cls: (cls is not HeartbeatData, cls.__name__),  # the heartbeat first
)

MQ = MessageQueue("T", "broker-a", 3)
SAMPLES: dict[type[JsonModel], JsonModel] = {
    HeartbeatData: HeartbeatData(
        "127.0.0.1@1",
        [ProducerData("pg")],
        [
            ConsumerData(
                "cg",
                subscription_data_set=[
                    SubscriptionData("T", "a || b", {"a", "b"}, {97, 98}, 5),
                    SubscriptionData("%RETRY%cg", expression_type="SQL92", sub_string="a > 1"),
                ],
            )
        ],
    ),
    TopicRouteData: TopicRouteData(
        [QueueData("broker-a", 4, 4, 6)],
        [BrokerData("c", "broker-a", {0: "127.0.0.1:10911", 1: "127.0.0.1:10921"})],
        None,
        {"127.0.0.1:10911": ["f"]},
    ),
    ClusterInfo: ClusterInfo({"broker-a": BrokerData("c", "broker-a", {0: "a"})}, {"c": {"b"}}),
    ConsumeStats: ConsumeStats({MQ: OffsetWrapper(10, 5, 1)}, 1.5),
    ConsumerOffsetSerializeWrapper: ConsumerOffsetSerializeWrapper({"T@cg": {0: 5, 1: 7}}),
    LockBatchRequestBody: LockBatchRequestBody("cg", "cid", {MQ}),
    TopicConfigSerializeWrapper: TopicConfigSerializeWrapper(
        {"T": TopicConfig("T", 4, 4)}, DataVersion(1, 2)
    ),
    SubscriptionGroupWrapper: SubscriptionGroupWrapper(
        {"cg": SubscriptionGroupConfig("cg")}, DataVersion(1, 2)
    ),
}


def sample(cls: type[JsonModel]) -> JsonModel:
    if cls in SAMPLES:
        return SAMPLES[cls]
    if cls is TopicConfig:
        return TopicConfig("T")
    if cls is SubscriptionGroupConfig:
        return SubscriptionGroupConfig("cg")
    return cls.from_json({})


def expected_error(cls: type[JsonModel]) -> type[Exception]:
    """RemotingBody.decode raises BodyError; the config records (JsonModel) ConfigError."""
    return BodyError if issubclass(cls, RemotingBody) else ConfigError


def check(cls: type[JsonModel], data: bytes) -> None:
    try:
        body = cls.decode(data)
    except expected_error(cls):
        return
    assert isinstance(body, cls)
    again = cls.decode(body.encode())  # what decodes can be sent on
    assert again.encode() == body.encode()


def fastjson_dialect(cls: type[JsonModel]) -> bytes:
    """Java's form: bare integer keys and MessageQueue object keys (spec §10.3)."""
    text = json.dumps(sample(cls).to_json())
    text = text.replace('"0":', "0:").replace('"1":', "1:")
    mq = json.dumps(MQ.to_json())
    return text.replace(json.dumps(mq) + ":", mq + ":").encode()


@pytest.mark.parametrize("cls", BODY_CLASSES, ids=lambda cls: cls.__name__)
@fuzz(20)
@given(data=st.data())
def test_valid_bodies_with_wrong_types(cls: type[JsonModel], data: st.DataObject) -> None:
    doc = data.draw(perturbed_json(sample(cls).to_json()))
    check(cls, json.dumps(doc).encode())


@pytest.mark.parametrize("cls", BODY_CLASSES, ids=lambda cls: cls.__name__)
@fuzz(10)
@given(data=st.data())
def test_mutated_bodies(cls: type[JsonModel], data: st.DataObject) -> None:
    seeds = st.sampled_from([sample(cls).encode(), fastjson_dialect(cls)])
    check(cls, data.draw(mutated(seeds)))


@fuzz(150)
@given(st.sampled_from(BODY_CLASSES), JSON_VALUES)
def test_any_json_value_as_any_body(cls: type[JsonModel], value: Any) -> None:
    check(cls, json.dumps(value).encode())


@fuzz(150)
@given(
    st.sampled_from(BODY_CLASSES),
    st.lists(
        st.sampled_from(["{", "}", "[", "]", ":", ",", '"k"', "0", "-1", "1.5", "1e999",
                         "9" * 30, "null", "true", '"{\\"topic\\":1}"', '"x"', " "]),
        max_size=30,
    ).map(lambda tokens: "".join(tokens).encode()),
)  # fmt: skip
def test_fastjson_token_soup(cls: type[JsonModel], data: bytes) -> None:
    """The dialect parser (bare keys, object keys) behind orjson sees only what orjson
    refuses: token soup gets there."""
    check(cls, data)


# Inputs the fuzzers found, each once a non-BodyError exception (or an int that could not
# be encoded again) out of a body decoder.
REGRESSIONS = [
    (QueueData, b'{"readQueueNums": 1267650600228229401496703205376}'),  # > 64 bits
    (LockBatchRequestBody, b'{"mqSet": [{"queueId": 99999999999999999999}]}'),
    (TopicConfigSerializeWrapper, b'{"topicConfigTable": {"T": {"perm": 36893488147419103232}}}'),
    (HeartbeatData, b'{"clientID": ' + b"1" * 5000 + b"}"),  # ValueError: int digits limit
    (HeartbeatData, b'{"consumerDataSet": [{"subscriptionDataSet": [{"subVersion": 1e999}]}]}'),
    (ConsumeStats, b'{"consumeTps": "abc"}'),  # ValueError from float()
    (ConsumeStats, b'{"offsetTable": {{"a": [1]}: 1}}'),  # unhashable object key
    (BrokerData, b'{"brokerAddrs": {1e999: "a"}}'),  # OverflowError: float infinity key
    (TopicConfigSerializeWrapper, b'{"topicConfigTable": {"a": {"perm": "x"}}}'),  # ConfigError
    (SubscriptionGroupWrapper, b'{"dataVersion": {"counter": "x"}}'),  # ConfigError
]


@pytest.mark.parametrize(("cls", "data"), REGRESSIONS)
def test_regressions_raise_body_error(cls: type[RemotingBody], data: bytes) -> None:
    with pytest.raises(BodyError):
        cls.decode(data)


def test_the_dialect_parser_refuses_what_python_cannot_hold() -> None:
    """fastjson.loads documents FastjsonError: not ValueError (digits limit) or TypeError
    (an object key holding a list)."""
    for text in (b"{1:" + b"1" * 5000 + b"}", b'{{"a":[1]}:1}'):
        with pytest.raises(FastjsonError):
            fastjson.loads(text)

"""The access decision (4.9.8's validate + checkPerm) for hand-built requests."""

from __future__ import annotations

import pytest

from mqcore.acl.config import parse_acl
from mqcore.acl.signature import SessionCredentials, sign_request
from mqcore.acl.validator import validate
from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.bodies import ConsumerData, HeartbeatData, SubscriptionData

ACL = parse_acl(
    """
globalWhiteRemoteAddresses: [10.10.103.*]
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [topicA=DENY, topicB=PUB|SUB, topicC=SUB, topicP=PUB]
    groupPerms: [groupA=DENY, groupB=PUB|SUB]
  - accessKey: adminKey
    secretKey: adminSecret
    admin: true
  - accessKey: trusted1
    secretKey: trustedSecret
    whiteRemoteAddress: 192.168.1.*
"""
)
USER = SessionCredentials("RocketMQ", "12345678")
ADMIN = SessionCredentials("adminKey", "adminSecret")
HOST = "127.0.0.1"


def signed(code: int, fields: dict[str, str], creds: SessionCredentials = USER, body: bytes = b""):
    return sign_request(RemotingCommand.request(code, fields, body), creds)


def reason(request: RemotingCommand, host: str = HOST) -> str | None:
    denied = validate(ACL, request, host)
    return None if denied is None else denied.reason


@pytest.mark.parametrize(
    ("topic", "ok"), [("topicB", True), ("topicP", True), ("topicA", False), ("topicC", False),
                      ("other", False)]
)  # fmt: skip
def test_send_needs_pub_on_the_topic(topic: str, ok: bool) -> None:
    for code, fields in (
        (RequestCode.SEND_MESSAGE, {"producerGroup": "pg", "topic": topic}),
        (RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": topic}),
        (RequestCode.SEND_BATCH_MESSAGE, {"a": "pg", "b": topic}),
    ):
        assert (reason(signed(code, fields)) is None) is ok, (code, topic)


def test_send_to_a_retry_topic_needs_sub_on_the_group() -> None:
    ok = signed(RequestCode.SEND_MESSAGE_V2, {"a": "groupB", "b": "%RETRY%groupB"})
    assert reason(ok) is None
    bad = signed(RequestCode.SEND_MESSAGE_V2, {"a": "groupA", "b": "%RETRY%groupA"})
    assert reason(bad) == "no SUB permission on group=groupA"


@pytest.mark.parametrize(
    ("topic", "group", "ok"),
    [("topicC", "groupB", True), ("topicC", "anyGroup", True), ("topicA", "groupB", False),
     ("topicP", "groupB", False), ("topicB", "groupA", False)],
)  # fmt: skip
def test_pull_needs_sub_on_topic_and_group(topic: str, group: str, ok: bool) -> None:
    request = signed(RequestCode.PULL_MESSAGE, {"consumerGroup": group, "topic": topic})
    assert (reason(request) is None) is ok
    for code in (RequestCode.UPDATE_CONSUMER_OFFSET, RequestCode.QUERY_CONSUMER_OFFSET):
        request = signed(code, {"consumerGroup": group, "topic": topic, "queueId": "0"})
        assert (reason(request) is None) is ok


def test_heartbeat_checks_every_subscription() -> None:
    def beat(group: str, topic: str) -> RemotingCommand:
        data = HeartbeatData(
            "c1", [], [ConsumerData(group, subscription_data_set=[SubscriptionData(topic, "*")])]
        )
        return signed(RequestCode.HEART_BEAT, {}, body=data.encode())

    assert reason(beat("groupB", "topicC")) is None
    assert reason(beat("groupA", "topicC")) == "no SUB permission on group=groupA"
    assert reason(beat("groupB", "topicA")) == "no SUB permission on topic=topicA"
    garbage = signed(RequestCode.HEART_BEAT, {}, body=b"{not json")
    assert reason(garbage) is not None


def test_identity_failures() -> None:
    fields = {"topic": "topicB", "producerGroup": "pg"}
    assert "no AccessKey" in str(reason(RemotingCommand.request(RequestCode.SEND_MESSAGE, fields)))
    unknown = signed(RequestCode.SEND_MESSAGE, fields, SessionCredentials("nobody12", "12345678"))
    assert reason(unknown) == "no ACL config for accessKey=nobody12"
    wrong = signed(RequestCode.SEND_MESSAGE, fields, SessionCredentials("RocketMQ", "87654321"))
    assert reason(wrong) == "signature check failed for accessKey=RocketMQ"


def test_admin_codes_need_an_admin_account() -> None:
    for code in (
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
    ):
        assert "needs an admin account" in str(reason(signed(code, {"topic": "topicB"})))
        assert reason(signed(code, {"topic": "topicB"}, ADMIN)) is None
    # other codes touch no resource: any signed account
    assert reason(signed(RequestCode.GET_BROKER_RUNTIME_INFO, {})) is None


def test_white_listed_addresses() -> None:
    unsigned = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "x"})
    assert reason(unsigned, "10.10.103.9") is None  # global white list: anything goes
    assert reason(unsigned, "10.10.104.9") is not None
    # an account's own white address skips the signature (as 4.9.8)
    trusted = RemotingCommand.request(
        RequestCode.SEND_MESSAGE, {"AccessKey": "trusted1", "topic": "t"}
    )
    assert reason(trusted, "192.168.1.20") is None
    assert "signature" in str(reason(trusted, "192.168.2.20"))


def test_trace_topic_is_always_publishable() -> None:
    request = signed(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "RMQ_SYS_TRACE_TOPIC"})
    assert reason(request) is None

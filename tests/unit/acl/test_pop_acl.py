"""RocketMQ 5's POP and recall requests under the plain ACL: SUB on the topic and the group,
a retried message's ack checked against its original topic, batch acks by their body; a
recall needs PUB on its topic."""

from __future__ import annotations

import pytest

from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.bodies.pop import BatchAck, BatchAckMessageRequestBody

from .test_validator import reason, signed

POP_CODES = (
    RequestCode.POP_MESSAGE,
    RequestCode.PEEK_MESSAGE,
    RequestCode.NOTIFICATION,
    RequestCode.POLLING_INFO,
    RequestCode.ACK_MESSAGE,
    RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
)


@pytest.mark.parametrize(
    ("topic", "group", "ok"),
    [
        ("topicC", "groupB", True),
        ("%RETRY%groupB_topicC", "groupB", True),
        ("%RETRY%groupB+topicC", "groupB", True),
        ("topicA", "groupB", False),
        ("%RETRY%groupB_topicA", "groupB", False),
        ("topicC", "groupA", False),
    ],
)
def test_pop_requests_need_sub_on_topic_and_group(topic: str, group: str, ok: bool) -> None:
    for code in POP_CODES:
        request = signed(code, {"consumerGroup": group, "topic": topic, "queueId": "0"})
        assert (reason(request) is None) is ok, (code, topic, group)


def test_batch_ack_is_checked_by_its_body() -> None:
    def batch(topic: str, group: str) -> RemotingCommand:
        ack = BatchAck(group, topic, "0", 0, 0, 0, 1, 1, frozenset({0}))
        body = BatchAckMessageRequestBody("b", [ack]).encode()
        request: RemotingCommand = signed(RequestCode.BATCH_ACK_MESSAGE, {}, body=body)
        return request

    assert reason(batch("topicC", "groupB")) is None
    assert reason(batch("topicA", "groupB")) == "no SUB permission on topic=topicA"
    assert reason(signed(RequestCode.BATCH_ACK_MESSAGE, {}, body=b"{no")) is not None


@pytest.mark.parametrize(("topic", "ok"), [("topicP", True), ("topicB", True), ("topicC", False)])
def test_recalling_a_timer_message_needs_pub_on_its_topic(topic: str, ok: bool) -> None:
    """Taking a message back is a producer's act: PUB, as RocketMQ 5 checks RecallMessage
    (a subscriber of the topic may not withdraw what others sent)."""
    request = signed(RequestCode.RECALL_MESSAGE, {"topic": topic, "recallHandle": "h"})
    assert (reason(request) is None) is ok, topic

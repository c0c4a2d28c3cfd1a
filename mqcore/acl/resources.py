"""Which topics and groups a request touches, and the permission each needs.

As 4.9.8's PlainAccessValidator.parse, with the codes it forgot: batch and reply sends
need PUB like single sends, and QUERY_CONSUMER_OFFSET needs the group like the update;
and RocketMQ 5's POP requests need SUB on their topic and group.
A group is checked as its ``%RETRY%group`` topic (that is how ``groupPerms`` are kept);
a send to a retry topic is a consumer giving a message back, so it needs SUB on the group.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from mqcore.acl.permission import Perm
from mqcore.errors import MQError
from mqcore.message.const import RETRY_GROUP_TOPIC_PREFIX
from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.bodies.client import HeartbeatData
from mqcore.protocol.bodies.pop import BatchAckMessageRequestBody

__all__ = ["TRACE_TOPIC", "needed_resources"]

TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"
"""Message traces may be published by any signed account (4.9.8 skips the check)."""

Needs = dict[str, Perm]


def _retry(group: str | None) -> str | None:
    return None if not group else RETRY_GROUP_TOPIC_PREFIX + group


def _add(needs: Needs, resource: str | None, perm: Perm) -> None:
    if resource:
        needs[resource] = perm


def _send(group_key: str, topic_key: str) -> Callable[[RemotingCommand], Needs]:
    def needs(request: RemotingCommand) -> Needs:
        fields, out = request.ext_fields, Needs()
        topic = fields.get(topic_key)
        if topic is not None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            _add(out, _retry(fields.get(group_key)), Perm.SUB)
        else:
            _add(out, topic, Perm.PUB)
        return out

    return needs


def _group_only(key: str) -> Callable[[RemotingCommand], Needs]:
    def needs(request: RemotingCommand) -> Needs:
        out = Needs()
        _add(out, _retry(request.ext_fields.get(key)), Perm.SUB)
        return out

    return needs


def _topic_and_group(group_key: str) -> Callable[[RemotingCommand], Needs]:
    def needs(request: RemotingCommand) -> Needs:
        out = Needs()
        _add(out, request.ext_fields.get("topic"), Perm.SUB)
        _add(out, _retry(request.ext_fields.get(group_key)), Perm.SUB)
        return out

    return needs


def _normal_topic(topic: str, group: str | None) -> str:
    """A POP retry topic (``%RETRY%{group}_{topic}`` or ``+``) checked as its topic, as
    RocketMQ 5 checks ACK and CHANGE_INVISIBLE_TIME of a retried message."""
    for separator in ("+", "_"):
        prefix = f"{RETRY_GROUP_TOPIC_PREFIX}{group}{separator}"
        if group and topic.startswith(prefix) and len(topic) > len(prefix):
            return topic[len(prefix) :]
    return topic


def _pop(request: RemotingCommand) -> Needs:
    """RocketMQ 5's POP requests: SUB on the topic (a retry topic's own) and the group."""
    out = Needs()
    group = request.ext_fields.get("consumerGroup")
    topic = request.ext_fields.get("topic")
    _add(out, _normal_topic(topic, group) if topic else None, Perm.SUB)
    _add(out, _retry(group), Perm.SUB)
    return out


def _batch_ack(request: RemotingCommand) -> Needs:
    out = Needs()
    try:
        body = BatchAckMessageRequestBody.decode(request.body) if request.body else None
    except (MQError, ValueError) as exc:
        raise ValueError(f"cannot read the batch ack body: {exc}") from None
    for ack in body.acks if body is not None else ():
        _add(out, ack.topic, Perm.SUB)
        _add(out, _retry(ack.consumer_group), Perm.SUB)
    return out


def _query(request: RemotingCommand) -> Needs:
    out = Needs()
    _add(out, request.ext_fields.get("topic"), Perm.SUB)
    return out


def _heartbeat(request: RemotingCommand) -> Needs:
    out = Needs()
    try:
        heartbeat = HeartbeatData.decode(request.body)
    except (MQError, ValueError) as exc:
        raise ValueError(f"cannot read the heartbeat body: {exc}") from None
    for consumer in heartbeat.consumer_data_set:
        _add(out, _retry(consumer.group_name), Perm.SUB)
        for subscription in consumer.subscription_data_set:
            _add(out, subscription.topic, Perm.SUB)
    return out


_RULES: Final[Mapping[int, Callable[[RemotingCommand], Needs]]] = {
    RequestCode.SEND_MESSAGE: _send("producerGroup", "topic"),
    RequestCode.SEND_MESSAGE_V2: _send("a", "b"),
    RequestCode.SEND_BATCH_MESSAGE: _send("a", "b"),
    RequestCode.SEND_REPLY_MESSAGE: _send("producerGroup", "topic"),
    RequestCode.SEND_REPLY_MESSAGE_V2: _send("a", "b"),
    RequestCode.RECALL_MESSAGE: _send("producerGroup", "topic"),  # taking back: PUB
    RequestCode.CONSUMER_SEND_MSG_BACK: _group_only("group"),
    RequestCode.PULL_MESSAGE: _topic_and_group("consumerGroup"),
    RequestCode.QUERY_MESSAGE: _query,
    RequestCode.HEART_BEAT: _heartbeat,
    RequestCode.UNREGISTER_CLIENT: _group_only("consumerGroup"),
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: _group_only("consumerGroup"),
    RequestCode.UPDATE_CONSUMER_OFFSET: _topic_and_group("consumerGroup"),
    RequestCode.QUERY_CONSUMER_OFFSET: _topic_and_group("consumerGroup"),
    RequestCode.POP_MESSAGE: _pop,
    RequestCode.PEEK_MESSAGE: _pop,
    RequestCode.NOTIFICATION: _pop,
    RequestCode.POLLING_INFO: _pop,
    RequestCode.ACK_MESSAGE: _pop,
    RequestCode.CHANGE_MESSAGE_INVISIBLETIME: _pop,
    RequestCode.BATCH_ACK_MESSAGE: _batch_ack,
}


def needed_resources(request: RemotingCommand) -> Needs:
    """Resource -> permission the request needs (empty for codes that touch none).
    Raises ValueError when the request cannot be read (e.g. a bad heartbeat body)."""
    rule = _RULES.get(request.code)
    return rule(request) if rule is not None else {}

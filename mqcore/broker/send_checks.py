"""The checks a message passes before the broker stores it, shared by sends and replies.

RocketMQ's ``AbstractSendMessageProcessor.msgCheck`` in the order it runs them: broker
permission, topic name, forbidden system topics, the topic (auto-created from the
template when allowed, or as a retry topic of a known group), topic permission and the
queue id. A failed check raises :class:`SendRefused` with the code and remark to answer,
before anything is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqcore.errors import RequestRefused
from mqcore.message.const import RETRY_GROUP_TOPIC_PREFIX
from mqcore.message.model import HostAddr
from mqcore.protocol import ResponseCode
from mqcore.remoting import Channel
from mqcore.store.metadata import (
    PERM_READ,
    PERM_WRITE,
    TopicConfig,
    TopicNameError,
    is_not_allowed_send_topic,
    validate_topic_name,
)

if TYPE_CHECKING:
    from mqcore.broker.config import BrokerConfig
    from mqcore.broker.topics import TopicService
    from mqcore.protocol.headers import SendMessageRequestHeader
    from mqcore.store.metadata import SubscriptionGroupManager

__all__ = ["SendRefused", "born_host", "msg_check"]


class SendRefused(RequestRefused):
    """A check failed: answer ``code`` with ``remark``, store nothing."""


def born_host(channel: Channel) -> HostAddr:
    """The producer's address as stored in BORNHOST (parsed once per connection)."""
    host: HostAddr | None = channel.attrs.get("born_host")
    if host is None:
        ip, _, port = channel.remote_address.rpartition(":")
        host = (ip.strip("[]") or "0.0.0.0", int(port) if port.isdigit() else 0)
        channel.attrs["born_host"] = host
    return host


def msg_check(
    channel: Channel,
    header: SendMessageRequestHeader,
    *,
    broker_config: BrokerConfig,
    topics: TopicService,
    groups: SubscriptionGroupManager,
) -> TopicConfig:
    """Permission, topic and queue id checks (``AbstractSendMessageProcessor.msgCheck``,
    shared by sends and replies); the topic's config, maybe just created. Raises
    :class:`SendRefused`."""
    topic = header.topic
    broker_ip = broker_config.broker_ip1
    if not broker_config.broker_permission & PERM_WRITE:
        raise SendRefused(
            ResponseCode.NO_PERMISSION, f"the broker[{broker_ip}] sending message is forbidden"
        )
    try:
        validate_topic_name(topic)
    except TopicNameError as exc:
        raise SendRefused(ResponseCode.SYSTEM_ERROR, str(exc)) from None
    if is_not_allowed_send_topic(topic):
        raise SendRefused(
            ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."
        )
    config = topics.select(topic)
    if config is None:
        config = topics.create_in_send(
            topic,
            header.default_topic,
            header.default_topic_queue_nums,
            1 if header.unit_mode else 0,
        )
        if config is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            group = groups.find(topic[len(RETRY_GROUP_TOPIC_PREFIX) :])
            if group is not None:
                config = topics.create_in_send_back(
                    topic, group.retry_queue_nums, PERM_READ | PERM_WRITE, durable=True
                )
        if config is None:
            auto = str(broker_config.auto_create_topic_enable).lower()
            raise SendRefused(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please! (autoCreateTopicEnable={auto})",
            )
    if not config.perm & PERM_WRITE:
        raise SendRefused(
            ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden"
        )
    limit = max(config.write_queue_nums, config.read_queue_nums)
    if header.queue_id >= limit:
        raise SendRefused(
            ResponseCode.SYSTEM_ERROR,
            f"request queueId[{header.queue_id}] is illegal, topic {topic} has "
            f"{limit} queues; producer {channel.remote_address}",
        )
    return config

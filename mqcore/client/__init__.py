"""The Python client: producers, consumers, admin, and the route and rebalance logic.

Start here: :class:`Producer` (``await producer.send(make_message("T", "hi"))``),
:class:`Admin`, the blocking :class:`SyncProducer` / :class:`SyncAdmin` for scripts, and
the errors in :mod:`mqcore.client.errors`. :class:`ClientInstance` is the per-process
shared state (routes, connections, heartbeats); :class:`MQClientAPI` the typed requests.

The names below are imported on first use (PEP 562), so that a one-shot send (``mq
produce``) loads the producer's modules and not the consumers', the admin's or ACL's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mqcore.client.admin import Admin, QueueProgress, QueueStatus, ResetRow
    from mqcore.client.api import MQClientAPI, PullResult, PullStatus, SendResult, SendStatus
    from mqcore.client.config import ClientConfig, default_namesrv
    from mqcore.client.consume_service import (
        ConsumeContext,
        ConsumeOrderlyStatus,
        ConsumeStatus,
        MessageListener,
    )
    from mqcore.client.errors import (
        BrokerUnreachableError,
        ClientStateError,
        InvalidGroupError,
        InvalidMessageError,
        NameServerUnreachableError,
        TopicRouteNotFoundError,
    )
    from mqcore.client.instance import ClientInstance
    from mqcore.client.lite_pull_consumer import LitePullConsumer
    from mqcore.client.producer import Producer, SendCallback, make_message
    from mqcore.client.push_consumer import PushConsumer
    from mqcore.client.rebalance import ConsumeFromWhere, MessageModel, MessageSelector
    from mqcore.client.selectors import (
        MessageQueueSelector,
        select_by_hash,
        select_by_random,
        select_fixed,
    )
    from mqcore.client.simple_consumer import SimpleConsumer
    from mqcore.client.sync import SyncAdmin, SyncClient, SyncProducer, SyncSimpleConsumer
    from mqcore.client.transaction import (
        LocalTransactionState,
        TransactionProducer,
        TransactionSendResult,
    )
    from mqcore.message import Message, MessageExt
    from mqcore.protocol.bodies import MessageQueue

__all__ = [
    "Admin",
    "BrokerUnreachableError",
    "ClientConfig",
    "ClientInstance",
    "ClientStateError",
    "ConsumeContext",
    "ConsumeFromWhere",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "InvalidGroupError",
    "InvalidMessageError",
    "LitePullConsumer",
    "LocalTransactionState",
    "MQClientAPI",
    "Message",
    "MessageExt",
    "MessageListener",
    "MessageModel",
    "MessageQueue",
    "MessageQueueSelector",
    "MessageSelector",
    "NameServerUnreachableError",
    "Producer",
    "PullResult",
    "PullStatus",
    "PushConsumer",
    "QueueProgress",
    "QueueStatus",
    "ResetRow",
    "SendCallback",
    "SendResult",
    "SendStatus",
    "SimpleConsumer",
    "SyncAdmin",
    "SyncClient",
    "SyncProducer",
    "SyncSimpleConsumer",
    "TopicRouteNotFoundError",
    "TransactionProducer",
    "TransactionSendResult",
    "default_namesrv",
    "make_message",
    "select_by_hash",
    "select_by_random",
    "select_fixed",
]

_HOMES = {
    **dict.fromkeys(("Admin", "QueueProgress", "QueueStatus", "ResetRow"), "admin"),
    **dict.fromkeys(("MQClientAPI", "PullResult", "PullStatus", "SendResult", "SendStatus"), "api"),
    **dict.fromkeys(("ClientConfig", "default_namesrv"), "config"),
    **dict.fromkeys(
        ("ConsumeContext", "ConsumeOrderlyStatus", "ConsumeStatus", "MessageListener"),
        "consume_service",
    ),
    **dict.fromkeys(
        (
            "BrokerUnreachableError",
            "ClientStateError",
            "InvalidGroupError",
            "InvalidMessageError",
            "NameServerUnreachableError",
            "TopicRouteNotFoundError",
        ),
        "errors",
    ),
    "ClientInstance": "instance",
    "LitePullConsumer": "lite_pull_consumer",
    **dict.fromkeys(("Producer", "SendCallback", "make_message"), "producer"),
    "PushConsumer": "push_consumer",
    **dict.fromkeys(("ConsumeFromWhere", "MessageModel", "MessageSelector"), "rebalance"),
    **dict.fromkeys(
        ("MessageQueueSelector", "select_by_hash", "select_by_random", "select_fixed"),
        "selectors",
    ),
    "SimpleConsumer": "simple_consumer",
    **dict.fromkeys(("SyncAdmin", "SyncClient", "SyncProducer", "SyncSimpleConsumer"), "sync"),
    **dict.fromkeys(
        ("LocalTransactionState", "TransactionProducer", "TransactionSendResult"), "transaction"
    ),
    **dict.fromkeys(("Message", "MessageExt"), "mqcore.message"),
    "MessageQueue": "mqcore.protocol.bodies",
}
"""Exported name -> the submodule (or, dotted, the module) that defines it."""

if not TYPE_CHECKING:
    from mqcore.common.lazy import lazy_names

    __getattr__, __dir__ = lazy_names(globals(), _HOMES)

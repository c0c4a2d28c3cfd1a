"""The Python client: producers, consumers, admin, and the route and rebalance logic.

Start here: :class:`Producer` (``await producer.send(make_message("T", "hi"))``),
:class:`Admin`, the blocking :class:`SyncProducer` / :class:`SyncAdmin` for scripts, and
the errors in :mod:`mqcore.client.errors`. :class:`ClientInstance` is the per-process
shared state (routes, connections, heartbeats); :class:`MQClientAPI` the typed requests.
"""

from __future__ import annotations

from mqcore.client.admin import Admin, QueueProgress, QueueStatus, ResetRow
from mqcore.client.api import MQClientAPI, PullResult, PullStatus, SendResult, SendStatus
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
from mqcore.client.instance import ClientConfig, ClientInstance
from mqcore.client.lite_pull_consumer import LitePullConsumer
from mqcore.client.producer import (
    MessageQueueSelector,
    Producer,
    SendCallback,
    default_namesrv,
    make_message,
    select_by_hash,
    select_by_random,
    select_fixed,
)
from mqcore.client.push_consumer import PushConsumer
from mqcore.client.rebalance import ConsumeFromWhere, MessageModel, MessageSelector
from mqcore.client.sync import SyncAdmin, SyncClient, SyncProducer
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
    "SyncAdmin",
    "SyncClient",
    "SyncProducer",
    "TopicRouteNotFoundError",
    "TransactionProducer",
    "TransactionSendResult",
    "default_namesrv",
    "make_message",
    "select_by_hash",
    "select_by_random",
    "select_fixed",
]

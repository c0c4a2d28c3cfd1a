"""The settings handshake: what the access point answers a client's ``Settings`` with.

A 5.x client opens its Telemetry stream by sending its own settings (type, topics or
group and subscriptions, timeouts); the server answers with the settings the client is to
use, as RocketMQ 5's ``GrpcClientSettingsManager`` merges them: a producer gets the proxy's
retry policy, the largest body and whether to check message types; a consumer gets the
batch size, the long polling timeout, whether its group is FIFO and its group's retry
policy (RocketMQ 5's default one: the delays of 4.x's retry levels).
"""

from __future__ import annotations

from mqcore.common.metadata import SubscriptionGroupConfig
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.validation import MAX_MESSAGE_SIZE

__all__ = [
    "CONSUMER_LONG_POLLING_BATCH_SIZE",
    "CONSUMER_MAX_LONG_POLLING_MS",
    "CONSUMER_RETRY_DELAYS_MS",
    "PRODUCER_MAX_ATTEMPTS",
    "merge_settings",
]

PRODUCER_MAX_ATTEMPTS = 3
_PRODUCER_BACKOFF_INITIAL_MS = 10
_PRODUCER_BACKOFF_MAX_MS = 1000
_PRODUCER_BACKOFF_MULTIPLIER = 2
CONSUMER_LONG_POLLING_BATCH_SIZE = 32
CONSUMER_MAX_LONG_POLLING_MS = 20_000
CONSUMER_RETRY_DELAYS_MS = tuple(1000 * seconds for seconds in (
    1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200
))  # fmt: skip
"""A 5.x group's default retry policy (``CustomizedRetryPolicy``): the delay before each
further attempt, 1 s, 5 s, 10 s, 30 s, 1 min ... 2 h. The SDKs' push consumers wait that
long before a failed message comes again (a FIFO one: before they retry it themselves)
and honour ``max_attempts`` only with a customized policy."""


def _producer(settings: pb.Settings) -> None:
    backoff = settings.backoff_policy
    backoff.max_attempts = PRODUCER_MAX_ATTEMPTS
    backoff.exponential_backoff.initial.FromMilliseconds(_PRODUCER_BACKOFF_INITIAL_MS)
    backoff.exponential_backoff.max.FromMilliseconds(_PRODUCER_BACKOFF_MAX_MS)
    backoff.exponential_backoff.multiplier = _PRODUCER_BACKOFF_MULTIPLIER
    settings.publishing.validate_message_type = True
    settings.publishing.max_body_size = MAX_MESSAGE_SIZE


def _consumer(settings: pb.Settings, group: SubscriptionGroupConfig | None) -> None:
    subscription = settings.subscription
    subscription.receive_batch_size = CONSUMER_LONG_POLLING_BATCH_SIZE
    subscription.long_polling_timeout.FromMilliseconds(CONSUMER_MAX_LONG_POLLING_MS)
    config = group or SubscriptionGroupConfig("")
    subscription.fifo = config.consume_message_orderly
    retry_max_times = config.retry_max_times
    backoff = settings.backoff_policy
    backoff.max_attempts = retry_max_times + 1
    backoff.customized_backoff.Clear()
    for delay in CONSUMER_RETRY_DELAYS_MS:
        backoff.customized_backoff.next.add().FromMilliseconds(delay)


def merge_settings(client: pb.Settings, group: SubscriptionGroupConfig | None) -> pb.Settings:
    """The server's answer to ``client``'s settings (``group``: a consumer's group config,
    None when the broker has none). Metrics are off: the access point collects none."""
    settings = pb.Settings()
    settings.CopyFrom(client)
    if settings.HasField("publishing"):
        _producer(settings)
    elif settings.HasField("subscription"):
        _consumer(settings, group)
    settings.metric.Clear()
    settings.metric.on = False
    return settings

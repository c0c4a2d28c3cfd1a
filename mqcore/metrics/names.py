"""Metric and label names: RocketMQ 5's wherever it has one, so its dashboards and alert
rules read mq (and the other way round); mq's own in the same style where it has none.

RocketMQ 5 names its instruments in ``BrokerMetricsConstant``,
``DefaultStoreMetricsConstant`` and ``RemotingMetricsConstant``; a broker with
``metricsExporterType=PROM`` serves them with the labels ``cluster``, ``node_type``
and ``node_id`` on every sample. Durations are milliseconds and sizes bytes, without a
unit in the name, as there.
"""

from __future__ import annotations

import enum

from mqcore.errors import ConfigError
from mqcore.message.const import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_TRANS_HALF_TOPIC,
    SCHEDULE_TOPIC,
)

__all__ = [
    "MetricsExporterType",
    "bool_label",
    "counted_topic",
    "delay_text",
    "is_system_group",
    "message_type",
    "node_labels",
    "parse_metrics_label",
    "version_desc",
]


class MetricsExporterType(enum.StrEnum):
    """``metricsExporterType``: RocketMQ 5 also has OTLP_GRPC and LOG; mq serves
    Prometheus only."""

    DISABLE = "DISABLE"
    PROM = "PROM"


DEFAULT_PROM_PORT = 5557
"""RocketMQ 5's ``metricsPromExporterPort`` default."""

# -- RocketMQ 5: broker statistics (BrokerMetricsConstant) ---------------------------------
PROCESSOR_WATERMARK = "rocketmq_processor_watermark"
BROKER_PERMISSION = "rocketmq_broker_permission"
TOPIC_NUMBER = "rocketmq_topic_number"
CONSUMER_GROUP_NUMBER = "rocketmq_consumer_group_number"
MESSAGES_IN_TOTAL = "rocketmq_messages_in_total"
MESSAGES_OUT_TOTAL = "rocketmq_messages_out_total"
THROUGHPUT_IN_TOTAL = "rocketmq_throughput_in_total"
THROUGHPUT_OUT_TOTAL = "rocketmq_throughput_out_total"
MESSAGE_SIZE = "rocketmq_message_size"
PRODUCER_CONNECTIONS = "rocketmq_producer_connections"
CONSUMER_CONNECTIONS = "rocketmq_consumer_connections"
CONSUMER_LAG_MESSAGES = "rocketmq_consumer_lag_messages"
CONSUMER_LAG_LATENCY = "rocketmq_consumer_lag_latency"
CONSUMER_INFLIGHT_MESSAGES = "rocketmq_consumer_inflight_messages"
CONSUMER_QUEUEING_LATENCY = "rocketmq_consumer_queueing_latency"
CONSUMER_READY_MESSAGES = "rocketmq_consumer_ready_messages"
SEND_TO_DLQ_MESSAGES_TOTAL = "rocketmq_send_to_dlq_messages_total"

# -- RocketMQ 5: remoting and store ---------------------------------------------------------
RPC_LATENCY = "rocketmq_rpc_latency"
STORAGE_SIZE = "rocketmq_storage_size"
STORAGE_FLUSH_BEHIND_BYTES = "rocketmq_storage_flush_behind_bytes"
STORAGE_DISPATCH_BEHIND_BYTES = "rocketmq_storage_dispatch_behind_bytes"
TIMER_ENQUEUE_LAG = "rocketmq_timer_enqueue_lag"
"""Timer messages stored and not yet taken into the wheel (DefaultStoreMetricsConstant)."""
TIMER_ENQUEUE_LATENCY = "rocketmq_timer_enqueue_latency"
TIMER_DEQUEUE_LAG = "rocketmq_timer_dequeue_lag"
"""Timer messages waiting in the wheel."""
TIMER_DEQUEUE_LATENCY = "rocketmq_timer_dequeue_latency"
"""How far the wheel's reading trails the clock (milliseconds)."""
TIMER_ENQUEUE_TOTAL = "rocketmq_timer_enqueue_total"
TIMER_DEQUEUE_TOTAL = "rocketmq_timer_dequeue_total"
STORAGE_MESSAGE_RESERVE_TIME = "rocketmq_storage_message_reserve_time"

# -- mq's own: what RocketMQ 5 has no instrument for ----------------------------------------
SCHEDULE_LAG_MESSAGES = "rocketmq_schedule_lag_messages"
"""Per delay level: messages stored for the level and not delivered yet."""
SCHEDULE_LAG_LATENCY = "rocketmq_schedule_lag_latency"
"""Per delay level: how long the level's next message is overdue (0 while it is not)."""
SCHEDULE_DELIVERED_MESSAGES_TOTAL = "rocketmq_schedule_delivered_messages_total"
"""Per delay level: messages delivered to their real topic (the level's offset)."""
HA_SLAVE_CONNECTIONS = "rocketmq_ha_slave_connections"
HA_SLAVE_BEHIND_BYTES = "rocketmq_ha_slave_behind_bytes"
"""On a master, per slave connection: commit log bytes the slave has not acknowledged."""
HA_MASTER_CONNECTED = "rocketmq_ha_master_connected"
"""On a slave: 1 while it is connected to its master."""
STORAGE_DISK_RATIO = "rocketmq_storage_disk_ratio"
"""The used share (0..1) of the disk holding the commit log or the consume queues
(4.9.8's ``commitLogDiskRatio`` / ``consumeQueueDiskRatio``)."""
EVENT_LOOP_LAG_LATENCY = "rocketmq_event_loop_lag_latency"
EVENT_LOOP_LAG_MAX_LATENCY = "rocketmq_event_loop_lag_max_latency"
EVENT_LOOP_STALLS_TOTAL = "rocketmq_event_loop_stalls_total"
BROKER_NUMBER = "rocketmq_broker_number"
"""On a name server, per cluster: the brokers registered and alive."""
EXPORTER_POLL_LATENCY = "rocketmq_exporter_poll_latency"
EXPORTER_POLL_ERRORS_TOTAL = "rocketmq_exporter_poll_errors_total"

# -- labels ---------------------------------------------------------------------------------
CLUSTER = "cluster"
NODE_TYPE = "node_type"
NODE_ID = "node_id"
PROCESSOR = "processor"
TOPIC = "topic"
CONSUMER_GROUP = "consumer_group"
MESSAGE_TYPE = "message_type"
IS_RETRY = "is_retry"
IS_SYSTEM = "is_system"
LANGUAGE = "language"
VERSION = "version"
CONSUME_MODE = "consume_mode"
PROTOCOL_TYPE = "protocol_type"
REQUEST_CODE = "request_code"
RESPONSE_CODE = "response_code"
IS_LONG_POLLING = "is_long_polling"
RESULT = "result"
STORAGE_TYPE = "storage_type"
STORAGE_MEDIUM = "storage_medium"
DELAY_LEVEL = "delay_level"
DELAY = "delay"
SLAVE = "slave"
STORE_PATH = "store_path"
BROKER = "broker"
"""The exporter only: which broker of ``node_id`` a figure is from (``brokerName``)."""

NODE_TYPE_BROKER = "broker"
NODE_TYPE_NAMESRV = "namesrv"
NODE_TYPE_EXPORTER = "exporter"
PROTOCOL_TYPE_REMOTING = "remoting"
STORAGE_LOCAL = {STORAGE_TYPE: "local", STORAGE_MEDIUM: "disk"}
"""DefaultStoreMetricsManager's labels on every store figure."""

MESSAGE_SIZE_BUCKETS = (1024.0, 4096.0, 512 * 1024.0, 1024 * 1024.0, 2 * 1024**2, 4 * 1024**2)
"""BrokerMetricsManager's message size view: 1 KiB, 4 KiB, 512 KiB, 1, 2, 4 MiB."""
RPC_LATENCY_BUCKETS = (1.0, 3.0, 5.0, 7.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0)
"""RemotingMetricsManager's view, in milliseconds."""

SYSTEM_GROUP_PREFIX = "CID_RMQ_SYS_"
"""``MixAll.CID_RMQ_SYS_PREFIX``: groups of the broker's own (transactions, ...)."""


def is_system_group(group: str) -> bool:
    """``BrokerMetricsManager.isSystemGroup`` (case-insensitive, as there)."""
    return group.upper().startswith(SYSTEM_GROUP_PREFIX)


def bool_label(value: bool) -> str:
    """A boolean attribute as OpenTelemetry's Prometheus exporter writes it."""
    return "true" if value else "false"


def counted_topic(topic: str) -> bool:
    """RocketMQ 5 counts messages in and out of every topic but the retry and DLQ ones."""
    return not topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))


def message_type(topic: str, order: bool) -> str:
    """RocketMQ 5's ``message_type`` is a property of each send; mq's counters are per
    topic, so it is said of the topic: delayed and half messages are stored in their
    system topics, and an ordered topic holds FIFO messages."""
    if topic == SCHEDULE_TOPIC:
        return "delay"
    if topic == RMQ_SYS_TRANS_HALF_TOPIC:
        return "transaction"
    return "fifo" if order else "normal"


def delay_text(ms: int) -> str:
    """A delay level's time as ``messageDelayLevel`` writes it (``10s``, ``2m``, ``1h``)."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def node_labels(cluster: str, node_type: str, node_id: str, metrics_label: str) -> dict[str, str]:
    """The labels on every sample of a process: RocketMQ 5's ``cluster``, ``node_type``
    and ``node_id`` (a broker's name), then ``metricsLabel``'s."""
    labels = {CLUSTER: cluster, NODE_TYPE: node_type, NODE_ID: node_id}
    for key, value in parse_metrics_label(metrics_label).items():
        labels.setdefault(key, value)
    return labels


def parse_metrics_label(text: str) -> dict[str, str]:
    """``metricsLabel``: extra labels for every sample, ``"k1:v1,k2:v2"`` (RocketMQ 5
    skips a malformed pair with a warning; mq refuses it, naming it)."""
    labels: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition(":")
        if not sep or not key or ":" in value:
            raise ConfigError(f"metricsLabel: {item!r} is not key:value")
        labels[key.strip()] = value.strip()
    return labels


_REGULAR_FROM = 212
"""``MQVersion.Version``: from V4_0_0_SNAPSHOT on, every x.y.z has a SNAPSHOT and a
release ordinal, in order, up to V5_9_9."""
_LAST_REGULAR = _REGULAR_FROM + 2 * 200 - 1


def version_desc(code: int) -> str:
    """``MQVersion.getVersionDesc(code).toLowerCase()`` for 4.x and 5.x clients
    (``409`` -> ``v4_9_8``); older ones are shown as their number."""
    if code < _REGULAR_FROM:
        return str(code)
    index, release = divmod(min(code, _LAST_REGULAR) - _REGULAR_FROM, 2)
    major, rest = divmod(index, 100)
    minor, patch = divmod(rest, 10)
    return f"v{major + 4}_{minor}_{patch}" + ("" if release else "_snapshot")

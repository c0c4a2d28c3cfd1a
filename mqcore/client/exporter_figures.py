"""What `mq exporter` learned of one broker in one poll (:class:`BrokerFigures`), and
how it becomes the metric families a broker with ``metricsExporterType=PROM`` serves
(:func:`render`). Pure: no requests here (see :mod:`mqcore.client.exporter`).

The figures come from admin requests any RocketMQ 4.x broker answers, so some are
derived differently from a broker's own:

* ``rocketmq_messages_in_total`` is the sum of the topic's queue ends on the broker: every
  message ever stored in it (a broker counts those since it started; both are counters,
  and their rates agree);
* the consumer lag and its latency come from GET_BROKER_CONSUME_STATS (every group
  with offsets) and the store time of each lagging queue's next message;
* the storage figures are GET_BROKER_RUNTIME_INFO's, where RocketMQ writes some as text
  (``remainHowManyDataToFlush``, ``commitLogDirCapacity``): to a tenth of their unit;
* mq's own figures (delay levels' due times, HA, event loop) appear where the broker's
  runtime info has them, which a RocketMQ broker's has not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from mqcore.common.metadata import TopicConfig
from mqcore.errors import ConfigError
from mqcore.metrics import names as n
from mqcore.metrics.families import MetricSet, event_loop_families, schedule_families
from mqcore.metrics.names import bool_label, counted_topic, delay_text, is_system_group
from mqcore.metrics.names import message_type as message_type_of
from mqcore.store.metadata.topic import is_system_topic
from mqcore.store.store_config import parse_delay_levels

__all__ = ["BrokerFigures", "GroupLag", "human_bytes_value", "render"]

_HUMAN = re.compile(r"([\d.]+)\s*([KMGTPE]?)i?B")
_UNITS = "KMGTPE"


def human_bytes_value(text: str) -> int | None:
    """``MixAll.humanReadableByteCount``'s text back to bytes (``"1.5 KiB"`` -> 1536)."""
    found = _HUMAN.search(text)
    if found is None:
        return None
    number, unit = float(found.group(1)), found.group(2)
    return int(number * 1024 ** (_UNITS.index(unit) + 1 if unit else 0))


@dataclass(frozen=True, slots=True)
class GroupLag:
    """A group's lag on a topic of one broker."""

    group: str
    topic: str
    lag: int
    earliest_unconsumed_ms: int = 0
    """Store time of the oldest unconsumed message (0: none, or not known)."""
    inflight: int = 0
    """POP: handed out and not acknowledged (behind the committed offset, not in ``lag``)."""


@dataclass
class BrokerFigures:
    """One broker name as polled: its master's tables and runtime info, its slaves'
    commit log ends. A piece left None could not be read this time."""

    cluster: str
    broker_name: str
    runtime: Mapping[str, str] | None = None
    config: Mapping[str, str] | None = None
    topics: Mapping[str, TopicConfig] | None = None
    group_count: int | None = None
    topic_ends: dict[str, int] = field(default_factory=dict)
    """Topic -> the sum of its queues' max offsets on this broker."""
    lags: list[GroupLag] = field(default_factory=list)
    slave_ends: dict[str, int] = field(default_factory=dict)
    """Slave address -> its commit log's max offset."""


def _int(table: Mapping[str, str] | None, key: str) -> int | None:
    try:
        return int(table[key]) if table is not None else None
    except (KeyError, ValueError):
        return None


def _float(table: Mapping[str, str] | None, key: str) -> float | None:
    try:
        return float(table[key]) if table is not None else None
    except (KeyError, ValueError):
        return None


def render(figures: Iterable[BrokerFigures], metrics: MetricSet, now_ms: int) -> None:
    """The families of every broker polled, each sample labelled with its ``cluster``
    and ``node_id`` (broker name), as the broker itself would label it."""
    for broker in figures:
        node = (broker.cluster, broker.broker_name)
        _stats(broker, metrics, node)
        _lag(broker, metrics, node, now_ms)
        _storage(broker, metrics, node, now_ms)
        _schedule(broker, metrics, node, now_ms)
        _ha_and_loop(broker, metrics, node)


_NODE = (n.CLUSTER, n.NODE_ID)


def _stats(broker: BrokerFigures, metrics: MetricSet, node: tuple[str, str]) -> None:
    permission = _int(broker.config, "brokerPermission")
    if permission is not None:
        metrics.gauge(n.BROKER_PERMISSION, "Broker permission", _NODE).add(permission, *node)
    if broker.topics is not None:
        metrics.gauge(n.TOPIC_NUMBER, "Active topic number", _NODE).add(len(broker.topics), *node)
    if broker.group_count is not None:
        metrics.gauge(n.CONSUMER_GROUP_NUMBER, "Active subscription group number", _NODE).add(
            broker.group_count, *node
        )
    messages_in = metrics.counter(
        n.MESSAGES_IN_TOTAL,
        "Total number of incoming messages",
        (*_NODE, n.TOPIC, n.MESSAGE_TYPE, n.IS_SYSTEM),
    )
    topics = broker.topics or {}
    for topic, end in sorted(broker.topic_ends.items()):
        config = topics.get(topic)
        kind = message_type_of(topic, config is not None and config.order)
        messages_in.add(end, *node, topic, kind, bool_label(is_system_topic(topic)))


def _lag(broker: BrokerFigures, metrics: MetricSet, node: tuple[str, str], now: int) -> None:
    labels = (*_NODE, n.CONSUMER_GROUP, n.TOPIC, n.IS_RETRY, n.IS_SYSTEM)
    lag = metrics.gauge(n.CONSUMER_LAG_MESSAGES, "Consumer lag messages", labels)
    latency = metrics.gauge(n.CONSUMER_LAG_LATENCY, "Consumer lag time (milliseconds)", labels)
    inflight = metrics.gauge(n.CONSUMER_INFLIGHT_MESSAGES, "Consumer inflight messages", labels)
    queueing = metrics.gauge(
        n.CONSUMER_QUEUEING_LATENCY, "Consumer queueing time (milliseconds)", labels
    )
    ready = metrics.gauge(n.CONSUMER_READY_MESSAGES, "Consumer ready messages", labels)
    for row in broker.lags:
        system = bool_label(is_system_topic(row.topic) or is_system_group(row.group))
        values = (*node, row.group, row.topic, "false", system)
        waited = max(0, now - row.earliest_unconsumed_ms) if row.earliest_unconsumed_ms else 0
        lag.add(row.lag + row.inflight, *values)  # as RocketMQ 5 counts a POP group's lag
        latency.add(waited, *values)
        inflight.add(row.inflight, *values)
        queueing.add(waited, *values)
        ready.add(row.lag, *values)


def _storage(broker: BrokerFigures, metrics: MetricSet, node: tuple[str, str], now: int) -> None:
    runtime = broker.runtime
    if runtime is None:
        return
    local = (*_NODE, *n.STORAGE_LOCAL)
    where = (*node, *n.STORAGE_LOCAL.values())
    # "Total : 93.1 GiB, Free : 50.0 GiB."
    total_text, _, free_text = runtime.get("commitLogDirCapacity", "").partition(", Free")
    if free_text:
        total, free = human_bytes_value(total_text), human_bytes_value(free_text)
        if total is not None and free is not None:
            metrics.gauge(n.STORAGE_SIZE, "Broker storage size (bytes)", local).add(
                total - free, *where
            )
    flush = human_bytes_value(runtime.get("remainHowManyDataToFlush", ""))
    if flush is not None:
        metrics.gauge(n.STORAGE_FLUSH_BEHIND_BYTES, "Broker flush behind bytes", local).add(
            flush, *where
        )
    dispatch = _int(runtime, "dispatchBehindBytes")
    if dispatch is not None:
        metrics.gauge(n.STORAGE_DISPATCH_BEHIND_BYTES, "Broker dispatch behind bytes", local).add(
            dispatch, *where
        )
    earliest = _int(runtime, "earliestMessageTimeStamp")
    if earliest is not None and earliest > 0:
        metrics.gauge(
            n.STORAGE_MESSAGE_RESERVE_TIME, "Broker message reserve time (milliseconds)", local
        ).add(max(0, now - earliest), *where)
    ratio = metrics.gauge(
        n.STORAGE_DISK_RATIO,
        "Used share of the disk holding the store path (0..1; -1 unknown)",
        (*local, n.STORE_PATH),
    )
    for key, path in (
        ("commitLogDiskRatio", "commitlog"),
        ("consumeQueueDiskRatio", "consumequeue"),
    ):
        value = _float(runtime, key)
        if value is not None:
            ratio.add(value, *where, path)


def _schedule(broker: BrokerFigures, metrics: MetricSet, node: tuple[str, str], now: int) -> None:
    runtime = broker.runtime
    if runtime is None:
        return
    try:
        delays = parse_delay_levels((broker.config or {}).get("messageDelayLevel") or "")
    except ConfigError:
        delays = {}
    labels = (*_NODE, n.DELAY_LEVEL, n.DELAY)
    waiting, overdue, delivered = schedule_families(metrics, labels)
    prefix = "scheduleMessageOffset_"
    progress: dict[int, tuple[int, int]] = {}
    for key, text in runtime.items():
        delivered_text, _, end_text = text.partition(",")
        if key.startswith(prefix) and key[len(prefix) :].isdigit():
            try:
                progress[int(key[len(prefix) :])] = (int(delivered_text), int(end_text))
            except ValueError:
                continue
    for level, (done, end) in sorted(progress.items()):
        values = (*node, str(level), delay_text(delays[level]) if level in delays else "")
        waiting.add(max(0, end - done), *values)
        delivered.add(done, *values)
        due = _int(runtime, f"scheduleMessageHeadDue_{level}")  # mq's own key
        if due is not None:
            overdue.add(max(0, now - due) if due > 0 else 0, *values)


def _ha_and_loop(broker: BrokerFigures, metrics: MetricSet, node: tuple[str, str]) -> None:
    runtime = broker.runtime
    connections = _int(runtime, "haConnectionCount")  # mq's own key
    if connections is not None:
        metrics.gauge(n.HA_SLAVE_CONNECTIONS, "Slaves connected to this master", _NODE).add(
            connections, *node
        )
    end = _int(runtime, "commitLogMaxOffset")
    behind = metrics.gauge(
        n.HA_SLAVE_BEHIND_BYTES,
        "Commit log bytes the slave has not acknowledged",
        (*_NODE, n.SLAVE),
    )
    if end is not None:
        for addr, slave_end in sorted(broker.slave_ends.items()):
            behind.add(max(0, end - slave_end), *node, addr)
    last, worst, stall_count = event_loop_families(metrics, _NODE)
    for key, family in (("loopLagMs", last), ("loopLagMaxMsLastMinute", worst)):
        value = _float(runtime, key)
        if value is not None:
            family.add(value, *node)
    stalls = _int(runtime, "loopStallCount")
    if stalls is not None:
        stall_count.add(stalls, *node)


def counted(topics: Iterable[str]) -> list[str]:
    """The topics whose messages in are counted (not retry or DLQ topics), sorted."""
    return sorted(t for t in topics if counted_topic(t))

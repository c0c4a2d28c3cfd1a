"""Plain dataclasses the dashboard renders: one :class:`Snapshot` per poll.

The poller builds these from wire bodies and the screens only format them, so a view can
be tested (and its SVG snapshot made) from a hand-built snapshot without a cluster.
Times are epoch milliseconds; ``None`` means "not known" (shown as ``-``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from mqcli.ha import HAState
from mqcore.message.const import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from mqcore.store.metadata.topic import is_system_topic

__all__ = [
    "DEFAULT_DELAY_LEVELS",
    "TREND_THRESHOLD",
    "TREND_WINDOW",
    "UNKNOWN_STATE",
    "BrokerRow",
    "DelayLevelRow",
    "GroupDetail",
    "GroupQueueRow",
    "GroupRow",
    "History",
    "Member",
    "NamesrvHealth",
    "QueueRow",
    "Snapshot",
    "TopicRow",
    "topic_kind",
    "trend_direction",
]

UNKNOWN_STATE = "name server unreachable, broker state unknown"
"""What the views say while no name server answers."""

DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
"""RocketMQ's ``messageDelayLevel`` default, used when a broker does not say."""


TREND_WINDOW = 6
"""Polls a trend looks back over (12 s at the default refresh): consumers commit
offsets every few seconds, so two polls in a row often see the same lag while it climbs."""

TREND_THRESHOLD = 0.01
"""A change smaller than this share of the series' size is flat (noise, not a trend)."""


def trend_direction(
    values: Sequence[float], window: int = TREND_WINDOW, threshold: float = TREND_THRESHOLD
) -> int:
    """1 rising, -1 falling, 0 flat: the least-squares slope over the last ``window``
    values, times the window, against ``threshold`` of the largest value in it, so a lag
    climbing in steps between offset commits reads as rising and a wobble around a large
    lag reads as flat."""
    tail = [float(v) for v in list(values)[-window:]]
    n = len(tail)
    if n < 2:
        return 0
    mean_x = (n - 1) / 2
    mean_y = sum(tail) / n
    slope = sum((i - mean_x) * (v - mean_y) for i, v in enumerate(tail)) / sum(
        (i - mean_x) ** 2 for i in range(n)
    )
    change = slope * (n - 1)
    if abs(change) <= threshold * max(abs(v) for v in tail):
        return 0
    return 1 if change > 0 else -1


def topic_kind(topic: str, reserved: frozenset[str] = frozenset()) -> str:
    """``normal``, ``retry``, ``dlq`` or ``system`` (the dashboard's topic filters).
    ``reserved`` holds the cluster and broker names, which are topics too."""
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return "retry"
    if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
        return "dlq"
    if is_system_topic(topic) or topic in reserved:
        return "system"
    return "normal"


@dataclass(slots=True)
class NamesrvHealth:
    addr: str
    ok: bool
    latency_ms: float | None = None
    error: str | None = None


@dataclass(slots=True)
class BrokerRow:
    """One broker process (a master or a slave) and what its runtime info says."""

    cluster: str
    name: str
    broker_id: int
    addr: str
    up: bool = True
    error: str | None = None
    version: str = "-"
    boot_ms: int | None = None
    put_tps: float = 0.0
    get_tps: float = 0.0
    put_today: int = 0
    get_today: int = 0
    disk_ratio: float | None = None
    commit_log_max: int = 0
    slave_lag_bytes: int | None = None
    """Master's commit log max offset minus this slave's (``None`` for masters)."""
    ha: HAState | None = None
    """Role and HA connection as the broker reports them (None: not polled yet)."""
    store_problems: int = 0
    """Damage the broker's recovery found and worked around (``storeProblems``)."""
    loop_lag_ms: float | None = None
    """The broker event loop's largest stall in the last minute (``None``: the broker
    does not say, as RocketMQ)."""
    unknown: bool = False
    """No name server answers, so nothing current is known about this broker: ``up``
    is what the last good poll saw, and the views say "unknown", never DOWN."""

    @property
    def key(self) -> str:
        return f"{self.name}/{self.broker_id}"

    @property
    def role(self) -> str:
        return "master" if self.broker_id == 0 else "slave"

    @property
    def role_text(self) -> str:
        """``sync master``, ``async master`` or ``slave``; plain ``master`` when the
        broker does not say which kind (RocketMQ itself)."""
        if self.ha is None or self.ha.role == "MASTER":
            return self.role
        return self.ha.role.lower().replace("_", " ")


@dataclass(slots=True)
class QueueRow:
    topic: str
    broker: str
    queue_id: int
    min_offset: int
    max_offset: int
    last_store_ms: int = 0

    @property
    def depth(self) -> int:
        """Messages held (max - min), what ``topic status`` calls the count."""
        return max(0, self.max_offset - self.min_offset)


@dataclass(slots=True)
class TopicRow:
    name: str
    kind: str
    queues: list[QueueRow] = field(default_factory=list)
    perm: str = "RW-"
    put_tps: float = 0.0
    tps_history: list[float] = field(default_factory=list)

    @property
    def depth(self) -> int:
        return sum(q.depth for q in self.queues)

    @property
    def max_offset(self) -> int:
        return sum(q.max_offset for q in self.queues)

    @property
    def last_store_ms(self) -> int:
        return max((q.last_store_ms for q in self.queues), default=0)


@dataclass(slots=True)
class GroupQueueRow:
    topic: str
    broker: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    last_consume_ms: int = 0
    in_flight: int | None = None
    """POP: handed out and not acknowledged (None: nobody popped from the queue)."""
    invisible: int | None = None
    """POP: the part of ``in_flight`` not yet due back."""

    @property
    def lag(self) -> int:
        return max(0, self.broker_offset - self.consumer_offset)


@dataclass(slots=True)
class GroupRow:
    """A consumer group's summary, from the brokers' offset tables."""

    name: str
    model: str = "-"
    """CLUSTERING / BROADCASTING as the live consumers report it; "-" when none is known."""
    system: bool = False
    retry_max_times: int = 16
    topics: list[str] = field(default_factory=list)
    queues: int = 0
    total_lag: int = 0
    lag_history: list[int] = field(default_factory=list)

    @property
    def lag_growing(self) -> bool:
        """Lag is rising over the trend window (a stuck or slow consumer)."""
        return trend_direction(self.lag_history) > 0


@dataclass(slots=True)
class Member:
    client_id: str
    addr: str
    language: str
    version: int


@dataclass(slots=True)
class GroupDetail:
    """The highlighted group's drill-down: members and exact per-queue progress."""

    name: str
    model: str = "-"
    consume_type: str = "-"
    subscriptions: dict[str, str] = field(default_factory=dict)
    members: list[Member] = field(default_factory=list)
    queues: list[GroupQueueRow] = field(default_factory=list)
    error: str | None = None

    @property
    def popping(self) -> bool:
        """Some queue of the group is consumed by POP (its broker counts what is in
        flight there)."""
        return any(q.in_flight is not None for q in self.queues)

    @property
    def in_flight(self) -> int:
        return sum(q.in_flight or 0 for q in self.queues)

    @property
    def invisible(self) -> int:
        return sum(q.invisible or 0 for q in self.queues)


@dataclass(slots=True)
class DelayLevelRow:
    """One ``SCHEDULE_TOPIC_XXXX`` queue (delay level ``level`` = queue ``level - 1``)."""

    broker: str
    level: int
    delay_text: str
    delivered: int
    max_offset: int
    next_due_ms: int | None = None
    delivery_rate: float | None = None
    """Messages/s delivered (the broker's ``scheduleMessageDeliverTps_<n>``, 10 s
    window); None when the broker does not publish it."""

    @property
    def waiting(self) -> int:
        return max(0, self.max_offset - self.delivered)


@dataclass(slots=True)
class Snapshot:
    """Everything one poll saw. ``latency_ms`` is the poll's wall time."""

    taken_ms: int = 0
    latency_ms: float = 0.0
    namesrvs: list[NamesrvHealth] = field(default_factory=list)
    brokers: list[BrokerRow] = field(default_factory=list)
    topics: dict[str, TopicRow] = field(default_factory=dict)
    groups: dict[str, GroupRow] = field(default_factory=dict)
    group_detail: GroupDetail | None = None
    delay_levels: list[DelayLevelRow] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def connected(self) -> bool:
        return any(n.ok for n in self.namesrvs)

    @property
    def brokers_unknown(self) -> bool:
        """No name server answered, so the broker list is the last one seen."""
        return not self.connected and bool(self.namesrvs)

    @property
    def brokers_down(self) -> list[BrokerRow]:
        return [b for b in self.brokers if not b.up and not b.unknown]


class History:
    """Rolling per-key series (topic put TPS, group lag) across polls, for sparklines
    and trends; keys that vanish are dropped so memory follows the cluster."""

    def __init__(self, length: int = 60) -> None:
        self.length = length
        self._series: dict[str, deque[float]] = {}

    def add(self, key: str, value: float) -> list[float]:
        series = self._series.setdefault(key, deque(maxlen=self.length))
        series.append(value)
        return list(series)

    def get(self, key: str) -> list[float]:
        return list(self._series.get(key, ()))

    def retain(self, keys: set[str]) -> None:
        for key in set(self._series) - keys:
            del self._series[key]

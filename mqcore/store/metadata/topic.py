"""Topics: ``TopicConfig``, name rules, system topics, and ``config/topics.json``.

File shape (RocketMQ ``TopicConfigSerializeWrapper``)::

    {"dataVersion":{"counter":N,"timestamp":ms},
     "topicConfigTable":{"<topic>":{"order":false,"perm":6,"readQueueNums":4,
         "topicFilterType":"SINGLE_TAG","topicName":"<topic>","topicSysFlag":0,
         "writeQueueNums":4}, ...}}

Name rules and the system-topic sets follow RocketMQ's ``TopicValidator`` so the broker can
reuse :func:`validate_topic_name` for requests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from mqcore.common.metadata import (
    PERM_INHERIT,
    PERM_PRIORITY,
    PERM_READ,
    PERM_WRITE,
    DataVersion,
    TopicConfig,
    TopicFilterType,
)
from mqcore.errors import ConfigError
from mqcore.message.const import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    REPLY_TOPIC_POSTFIX,
    RMQ_SYS_BENCHMARK_TOPIC,
    RMQ_SYS_OFFSET_MOVED_EVENT,
    RMQ_SYS_SELF_TEST_TOPIC,
    RMQ_SYS_TRACE_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    SCHEDULE_TOPIC,
    SYSTEM_TOPIC_PREFIX,
    TRANS_CHECK_MAX_TIME_TOPIC,
)
from mqcore.store.metadata.config_file import VersionedTableManager

__all__ = [
    "PERM_INHERIT",
    "PERM_PRIORITY",
    "PERM_READ",
    "PERM_WRITE",
    "TOPIC_MAX_LENGTH",
    "TopicConfig",
    "TopicConfigManager",
    "TopicFilterType",
    "TopicNameError",
    "is_not_allowed_send_topic",
    "is_system_topic",
    "perm_to_string",
    "system_topic_configs",
    "validate_topic_name",
]

# PermName

# TopicValidator / MixAll names live in mqcore.message.const (imported above).
RMQ_SYS_SCHEDULE_TOPIC = SCHEDULE_TOPIC
RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC = TRANS_CHECK_MAX_TIME_TOPIC
TOPIC_MAX_LENGTH = 127
SCHEDULE_QUEUE_NUMS = 18

SYSTEM_TOPICS = frozenset(
    {
        AUTO_CREATE_TOPIC_KEY_TOPIC,
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_BENCHMARK_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRACE_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
    }
)
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
    }
)

_VALID_TOPIC = re.compile(r"[%|a-zA-Z0-9_-]+")


class TopicNameError(ConfigError):
    """A topic name RocketMQ would refuse (the message is the one to show the user)."""


def validate_topic_name(topic: str) -> None:
    """RocketMQ's topic rules: not blank, only ``[%|a-zA-Z0-9_-]``, at most 127 chars.

    Reserved names are a separate question (:func:`is_not_allowed_send_topic`, and the
    broker refusing to create a topic named like its cluster), as in RocketMQ.
    """
    if not topic or not topic.strip():
        raise TopicNameError("the specified topic is blank")
    if not _VALID_TOPIC.fullmatch(topic):
        raise TopicNameError(
            f"the specified topic[{topic}] contains illegal characters, "
            "allowing only ^[%|a-zA-Z0-9_-]+$"
        )
    if len(topic) > TOPIC_MAX_LENGTH:
        raise TopicNameError(
            f"the specified topic is longer than topic max length {TOPIC_MAX_LENGTH}"
        )


def is_system_topic(topic: str) -> bool:
    """Built-in topics and the ``rmq_sys_`` prefix (``TopicValidator.isSystemTopic``)."""
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def is_not_allowed_send_topic(topic: str) -> bool:
    """Topics producers may not send to directly (schedule, transaction, self-test ...)."""
    return topic in NOT_ALLOWED_SEND_TOPICS


def perm_to_string(perm: int) -> str:
    """``PermName.perm2String``: ``RWX`` with ``-`` for missing read/write/inherit."""
    return (
        ("R" if perm & PERM_READ else "-")
        + ("W" if perm & PERM_WRITE else "-")
        + ("X" if perm & PERM_INHERIT else "-")
    )


def system_topic_configs(
    cluster_name: str,
    broker_name: str,
    *,
    auto_create_topic_enable: bool = True,
    default_topic_queue_nums: int = 8,
    cluster_topic_enable: bool = True,
    broker_topic_enable: bool = True,
    trace_topic_enable: bool = False,
    trace_topic_name: str = RMQ_SYS_TRACE_TOPIC,
) -> list[TopicConfig]:
    """The topics a 4.9.8 broker always creates at start (spec §10.2), in its order."""
    rw = PERM_READ | PERM_WRITE
    out = [TopicConfig(RMQ_SYS_SELF_TEST_TOPIC, 1, 1)]
    if auto_create_topic_enable:
        out.append(
            TopicConfig(
                AUTO_CREATE_TOPIC_KEY_TOPIC,
                default_topic_queue_nums,
                default_topic_queue_nums,
                PERM_INHERIT | rw,
            )
        )
    out.append(TopicConfig(RMQ_SYS_BENCHMARK_TOPIC, 1024, 1024))
    out.append(TopicConfig(cluster_name, perm=PERM_INHERIT | (rw if cluster_topic_enable else 0)))
    out.append(TopicConfig(broker_name, 1, 1, PERM_INHERIT | (rw if broker_topic_enable else 0)))
    out.append(TopicConfig(RMQ_SYS_OFFSET_MOVED_EVENT, 1, 1))
    out.append(TopicConfig(RMQ_SYS_SCHEDULE_TOPIC, SCHEDULE_QUEUE_NUMS, SCHEDULE_QUEUE_NUMS))
    if trace_topic_enable:
        out.append(TopicConfig(trace_topic_name, 1, 1))
    out.append(TopicConfig(f"{cluster_name}_{REPLY_TOPIC_POSTFIX}", 1, 1))
    return out


@dataclass
class _State:
    data_version: DataVersion = field(default_factory=DataVersion)
    table: dict[str, TopicConfig] = field(default_factory=dict)


class TopicConfigManager(VersionedTableManager[TopicConfig]):
    """``config/topics.json``. Mutators bump :attr:`data_version`; call :meth:`persist`."""

    FILE_NAME = "topics.json"
    TABLE_KEY = "topicConfigTable"
    ENTRY = TopicConfig

    def select(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def update(self, config: TopicConfig) -> None:
        """Add or replace a topic (``updateTopicConfig`` minus the persist)."""
        with self._lock:
            self.table[config.topic_name] = config
            self._touch(config.topic_name)
            self.data_version.next_version()

    def stamp_epoch(self, epoch: int) -> None:
        """A new master epoch (controller mode): the next version carries it as
        ``stateVersion``, so name servers prefer this broker's registration as master
        over one stamped at an older epoch."""
        with self._lock:
            self.data_version.next_version(epoch)

    def create_if_absent(self, config: TopicConfig) -> tuple[TopicConfig, bool]:
        """The topic's config, adding ``config`` when it has none; True when added. The
        caller persists (batching the writes of many creations into one)."""
        with self._lock:
            existing = self.table.get(config.topic_name)
            if existing is not None:
                return existing, False
            self.table[config.topic_name] = config
            self.data_version.next_version()
            return config, True

    def delete(self, topic: str) -> TopicConfig | None:
        with self._lock:
            old = self.table.pop(topic, None)
            if old is not None:
                self._touch(topic)
                self.data_version.next_version()
            return old

    def ensure_topics(self, configs: Iterable[TopicConfig]) -> None:
        """Add the given topics where absent, without bumping the version: the broker's
        built-in topics, which a 4.x broker creates in memory before loading the file."""
        with self._lock:
            for tc in configs:
                self.table.setdefault(tc.topic_name, tc)

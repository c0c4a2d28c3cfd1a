"""The broker's metadata files under ``<root>/config`` (RocketMQ's ConfigManagers).

Each manager owns one file, keeps its table in typed dataclasses, reads RocketMQ's
fastjson dialect and writes it back byte-identically, crash-safely (see
:mod:`.config_file`). Construct with the store root, then :meth:`load`; offline tools pass
``readonly=True`` and nothing is ever written.
"""

from __future__ import annotations

from mqcore.common.metadata import DataVersion
from mqcore.store.metadata.config_file import ConfigFileManager
from mqcore.store.metadata.consumer_filter import (
    BloomFilterData,
    ConsumerFilterData,
    ConsumerFilterManager,
)
from mqcore.store.metadata.consumer_offset import ConsumerOffsetManager
from mqcore.store.metadata.delay_offset import DelayOffsetManager
from mqcore.store.metadata.subscription_group import (
    SubscriptionGroupConfig,
    SubscriptionGroupManager,
)
from mqcore.store.metadata.topic import (
    PERM_INHERIT,
    PERM_PRIORITY,
    PERM_READ,
    PERM_WRITE,
    TopicConfig,
    TopicConfigManager,
    TopicFilterType,
    TopicNameError,
    is_not_allowed_send_topic,
    is_system_topic,
    perm_to_string,
    system_topic_configs,
    validate_topic_name,
)

__all__ = [
    "MANAGERS",
    "PERM_INHERIT",
    "PERM_PRIORITY",
    "PERM_READ",
    "PERM_WRITE",
    "BloomFilterData",
    "ConfigFileManager",
    "ConsumerFilterData",
    "ConsumerFilterManager",
    "ConsumerOffsetManager",
    "DataVersion",
    "DelayOffsetManager",
    "SubscriptionGroupConfig",
    "SubscriptionGroupManager",
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

# File name -> manager class, for tools that handle "every config file".
MANAGERS: dict[str, type[ConfigFileManager]] = {
    cls.FILE_NAME: cls
    for cls in (
        TopicConfigManager,
        ConsumerOffsetManager,
        DelayOffsetManager,
        SubscriptionGroupManager,
        ConsumerFilterManager,
    )
}

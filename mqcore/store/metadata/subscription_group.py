"""Consumer groups: ``SubscriptionGroupConfig`` and ``config/subscriptionGroup.json``.

File shape: ``{"dataVersion":{...},"subscriptionGroupTable":{"<group>":{...}}}`` with the
bean fields in alphabetical order (spec §10.5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mqcore.errors import ConfigError
from mqcore.store.metadata.config_file import (
    ConfigFileManager,
    DataVersion,
    get_bool,
    get_int,
    get_mapping,
    get_str,
)

__all__ = ["SYSTEM_GROUPS", "SubscriptionGroupConfig", "SubscriptionGroupManager"]

# Groups a 4.9.8 broker creates at start (SubscriptionGroupManager.init).
SYSTEM_GROUPS = (
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
)


@dataclass
class SubscriptionGroupConfig:
    """One consumer group's server-side settings; defaults are RocketMQ's."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerId": self.broker_id,
            "consumeBroadcastEnable": self.consume_broadcast_enable,
            "consumeEnable": self.consume_enable,
            "consumeFromMinEnable": self.consume_from_min_enable,
            "groupName": self.group_name,
            "notifyConsumerIdsChangedEnable": self.notify_consumer_ids_changed_enable,
            "retryMaxTimes": self.retry_max_times,
            "retryQueueNums": self.retry_queue_nums,
            "whichBrokerWhenConsumeSlowly": self.which_broker_when_consume_slowly,
        }

    @classmethod
    def from_json(cls, obj: Any, name: str | None = None) -> SubscriptionGroupConfig:
        """Parse one entry; unknown (5.x) fields are ignored."""
        obj = get_mapping(obj)
        return cls(
            group_name=get_str(obj, "groupName", name),
            consume_enable=get_bool(obj, "consumeEnable", True),
            consume_from_min_enable=get_bool(obj, "consumeFromMinEnable", True),
            consume_broadcast_enable=get_bool(obj, "consumeBroadcastEnable", True),
            retry_queue_nums=get_int(obj, "retryQueueNums", 1),
            retry_max_times=get_int(obj, "retryMaxTimes", 16),
            broker_id=get_int(obj, "brokerId", 0),
            which_broker_when_consume_slowly=get_int(obj, "whichBrokerWhenConsumeSlowly", 1),
            notify_consumer_ids_changed_enable=get_bool(
                obj, "notifyConsumerIdsChangedEnable", True
            ),
        )


class SubscriptionGroupManager(ConfigFileManager):
    """``config/subscriptionGroup.json``. Mutators bump the version; call :meth:`persist`."""

    FILE_NAME = "subscriptionGroup.json"

    data_version: DataVersion
    table: dict[str, SubscriptionGroupConfig]

    def _reset(self) -> None:
        self.data_version = DataVersion()
        self.table = {}

    def _decode(self, obj: Any) -> None:
        doc = get_mapping(obj)
        version = DataVersion.from_json(get_mapping(doc, "dataVersion"))
        table: dict[str, SubscriptionGroupConfig] = {}
        for name, entry in get_mapping(doc, "subscriptionGroupTable").items():
            if not isinstance(name, str):
                raise ConfigError(f"subscriptionGroupTable: group {name!r} is not a string")
            table[name] = SubscriptionGroupConfig.from_json(entry, name)
        self.data_version, self.table = version, table

    def to_json(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_json(),
            "subscriptionGroupTable": {n: g.to_json() for n, g in self.table.items()},
        }

    def find(self, group: str, *, auto_create: bool = False) -> SubscriptionGroupConfig | None:
        """The group's config; with ``auto_create`` (``autoCreateSubscriptionGroup``) a
        missing group is created with defaults (``findSubscriptionGroupConfig``)."""
        with self._lock:
            config = self.table.get(group)
            if config is None and auto_create:
                config = self.table[group] = SubscriptionGroupConfig(group)
                self.data_version.next_version()
            return config

    def update(self, config: SubscriptionGroupConfig) -> None:
        with self._lock:
            self.table[config.group_name] = config
            self.data_version.next_version()

    def delete(self, group: str) -> SubscriptionGroupConfig | None:
        with self._lock:
            old = self.table.pop(group, None)
            if old is not None:
                self.data_version.next_version()
            return old

    def ensure_system_groups(self) -> None:
        """Add the built-in groups where absent (no version bump, as at broker start)."""
        with self._lock:
            for name in SYSTEM_GROUPS:
                self.table.setdefault(name, SubscriptionGroupConfig(name))

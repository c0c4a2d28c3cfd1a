"""Consumer groups: ``SubscriptionGroupConfig`` and ``config/subscriptionGroup.json``.

File shape: ``{"dataVersion":{...},"subscriptionGroupTable":{"<group>":{...}}}`` with the
bean fields in alphabetical order (spec §10.5).
"""

from __future__ import annotations

from mqcore.common.metadata import SubscriptionGroupConfig
from mqcore.store.metadata.config_file import VersionedTableManager

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


class SubscriptionGroupManager(VersionedTableManager[SubscriptionGroupConfig]):
    """``config/subscriptionGroup.json``. Mutators bump the version; call :meth:`persist`."""

    FILE_NAME = "subscriptionGroup.json"
    TABLE_KEY = "subscriptionGroupTable"
    ENTRY = SubscriptionGroupConfig

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
            self._touch(config.group_name)
            self.data_version.next_version()

    def delete(self, group: str) -> SubscriptionGroupConfig | None:
        with self._lock:
            old = self.table.pop(group, None)
            if old is not None:
                self._touch(group)
                self.data_version.next_version()
            return old

    def ensure_system_groups(self) -> None:
        """Add the built-in groups where absent (no version bump, as at broker start)."""
        with self._lock:
            for name in SYSTEM_GROUPS:
                self.table.setdefault(name, SubscriptionGroupConfig(name))

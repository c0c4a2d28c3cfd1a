"""`KVConfigManager`: namespaced key/value settings, persisted as RocketMQ's kvConfig.json.

File shape (``KVConfigSerializeWrapper``): ``{"configTable":{"<namespace>":{"<k>":"<v>"}}}``.
Every change is written at once, safely: a temporary file in the same directory, fsync,
rename over the old file, fsync of the directory; a crash leaves the old or the new file,
never half of one. The namespace ``ORDER_TOPIC_CONFIG`` (topic -> ``"brokerA:4;brokerB:4"``)
feeds ``orderTopicConf`` in routes.
"""

from __future__ import annotations

import logging
from pathlib import Path

from mqcore.common import fastjson
from mqcore.common.files import write_atomically
from mqcore.errors import ConfigError

__all__ = ["NAMESPACE_ORDER_TOPIC_CONFIG", "KVConfigManager"]

log = logging.getLogger("mq.namesrv")

NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


class KVConfigManager:
    """The namespaced table, loaded from and saved to ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.config_table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        """Read the file if it exists. Raises ConfigError when it is not valid JSON."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return
        if not raw.strip():
            return
        try:
            obj = fastjson.loads(raw)
        except fastjson.FastjsonError as exc:
            raise ConfigError(f"{self.path}: not a kvConfig JSON file: {exc}") from None
        table = obj.get("configTable") if isinstance(obj, dict) else None
        if not isinstance(table, dict):
            raise ConfigError(f"{self.path}: no configTable object")
        self.config_table = {
            str(ns): {str(k): str(v) for k, v in kv.items()}
            for ns, kv in table.items()
            if isinstance(kv, dict)
        }
        log.info("loaded %d KV namespaces from %s", len(self.config_table), self.path)

    def persist(self) -> None:
        data = fastjson.dumps({"configTable": self.config_table})
        write_atomically(self.path, data)

    def put(self, namespace: str, key: str, value: str) -> None:
        self.config_table.setdefault(namespace, {})[key] = value
        log.info("KV put %s/%s = %s", namespace, key, value)
        self.persist()

    def get(self, namespace: str, key: str) -> str | None:
        return self.config_table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        table = self.config_table.get(namespace)
        if table is None or key not in table:
            return
        del table[key]
        if not table:
            del self.config_table[namespace]
        log.info("KV delete %s/%s", namespace, key)
        self.persist()

    def namespace(self, namespace: str) -> dict[str, str] | None:
        table = self.config_table.get(namespace)
        return dict(table) if table else None

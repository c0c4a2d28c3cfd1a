"""The Grafana dashboard in grafana/: its panels' queries, and what of them names a
metric."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parents[2] / "grafana" / "mq-dashboard.json"
METRIC = re.compile(r"\b(rocketmq_[a-z_]+)")
_VARIABLES = {"$__rate_interval": "1m", "$cluster": ".*", "$node": ".*", "$group": ".*"}


def load() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return doc


def queries(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, PromQL) of every target of every panel."""
    return [
        (panel["title"], target["expr"])
        for panel in doc["panels"]
        for target in panel.get("targets", [])
    ]


def runnable(expr: str) -> str:
    """``expr`` with the dashboard's variables as an "All" selection sets them."""
    for name, value in _VARIABLES.items():
        expr = expr.replace(name, value)
    return expr

"""Delivery rate per delay level: `mq broker status` shows the broker's own
``scheduleMessageDeliverTps_<n>`` (RATE column, ``deliveryRate`` in --json) from a single
sample; `mq store inspect` is offline and says "-"."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.support import until_sync
from tests.support.cluster import Cluster

# level 2 comes due within a second
pytestmark = pytest.mark.cluster(messageDelayLevel=" ".join(["1s"] * 18))


def level(cluster: Cluster, n: int) -> dict[str, Any] | None:
    doc = orjson.loads(cluster.mq("broker", "status", "--json", check=True).stdout)
    return next((d for d in doc["delayLevels"] if d["level"] == n), None)


def test_one_sample_has_the_brokers_delivery_rate(cluster: Cluster) -> None:
    cluster.mq("produce", "-t", "Later", "--delay", "2", "-q", input="a\nb\nc\n", check=True)
    seen: list[dict[str, Any] | None] = [None]

    def delivering() -> bool:
        got = seen[0] = level(cluster, 2)
        return got is not None and got["waiting"] == 0 and (got["deliveryRate"] or 0) > 0

    # each round is one `mq broker status --json`: no sleeping between them
    until_sync(delivering, 30, lambda: f"no delivery rate: {seen[0]}", interval=0)
    text = cluster.mq("broker", "status", check=True).stdout
    assert "RATE" in text and "/s" in text

    store = cluster.base / "broker-a" / "store"
    out = cluster.mq("store", "inspect", str(store), check=True).stdout
    assert "RATE" in out
    cells = [line.split() for line in out.splitlines()]  # plain columns in a pipe
    rows = [c for c in cells if len(c) == 7 and c[0] == "2" and c[1].endswith("s")]
    assert len(rows) == 1, out
    row = rows[0]
    assert row[-1] == "-", out  # offline: no rate
    doc = orjson.loads(cluster.mq("store", "inspect", str(store), "--json", check=True).stdout)
    assert all(d["delivery_rate"] is None for d in doc["delay_levels"])

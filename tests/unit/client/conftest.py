"""Fixtures of the client unit tests: the in-memory cluster (a real name-server
processor and fake brokers, :class:`client_fakes.InMemoryCluster`) every test gets afresh.

``pytest.mark.cluster(...)`` on the module or the test says what it holds:
``brokers={name: (addr, {topic: queues})}`` (default: ``broker-a`` at 127.0.0.1:10911
with topic ``T`` of one queue), ``slaves={name: addr}`` (broker id 1 of that name) and
``broker_class`` (a :class:`client_fakes.FakeBroker` subclass for the masters).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from client_fakes import FakeBroker, InMemoryCluster

from tests.support.marks import cluster_settings

DEFAULT_BROKERS = {"broker-a": ("127.0.0.1:10911", {"T": 1})}


@pytest.fixture
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> InMemoryCluster:
    settings = cluster_settings(request)
    c = InMemoryCluster(tmp_path)
    kind: type[FakeBroker] = settings.get("broker_class", FakeBroker)
    for name, (addr, topics) in settings.get("brokers", DEFAULT_BROKERS).items():
        c.add_broker(name, addr, topics, broker_class=kind)
    for name, addr in settings.get("slaves", {}).items():
        c.add_slave(name, addr)
    return c

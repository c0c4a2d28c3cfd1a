"""Fixtures of the integration tests: the in-process cluster every test gets afresh, and
a module's cluster of `mq` processes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.cluster import Cluster, running_as_marked
from tests.support.inproc import LIVE_STORE, LiveCluster
from tests.support.marks import cluster_settings


@pytest.fixture
async def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LiveCluster]:
    """A name server and brokers in the test's event loop (:class:`LiveCluster`), stopped
    after the test. ``pytest.mark.cluster(...)`` on the module or the test says how they
    start: ``brokers`` (names; broker-a alone unless said), ``store`` (MessageStoreConfig
    overrides; LIVE_STORE unless said), ``topics`` to create first (name -> queues),
    ``routes`` to wait for (topics the brokers make themselves), ``restartable`` (brokers
    on ports a restart gets back), and BrokerConfig overrides."""
    settings = cluster_settings(request)
    brokers: tuple[str, ...] = settings.pop("brokers", ("broker-a",))
    store = settings.pop("store", LIVE_STORE)
    topics: dict[str, int] = settings.pop("topics", {})
    routes: tuple[str, ...] = settings.pop("routes", ())
    restartable: bool = settings.pop("restartable", False)
    live = LiveCluster(tmp_path, store=dict(store), settings=settings, restartable=restartable)
    async with live.running(*brokers) as started:
        for topic, queues in topics.items():
            await started.create_topic(topic, queues)
        for topic in routes:
            await started.wait_route(topic, len(brokers))
        yield started


@pytest.fixture(scope="module")
def process_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """A name server and brokers as `mq` processes, one set for the module, stopped after
    it; ``pytest.mark.process_cluster(...)`` says how they start (see
    :func:`tests.support.cluster.running_as_marked`)."""
    base = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    with running_as_marked(base, cluster_settings(request, "process_cluster")) as started:
        yield started

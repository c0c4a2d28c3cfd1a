"""Fixtures of the CLI tests: the real `mq` command in a subprocess, and the module's
cluster of `mq` processes to run it against."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator

import pytest

from tests.support.cluster import Cluster, running_as_marked
from tests.support.marks import cluster_settings
from tests.support.processes import CLEAN_ENV, run_mq

MqRunner = Callable[..., subprocess.CompletedProcess[str]]


def _run(*args: str, check: bool = False, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return run_mq(args, CLEAN_ENV, timeout=timeout, check=check)


@pytest.fixture
def mq() -> MqRunner:
    return _run


@pytest.fixture(scope="module")
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """A name server and brokers as processes, one set for the whole module, stopped after
    it. The module's ``pytestmark = pytest.mark.cluster(...)`` says how they start (see
    :func:`tests.support.cluster.running_as_marked`)."""
    base = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    with running_as_marked(base, cluster_settings(request)) as started:
        yield started

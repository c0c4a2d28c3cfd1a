"""Shared fixtures: where the read-only `shared/` material lives.

CI clones the repository into some folder with a copy of `shared/` beside it, so the
path is always `<repo>/../shared`.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.acl import AclCluster, running_acl_cluster

# CI explores the same examples every run (one red run means nothing lands, so a run must
# not fail on what the last one never tried); a developer's run draws new ones each time,
# which is where the property tests find new inputs.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

# Tests press Ctrl-C in `mq` children (SIGINT) and expect what a user sees. A runner started
# in the background of a non-interactive shell has SIGINT ignored, and an ignored signal
# stays ignored across exec: every child would then ignore the key press, as Unix programs
# rightly do when started that way. Give the children the disposition of a terminal: a
# handled signal is reset to the default at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = (REPO_ROOT / ".." / "shared").resolve()
FIXTURE_STORE = SHARED_DIR / "fixtures" / "rocketmq-store"
FIXTURE_MESSAGES = SHARED_DIR / "fixtures" / "rocketmq"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cluster(**settings): how the `cluster` fixture of the folder's conftest.py starts "
        "(in-process in tests/integration, `mq` processes in tests/cli, in memory in "
        "tests/unit/client); see there",
    )
    config.addinivalue_line(
        "markers",
        "process_cluster(**settings): how the module's `process_cluster` fixture (`mq` "
        "processes) of tests/integration/conftest.py starts; see there",
    )


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    assert SHARED_DIR.is_dir(), f"shared/ not found at {SHARED_DIR}"
    return SHARED_DIR


@pytest.fixture(scope="session")
def fixture_store() -> Path:
    """The real RocketMQ 4.9.8 store (read-only on disk)."""
    assert FIXTURE_STORE.is_dir(), f"fixture store not found at {FIXTURE_STORE}"
    return FIXTURE_STORE


@pytest.fixture(scope="session")
def fixture_messages() -> Path:
    """Pull-response bodies captured from a real broker."""
    assert FIXTURE_MESSAGES.is_dir(), f"message fixtures not found at {FIXTURE_MESSAGES}"
    return FIXTURE_MESSAGES


@pytest.fixture(autouse=True)
def _library_loggers_restored() -> Iterator[None]:
    """A CLI run in-process (typer's CliRunner) quiets the ``mq`` loggers for its
    command, and a broker's UPDATE_BROKER_CONFIG may change their level: whatever a test
    did, the next one (on the same worker) starts with them as they were."""
    names = ("mq", "mqcore")
    saved = {n: (logging.getLogger(n).level, logging.getLogger(n).propagate) for n in names}
    yield
    for name, (level, propagate) in saved.items():
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.propagate = propagate


@pytest.fixture
async def acl_cluster(tmp_path: Path) -> AsyncIterator[AclCluster]:
    """A name server and a broker enforcing the plain ACL of ``tests/support/acl.py``
    (the ACL tests of tests/integration and tests/interop)."""
    async with running_acl_cluster(tmp_path) as cluster:
        yield cluster

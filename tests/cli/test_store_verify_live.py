"""`mq store verify` on the store of a running broker that is being written to.

The broker holds the store's lock; verify says the store is in use, checks the records
up to the checkpointed position and reports no false problems for what is still being
written (queue and index entries past the end, a checkpoint ahead of the data).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mqcore.store.offline import OfflineStore
from mqcore.store.verify import verify_scope
from tests.support import until_sync
from tests.support.cluster import Cluster

pytestmark = pytest.mark.cluster(flushIntervalConsumeQueue="200")


def _stable_end(store: Path) -> int:
    with OfflineStore(store) as st:
        scope = verify_scope(st)
        assert scope.in_use_by is not None  # the broker holds the lock
        return scope.end or 0


def test_verify_while_a_producer_writes(cluster: Cluster) -> None:
    store = cluster.base / "broker-a" / "store"
    writer = cluster.spawn(
        "produce", "-t", "LiveT", "-b", "m{{Count}}", "-k", "k{{Count}}",
        "--count", "200000", "--async", "-q",
    )  # fmt: skip

    def checkpointed() -> bool:  # some checkpointed records to check
        assert writer.poll() is None, writer.communicate()
        return _stable_end(store) >= 200_000

    try:
        until_sync(checkpointed, 30, "nothing reached the checkpoint", interval=0.2)
        for _ in range(3):  # each while the producer is still writing
            assert writer.poll() is None
            done = cluster.mq("store", "verify", "--store", str(store), timeout=120)
            assert done.returncode == 0, done.stderr[-3000:]
            assert "store in use by pid" in done.stderr
            assert "0 problem(s)" in done.stdout
    finally:
        writer.kill()
        writer.communicate(timeout=30)

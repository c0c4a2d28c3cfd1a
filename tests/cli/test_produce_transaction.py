"""`mq produce --transaction`: commit, rollback, and unknown resolved by check-back."""

from __future__ import annotations

import pytest

from tests.support.cluster import Cluster, json_lines

pytestmark = pytest.mark.cluster(transactionTimeOut="300", transactionCheckInterval="300")


def bodies(cluster: Cluster, topic: str, group: str) -> list[str]:
    done = cluster.mq(
        "consume", "-t", topic, "-g", group, "--pull", "--from", "first", "--no-follow", "--json",
        check=True,
    )  # fmt: skip
    return sorted(str(m["body"]) for m in json_lines(done.stdout))


def test_commit_rollback_unknown(cluster: Cluster) -> None:
    cluster.mq("topic", "create", "-t", "TxT", "-q", "1", check=True)
    done = cluster.mq(
        "produce",
        "-t",
        "TxT",
        "--body",
        "committed",
        "--transaction",
        "commit",
        "--json",
        check=True,
    )
    (row,) = json_lines(done.stdout)
    assert row["sendStatus"] == "SEND_OK" and row["transactionState"] == "COMMIT_MESSAGE"
    cluster.mq(
        "produce", "-t", "TxT", "--body", "rolled-back", "--transaction", "rollback", check=True
    )
    done = cluster.mq(
        "produce",
        "-t",
        "TxT",
        "--body",
        "checked",
        "--transaction",
        "unknown",
        "--check-answer",
        "commit",
        "--check-wait",
        "30",
        "--json",
        check=True,
    )
    assert json_lines(done.stdout)[0]["transactionState"] == "UNKNOWN"
    assert "not every transaction was checked back" not in done.stderr
    cluster.mq("produce", "-t", "TxT", "--body", "marker", check=True)
    # One queue: everything before the marker has been decided; the rollback never shows.
    assert bodies(cluster, "TxT", "tx-read") == ["checked", "committed", "marker"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--transaction", "maybe"], "bad --transaction"),
        (["--transaction", "commit", "--check-answer", "yes"], "bad --check-answer"),
        (["--check-answer", "commit"], "go with --transaction"),
        (["--transaction", "commit", "--batch", "2"], "one at a time"),
        (["--transaction", "commit", "--delay", "2"], "one at a time"),
    ],
)
def test_bad_transaction_flags(cluster: Cluster, args: list[str], message: str) -> None:
    done = cluster.mq("produce", "-t", "TxBad", "--body", "x", *args)
    assert done.returncode != 0 and message in done.stderr and "Traceback" not in done.stderr

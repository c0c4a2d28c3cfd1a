"""`mq store generate` writes a store through the engine that the offline tools accept."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

MqRunner = Callable[..., subprocess.CompletedProcess[str]]


def test_generate_then_inspect_verify_query(mq: MqRunner, tmp_path: Path) -> None:
    root = tmp_path / "demo"
    mq(
        "store",
        "generate",
        str(root),
        "--count",
        "3000",
        "-t",
        "A",
        "-t",
        "B",
        "--commitlog-file-size",
        "65536",
        check=True,
    )
    doc = json.loads(mq("store", "inspect", str(root), "--json", check=True).stdout)
    assert doc["records"] == 3000
    assert len(doc["commit_log_files"]) > 5  # small files: the log rolled many times
    depths = {(q["topic"], q["queue_id"]): q["max_offset"] for q in doc["queues"]}
    assert depths == {(t, q): 375 for t in "AB" for q in range(4)}
    assert {t["topicName"] for t in doc["topic_configs"].values()} == {"A", "B"}
    assert mq("store", "verify", str(root)).returncode == 0
    hit = json.loads(
        mq("store", "query", "B", "key-2999", "-s", str(root), "--json", check=True).stdout
    )
    assert hit["properties"]["seq"] == "2999" and hit["queueId"] == 3
    group = mq("store", "query", "A", "order-5", "-s", str(root), "--json", check=True)
    assert [json.loads(x)["properties"]["seq"] for x in group.stdout.splitlines()] == [
        str(i) for i in range(50, 60, 2)
    ]


def test_generate_refuses_to_overwrite(mq: MqRunner, tmp_path: Path) -> None:
    root = tmp_path / "demo"
    mq("store", "generate", str(root), "--count", "10", check=True)
    done = mq("store", "generate", str(root), "--count", "10")
    assert done.returncode == 1 and "--force" in done.stderr
    assert mq("store", "generate", str(root), "--count", "10", "--force").returncode == 0
    bad = mq("store", "generate", str(tmp_path / "x"), "-t", "bad topic!")
    assert bad.returncode == 1 and "illegal characters" in bad.stderr

"""kill -9 of a SYNC_FLUSH broker under mixed load, three rounds (bench/kill_rounds.py
runs fifty): nothing acknowledged is lost and no rolled-back transaction is delivered.

Single, batch, async, delayed and transactional sends (commit, rollback, unknown until
checked back) from our client while a push consumer consumes; the script drains until
every acknowledged message was delivered (or gives up after 30 s without progress).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(150)

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "kill_rounds.py"


def test_three_kill_rounds_under_mixed_load_lose_nothing_acknowledged() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--rounds", "3", "--drain-timeout", "30", "--json"],
        capture_output=True,
        text=True,
        timeout=140,
    )
    assert run.stdout, run.stderr[-3000:]
    result = json.loads(run.stdout)
    assert result["lost"] == 0, result
    assert result["rolledBackDelivered"] == 0, result
    kinds = {row["kind"]: row["acknowledged"] for row in result["byKind"]}
    assert all(kinds[k] > 0 for k in kinds), f"every kind of send was acknowledged: {kinds}"
    assert result["recoverySeconds"]["restarts"] == 3
    assert result["finalStopExitCode"] == 0
    assert run.returncode == 0, run.stderr[-3000:]

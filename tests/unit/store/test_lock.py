"""The lock file excludes a second process and names the holder; abort marker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from storetest_util import open_store

from mqcore.errors import StoreLockedError
from mqcore.store import MessageStore
from mqcore.store.lock import StoreLock

_SECOND = """
import sys
from pathlib import Path
from mqcore.errors import StoreLockedError
from mqcore.store.lock import StoreLock
try:
    StoreLock(Path(sys.argv[1])).acquire()
except StoreLockedError as exc:
    print("LOCKED", exc)
    sys.exit(3)
print("ACQUIRED")
"""

_HOLD = """
import sys
from pathlib import Path
from mqcore.store.lock import StoreLock
lock = StoreLock(Path(sys.argv[1]))
lock.acquire()
print("HELD", flush=True)
sys.stdin.read()
"""


def _run_second(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _SECOND, str(root)], capture_output=True, text=True, timeout=30
    )


def test_second_process_is_refused_with_holder_pid(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    try:
        res = _run_second(tmp_path)
        assert res.returncode == 3, res.stdout + res.stderr
        assert f"process {os.getpid()}" in res.stdout
        assert (tmp_path / "lock").read_bytes() == b"lock"
    finally:
        store.shutdown()
    res = _run_second(tmp_path)
    assert res.returncode == 0 and "ACQUIRED" in res.stdout


def test_store_refuses_to_open_when_another_process_holds_it(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "HELD"
        with pytest.raises(StoreLockedError, match=str(holder.pid)):
            MessageStore(_cfg(tmp_path)).load()
        # a read-only open never takes the lock and still works
        MessageStore.open_readonly(tmp_path).shutdown()
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(10)
        holder.stdout.close()


def test_lock_release_and_reacquire(tmp_path: Path) -> None:
    lock = StoreLock(tmp_path)
    lock.acquire()
    assert lock.held
    lock.release()
    assert not lock.held
    lock.acquire()
    lock.release()


def _cfg(root: Path):  # type: ignore[no-untyped-def]
    from storetest_util import small_config

    return small_config(root)

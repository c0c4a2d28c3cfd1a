"""`mq store` errors hint at the store root only when the directory is not one."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

MqRunner = Callable[..., subprocess.CompletedProcess[str]]


def test_a_truncated_file_in_a_store_root_gets_no_wrong_hint(mq: MqRunner, tmp_path: Path) -> None:
    store = tmp_path / "store"
    mq("store", "generate", str(store), "--count", "300", "--body-size", "200",
       "--commitlog-file-size", "16384", check=True)  # fmt: skip
    second = sorted((store / "commitlog").iterdir())[1]
    with open(second, "r+b") as f:
        f.truncate(1000)  # no longer the size of its siblings
    done = mq("store", "verify", str(store))
    assert done.returncode == 1
    assert "error:" in done.stderr and "1000" in done.stderr
    assert "store root" not in done.stderr


def test_a_directory_that_is_not_a_store_gets_the_hint(mq: MqRunner, tmp_path: Path) -> None:
    done = mq("store", "verify", str(tmp_path / "nothing-here"))
    assert done.returncode == 1
    assert "hint: pass the store root" in done.stderr

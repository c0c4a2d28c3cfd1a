"""Named contexts and the name-server resolution order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def mq(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "mqcli.main", *args],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        check=False,
        timeout=60,
    )


def effective(tmp_path: Path, env: dict[str, str] | None = None) -> str:
    done = mq(tmp_path, "context", "ls", "--json", env=env)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["effective"])


def test_resolution_order(tmp_path: Path) -> None:
    assert effective(tmp_path) == "127.0.0.1:9876"
    assert (
        mq(tmp_path, "context", "add", "prod", "-n", "10.0.0.1:9876;10.0.0.2:9876").returncode == 0
    )
    assert effective(tmp_path) == "10.0.0.1:9876;10.0.0.2:9876"  # first context is selected
    assert mq(tmp_path, "context", "add", "dev", "-n", "127.0.0.1:19876").returncode == 0
    assert effective(tmp_path) == "10.0.0.1:9876;10.0.0.2:9876"
    assert mq(tmp_path, "context", "use", "dev").returncode == 0
    assert effective(tmp_path) == "127.0.0.1:19876"
    assert effective(tmp_path, {"NAMESRV_ADDR": "1.1.1.1:1"}) == "1.1.1.1:1"
    assert (
        effective(tmp_path, {"NAMESRV_ADDR": "1.1.1.1:1", "MQ_NAMESRV_ADDR": "2.2.2.2:2"})
        == "2.2.2.2:2"
    )
    doc = json.loads(mq(tmp_path, "context", "ls", "--json").stdout)
    assert doc["current"] == "dev" and {c["name"] for c in doc["contexts"]} == {"prod", "dev"}
    assert mq(tmp_path, "context", "rm", "dev").returncode == 0
    assert effective(tmp_path) == "127.0.0.1:9876"


def test_errors(tmp_path: Path) -> None:
    bad = mq(tmp_path, "context", "use", "nope")
    assert bad.returncode == 1 and "no context named 'nope'" in bad.stderr
    bad = mq(tmp_path, "context", "add", "x", "-n", "not-an-address")
    assert bad.returncode == 1 and "bad name server list" in bad.stderr
    cfg = tmp_path / ".config" / "mq"
    cfg.mkdir(parents=True)
    (cfg / "contexts.json").write_text("{broken")
    bad = mq(tmp_path, "context", "ls")
    assert bad.returncode == 1 and "cannot read" in bad.stderr and "Traceback" not in bad.stderr


def test_contexts_follow_xdg_config_home(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    env = {"XDG_CONFIG_HOME": str(xdg)}
    assert mq(tmp_path, "context", "add", "x", "-n", "10.0.0.9:9876", env=env).returncode == 0
    assert (xdg / "mq" / "contexts.json").exists()
    assert not (tmp_path / ".config" / "mq" / "contexts.json").exists()
    assert effective(tmp_path, env) == "10.0.0.9:9876"
    assert effective(tmp_path) == "127.0.0.1:9876"  # without it: ~/.config/mq, empty


def test_contexts_at_the_old_place_are_read_then_moved(tmp_path: Path) -> None:
    assert mq(tmp_path, "context", "add", "old", "-n", "10.0.0.7:9876").returncode == 0
    old = tmp_path / ".config" / "mq" / "contexts.json"
    assert old.exists()
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert effective(tmp_path, env) == "10.0.0.7:9876"  # read where it was
    assert mq(tmp_path, "context", "add", "new", "-n", "10.0.0.8:9876", env=env).returncode == 0
    moved = json.loads((tmp_path / "xdg" / "mq" / "contexts.json").read_text())
    assert set(moved["contexts"]) == {"old", "new"}  # both, at the new place
    listing = mq(tmp_path, "context", "ls", env=env)
    assert str(tmp_path / "xdg" / "mq" / "contexts.json") in listing.stdout + listing.stderr

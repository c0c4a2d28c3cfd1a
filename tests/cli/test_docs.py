"""Man pages and completions stay in step with the command tree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mqcli.docgen import SHELLS, man_pages
from mqcli.main import app

REPO = Path(__file__).resolve().parents[2]


def test_man_pages_are_up_to_date() -> None:
    pages = man_pages(app)
    committed = {p.name: p.read_text() for p in (REPO / "man").glob("*.1")}
    assert set(pages) == set(committed), "run `make docs` to regenerate man/"
    for name, text in pages.items():
        assert committed[name] == text, f"man/{name} is stale: run `make docs`"
    assert "mq-store.1" in pages


@pytest.mark.parametrize("shell", SHELLS)
def test_completion_scripts(shell: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "completion", shell],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "_MQ_COMPLETE" in out
    assert "_MQ_COMPLETE" in (REPO / "completions" / f"mq.{shell}").read_text()


def test_completion_rejects_unknown_shell() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "completion", "tcsh"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and "unsupported shell" in done.stderr

"""Man pages and completions stay in step with the command tree."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mqcli.docgen import SHELLS, completion_script, man_pages
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
    """`mq completion SHELL` (what a user installs) is exactly the committed script."""
    out = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "completion", shell],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    committed = (REPO / "completions" / f"mq.{shell}").read_text()
    assert out == committed, f"completions/mq.{shell} is stale: run `make docs`"
    assert completion_script(shell) == committed


@pytest.mark.skipif(
    shutil.which("groff") is None, reason="groff is not installed: cannot render the man pages"
)
@pytest.mark.parametrize("page", sorted(p.name for p in (REPO / "man").glob("*.1")))
def test_man_pages_render_without_warnings(page: str) -> None:
    """groff renders every page with all warnings on (-ww) and says nothing on stderr."""
    done = subprocess.run(
        ["groff", "-man", "-Tutf8", "-ww", str(REPO / "man" / page)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert page.removesuffix(".1").upper() in done.stdout


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_man_l_renders_the_top_page() -> None:
    done = subprocess.run(
        ["man", "-l", str(REPO / "man" / "mq.1")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat"},
    )
    assert done.returncode == 0 and "SYNOPSIS" in done.stdout, done.stderr


def test_completion_rejects_unknown_shell() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "completion", "tcsh"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and "unsupported shell" in done.stderr


def test_readme_and_docs_stand_alone_in_a_clone() -> None:
    """Every relative link and path the README and the docs name is inside the repository
    (a clone has nothing beside it), and every linked file exists."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    for page in pages:
        text = page.read_text()
        assert "../shared" not in text, f"{page.relative_to(REPO)} names ../shared"
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            resolved = (page.parent / target).resolve()
            assert resolved.is_relative_to(REPO), f"{page.relative_to(REPO)} -> {target}"
            if resolved.is_relative_to(REPO / "docs" / "commands"):
                continue  # the command pages docs/hooks.py writes at build time
            assert resolved.exists(), f"{page.relative_to(REPO)} links to missing {target}"

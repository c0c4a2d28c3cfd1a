"""`mq --help` drawn without typer (mqcli.roothelp) is typer's page: the same characters
at every width it draws, the same colours on a terminal, and the model it draws from is
the one `make docs` writes from the command tree."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer import rich_utils
from typer.core import TyperGroup

from mqcli import roothelp
from mqcli.main import app
from mqcli.roothelp_model import root_help_model

MODEL = Path(roothelp.__file__).with_name(roothelp.MODEL_FILE)
WIDTHS = [62, 63, 70, 79, 80, 81, 90, 100, 101, 120, 133, 160, 200, 240]
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def _typer_page(
    width: int, color: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setattr(rich_utils, "FORCE_TERMINAL", color)
    with pytest.raises(SystemExit) as done:
        app(["--help"], prog_name="mq")
    assert done.value.code == 0
    return capsys.readouterr().out


def _cells(page: str) -> list[list[tuple[str, frozenset[str]]]]:
    """Each line's characters with the SGR parameters in force on each."""
    lines = []
    for line in page.split("\n"):
        cells, style, pos = [], frozenset[str](), 0
        for match in SGR.finditer(line):
            cells += [(ch, style) for ch in line[pos : match.start()]]
            codes = match.group(1)
            style = frozenset() if codes in ("", "0") else style | set(codes.split(";"))
            pos = match.end()
        cells += [(ch, style) for ch in line[pos:]]
        lines.append(cells)
    return lines


def test_the_model_is_current() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    assert MODEL.read_text() == root_help_model(root), "run `make docs` to rewrite it"


@pytest.mark.parametrize("width", WIDTHS)
def test_same_characters_as_typer(
    width: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    quick = roothelp.render(MODEL.read_text(), width, color=False)
    assert quick is not None
    assert quick + "\n" == _typer_page(width, False, monkeypatch, capsys)


@pytest.mark.parametrize("width", WIDTHS)
def test_same_colours_as_typer(
    width: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every visible character in the same style (the styles of spaces cannot be seen:
    typer's have no background, underline or reverse)."""
    quick = roothelp.render(MODEL.read_text(), width, color=True)
    assert quick is not None
    ours, theirs = _cells(quick + "\n"), _cells(_typer_page(width, True, monkeypatch, capsys))
    assert ["".join(c for c, _ in line) for line in ours] == [
        "".join(c for c, _ in line) for line in theirs
    ]
    for n, (mine, typers) in enumerate(zip(ours, theirs, strict=True)):
        for (ch, style), (_, expected) in zip(mine, typers, strict=True):
            assert ch.isspace() or style == expected, (n, ch, style, expected)


def test_narrow_or_unusual_terminals_are_left_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    model = MODEL.read_text()
    assert roothelp.render(model, 40, color=False) is None
    for name in ("FORCE_COLOR", "NO_COLOR", "TERMINAL_WIDTH"):
        with monkeypatch.context() as env:
            env.setenv(name, "1")
            assert roothelp.page() is None


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mqcli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent", **env},
    )


@pytest.mark.parametrize("args", [["--help"], ["-h"], []])
def test_mq_help_loads_neither_typer_nor_rich(args: list[str]) -> None:
    quick = _run(args, {"COLUMNS": "100"})
    loaded = {line.split("|")[-1].strip() for line in quick.stderr.splitlines()}
    assert not {"typer", "rich", "typing"} & loaded, sorted(loaded)
    slow = _run(args, {"COLUMNS": "100", "TERMINAL_WIDTH": "100"})  # typer draws it
    assert "typer" in {line.split("|")[-1].strip() for line in slow.stderr.splitlines()}
    assert quick.stdout == slow.stdout and quick.returncode == slow.returncode
    assert quick.returncode == (2 if not args else 0)


def test_on_a_terminal_the_page_is_coloured() -> None:
    """Through a pseudo-terminal, as a user sees it: colours, and the terminal's width."""
    leader, follower = pty.openpty()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": "/nonexistent",
        "TERM": "xterm",
        "COLUMNS": "90",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqcli.main", "--help"],
        stdout=follower, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(30) == 0
    page = b"".join(chunks).decode().replace("\r\n", "\n")
    assert "\x1b[1;36m" in page and "─ Connection ─" in page
    assert max(len(SGR.sub("", line)) for line in page.splitlines()) == 90

"""Every command's `--help` shows its examples indented under their heading.

typer dedents what follows a command's first paragraph; when that starts with the
``Examples:`` heading the example lines used to end up flush with it (44 commands).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from mqcli.docgen import _walk
from mqcli.helpfmt import keep_indents
from mqcli.main import app


def _commands() -> Iterator[tuple[str, ...]]:
    root: Any = typer.main.get_command(app)
    for path, cmd in _walk(root, ()):
        if path and "Examples:" in (cmd.help or ""):
            yield path


COMMANDS = list(_commands())


def test_the_tree_has_examples() -> None:
    assert len(COMMANDS) > 40


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_examples_are_indented_under_their_heading(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    heading = next(i for i, line in enumerate(lines) if line.strip() == "Examples:")
    margin = len(lines[heading]) - len(lines[heading].lstrip())
    example = lines[heading + 1]
    assert example.strip(), "no example under the heading"
    assert len(example) - len(example.lstrip()) >= margin + 2, example


def test_keep_indents_only_adds_a_blank_line() -> None:
    text = "First line.\n\nExamples:\n  mq x"
    assert keep_indents(text) == "First line.\n\n\nExamples:\n  mq x"
    assert keep_indents(keep_indents(text)) == keep_indents(text)
    assert keep_indents("One line.") == "One line."
    assert keep_indents(None) is None

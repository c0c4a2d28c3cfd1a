"""`mq` builds its command line without importing what only some commands use.

The CPU figures live in bench/startup.py (a benchmark, not a timed test); these tests
check the structure that makes them small: what `import mqcli.main`, `mq --help` and a
completion request load, that the help table agrees with each command's own help, and
that typer's values are still converted (and refused) as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import typer

from mqcli.main import COMMANDS, app, load_command

HEAVY = ("textual", "prompt_toolkit", "mqcore.broker", "mqcore.client", "pydantic", "grpc")

_REPORT = """
import json, sys
{setup}
heavy = {heavy!r}
names = (m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy))
print(json.dumps(sorted(names)))
"""


def _loaded_after(setup: str, env: dict[str, str] | None = None) -> list[str]:
    code = _REPORT.format(setup=setup, heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=env,
    )
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_import_main_loads_no_heavy_module() -> None:
    assert _loaded_after("import mqcli.main") == []


def test_help_and_completion_load_no_command_module() -> None:
    run_help = (
        "sys.argv = ['mq', '--help']\nimport mqcli.main\n"
        "try:\n    mqcli.main.main()\nexcept SystemExit:\n    pass\n"
        "assert not any(m.startswith('mqcli.commands.') for m in sys.modules), sys.modules\n"
        "assert 'markdown_it' not in sys.modules and 'rich.markdown' not in sys.modules\n"
        "import rich.markdown\n"  # the real one, not the stand-in the help renderer saw
        "assert rich.markdown.Markdown.__module__ == 'rich.markdown'"
    )
    assert _loaded_after(run_help) == []
    env = {**os.environ, "_MQ_COMPLETE": "complete_bash", "COMP_WORDS": "mq pro", "COMP_CWORD": "1"}
    run_completion = (
        "sys.argv = ['mq']\nimport mqcli.main\n"
        "try:\n    mqcli.main.main()\nexcept SystemExit:\n    pass\n"
        "assert 'rich.console' not in sys.modules, 'a bash completion needs no rich'"
    )
    assert _loaded_after(run_completion, env) == []


def test_a_command_loads_only_its_module() -> None:
    setup = (
        "sys.argv = ['mq', 'context', 'ls']\nimport mqcli.main\n"
        "try:\n    mqcli.main.main()\nexcept SystemExit:\n    pass\n"
        "loaded = {m for m in sys.modules if m.startswith('mqcli.commands.')}\n"
        "assert loaded == {'mqcli.commands.context'}, loaded"
    )
    assert _loaded_after(setup) == []


def test_produce_loads_no_server_tui_or_pydantic() -> None:
    """A produce (here to a dead name server) needs the client, but nothing else heavy."""
    setup = (
        "sys.argv = ['mq', 'produce', '-n', '127.0.0.1:1', '-t', 'T', '-b', 'x', '-k', 'a']\n"
        "import mqcli.main\n"
        "try:\n    mqcli.main.main()\nexcept SystemExit:\n    pass\n"
    )
    loaded = _loaded_after(setup)
    assert "mqcore.client" in loaded  # it did get as far as sending
    assert [m for m in loaded if not m.startswith("mqcore.client")] == []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_table_matches_the_command(name: str) -> None:
    """The one-line help `mq --help` shows is the command's own first paragraph."""
    command = load_command(name)
    first = (command.help or "").split("\n\n")[0]
    assert " ".join(first.split()) == COMMANDS[name][2]
    assert command.rich_help_panel == COMMANDS[name][1]  # type: ignore[attr-defined]


def test_help_lists_every_command_by_panel() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    for name, (_, panel, summary) in COMMANDS.items():
        assert f" {name} " in done.stdout and summary in done.stdout, name
        assert f" {panel} " in done.stdout


def test_the_tree_still_has_every_command_and_tls_options() -> None:
    """What docgen walks: every command is reachable, and `-n` commands take --tls."""
    root = typer.main.get_command(app)
    assert set(root.commands) == set(COMMANDS)  # type: ignore[attr-defined]
    produce = root.commands["produce"]  # type: ignore[attr-defined]
    flags = {opt for p in produce.params for opt in p.opts}
    assert {"--tls", "--tls-ca", "-n"} <= flags
    topic_list = root.commands["topic"].commands["list"]  # type: ignore[attr-defined]
    assert "--tls" in {opt for p in topic_list.params for opt in p.opts}


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", flag],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    from mqcore import __version__
    from mqcore.common.core import summary

    assert done.returncode == 0
    assert done.stdout == f"mq {__version__}\ncore: {summary()}\n"


def test_version_says_the_pure_core_runs_when_forced() -> None:
    """MQ_NO_EXTENSIONS=1 (as aiokafka's AIOKAFKA_NO_EXTENSIONS) runs the pure twins."""
    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "MQ_NO_EXTENSIONS": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == "core: pure (forced by MQ_NO_EXTENSIONS=1)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--count", "abc"], "Input should be a valid integer"),
        (["--count", "1.5"], "Input should be a valid integer"),
        (["--count", "0"], "Input should be greater than or equal to 1"),
    ],
)
def test_bad_values_are_refused_with_typers_messages(args: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "produce", "-t", "T", "-b", "x", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_plain_conversions() -> None:
    from typer._coercion import resolve_type_descriptor
    from typer.models import OptionInfo

    from mqcli.coerce import plain_runtime_param

    def convert(annotation: object, text: str | list[str], **info: object) -> object:
        descriptor = resolve_type_descriptor(annotation, OptionInfo(**info))  # type: ignore[arg-type]
        runtime = plain_runtime_param(descriptor)
        assert runtime is not None
        return runtime._coerce_value(text, param=None, ctx=None)  # type: ignore[arg-type]

    assert convert(int, " 1_000 ") == 1000
    assert convert(int, "12.0") == 12
    assert convert(float, "1e3") == 1000.0
    assert convert(bool, "yes") is True
    assert convert(str, "x") == "x"
    assert convert(list[int], ["1", " 2"]) == [1, 2]
    assert convert(list[str], "one") == ["one"]
    assert convert(int, "0", min=1, clamp=True) == 1
    with pytest.raises(typer.BadParameter, match="greater than or equal to 1"):
        convert(int, "0", min=1)
    with pytest.raises(typer.BadParameter, match="valid integer"):
        convert(int, "١٢")

"""What every command shares about output and help: plain columns in a pipe, the rich
table on a terminal, help that names things as man pages do, examples and exit codes.

Commands that need servers have their piped-output tests beside their other tests
(test_admin_group, test_admin_topic, test_admin_cluster, test_query, test_consume)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
import typer
from rich.console import Console

from mqcli import tables
from mqcli.docgen import _walk
from mqcli.helpfmt import EXIT_STATUS, type_word
from mqcli.main import app
from mqcli.tables import make_table, plain_lines, print_table

ACL = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicWithAVeryLongNameThatATableWouldCut=PUB|SUB
  - accessKey: rocketmq2
    secretKey: 87654321
    admin: true
"""


def mq(tmp_path: Path, *args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "COLUMNS": str(columns),
        **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
    }
    return subprocess.run(
        [sys.executable, "-m", "mqcli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_plain_lines_align_whole_values_without_markup() -> None:
    table = make_table("Title", "NAME", "LAG", "MSG-ID")
    table.add_row("a", "[yellow]12345[/]", "X" * 40)
    table.add_row("a-much-longer-name", "0", "\\[not markup]")
    header, first, second = plain_lines(table)
    assert header.split() == ["NAME", "LAG", "MSG-ID"]
    assert first.split() == ["a", "12345", "X" * 40]
    assert second.split()[:2] == ["a-much-longer-name", "0"]
    assert second.endswith("  [not markup]")
    assert header.index("LAG") == first.index("12345") == second.index("0 ")
    assert "Title" not in "\n".join((header, first, second))


def _fitted(width: int, monkeypatch: pytest.MonkeyPatch) -> str:
    """group lag's table printed with -o table on a ``width``-column console."""
    out = io.StringIO()
    monkeypatch.setattr(tables, "console", Console(file=out, width=width, color_system=None))
    table = make_table(
        "Lag", "TOPIC", "BROKER", "QUEUE", "BROKER-OFFSET", "CONSUMER-OFFSET", "LAG", "AGE",
        "LAST-CONSUMED",
    )  # fmt: skip
    table.add_row("Orders", "broker-a", "0", "100000", "99990", "[yellow]10[/]", "3.0s",
                  "2026-12-02 07:31:09.052")  # fmt: skip
    print_table(table, "table")
    return out.getvalue()


def test_a_fitted_table_breaks_headers_before_it_cuts_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    roomy = _fitted(100, monkeypatch)
    assert "…" not in roomy and "100000" in roomy and "broker-a" in roomy
    assert "BROKER-" in roomy and "CONSUMER-" in roomy  # broken at the hyphen
    assert max(len(x) for x in roomy.splitlines()) <= 100
    tight = _fitted(80, monkeypatch)  # something must give: never the store time
    assert "2026-12-02 07:31:09.052" in tight
    assert max(len(x) for x in tight.splitlines()) <= 80


def test_piped_acl_list_is_plain_and_the_title_goes_to_stderr(tmp_path: Path) -> None:
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL)
    done = mq(tmp_path, "acl", "list", str(acl))
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split()[:4] == ["ACCESS-KEY", "SECRET", "ADMIN", "WHITE-ADDRESS"]
    assert [r.split()[0] for r in rows] == ["RocketMQ", "rocketmq2"]
    assert "topicWithAVeryLongNameThatATableWouldCut=PUB|SUB" in rows[0]
    assert "…" not in done.stdout and "│" not in done.stdout
    assert "ACL accounts" in done.stderr and "10.10.103.*" in done.stderr
    table = mq(tmp_path, "acl", "list", str(acl), "-o", "table")
    assert "│" in table.stdout and "ACL accounts" in table.stdout


def test_context_ls_takes_format_and_is_plain_in_a_pipe(tmp_path: Path) -> None:
    assert mq(tmp_path, "context", "add", "prod", "-n", "10.0.0.1:9876").returncode == 0
    assert mq(tmp_path, "context", "add", "dev", "-n", "127.0.0.1:19876").returncode == 0
    done = mq(tmp_path, "context", "ls")
    assert done.stdout.splitlines() == [
        "CURRENT  NAME  NAMESRV          DESCRIPTION",
        "-        dev   127.0.0.1:19876",
        "*        prod  10.0.0.1:9876",
    ]
    assert "effective name server: 10.0.0.1:9876" in done.stderr
    wide = mq(tmp_path, "context", "ls", "-o", "wide")
    assert "│" in wide.stdout and "prod" in wide.stdout
    bad = mq(tmp_path, "context", "ls", "-o", "yaml")
    assert bad.returncode == 1 and "unknown --format 'yaml'" in bad.stderr


def test_a_terminal_still_gets_the_rich_table(tmp_path: Path) -> None:
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "mqcli.main", "acl", "list", str(acl)],
        env={**os.environ, "HOME": str(tmp_path), "COLUMNS": "120", "LINES": "40"},
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )
    child.expect(pexpect.EOF)
    out = child.before or ""
    assert "│" in out and "ACL accounts" in out and "RocketMQ" in out


# -- help ------------------------------------------------------------------------------


def _leaves() -> list[tuple[str, ...]]:
    root = typer.main.get_command(app)
    return [p for p, c in _walk(root, ("mq",)) if not getattr(c, "commands", None)]


def test_help_shows_no_bool_type_and_arguments_upper_case(tmp_path: Path) -> None:
    view = mq(tmp_path, "message", "view", "--help", columns=100).stdout
    assert "message view [OPTIONS] MSG_ID" in view
    assert "{msg_id}" not in view and "<bool>" not in view and "<str>" not in view
    assert "MSG_ID" in view.split("Arguments")[1]
    dlq = mq(tmp_path, "group", "dlq", "--help", columns=100).stdout
    assert "[GROUP]" in dlq and "<bool>" not in dlq and "INTEGER" in dlq
    missing = mq(tmp_path, "message", "view")
    assert missing.returncode == 2 and "MSG_ID" in missing.stderr
    assert type_word("<str>") == "TEXT" and type_word("<int range>") == "INTEGER"
    assert type_word("<list[str]>") == "TEXT..." and type_word("a|b") == "a|b"


# Commands whose modules have other owners and no examples yet: each is expected to fail
# (strict), so adding its examples makes the test say to take it off this list.
NO_EXAMPLES_YET: frozenset[str] = frozenset()


def _case(path: tuple[str, ...]) -> object:
    name = " ".join(path[1:])
    marks = [pytest.mark.xfail(strict=True)] if name in NO_EXAMPLES_YET else []
    return pytest.param(path, id=name, marks=marks)


@pytest.mark.parametrize("path", [_case(p) for p in _leaves()])
def test_every_command_has_examples_and_no_bool_type(path: tuple[str, ...]) -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, [*path[1:], "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output and "{" + path[-1] not in result.output
    assert "Examples:" in result.output, f"`{' '.join(path)} --help` shows no examples"


def test_exit_codes_are_in_mq_help_and_the_man_page(tmp_path: Path) -> None:
    top = mq(tmp_path, "--help", columns=120).stdout
    assert "Exit status: 0 success, 1 error, 2 usage error, 130 interrupted" in top
    page = (Path(__file__).resolve().parents[2] / "man" / "mq.1").read_text()
    assert ".SH EXIT STATUS" in page
    for code, _ in EXIT_STATUS:
        assert f".B {code}" in page


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_passes_args_to_mq_up() -> None:
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        ["make", "-n", "-C", str(repo), "run", "ARGS=--listen 127.0.0.1 --store /tmp/s"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "/mq up --listen 127.0.0.1 --store /tmp/s" in done.stdout


def test_a_long_message_line_is_one_line_in_a_pipe(tmp_path: Path) -> None:
    name = "a-context-name-long-enough-to-pass-forty-columns-twice-over-" + "x" * 20
    done = mq(tmp_path, "context", "add", name, "-n", "127.0.0.1:9876", columns=40)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"saved context {name} -> 127.0.0.1:9876 (current)\n"

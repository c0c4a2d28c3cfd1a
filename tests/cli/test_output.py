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
from typing import Any

import pexpect
import pytest
import typer
from rich.console import Console
from rich.table import Table

from mqcli import tables
from mqcli.commands import cluster
from mqcli.commands.group import lag_table
from mqcli.docgen import _walk
from mqcli.helpfmt import EXIT_STATUS, type_word
from mqcli.main import app
from mqcli.tables import make_table, plain_lines, print_table
from mqcore.client import QueueProgress
from mqcore.protocol.bodies import MessageQueue

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


def _printed(table: Table, width: int, monkeypatch: pytest.MonkeyPatch, fmt: str = "table") -> str:
    """``table`` printed with -o ``fmt`` on a ``width``-column terminal."""
    out = io.StringIO()
    terminal = Console(file=out, width=width, color_system=None, force_terminal=True)
    monkeypatch.setattr(tables, "console", terminal)
    print_table(table, fmt)
    return out.getvalue()


def _lag_table(topic: str = "Orders") -> Table:
    rows = [
        QueueProgress(MessageQueue(topic, "broker-a", q), 100000, 99990, 1_796_000_000_000)
        for q in range(2)
    ]
    return lag_table("billing", rows, {"totalLag": 20, "maxAgeMs": 3000}, 1_796_000_003_000)


def _cluster_rows() -> list[dict[str, Any]]:
    runtime = {"brokerRole": "ASYNC_MASTER"}
    rows = []
    for name, addr in (
        ("broker-a", "192.168.100.201:10911"),
        ("broker-b", "192.168.100.202:10911"),
    ):
        rows.append(
            {
                "cluster": "DefaultCluster", "broker": name, "brokerId": 0, "addr": addr,
                "role": "ASYNC_MASTER", "up": True, "version": "V4_9_8", "inTps": 1234.5,
                "outTps": 2345.6, "todayIn": 123456789, "todayOut": 987654321,
                "uptimeMs": 3_600_000 * 50, "commitLogDiskRatio": 0.42,
                "commitLogMaxOffset": 1 << 40, "runtime": runtime, "slaveLagBytes": None,
            }
        )  # fmt: skip
    return rows


def _cluster_table(width: int, monkeypatch: pytest.MonkeyPatch, fmt: str = "table") -> str:
    out = io.StringIO()
    terminal = Console(file=out, width=width, color_system=None, force_terminal=True)
    monkeypatch.setattr(tables, "console", terminal)
    cluster._print_rows(_cluster_rows(), fmt)
    return out.getvalue()


@pytest.mark.parametrize("width", [80, 100, 120])
def test_cluster_list_keeps_names_addresses_roles_and_versions_whole(
    width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _cluster_table(width, monkeypatch)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    bottom = text.rindex("└")
    table, caption = text[:bottom], " ".join(text[bottom:].split("\n", 1)[1].split())
    assert caption.endswith("hidden to fit: -o wide shows every column"), caption
    hidden = caption.split(" hidden")[0].split(", ")
    assert hidden[0] == "TODAY-OUT"  # the first to go
    for whole in ("broker-a", "192.168.100.202:10911", "ASYNC_MASTER"):  # always shown
        assert whole in table, (width, whole)
    for header, whole in (("CLUSTER", "DefaultCluster"), ("VERSION", "V4_9_8")):
        assert whole in table or header in hidden, (width, whole)  # whole, or hidden
    if width >= 100:
        assert "DefaultCluster" in table and "V4_9_8" in table


def test_cluster_list_wide_shows_every_column(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _cluster_table(80, monkeypatch, "wide")
    for header in ("IN-TPS", "TODAY-OUT", "UPTIME", "DISK", "HA", "SLAVE-LAG", "VERSION"):
        assert header in text
    assert "hidden" not in text and "…" not in text


def test_cluster_list_in_a_pipe_is_whole(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster._print_rows(_cluster_rows(), tables.PLAIN)
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:6] == [
        "CLUSTER",
        "BROKER",
        "BID",
        "ROLE",
        "ADDRESS",
        "VERSION",
    ]
    assert "TODAY-OUT" in out and "1234.5" in out and "…" not in out


@pytest.mark.parametrize("width", [80, 120])
def test_group_lag_keeps_the_lag_beside_a_long_topic(
    width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = "payments.settlement.eu-west-1.OrdersV2"
    text = _printed(_lag_table(topic), width, monkeypatch)
    assert topic in text and "broker-a" in text and "…" not in text
    header = next(line for line in text.splitlines() if "TOPIC" in line)
    assert "LAG" in header  # the lag column stays; the offsets and times give way first
    assert max(len(line) for line in text.splitlines()) <= width


def test_a_fitted_table_breaks_headers_before_it_hides_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    roomy = _printed(_lag_table(), 100, monkeypatch)
    assert "…" not in roomy and "100000" in roomy and "broker-a" in roomy
    assert "BROKER-" in roomy and "CONSUMER-" in roomy  # broken at the hyphen
    assert "hidden" not in roomy  # every column fits once the headers are broken
    assert max(len(x) for x in roomy.splitlines()) <= 100


def test_identifiers_wrap_rather_than_end_in_an_ellipsis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Narrower than the columns that always stay: they fold onto a second line, whole."""
    topic = "T" * 70
    text = _printed(_lag_table(topic), 60, monkeypatch)
    assert "…" not in text
    assert "".join(text.replace("│", " ").split()).count(topic) >= 1


def test_free_text_wraps_and_the_row_keeps_its_id(monkeypatch: pytest.MonkeyPatch) -> None:
    table = make_table("Messages", "MSG-ID", "TAGS", "BODY")
    msg_id = "7F00000100002A9F0000000000000A1B"
    table.add_row(msg_id, "TagA", "word " * 40)
    text = _printed(table, 70, monkeypatch)
    assert msg_id in text and "…" not in text and "hidden" not in text
    assert text.count("word") == 40


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


@pytest.mark.parametrize(("value", "rate"), [("12.5 10.0 9.1", 12.5), ("", None), (" ", None)])
def test_a_blank_tps_figure_is_unknown(value: str, rate: float | None) -> None:
    """A 4.9.8 broker that has served nothing yet reports putTps as blank: "-", not a
    traceback of `mq cluster list`."""
    assert cluster.first_rate(value) == rate

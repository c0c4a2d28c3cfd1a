"""The connection options stand anywhere: before the command (`mq -n ADDR topic list`),
between a group and its command (`mq topic -n ADDR list`) and after it; one "Connection"
help panel lists them on `mq --help` and on each command that connects."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import MqRunner
from tests.support.cluster import Cluster
from tests.support.processes import run_mq

pytestmark = pytest.mark.cluster(brokers=1)

CONNECTION = ("-n", "--context", "--access-key", "--secret-key", "--tls", "--tls-ca")


def _env(cluster: Cluster, tmp_path: Path) -> dict[str, str]:
    """The cluster's environment without its name server address: only -n or a context
    can lead there."""
    env = {k: v for k, v in cluster.env.items() if k != "MQ_NAMESRV_ADDR"}
    return {**env, "MQ_CONFIG_DIR": str(tmp_path / "config")}


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_mq(args, env, timeout=60, check=False)


@pytest.mark.parametrize(
    "words",
    [
        ("topic", "list"),
        ("cluster", "list"),
        ("group", "list"),
        ("broker", "status"),
        ("kv", "list", "ORDER_TOPIC_CONFIG"),
    ],
    ids=lambda w: " ".join(w),
)
@pytest.mark.parametrize("where", ["before", "between", "after"])
def test_namesrv_before_between_or_after_the_command(
    cluster: Cluster, tmp_path: Path, words: tuple[str, ...], where: str
) -> None:
    env = _env(cluster, tmp_path)
    n = ("-n", cluster.namesrv)
    args = {
        "before": (*n, *words),
        "between": (words[0], *n, *words[1:]),
        "after": (*words, *n),
    }[where]
    done = _run(env, *args, "--json")
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)
    assert "No such option" not in done.stderr


def test_nearer_the_command_wins(cluster: Cluster, tmp_path: Path) -> None:
    env = _env(cluster, tmp_path)
    done = _run(env, "-n", "127.0.0.1:1", "topic", "list", "-n", cluster.namesrv, "--json")
    assert done.returncode == 0, done.stderr
    done = _run(env, "-n", cluster.namesrv, "topic", "list", "-n", "127.0.0.1:1")
    assert done.returncode == 1 and "127.0.0.1:1" in done.stderr


def test_produce_takes_them_before_and_after(cluster: Cluster, tmp_path: Path) -> None:
    env = _env(cluster, tmp_path)
    before = _run(env, "-n", cluster.namesrv, "produce", "-t", "ConnT", "--body", "x")
    after = _run(env, "produce", "-t", "ConnT", "--body", "x", "-n", cluster.namesrv)
    assert before.returncode == 0 and after.returncode == 0, before.stderr + after.stderr


@pytest.mark.parametrize("where", ["before", "after"])
def test_context_option_picks_a_saved_context(cluster: Cluster, tmp_path: Path, where: str) -> None:
    env = _env(cluster, tmp_path)
    assert _run(env, "context", "add", "dead", "-n", "127.0.0.1:1").returncode == 0
    assert _run(env, "context", "add", "live", "-n", cluster.namesrv).returncode == 0
    assert _run(env, "context", "use", "dead").returncode == 0
    ctx = ("--context", "live")
    words = ("topic", "list", "--json")
    done = _run(env, *((*ctx, *words) if where == "before" else (*words, *ctx)))
    assert done.returncode == 0, done.stderr
    unknown = _run(env, "--context", "nope", "topic", "list")
    assert unknown.returncode == 1
    assert "no context named 'nope'" in unknown.stderr and "hint:" in unknown.stderr


@pytest.mark.parametrize("where", ["before", "after"])
def test_tls_options_before_or_after(mq: MqRunner, tmp_path: Path, where: str) -> None:
    pem = tmp_path / "cert.pem"
    pem.write_text("not used")
    tls = ("--tls-cert", str(pem))
    args = (*tls, "topic", "list") if where == "before" else ("topic", "list", *tls)
    done = mq(*args)
    assert done.returncode == 2 and "--tls-cert and --tls-key go together" in done.stderr


def test_keys_need_both_halves_wherever_given(mq: MqRunner) -> None:
    for args in (("--access-key", "a", "topic", "list"), ("topic", "list", "--access-key", "a")):
        done = mq(*args)
        assert done.returncode == 1 and "only one of the access key" in done.stderr


def test_one_connection_panel_in_help(mq: MqRunner) -> None:
    for args in ((), ("topic", "list"), ("produce",), ("group",)):
        text = mq(*args, "--help").stdout
        panel = text[text.index("─ Connection ─") :]
        panel = panel[: panel.index("╰")]
        for flag in CONNECTION:
            assert f" {flag} " in panel, (args, flag)
        assert text.count("─ Connection ─") == 1


def test_a_broker_run_takes_the_name_server_given_before_it(mq: MqRunner) -> None:
    """`mq -n ADDR broker` registers with ADDR, as `mq broker -n ADDR` does."""
    for args in (("-n", "10.9.9.9:9876", "broker", "-p"), ("broker", "-n", "10.9.9.9:9876", "-p")):
        done = mq(*args)
        assert done.returncode == 0, done.stderr
        assert "namesrvAddr=10.9.9.9:9876" in done.stdout.splitlines()

"""`mq namesrv` and `mq broker` with tls.* keys in their -c files, and the CLI's --tls-ca:
commands work over TLS, a plain or wrongly trusting CLI fails with one clear line."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.support.polling import until_sync
from tests.support.processes import (
    CLEAN_ENV,
    ServerProcess,
    launch,
    run_mq,
    start_broker,
    start_namesrv,
)
from tests.support.tls_certs import Pki, make_pki

pytestmark = pytest.mark.timeout(180)


def mq(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_mq(args, {**CLEAN_ENV, **(env or {})})


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Pki]]:
    """An enforcing name server and broker (the broker registers over TLS)."""
    base = tmp_path_factory.mktemp("tls-cluster")
    pki = make_pki(base / "pki")
    server = {
        "tls.server.mode": "enforcing",
        "tls.server.certPath": str(pki.server_cert),
        "tls.server.keyPath": str(pki.server_key),
    }
    procs: list[ServerProcess] = []
    try:
        ns = start_namesrv(base / "ns", **server)
        procs.append(ns)
        client = {"tls.enable": "true", "tls.client.trustCertPath": str(pki.ca)}
        procs.append(start_broker(base / "broker", ns.addr, **server, **client))
        until_sync(
            lambda: "broker-a" in cluster_list(ns.addr, pki),
            30,
            "the broker to register over TLS",
            interval=0.3,
        )
        yield ns.addr, pki
    finally:
        for proc in reversed(procs):
            proc.stop()


def cluster_list(addr: str, pki: Pki) -> str:
    """`mq cluster list --json` over TLS: its output, empty when it failed."""
    done = mq("cluster", "list", "--json", "-n", addr, "--tls-ca", str(pki.ca))
    return done.stdout if done.returncode == 0 else ""


def test_produce_and_consume_over_tls(tls_cluster: tuple[str, Pki]) -> None:
    addr, pki = tls_cluster
    tls = ["-n", addr, "--tls-ca", str(pki.ca)]
    done = mq("produce", "-t", "TlsCli", "--body", "hi {{Count}}", "--count", "3", *tls)
    assert done.returncode == 0, done.stderr
    done = mq("consume", "-t", "TlsCli", "-g", "g-tls", "--pull", "--from", "first",
              "--no-follow", "--json", *tls)  # fmt: skip
    assert done.returncode == 0, done.stderr
    bodies = sorted(orjson.loads(line)["body"] for line in done.stdout.splitlines())
    assert bodies == ["hi 1", "hi 2", "hi 3"]
    # The environment says the same as the options.
    done = mq("topic", "list", "--json", "-n", addr, env={"MQ_TLS_CA": str(pki.ca)})
    assert done.returncode == 0 and "TlsCli" in done.stdout, done.stderr


def test_plain_cli_is_refused_with_one_line(tls_cluster: tuple[str, Pki]) -> None:
    addr, _ = tls_cluster
    done = mq("cluster", "list", "-n", addr)
    assert done.returncode != 0
    assert done.stderr.strip() and "Traceback" not in done.stderr


def test_wrong_ca_is_one_clear_line(tls_cluster: tuple[str, Pki]) -> None:
    addr, pki = tls_cluster
    done = mq("cluster", "list", "-n", addr, "--tls-ca", str(pki.other_ca))
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert "not trusted" in lines[0] and "--tls-ca" in lines[0], done.stderr
    assert "Traceback" not in done.stderr and len(lines) <= 2  # the error and a hint at most


def test_missing_ca_file_is_a_usage_error(tls_cluster: tuple[str, Pki], tmp_path: Path) -> None:
    addr, _ = tls_cluster
    done = mq("topic", "list", "-n", addr, "--tls-ca", str(tmp_path / "nope.pem"))
    assert done.returncode != 0 and "--tls-ca" in done.stderr


def test_server_with_a_bad_certificate_path_says_which_key(tmp_path: Path) -> None:
    conf = tmp_path / "ns.conf"
    conf.write_text(
        f"kvConfigPath={tmp_path / 'kv.json'}\nlogDir={tmp_path / 'logs'}\n"
        f"tls.server.mode=permissive\ntls.server.certPath={tmp_path / 'none.pem'}\n"
        f"tls.server.keyPath={tmp_path / 'none.key'}\n"
    )
    done = mq("namesrv", "-c", str(conf), "--listen", "127.0.0.1:0",
              env={"HOME": str(tmp_path)})  # fmt: skip
    assert done.returncode != 0
    assert "tls.server.certPath" in done.stderr and "Traceback" not in done.stderr
    assert os.path.exists(conf)


def test_up_passes_the_tls_file_to_every_server(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    tls_file = tmp_path / "tls.properties"
    tls_file.write_text(
        "tls.server.mode=enforcing\n"
        f"tls.server.certPath={pki.server_cert}\ntls.server.keyPath={pki.server_key}\n"
        f"tls.client.trustCertPath={pki.ca}\n"
    )
    args = ["up", "--namesrv-port", "0", "--broker-port", "0", "--store", str(tmp_path / "s"),
            "--tls-config", str(tls_file)]  # fmt: skip
    up = launch(args, tmp_path / "up", "mq up")
    addr = up.addr
    try:
        until_sync(
            lambda: "127.0.0.1:" in cluster_list(addr, pki),
            30,
            "a broker to register over TLS",
            interval=0.3,
        )
        done = mq("produce", "-t", "UpTls", "--body", "x", "-n", addr, "--tls-ca", str(pki.ca))
        assert done.returncode == 0, done.stderr
        assert mq("cluster", "list", "-n", addr).returncode != 0  # plain: refused
    finally:
        up.stop()


def test_client_certificate_options_for_a_server_that_verifies_clients(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    (tmp_path / "ns.conf").write_text(
        f"kvConfigPath={tmp_path / 'kv.json'}\nlogDir={tmp_path / 'logs'}\n"
        "tls.server.mode=enforcing\ntls.server.need.client.auth=require\n"
        f"tls.server.certPath={pki.server_cert}\ntls.server.keyPath={pki.server_key}\n"
        f"tls.server.trustCertPath={pki.ca}\n"
    )
    ns = launch(["namesrv", "-c", str(tmp_path / "ns.conf"), "--listen", "127.0.0.1:0"], tmp_path)
    addr = ns.addr
    try:
        base = ["cluster", "list", "--json", "-n", addr, "--tls-ca", str(pki.ca)]
        done = mq(*base, "--tls-cert", str(pki.client_cert), "--tls-key", str(pki.client_key))
        assert done.returncode == 0, done.stderr
        env = {"MQ_TLS_CERT": str(pki.client_cert), "MQ_TLS_KEY": str(pki.client_key)}
        assert mq(*base, env=env).returncode == 0  # the environment says the same
        done = mq(*base)  # no client certificate: the server refuses the handshake
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        done = mq(*base, "--tls-cert", str(pki.client_cert))
        assert done.returncode == 2 and "--tls-key" in done.stderr, done.stderr
    finally:
        ns.stop()


def test_tls_config_file_key_in_the_servers_file(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    (tmp_path / "tls.properties").write_text(
        "tls.server.mode=enforcing\n"
        f"tls.server.certPath={pki.server_cert}\ntls.server.keyPath={pki.server_key}\n"
    )
    (tmp_path / "ns.conf").write_text(
        f"kvConfigPath={tmp_path / 'kv.json'}\nlogDir={tmp_path / 'logs'}\n"
        "tls.config.file=tls.properties\n"
    )
    ns = launch(["namesrv", "-c", str(tmp_path / "ns.conf"), "--listen", "127.0.0.1:0"], tmp_path)
    addr = ns.addr
    try:
        assert mq("cluster", "list", "--json", "-n", addr, "--tls-ca", str(pki.ca)).returncode == 0
        assert mq("cluster", "list", "-n", addr).returncode == 1  # plain: refused
    finally:
        ns.stop()

"""Where servers listen: a broker whose brokerIP1 is loopback listens on loopback only
(RocketMQ would listen on every interface), and without brokerIP1 RocketMQ's default
stays; `mq up` listens on loopback unless told otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.processes import serving

pytestmark = pytest.mark.timeout(60)


def listening_hosts(port: int) -> set[str]:
    """Local addresses with a socket listening on ``port`` (from /proc/net/tcp*)."""
    hosts: set[str] = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            addr, hex_port = fields[1].split(":")
            if fields[3] != "0A" or int(hex_port, 16) != port:
                continue
            if width == 8:
                hosts.add(".".join(str(b) for b in reversed(bytes.fromhex(addr))))
            else:
                hosts.add("::" if int(addr, 16) == 0 else addr)
    return hosts


def broker_conf(tmp_path: Path, **props: str) -> Path:
    conf = tmp_path / "broker.conf"
    settings = {"storePathRootDir": str(tmp_path / "store"), "listenPort": "0", **props}
    conf.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    return conf


def test_a_loopback_broker_ip_means_listening_on_loopback_only(tmp_path: Path) -> None:
    conf = broker_conf(tmp_path, brokerIP1="127.0.0.1")
    with serving(["broker", "-c", str(conf)], tmp_path) as (host, port):
        assert host == "127.0.0.1"
        assert listening_hosts(port) == {"127.0.0.1"}
        assert listening_hosts(port - 2) == {"127.0.0.1"}  # the fast port too


def test_without_broker_ip_the_broker_listens_everywhere_as_rocketmq(tmp_path: Path) -> None:
    with serving(["broker", "-c", str(broker_conf(tmp_path))], tmp_path) as (_, port):
        assert listening_hosts(port) & {"0.0.0.0", "::"}


def test_mq_up_listens_on_loopback_by_default(tmp_path: Path) -> None:
    args = ["up", "--store", str(tmp_path / "s"), "--namesrv-port", "0", "--broker-port", "0"]
    with serving(args, tmp_path) as (host, port):
        assert host == "127.0.0.1"
        assert listening_hosts(port) == {"127.0.0.1"}

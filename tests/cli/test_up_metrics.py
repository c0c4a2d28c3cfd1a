"""`mq up --metrics-port`: the name server and every broker serve Prometheus metrics and
say where; a bad port is refused before anything starts."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

from tests.cli.up_support import _read_until_export
from tests.support.metrics import parse, scrape_text, value
from tests.support.processes import CLEAN_ENV, MQ, run_mq, server_env, stop_process

_URL = re.compile(r"mq (namesrv|broker) listening on .*metrics=(http://\S+?/metrics)")


def test_every_server_of_up_serves_metrics(tmp_path: Path) -> None:
    args = ["up", "--store", str(tmp_path / "store"), "--namesrv-port", "0"]
    args += ["--broker-port", "0", "--brokers", "2", "--metrics-port", "0"]
    with open(tmp_path / "stderr.txt", "ab") as err:
        up = subprocess.Popen(
            [*MQ, *args], stdout=subprocess.PIPE, stderr=err, text=True, env=server_env(tmp_path)
        )
    try:
        lines = _read_until_export(up)
        urls = [m.groups() for line in lines if (m := _URL.search(line))]
        assert [kind for kind, _ in urls] == ["namesrv", "broker", "broker"], lines
        scraped = {url: parse(scrape_text(url)) for _, url in urls}
        namesrv = scraped[urls[0][1]]
        assert value(namesrv, "rocketmq_broker_number", cluster="DefaultCluster") == 2
        names = {
            value(scraped[url], "rocketmq_broker_permission", node_id=name)
            for (_, url), name in zip(urls[1:], ("broker-a", "broker-b"), strict=True)
        }
        assert names == {6.0}
    finally:
        assert stop_process(up, sig=signal.SIGINT, timeout=60) == 0


def test_a_metrics_port_past_the_range_is_refused(tmp_path: Path) -> None:
    done = run_mq(
        ["up", "--store", str(tmp_path / "s"), "--brokers", "2", "--metrics-port", "65534"],
        CLEAN_ENV,
    )
    assert done.returncode == 2
    assert "--metrics-port" in done.stderr and "65535" in done.stderr

"""`mq exporter` against `mq` processes: one poll printed (--once), or served and polled
again until stopped with Ctrl-C."""

from __future__ import annotations

import asyncio
import re
import signal

from tests.support.cluster import Cluster
from tests.support.metrics import parse, scrape_text, value
from tests.support.polling import until_sync
from tests.support.processes import launch, stop_process

_SERVING = re.compile(r"mq exporter serving (http://(\S+):(\d+)/metrics)")


def test_once_prints_one_poll(cluster: Cluster) -> None:
    cluster.ok("topic", "create", "-t", "Once", "-q", "2")
    asyncio.run(cluster.produce("Once", 3))
    samples = parse(cluster.ok("exporter", "--once", "--label", "env:ci"))
    assert value(samples, "rocketmq_messages_in_total", topic="Once", env="ci") == 3
    assert value(samples, "rocketmq_exporter_poll_errors_total") == 0


def test_serves_the_last_poll_and_stops_on_ctrl_c(cluster: Cluster) -> None:
    cluster.ok("topic", "create", "-t", "Served", "-q", "1")
    asyncio.run(cluster.produce("Served", 2))
    args = ["exporter", "-n", cluster.namesrv, "--host", "127.0.0.1", "--port", "0"]
    server = launch([*args, "--interval", "0.2"], cluster.base / "exporter", listen=_SERVING)
    try:
        url = _SERVING.search(server.stdout_lines[-1])
        assert url is not None
        first = parse(scrape_text(url.group(1)))
        assert value(first, "rocketmq_messages_in_total", topic="Served") == 2
        asyncio.run(cluster.produce("Served", 3))

        def polled_again() -> bool:
            samples = parse(scrape_text(url.group(1)))
            return value(samples, "rocketmq_messages_in_total", topic="Served") == 5

        until_sync(polled_again, 30, "the next poll's figures")
    finally:
        assert stop_process(server.proc, sig=signal.SIGINT) == 0


def test_a_bad_label_is_a_usage_error(cluster: Cluster) -> None:
    done = cluster.mq("exporter", "--once", "--label", "env")
    assert done.returncode == 2 and "'env' is not key:value" in done.stderr

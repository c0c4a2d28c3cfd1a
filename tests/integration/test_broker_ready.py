"""`mq broker` says "listening" only once the name servers know it (or says why not).

Tests and scripts parse that line and send at once: a route that is not registered yet
made the first send fail with "no route". The broker registers first, as 4.9.8's
BrokerController.start() does, and warns when a name server did not take it.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqcore.client import Admin
from mqcore.client.route import AUTO_CREATE_TOPIC_KEY
from tests.support.processes import ServerProcess, start_broker, start_namesrv


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[ServerProcess]:
    ns = start_namesrv(tmp_path / "ns")
    try:
        yield ns
    finally:
        ns.stop()


def test_routes_exist_when_listening_is_printed(namesrv: ServerProcess, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "b", namesrv.addr, autoCreateTopicEnable="true")
    try:

        async def routes() -> tuple[list[str], int]:
            async with Admin(namesrv.addr, instance_name="ready-probe") as admin:
                masters = list((await admin.master_addrs()).values())
                route = await admin.instance.fetch_route(AUTO_CREATE_TOPIC_KEY)
            return masters, len(route.queue_datas) if route else 0

        masters, queues = asyncio.run(routes())  # no waiting: it must be there already
        assert masters == [broker.addr]
        assert queues > 0
    finally:
        broker.stop()


def test_unanswering_namesrv_is_a_warning_before_listening(tmp_path: Path) -> None:
    """A name server that takes the connection but never answers: the broker waits for
    registerBrokerTimeoutMills, warns, then serves (and keeps trying)."""
    with socket.socket() as hole:
        hole.bind(("127.0.0.1", 0))
        hole.listen(8)
        addr = f"127.0.0.1:{hole.getsockname()[1]}"
        broker = start_broker(tmp_path / "b", addr, registerBrokerTimeoutMills="1500")
        try:
            # written before "listening": the registration was over (and failed) by then
            warning = (tmp_path / "b" / "stderr.txt").read_text()
            assert f"warning: not registered with name server {addr} yet" in warning
            assert "retrying every 30 s" in warning
        finally:
            broker.stop()

"""`mq produce --request` against an in-process name server, broker and replier.

The replier (our PushConsumer answering with ``create_reply_message``) and the servers
run on the test's event loop; `mq` runs as a subprocess awaited on that loop, so they
keep serving while the command waits for its reply.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from mqcore.client.consume_service import ConsumeContext, ConsumeStatus
from mqcore.client.producer import Producer
from mqcore.client.push_consumer import PushConsumer
from mqcore.client.rebalance import ConsumeFromWhere
from mqcore.client.request_reply import create_reply_message
from mqcore.message import MessageExt
from tests.support.inproc import BROKER_NAME, LiveCluster

pytestmark = pytest.mark.timeout(90)

TOPIC = "CliRequests"
SILENT = "CliNobodyAnswers"
REPLY_TOPIC = "DefaultCluster_REPLY_TOPIC"


@pytest.fixture
async def namesrv(tmp_path: Path) -> AsyncIterator[str]:
    """An in-process name server and broker-a, the request topics (2 queues) routed."""
    async with LiveCluster(tmp_path, store={}).running(BROKER_NAME) as cluster:
        for topic in (TOPIC, SILENT):
            await cluster.create_topic(topic, 2)
        await cluster.wait_route(REPLY_TOPIC)
        yield cluster.addr


@pytest.fixture
async def replier(namesrv: str, tmp_path: Path) -> AsyncIterator[list[MessageExt]]:
    """Answers every request on TOPIC with ``re:<body>``; yields the requests seen."""
    seen: list[MessageExt] = []
    producer = Producer("cli-replier-pg", namesrv=namesrv, instance_name="cli-replier")
    consumer = PushConsumer(
        "cli-replier-cg",
        namesrv=namesrv,
        instance_name="cli-replier",
        consume_from_where=ConsumeFromWhere.FIRST,
        offset_store_dir=str(tmp_path / "offsets"),
    )

    async def answer(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        for msg in msgs:
            seen.append(msg)
            await producer.send(create_reply_message(msg, b"re:" + msg.body))
        return ConsumeStatus.CONSUME_SUCCESS

    consumer.subscribe(TOPIC, "*")
    consumer.register_listener(answer)
    await producer.start()
    await consumer.start()
    try:
        yield seen
    finally:
        await consumer.shutdown()
        await producer.shutdown()


async def mq(namesrv: str, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    env = {
        "COLUMNS": "200",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "MQ_CONFIG_DIR": str(tmp_path / "config"),
        "MQ_NAMESRV_ADDR": namesrv,
        **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mqcli.main",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_request_prints_the_reply_as_json(
    namesrv: str, replier: list[MessageExt], tmp_path: Path
) -> None:
    code, out, err = await mq(
        namesrv, tmp_path, "produce", "-t", TOPIC, "--request", "--body", "ping {{Count}}",
        "--prop", "who=cli", "--timeout", "20", "--json",
    )  # fmt: skip
    assert code == 0, err
    reply = orjson.loads(out)
    assert reply["body"] == "re:ping 1"
    assert reply["topic"] == REPLY_TOPIC
    assert reply["properties"]["MSG_TYPE"] == "reply"
    assert reply["properties"]["TTL"] == "20000"
    (request,) = replier
    assert reply["correlationId"] == request.properties["CORRELATION_ID"]
    assert reply["properties"]["REPLY_TO_CLIENT"] == request.properties["REPLY_TO_CLIENT"]
    assert request.properties["who"] == "cli"
    assert reply["elapsedMs"] > 0


async def test_request_prints_a_reply_card(
    namesrv: str, replier: list[MessageExt], tmp_path: Path
) -> None:
    code, out, err = await mq(
        namesrv, tmp_path, "produce", "-t", TOPIC, "--request", "--body", "hello", "--timeout", "20"
    )
    assert code == 0, err
    assert "Correlation ID" in out and "Round Trip" in out
    rows = [line.split() for line in out.splitlines()]
    assert ["Body", "re:hello"] in rows
    assert ["Body", "Length", "8"] in rows
    assert f"Reply Topic     {REPLY_TOPIC}" in out


async def test_request_without_replier_times_out_with_one_line(
    namesrv: str, tmp_path: Path
) -> None:
    code, out, err = await mq(
        namesrv, tmp_path, "produce", "-t", SILENT, "--request", "--body", "x", "--timeout", "1"
    )
    assert code == 1
    assert out == ""
    first = err.splitlines()[0]
    assert first == (
        f"error: no reply: send request message to <{SILENT}> OK, but wait reply message "
        "timeout, 1000 ms."
    )
    assert "Traceback" not in err


def test_request_refuses_modes_it_cannot_take(tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "produce", "-t", TOPIC, "--request",
         "--body", "x", "--count", "2", "--namesrv", "127.0.0.1:1"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 1
    assert "drop --count" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "produce", "-t", TOPIC, "--request",
         "--namesrv", "127.0.0.1:1"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 1
    assert "--request needs a body" in done.stderr

"""Issue 12, defect 5 with real processes: a message sent with the compressed sysflag
and a body that is not zlib must not make `mq consume` skip the good messages around it,
nor commit past messages nobody saw."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path

from mqcore.message import SysFlag
from mqcore.message.properties import encode_properties
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import SendMessageRequestHeader
from tests.support.clients import RawBrokerClient
from tests.support.polling import until_sync
from tests.support.processes import mq, start_broker, start_namesrv

TOPIC = "Poisoned"


def poison_request(group: str) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group=group,
        topic=TOPIC,
        default_topic="TBW102",
        default_topic_queue_nums=1,
        queue_id=0,
        sys_flag=SysFlag.COMPRESSED_FLAG,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=encode_properties({"WAIT": "true"}).decode(),
    )
    return RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), b"this is not zlib"
    )


async def fill(addr: str) -> int:
    """Offsets 0..10 of queue 0: good ones around a poison at 1; the poison's answer."""
    async with RawBrokerClient(addr) as client:
        sent = await client.send(TOPIC, b"good-0", queue_id=0, queue_nums=1)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        poison = await client.invoke(poison_request(client.group))
        for i in range(2, 11):
            sent = await client.send(TOPIC, f"good-{i}".encode(), queue_id=0, queue_nums=1)
            assert sent.code == ResponseCode.SUCCESS, sent.remark
        return poison.code


def test_consume_prints_every_good_message_around_a_poison_one(tmp_path: Path) -> None:
    namesrv = start_namesrv(tmp_path / "ns")
    broker = start_broker(tmp_path / "b", namesrv.addr, flushConsumerOffsetInterval="60000")
    try:
        poison_code = asyncio.run(fill(broker.addr))
        env = {"MQ_NAMESRV_ADDR": namesrv.addr}
        args = ("consume", "-t", TOPIC, "-g", "readers", "--pull", "--from", "first")
        runs: list[subprocess.CompletedProcess[str]] = []

        def consumed() -> bool:  # the route reaches the name server with the broker's registration
            runs.append(mq(*args, "--no-follow", "--json", env=env, timeout=60))
            return runs[-1].returncode == 0

        until_sync(consumed, 30, lambda: runs[-1].stderr, interval=0.2)
        done = runs[-1]
        seen = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        bodies = [str(m["body"]) for m in seen]
        good = [f"good-{i}" for i in (0, *range(2, 11))]
        assert [b for b in bodies if b.startswith("good-")] == good
        if poison_code == ResponseCode.SUCCESS:
            # stored (the broker's send check is not wired): delivered, flagged, in order
            assert len(seen) == 11
        else:
            assert poison_code == ResponseCode.MESSAGE_ILLEGAL
        # committed: a second run from the committed offset sees nothing new
        again = mq(*args, "--no-follow", "--json", env=env, timeout=60)
        assert again.returncode == 0, again.stderr
        assert not [line for line in again.stdout.splitlines() if line.strip()]
    finally:
        broker.stop()
        namesrv.stop()

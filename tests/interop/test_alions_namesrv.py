"""ali-ons (the pure-JS RocketMQ client) reads routes from our `mq namesrv`."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.headers import PutKVConfigRequestHeader
from mqcore.remoting import RemotingClient
from tests.support.clients import register, topic_wrapper
from tests.support.processes import start_namesrv

pytestmark = pytest.mark.interop

SCRIPT = Path(__file__).with_name("alions_route.js")


async def test_alions_parses_our_route(tmp_path: Path, alions_dir: Path) -> None:
    ns = start_namesrv(tmp_path / "ns")
    brokers = [RemotingClient(), RemotingClient()]
    try:
        await register(
            brokers[0],
            ns.addr,
            cluster="c1",
            name="broker-a",
            broker_id=0,
            addr="127.0.0.1:10911",
            wrapper=topic_wrapper(1, TopicTest=4),
        )
        await register(
            brokers[1],
            ns.addr,
            cluster="c1",
            name="broker-a",
            broker_id=1,
            addr="127.0.0.1:10921",
            wrapper=topic_wrapper(1, TopicTest=4),
        )
        put = PutKVConfigRequestHeader("ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:4")
        await brokers[0].invoke(
            ns.addr, RemotingCommand.request(RequestCode.PUT_KV_CONFIG, put.to_ext_fields())
        )
        proc = await asyncio.create_subprocess_exec(
            "node",
            str(SCRIPT),
            ns.addr,
            "TopicTest",
            "NoSuchTopic",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "ALIONS_NODE_DIR": str(alions_dir)},
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        assert proc.returncode == 0, err.decode()
        result = json.loads(out)
    finally:
        for client in brokers:
            await client.close()
        assert ns.stop() == 0

    route = result["route"]
    assert route["brokerDatas"] == [
        {
            "brokerAddrs": {"0": "127.0.0.1:10911", "1": "127.0.0.1:10921"},
            "brokerName": "broker-a",
            "cluster": "c1",
        }
    ]
    assert route["queueDatas"] == [
        {
            "brokerName": "broker-a",
            "perm": 6,
            "readQueueNums": 4,
            "topicSysFlag": 0,
            "writeQueueNums": 4,
        }
    ]
    assert route["orderTopicConf"] == "broker-a:4"
    # ali-ons surfaces TOPIC_NOT_EXIST as an error carrying code 17 (spec §12).
    assert result["missing"]["code"] == 17, result["missing"]

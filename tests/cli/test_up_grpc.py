"""`mq up` serves RocketMQ 5's gRPC access point on its broker, unless told not to."""

from __future__ import annotations

import re
import socket
import subprocess
from pathlib import Path

from grpc import aio
from up_support import mq_up

from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.grpc_v2 import service_pb2 as spb
from mqcore.proxy.grpc_v2.service_pb2_grpc import MessagingServiceStub
from tests.support.processes import MQ, server_env

GRPC = re.compile(r"grpc=(127\.0\.0\.1:\d+)")


async def test_mq_up_serves_grpc_on_its_broker(tmp_path: Path) -> None:
    lines: list[str] = []
    with mq_up(tmp_path, lines=lines):
        (endpoint,) = [m.group(1) for line in lines if (m := GRPC.search(line))]
        async with aio.insecure_channel(endpoint) as channel:
            answer = await MessagingServiceStub(channel).QueryRoute(
                spb.QueryRouteRequest(topic=pb.Resource(name="NoSuchTopic")),
                metadata=(("x-mq-client-id", "cli-test"),),
                timeout=10,
            )
    assert answer.status.code == pb.Code.TOPIC_NOT_FOUND, answer


def test_mq_up_without_grpc(tmp_path: Path) -> None:
    lines: list[str] = []
    with mq_up(tmp_path, "--grpc-port", "-1", lines=lines):
        pass
    broker_line = next(line for line in lines if line.startswith("mq broker listening"))
    assert "grpc=" not in broker_line


def test_a_taken_grpc_port_fails_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*MQ, "up", "--store", str(tmp_path / "store"), "--namesrv-port", "0",
             "--broker-port", "0", "--host", "127.0.0.1", "--grpc-port", str(port)],
            capture_output=True, text=True, timeout=60, env=server_env(tmp_path),
        )  # fmt: skip
    assert done.returncode == 1, done
    assert f"cannot serve gRPC on 127.0.0.1:{port}" in done.stderr
    assert "--grpc-port" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "store" / "abort").exists()  # the broker stopped cleanly


async def test_mq_up_serves_a_grpc_send_receive_and_ack(tmp_path: Path) -> None:
    """What the 5.x SDKs do, by hand: send (the topic is created), receive (POP, RocketMQ
    5's bounds: 10 s invisible, 5 s polling) and ack."""
    lines: list[str] = []
    client = (("x-mq-client-id", "cli-test"),)
    with mq_up(tmp_path, lines=lines):
        (endpoint,) = [m.group(1) for line in lines if (m := GRPC.search(line))]
        async with aio.insecure_channel(endpoint) as channel:
            stub = MessagingServiceStub(channel)
            sp = pb.SystemProperties(message_id="01ABCDEF", tag="t")
            msg = pb.Message(topic=pb.Resource(name="UpTopic"), body=b"hi", system_properties=sp)
            sent = await stub.SendMessage(
                spb.SendMessageRequest(messages=[msg]), metadata=client, timeout=10
            )
            assert sent.status.code == pb.Code.OK, sent
            request = spb.ReceiveMessageRequest(
                group=pb.Resource(name="up-group"),
                message_queue=pb.MessageQueue(topic=pb.Resource(name="UpTopic"), id=-1),
                filter_expression=pb.FilterExpression(expression="*"),
                batch_size=16,
            )
            request.invisible_duration.FromSeconds(10)
            request.long_polling_timeout.FromSeconds(5)

            stream = stub.ReceiveMessage(request, metadata=client, timeout=15)
            got = [r.message async for r in stream if r.HasField("message")]
            assert [m.system_properties.message_id for m in got] == ["01ABCDEF"]
            entry = spb.AckMessageEntry(
                message_id="01ABCDEF", receipt_handle=got[0].system_properties.receipt_handle
            )
            acked = await stub.AckMessage(
                spb.AckMessageRequest(group=request.group, topic=msg.topic, entries=[entry]),
                metadata=client,
                timeout=10,
            )
            assert acked.status.code == pb.Code.OK, acked
            assert acked.entries[0].status.code == pb.Code.OK

"""Message trace across clients: the RocketMQ 4.9.8 Java client (built at ~/rmq-real, or
$RMQ_HOME) with enableMsgTrace against an mq broker with traceTopicEnable, read back by
`mq message trace`; and traces the mq client wrote, read by 4.9.8's mqadmin
queryMsgTraceById. Skipped where the Java build is absent."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from java_support import java_classpath, java_command, java_env

from mqcore.client import Admin
from mqcore.client.consume_service import ConsumeContext, ConsumeStatus
from mqcore.client.producer import Producer, make_message
from mqcore.client.push_consumer import PushConsumer
from mqcore.client.rebalance import ConsumeFromWhere
from mqcore.client.trace_view import query_message_trace
from mqcore.common.metadata import TopicConfig
from mqcore.message import MessageExt
from mqcore.protocol.bodies.trace import RMQ_SYS_TRACE_TOPIC
from tests.support.inproc import running_broker, running_namesrv
from tests.support.polling import until

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "JavaTraceTopic"


@pytest.fixture(scope="module")
def java_cp(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The 4.9.8 client's classpath with the probes compiled into a tmp folder."""
    return java_classpath(tmp_path_factory.mktemp("java-classes"))


async def java(cp: str, home: Path, main: str, *args: str) -> str:
    """Run a Java main to its end; its stdout."""
    proc = await asyncio.create_subprocess_exec(
        *java_command(cp, home, main, *args),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=java_env(),
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 120)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode == 0, f"{main} failed ({proc.returncode}):\n{err.decode()[-3000:]}"
    return out.decode()


async def test_java_traces_read_by_mq_and_mq_traces_read_by_mqadmin(
    tmp_path: Path, java_cp: str
) -> None:
    home = tmp_path / "java-home"
    home.mkdir()
    async with (
        running_namesrv(tmp_path) as ns,
        running_broker(tmp_path, ns.listen_address, trace_topic_enable=True) as broker,
    ):
        addr = ns.listen_address
        broker.topics.update(TopicConfig(TOPIC, 1, 1))
        await until(lambda: ns.routes.pick_topic_route_data(TOPIC) is not None, 10)
        await until(lambda: ns.routes.pick_topic_route_data(RMQ_SYS_TRACE_TOPIC) is not None, 10)

        out = await java(java_cp, home, "TraceProbe", addr, TOPIC)
        [line] = [ln for ln in out.splitlines() if ln.startswith("MSGID ")]
        _, java_id, _, status = line.split()
        assert status == "SEND_OK" and "CONSUMED true" in out
        async with Admin(addr) as admin:
            trace = await query_message_trace(admin, java_id)
        [pub] = trace.pubs
        assert (pub.group, pub.success, pub.topic, pub.tags, pub.keys) == (
            "java-trace-pg", True, TOPIC, "TagJ", "jkey-1",
        )  # fmt: skip
        steps = [(e.type, e.outcome) for e in trace.consumers["java-trace-cg"]]
        assert steps == [("SubBefore", "-"), ("SubAfter", "success")]

        got: list[MessageExt] = []

        def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
            got.extend(msgs)
            return ConsumeStatus.CONSUME_SUCCESS

        consumer = PushConsumer(
            "py-trace-cg", namesrv=addr, consume_from_where=ConsumeFromWhere.FIRST, trace=True
        )
        consumer.subscribe(TOPIC, "*")
        consumer.register_listener(listener)
        async with Producer("py-trace-pg", addr, trace=True) as producer:
            await consumer.start()
            try:
                sent = await producer.send(make_message(TOPIC, "py", tags="TagP", keys="pk"))
                await until(lambda: any(m.unique_key == sent.msg_id for m in got), 20)
            finally:
                await consumer.shutdown()
        report = await java(
            java_cp, home, "org.apache.rocketmq.tools.command.MQAdminStartup",
            "queryMsgTraceById", "-i", sent.msg_id, "-n", addr,
        )  # fmt: skip
        rows = [ln.split() for ln in report.splitlines() if ln.startswith(("Pub ", "Sub "))]
        assert [r[:2] + r[-1:] for r in rows] == [
            ["Pub", "py-trace-pg", "success"],
            ["Sub", "py-trace-cg", "success"],
        ]

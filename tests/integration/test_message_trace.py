"""Message trace end to end: a producer and consumers with tracing on against an
in-process broker with traceTopicEnable; `mq message trace ID` (a subprocess) shows the
send and each group's consumption; a missing trace topic never fails a send."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from mqcore.client import Admin
from mqcore.client.consume_service import ConsumeContext, ConsumeStatus
from mqcore.client.lite_pull_consumer import LitePullConsumer
from mqcore.client.producer import Producer, make_message
from mqcore.client.push_consumer import PushConsumer
from mqcore.client.rebalance import ConsumeFromWhere
from mqcore.common.metadata import TopicConfig
from mqcore.message import MessageExt
from mqcore.protocol.bodies.trace import (
    CONTENT_SPLITOR,
    FIELD_SPLITOR,
    RMQ_SYS_TRACE_TOPIC,
    ConsumeReturnType,
)
from tests.support.inproc import running_broker, running_namesrv
from tests.support.polling import until

pytestmark = pytest.mark.timeout(90)

TOPIC = "TraceTopicTest"


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
        sys.executable, "-m", "mqcli.main", *args, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_trace_of_a_sent_and_consumed_message(tmp_path: Path) -> None:
    async with (
        running_namesrv(tmp_path) as ns,
        running_broker(tmp_path, ns.listen_address, trace_topic_enable=True) as broker,
    ):
        addr = ns.listen_address
        assert broker.topics.select(RMQ_SYS_TRACE_TOPIC) is not None
        broker.topics.update(TopicConfig(TOPIC, 2, 2))
        await until(lambda: ns.routes.pick_topic_route_data(TOPIC) is not None, 10)
        await until(lambda: ns.routes.pick_topic_route_data(RMQ_SYS_TRACE_TOPIC) is not None, 10)

        got: list[MessageExt] = []

        def failing_once(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
            got.extend(msgs)
            return ConsumeStatus.CONSUME_SUCCESS

        push = PushConsumer(
            "trace-cg", namesrv=addr, consume_from_where=ConsumeFromWhere.FIRST,
            instance_name="push", trace=True,
        )  # fmt: skip
        push.subscribe(TOPIC, "*")
        push.register_listener(failing_once)
        lite = LitePullConsumer(
            "trace-lite", namesrv=addr, consume_from_where=ConsumeFromWhere.FIRST,
            instance_name="lite", trace=True,
        )  # fmt: skip
        lite.subscribe(TOPIC, "*")
        producer = Producer("trace-pg", addr, trace=True)
        await producer.start()
        await push.start()
        await lite.start()
        try:
            msg = make_message(TOPIC, "hello", tags="TagA", keys=["order-1"])
            result = await producer.send(msg)
            assert result.ok
            await until(lambda: len(got) == 1, 20, "push consumption")
            polled: list[MessageExt] = []
            deadline = asyncio.get_running_loop().time() + 20
            while not polled and asyncio.get_running_loop().time() < deadline:
                polled = await lite.poll(1.0)
            assert [m.unique_key for m in polled] == [result.msg_id]
        finally:
            await lite.shutdown()
            await push.shutdown()
            await producer.shutdown()
        for d in (producer.trace_dispatcher, push.trace_dispatcher, lite.trace_dispatcher):
            assert d is not None and d.dropped == 0, d
        assert producer.trace_dispatcher is not None and producer.trace_dispatcher.sent == 1
        assert push.trace_dispatcher is not None and push.trace_dispatcher.sent == 2

        # The trace messages are keyed by the msg id and the message's keys; the Pub
        # record is the 14-field layout of 4.9.8's encoder.
        async with Admin(addr) as admin:
            by_key = await admin.query_by_key(RMQ_SYS_TRACE_TOPIC, "order-1")
        records = [
            r.split(CONTENT_SPLITOR)
            for m in by_key
            for r in m.body.decode().split(FIELD_SPLITOR)
            if r
        ]
        pubs = [r for r in records if r[0] == "Pub"]
        assert len(pubs) == 1 and len(pubs[0]) == 14
        assert pubs[0][3:8] == ["trace-pg", TOPIC, result.msg_id, "TagA", "order-1"]
        assert pubs[0][12:] == [result.offset_msg_id, "true"]

        code, out, err = await mq(addr, tmp_path, "message", "trace", result.msg_id, "--json")
        assert code == 0, err
        doc = orjson.loads(out)
        [pub] = doc["pub"]
        assert (pub["group"], pub["status"], pub["topic"]) == ("trace-pg", "success", TOPIC)
        assert pub["client_host"] == "127.0.0.1"
        steps = {g: [(e["type"], e["status"]) for e in evs] for g, evs in doc["consumers"].items()}
        assert steps["trace-cg"] == [("SubBefore", "success"), ("SubAfter", "success")]
        assert steps["trace-lite"] == [("SubBefore", "success"), ("SubAfter", "success")]
        after = doc["consumers"]["trace-cg"][1]
        assert after["context_code"] == ConsumeReturnType.SUCCESS and after["cost_ms"] >= 0

        code, out, err = await mq(addr, tmp_path, "message", "trace", result.msg_id)
        assert code == 0, err
        lines = out.splitlines()
        assert lines[0].split()[:3] == ["TYPE", "GROUP", "CLIENT-HOST"]
        assert [ln.split()[:2] for ln in lines[1:]] == [
            ["Pub", "trace-pg"],
            ["SubBefore", "trace-cg"], ["SubAfter", "trace-cg"],
            ["SubBefore", "trace-lite"], ["SubAfter", "trace-lite"],
        ]  # fmt: skip

        # the offset msg id (what mq query lists as msgId) finds the same trace
        code, out, err = await mq(addr, tmp_path, "message", "trace", result.offset_msg_id, "-j")
        assert code == 0, err
        assert orjson.loads(out)["msgId"] == result.msg_id
        code, out, err = await mq(addr, tmp_path, "message", "trace", "0" * 32)
        assert code == 1 and "no trace of" in err


async def test_failed_consumption_is_traced_as_failed(tmp_path: Path) -> None:
    async with (
        running_namesrv(tmp_path) as ns,
        running_broker(tmp_path, ns.listen_address, trace_topic_enable=True) as broker,
    ):
        addr = ns.listen_address
        broker.topics.update(TopicConfig(TOPIC, 1, 1))
        await until(lambda: ns.routes.pick_topic_route_data(TOPIC) is not None, 10)
        calls: list[int] = []

        def later(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
            calls.append(1)
            raise RuntimeError("boom")

        push = PushConsumer(
            "trace-fail", namesrv=addr, consume_from_where=ConsumeFromWhere.FIRST, trace=True
        )
        push.subscribe(TOPIC, "*")
        push.register_listener(later)
        async with Producer("trace-pg2", addr, trace=True) as producer:
            await push.start()
            try:
                result = await producer.send(make_message(TOPIC, "x"))
                await until(lambda: bool(calls), 20, "a consume attempt")
            finally:
                await push.shutdown()
        async with Admin(addr) as admin:
            from mqcore.client.trace_view import query_message_trace

            trace = await query_message_trace(admin, result.msg_id)
        after = [e for e in trace.consumers["trace-fail"] if e.type == "SubAfter"]
        assert after and not after[0].success
        assert after[0].context_code == ConsumeReturnType.EXCEPTION


async def test_send_succeeds_when_the_trace_topic_is_missing(tmp_path: Path) -> None:
    async with (
        running_namesrv(tmp_path) as ns,
        running_broker(tmp_path, ns.listen_address, auto_create_topic_enable=False) as broker,
    ):
        broker.topics.update(TopicConfig(TOPIC, 1, 1))
        await until(lambda: ns.routes.pick_topic_route_data(TOPIC) is not None, 10)
        producer = Producer("trace-pg3", ns.listen_address, trace=True, send_timeout=2.0)
        async with producer:
            for i in range(3):
                assert (await producer.send(make_message(TOPIC, f"m{i}"))).ok
            dispatcher = producer.trace_dispatcher
            assert dispatcher is not None
            await until(lambda: dispatcher.dropped == 3, 20, "the trace records dropped")
        assert dispatcher.sent == 0 and dispatcher.last_error
        assert broker.topics.select(RMQ_SYS_TRACE_TOPIC) is None
        code, _, err = await mq(
            ns.listen_address, tmp_path, "produce", "-t", TOPIC, "--body", "b", "--trace"
        )
        assert code == 0 and "1 trace record(s) dropped" in err, err
        code, _, err = await mq(
            ns.listen_address, tmp_path, "consume", "-t", TOPIC, "-g", "trace-none",
            "--from", "first", "--no-follow", "--trace", "--push",
        )  # fmt: skip
        assert code == 0 and "trace record(s) dropped" in err, err
        code, _, err = await mq(ns.listen_address, tmp_path, "message", "trace", "ABC")
        assert code == 1 and "no trace topic RMQ_SYS_TRACE_TOPIC" in err
        assert "traceTopicEnable=true" in err


async def test_cli_produce_and_consume_with_trace(tmp_path: Path) -> None:
    async with (
        running_namesrv(tmp_path) as ns,
        running_broker(tmp_path, ns.listen_address, trace_topic_enable=True) as broker,
    ):
        addr = ns.listen_address
        broker.topics.update(TopicConfig(TOPIC, 1, 1))
        await until(lambda: ns.routes.pick_topic_route_data(TOPIC) is not None, 10)
        await until(lambda: ns.routes.pick_topic_route_data(RMQ_SYS_TRACE_TOPIC) is not None, 10)
        code, out, err = await mq(
            addr, tmp_path, "produce", "-t", TOPIC, "--body", "b", "--key", "k1", "--trace",
            "--json", "-g", "cli-pg",
        )  # fmt: skip
        assert code == 0, err
        msg_id = orjson.loads(out.splitlines()[0])["msgId"]
        code, out, err = await mq(
            addr, tmp_path, "consume", "-t", TOPIC, "-g", "cli-cg", "--from", "first",
            "--no-follow", "--trace", "--json",
        )  # fmt: skip
        assert code == 0, err
        code, out, err = await mq(addr, tmp_path, "message", "trace", msg_id, "-j")
        assert code == 0, err
        doc = orjson.loads(out)
        assert [(e["type"], e["group"]) for e in doc["pub"]] == [("Pub", "cli-pg")]
        assert [e["type"] for e in doc["consumers"]["cli-cg"]] == ["SubBefore", "SubAfter"]
        assert doc["consumers"]["cli-cg"][1]["success"] is True


async def test_message_track_per_group(tmp_path: Path) -> None:
    from mqcore.client.trace_track import TrackType, message_track_detail

    async with (
        running_namesrv(tmp_path) as ns,
        running_broker(tmp_path, ns.listen_address) as broker,
    ):
        addr = ns.listen_address
        broker.topics.update(TopicConfig(TOPIC, 1, 1))
        await until(lambda: ns.routes.pick_topic_route_data(TOPIC) is not None, 10)
        async with Producer("trk-pg", addr) as producer:
            sent = await producer.send(make_message(TOPIC, "x", tags="TagA"))
        done: list[str] = []
        hold = asyncio.Event()

        def ok(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
            done.extend(m.topic for m in msgs)
            return ConsumeStatus.CONSUME_SUCCESS

        async def stuck(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
            done.append("stuck")
            await hold.wait()
            return ConsumeStatus.CONSUME_SUCCESS

        def push(group: str, tags: str, listener: Any) -> PushConsumer:
            c = PushConsumer(
                group, namesrv=addr, consume_from_where=ConsumeFromWhere.FIRST,
                instance_name=group, await_termination=0.1,
            )  # fmt: skip
            c.subscribe(TOPIC, tags)
            c.register_listener(listener)
            return c

        consumed, filtered, waiting = (
            push("trk-ok", "*", ok),
            push("trk-filter", "Other", ok),
            push("trk-wait", "*", stuck),
        )
        gone = push("trk-gone", "*", ok)
        lite = LitePullConsumer("trk-lite", namesrv=addr, instance_name="trk-lite")
        lite.subscribe(TOPIC, "*")
        for c in (consumed, filtered, waiting, gone, lite):
            await c.start()
        try:
            await until(lambda: done.count(TOPIC) >= 2 and "stuck" in done, 20, "consumption")
            await gone.persist_consumer_offset()
            await gone.shutdown()
            await consumed.persist_consumer_offset()

            def offset_of(group: str) -> int:
                return dict(broker.offsets.query_all(group, TOPIC)).get(0, -1)

            await filtered.persist_consumer_offset()
            await until(lambda: offset_of("trk-filter") >= 1, 20, "the filtered group's offset")
            await until(lambda: offset_of("trk-ok") >= 1, 20, "the consumed group's offset")
            async with Admin(addr) as admin:
                msg = await admin.view_message(sent.offset_msg_id)
                tracks = {t.consumer_group: t for t in await message_track_detail(admin, msg)}
            code, out, err = await mq(addr, tmp_path, "message", "view", sent.offset_msg_id)
            assert code == 0, err
            rows = {ln.split()[0]: ln.split()[1] for ln in out.splitlines() if "trk-" in ln}
            code, jout, err = await mq(
                addr, tmp_path, "message", "view", sent.offset_msg_id, "--json", "--track"
            )
            assert code == 0, err
            as_json = {
                t["consumerGroup"]: t["trackType"] for t in orjson.loads(jout)["messageTrack"]
            }
        finally:
            hold.set()
            for c in (consumed, filtered, waiting, lite):
                await c.shutdown()
        kinds = {g: t.track_type for g, t in tracks.items()}
        assert kinds == {
            "trk-ok": TrackType.CONSUMED,
            "trk-filter": TrackType.CONSUMED_BUT_FILTERED,
            "trk-wait": TrackType.NOT_CONSUME_YET,
            "trk-gone": TrackType.NOT_ONLINE,
            "trk-lite": TrackType.PULL,
        }
        assert tracks["trk-gone"].exception_desc and "206" in tracks["trk-gone"].exception_desc
        assert rows == as_json == {g: k.value for g, k in kinds.items()}


async def test_a_traced_transaction_records_its_end(tmp_path: Path) -> None:
    from mqcore.client.trace_view import query_message_trace
    from mqcore.client.transaction import LocalTransactionState, TransactionProducer

    async with (
        running_namesrv(tmp_path) as ns,
        running_broker(tmp_path, ns.listen_address, trace_topic_enable=True) as broker,
    ):
        addr = ns.listen_address
        broker.topics.update(TopicConfig(TOPIC, 1, 1))
        await until(lambda: ns.routes.pick_topic_route_data(TOPIC) is not None, 10)
        await until(lambda: ns.routes.pick_topic_route_data(RMQ_SYS_TRACE_TOPIC) is not None, 10)
        producer = TransactionProducer(
            "trace-tx-pg", namesrv=addr, trace=True,
            execute_local_transaction=lambda msg, arg: LocalTransactionState.COMMIT_MESSAGE,
        )  # fmt: skip
        await producer.start()
        try:
            result = await producer.send_message_in_transaction(make_message(TOPIC, b"tx"))
        finally:
            await producer.shutdown()  # writes what the trace dispatcher still holds
        async with Admin(addr) as admin:
            found: list[Any] = []

            async def ended() -> bool:
                trace = await query_message_trace(admin, result.msg_id)
                found[:] = [e for e in trace.pubs if e.type == "EndTransaction"]
                return bool(found)

            deadline = asyncio.get_running_loop().time() + 15
            while not await ended():
                assert asyncio.get_running_loop().time() < deadline, "no EndTransaction record"
                await asyncio.sleep(0.2)
    [end] = found
    assert (end.transaction_state, end.from_transaction_check) == ("COMMIT_MESSAGE", False)
    assert end.group == "trace-tx-pg" and end.topic == TOPIC

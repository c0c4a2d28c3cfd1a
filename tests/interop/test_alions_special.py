"""Special message types from a 4.x client that is not ours: ali-ons (npm ``ali-ons@3``,
the pure-JS RocketMQ client) against an in-process mq broker with a short delay table.

* delay: ali-ons sets ``delayTimeLevel`` (the ``DELAY`` property); the message is held by
  the schedule service for its level and then our LitePullConsumer reads it with ali-ons'
  tags, keys and user properties intact.
* retry / DLQ: an ali-ons push consumer answering ``ACTION_RETRY`` makes ali-ons send
  CONSUMER_SEND_MSG_BACK; the copy comes back through ``%RETRY%group`` with a growing
  reconsumeTimes and, past the limit, lands in ``%DLQ%group`` where our client reads it.
  ali-ons speaks remoting version 121 (V3_4_9) and always puts its own
  ``maxReconsumeTimes`` option into the send-back header, so - as on a RocketMQ 4.x broker -
  the header's limit, not the group's ``retryMaxTimes``, decides when the DLQ is used. The
  test sets the two to different values to show which one wins. ali-ons quirk: its
  ``%RETRY%`` wrapper calls the handler as ``await handler(msg)`` and drops the result, so
  ``ACTION_RETRY`` only fails a first delivery; a retried delivery must throw to fail again
  (otherwise it counts as consumed). The JS consumer does one, then the other.
* SQL92: an ali-ons consumer subscribed with ``{expressionType: 'SQL92', subString}``
  gets exactly the matching messages from a broker with ``enable_property_filter``; from a
  broker without it ali-ons reports the broker's refusal as a consumer error.
* transactions: ali-ons 3.x has NO transaction producer. It defines the END_TRANSACTION and
  CHECK_TRANSACTION_STATE request codes but never sends the former nor answers the latter;
  the only trace is that ``send()`` flags a message whose ``TRAN_MSG`` property is set as
  prepared. With no way to commit, roll back or answer a check, there is nothing
  transactional to test from ali-ons, so this module has no transaction test.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from interop_support import alions_env, registered, run_json_lines

from mqcore.broker.controller import BrokerController
from mqcore.client import (
    Admin,
    ConsumeFromWhere,
    LitePullConsumer,
    Producer,
    make_message,
)
from mqcore.common.metadata import SubscriptionGroupConfig
from mqcore.message.model import MessageExt
from tests.support import until
from tests.support.inproc import running_broker, running_namesrv

pytestmark = pytest.mark.interop

SCRIPT = Path(__file__).with_name("alions_special.js")
# Level 2 is 2 s (the delay test); every level a retry uses (3 + reconsumeTimes) is 1 s.
DELAY_LEVELS = "1s 2s 1s 1s 1s 1s 1s 1s"


def broker_with_short_delays(
    tmp_path: Path, namesrv: str, **overrides: Any
) -> AbstractAsyncContextManager[BrokerController]:
    return running_broker(
        tmp_path, namesrv, store={"message_delay_level": DELAY_LEVELS}, **overrides
    )


def _env(alions_dir: Path) -> dict[str, str]:
    return {**os.environ, **alions_env(alions_dir)}


async def node_once(alions_dir: Path, *args: str, timeout: float = 30) -> list[dict[str, Any]]:
    """Run one short ali-ons command to completion; its JSON lines."""
    return await run_json_lines(
        ["node", str(SCRIPT)], *args, env=alions_env(alions_dir), timeout=timeout
    )


class NodeConsumer:
    """A long-running ali-ons consumer: its JSON lines as they come; stopped by closing
    its stdin (it then closes the ali-ons consumer and exits), killed if that hangs."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[dict[str, Any]] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            if raw.strip():
                self.lines.append(json.loads(raw))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [line for line in self.lines if "body" in line]

    @property
    def errors(self) -> list[str]:
        """What ali-ons reported while it ran; errors of its own close come after the
        ``closing`` line (its close cuts a rebalance in flight) and are not counted."""
        running = self.lines
        for i, line in enumerate(self.lines):
            if line.get("closing"):
                running = self.lines[:i]
                break
        return [line["error"] for line in running if "error" in line]

    @property
    def logs(self) -> list[str]:
        """ali-ons' own warnings and errors (its logger's), for failure messages."""
        return [
            f"{line['log']} at {line['at']}: {line['text']}" for line in self.lines if "log" in line
        ]

    async def until(self, predicate: Any, timeout: float, what: str) -> None:
        """:func:`tests.support.until`, failing at once when ali-ons exits early."""

        async def holds() -> bool:
            if predicate():
                return True
            if self.proc.returncode is not None or self._reader.done():
                await self.proc.wait()
                err = await self.proc.stderr.read() if self.proc.stderr else b""
                raise AssertionError(f"ali-ons exited early: {err.decode()[-3000:]}")
            return False

        try:
            await until(holds, timeout, what, interval=0.05)
        except AssertionError as failed:
            raise AssertionError(f"{failed}; saw {self.lines}") from None

    async def stop(self, timeout: float = 20) -> None:
        proc = self.proc
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout)
            await asyncio.wait_for(self._reader, 5)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            self._reader.cancel()


@asynccontextmanager
async def node_consumer(
    alions_dir: Path, *args: str, script: Path = SCRIPT, env: dict[str, str] | None = None
) -> AsyncIterator[NodeConsumer]:
    """``node SCRIPT ARGS`` as a :class:`NodeConsumer`; ``env`` adds to its environment."""
    proc = await asyncio.create_subprocess_exec(
        "node",
        str(script),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**_env(alions_dir), **(env or {})},
    )
    consumer = NodeConsumer(proc)
    try:
        yield consumer
    finally:
        await consumer.stop()
    assert proc.returncode == 0, f"ali-ons consumer exited with {proc.returncode}"


async def poll_until(consumer: LitePullConsumer, count: int, timeout: float) -> list[MessageExt]:
    got: list[MessageExt] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while len(got) < count and loop.time() < deadline:
        got += await consumer.poll(0.5)
    return got


async def test_alions_delay_level_held_then_delivered(tmp_path: Path, alions_dir: Path) -> None:
    async with (
        running_namesrv(tmp_path) as ns,
        broker_with_short_delays(tmp_path, ns.listen_address),
    ):
        async with Admin(namesrv=ns.listen_address) as admin:
            await registered(admin)
            await admin.create_topic("OnsDelay", queues=2)
        consumer = LitePullConsumer(
            "py-reads-ons-delay",
            namesrv=ns.listen_address,
            consume_from_where=ConsumeFromWhere.FIRST,
        )
        consumer.subscribe("OnsDelay", "TagD")
        async with consumer:
            [sent] = await node_once(alions_dir, "delay", ns.listen_address, "OnsDelay", "2")
            assert sent["status"] == "SEND_OK"
            # Held: nothing readable for 1.2 s after ali-ons sent it (level 2 is 2 s); the
            # window is measured from ali-ons' own clock reading, taken just before send().
            early: list[MessageExt] = []
            while time.time() * 1000 < sent["sentAt"] + 1200:
                early += await consumer.poll(0.2)
            assert early == [], "the delayed message was readable before its delay"
            [msg] = await poll_until(consumer, 1, 10)
            waited_ms = time.time() * 1000 - sent["sentAt"]
        assert waited_ms >= 1900, f"delivered {waited_ms:.0f} ms after the send, level 2 is 2 s"
        # The copy re-put by the schedule service is stored ~2 s after ali-ons made it.
        assert msg.store_timestamp - msg.born_timestamp >= 1900
        assert msg.topic == "OnsDelay"
        assert msg.body == b"ons-delayed"
        assert msg.tags == "TagD"
        assert msg.keys == ["ons-dk1", "ons-dk2"]
        assert msg.properties["color"] == "blue"
        assert msg.properties["DELAY"] == "2"
        assert msg.properties["REAL_TOPIC"] == "OnsDelay"
        # ali-ons' send result carries the broker's offset id (of the held copy in
        # SCHEDULE_TOPIC_XXXX); its own unique id travels as UNIQ_KEY
        assert msg.properties["UNIQ_KEY"] and sent["msgId"] != msg.properties["UNIQ_KEY"]


async def test_alions_retry_through_send_back_then_dlq(tmp_path: Path, alions_dir: Path) -> None:
    group = "ons-retry-cg"
    async with (
        running_namesrv(tmp_path) as ns,
        broker_with_short_delays(tmp_path, ns.listen_address),
    ):
        async with Admin(namesrv=ns.listen_address) as admin:
            await registered(admin)
            await admin.create_topic("OnsRetry", queues=1)
            # The group allows 1 reconsume; ali-ons' header (version 121) says 2 and wins.
            await admin.create_subscription_group(SubscriptionGroupConfig(group, retry_max_times=1))
        async with Producer("py-retry-pg", namesrv=ns.listen_address) as producer:
            await producer.send(
                make_message("OnsRetry", "fail-me", tags="T", keys="rk1", properties={"p": "1"})
            )
        dlq = LitePullConsumer(
            "py-reads-dlq", namesrv=ns.listen_address, consume_from_where=ConsumeFromWhere.FIRST
        )
        async with node_consumer(
            alions_dir, "retry", ns.listen_address, "OnsRetry", group, "2"
        ) as ons:
            await ons.until(lambda: len(ons.messages) >= 3, 20, "three deliveries")
            # the third failure goes to the DLQ: wait for it there before stopping ali-ons
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            group_dlq = "%DLQ%" + group
            async with Admin(namesrv=ns.listen_address) as admin:
                while group_dlq not in await admin.topic_list():
                    assert loop.time() < deadline, "the DLQ topic never reached the name server"
                    await asyncio.sleep(0.05)
            dlq.subscribe(group_dlq, "*")
            async with dlq:
                [dead] = await poll_until(dlq, 1, 10)
            deliveries = list(ons.messages)
        assert [d["reconsumeTimes"] for d in deliveries] == [0, 1, 2], deliveries
        first, *retries = deliveries
        assert first["topic"] == "OnsRetry" and first["retryTopic"] is None
        for again in retries:
            # ali-ons restores the real topic from RETRY_TOPIC before calling the handler
            assert again["topic"] == "OnsRetry"
            assert again["retryTopic"] == "OnsRetry"
            assert again["originMsgId"] == first["msgId"]
            assert again["body"] == "fail-me"
            assert again["props"]["p"] == "1" and again["keys"] == "rk1"
        # the retry copies are delayed by level 3 + reconsumeTimes (1 s each here)
        assert retries[0]["at"] - first["at"] >= 900
        assert retries[1]["at"] - retries[0]["at"] >= 900
        assert dead.topic == group_dlq
        assert dead.body == b"fail-me"
        assert dead.reconsume_times == 3
        assert dead.properties["RETRY_TOPIC"] == "OnsRetry"
        assert dead.properties["ORIGIN_MESSAGE_ID"] == first["msgId"]
        assert dead.properties["p"] == "1" and dead.keys == ["rk1"]


async def _send_numbered(namesrv: str, topic: str) -> None:
    async with Producer("py-sql-pg", namesrv=namesrv) as producer:
        for i in range(10):
            await producer.send(make_message(topic, f"n{i}", tags="S", properties={"a": str(i)}))
        await producer.send(make_message(topic, "sentinel", tags="S", properties={"a": "1000"}))


async def test_alions_sql92_subscription(tmp_path: Path, alions_dir: Path) -> None:
    async with (
        running_namesrv(tmp_path) as ns,
        broker_with_short_delays(
            tmp_path, ns.listen_address, enable_property_filter=True
        ) as broker,
    ):
        async with Admin(namesrv=ns.listen_address) as admin:
            await registered(admin)
            # one queue: once the last-sent sentinel is seen, every earlier one was filtered
            await admin.create_topic("OnsSql", queues=1)
        await _send_numbered(ns.listen_address, "OnsSql")
        async with node_consumer(
            alions_dir, "sql", ns.listen_address, "OnsSql", "ons-sql-cg", "a > 5"
        ) as ons:
            await ons.until(
                lambda: any(m["body"] == "sentinel" for m in ons.messages), 20, "the sentinel"
            )
        # ali-ons closes a connection when a request of its own times out (3 s for a
        # heartbeat or a consumer list), failing the others on it: a stall of this
        # process's loop, which serves the name server and the broker, shows here
        lag = broker.loop_lag.figures()
        assert ons.errors == [], (
            f"ali-ons logged: {ons.logs}; the loop's longest stall in the last minute "
            f"{lag.max_ms_last_minute:.0f} ms ({lag.stalls} stalls)"
        )
        assert sorted(m["body"] for m in ons.messages) == ["n6", "n7", "n8", "n9", "sentinel"]
        assert all(int(m["props"]["a"]) > 5 for m in ons.messages)


async def test_alions_sql92_refused_without_property_filter(
    tmp_path: Path, alions_dir: Path
) -> None:
    async with (
        running_namesrv(tmp_path) as ns,
        broker_with_short_delays(tmp_path, ns.listen_address),
    ):
        async with Admin(namesrv=ns.listen_address) as admin:
            await registered(admin)
            await admin.create_topic("OnsSqlOff", queues=1)
        await _send_numbered(ns.listen_address, "OnsSqlOff")
        refusal = "The broker does not support consumer to filter message by SQL92"
        async with node_consumer(
            alions_dir, "sql", ns.listen_address, "OnsSqlOff", "ons-sql-off-cg", "a > 5"
        ) as ons:
            await ons.until(
                lambda: any(refusal in e for e in ons.errors), 15, "ali-ons reporting the refusal"
            )
        assert ons.messages == []
        pull_errors = [line for line in ons.lines if refusal in line.get("error", "")]
        assert {line["name"] for line in pull_errors} == {"MQConsumerPullMessageError"}

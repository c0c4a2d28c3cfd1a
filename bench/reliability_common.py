"""What ``kill_rounds.py`` and ``soak.py`` share: real ``mq`` processes on loopback, a
mixed load from our client, and a ledger that accounts for every message.

The ledger is the point: each message carries a unique id in its body, so at the end
each acknowledged one is either delivered (counted, duplicates too), dead-lettered,
still owed, or a rolled-back transaction (which must never be delivered).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from procs import stop_processes

from mqcore.client import (
    Admin,
    ClientConfig,
    ConsumeContext,
    ConsumeFromWhere,
    ConsumeStatus,
    LocalTransactionState,
    MessageExt,
    Producer,
    PushConsumer,
    SendResult,
    SendStatus,
    TransactionProducer,
    make_message,
)
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.remoting import RemotingClient

LISTEN = re.compile(r"listening on (\S+):(\d+)")
KINDS = ("single", "batch", "async", "delayed", "tx-commit", "tx-rollback")


def stop_process(proc: subprocess.Popen[Any]) -> int:
    """SIGTERM, then SIGKILL if it has not exited within 30 s; its exit code."""
    stop_processes([proc])
    return proc.returncode


def quiet_client_logs() -> None:
    """The client logs every refused connection while the broker is down: expected
    here, and it would bury the progress display."""
    logging.getLogger("mq").setLevel(logging.CRITICAL)


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """Resident memory of ``pid`` in KiB. VmRSS counts the touched pages of the mapped
    commit log too, which grow with the data written; RssAnon is the heap alone."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def fd_count(pid: int) -> int:
    """Open descriptors of ``pid``."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def store_fd_count(pid: int, store_root: Path) -> int:
    """Descriptors of ``pid`` that are files under ``store_root``. Each mapped store file
    holds one (the map's own copy of the descriptor), so these grow with the files the
    store has (one more per rolled commit log or consume queue file) and fall when
    cleanup deletes expired files: growth there is data, not a leak."""
    root = str(store_root.resolve())
    n = 0
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue  # closed between the listing and the read
        n += target.startswith(root + os.sep)
    return n


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def slope_per_hour(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value) samples, per hour."""
    if len(samples) < 2:
        return 0.0
    n = len(samples)
    mx = sum(t for t, _ in samples) / n
    my = sum(v for _, v in samples) / n
    den = sum((t - mx) ** 2 for t, _ in samples)
    if den == 0:
        return 0.0
    return sum((t - mx) * (v - my) for t, v in samples) / den * 3600


class Cluster:
    """A name server and one broker as ``mq`` processes under ``root``. The broker keeps
    its store and port across restarts; every process is stopped by :meth:`stop_all`."""

    def __init__(self, root: Path, heap_probe: Path | None = None, **broker_props: str) -> None:
        self.root = root
        self.broker_props = broker_props
        self.heap_probe = heap_probe
        """When set, the broker runs under ``bench/heap_probe.py`` writing there."""
        self.namesrv_addr = ""
        self.broker_addr = ""
        self.namesrv: subprocess.Popen[bytes] | None = None
        self.broker: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.listen_seconds: list[float] = []
        """Per start: process start to its "listening" line (recovery is done then)."""
        self._port = 0

    def _spawn(self, name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        out = self.root / f"{name}.out"
        command = [sys.executable, "-m", "mqcli.main", *args]
        if self.heap_probe is not None and args[0] == "broker":
            probe = Path(__file__).with_name("heap_probe.py")
            command = [sys.executable, str(probe), str(self.heap_probe), "120", "--", *args]
        with open(out, "wb") as f, open(self.root / f"{name}.err", "ab") as err:
            proc = subprocess.Popen(
                command,
                stdout=f,
                stderr=err,
                env={**os.environ, "HOME": str(self.root)},
            )
        return proc, out

    async def _listen_line(self, proc: subprocess.Popen[bytes], out: Path, what: str) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if m := LISTEN.search(out.read_text(errors="replace")):
                return f"{m.group(1)}:{m.group(2)}"
            if proc.poll() is not None:
                break
            await asyncio.sleep(0.01)
        raise RuntimeError(f"{what} did not start; see {out} and its .err")

    async def start_namesrv(self) -> None:
        self.namesrv, out = self._spawn("namesrv", "namesrv", "--listen", "127.0.0.1:0")
        self.namesrv_addr = await self._listen_line(self.namesrv, out, "name server")

    def _write_conf(self) -> Path:
        settings = {
            "brokerName": "broker-a",
            "brokerIP1": "127.0.0.1",
            "namesrvAddr": self.namesrv_addr,
            "storePathRootDir": str(self.root / "store"),
            "logDir": str(self.root / "logs"),
            "flushDiskType": "SYNC_FLUSH",
            "mappedFileSizeCommitLog": str(16 * 1024 * 1024),
            **self.broker_props,
        }
        conf = self.root / "broker.conf"
        conf.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        return conf

    async def wait_registered(self, timeout: float = 60.0) -> None:
        """Until the name server lists the broker (a slow start, e.g. under the heap
        probe, answers requests a moment before its first registration)."""
        client = RemotingClient()
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                with contextlib.suppress(Exception):
                    request = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, {})
                    response = await client.invoke(self.namesrv_addr, request, 2.0)
                    if self.broker_addr.encode() in bytes(response.body or b""):
                        return
                await asyncio.sleep(0.1)
        finally:
            await client.close()
        raise RuntimeError(f"the broker did not register with {self.namesrv_addr}")

    async def start_broker(self) -> float:
        """Start the broker on its store (and, after the first start, its port); returns
        seconds from the process start until it answers a request.

        If the old port pair was taken meanwhile (another process's ephemeral port: tests
        run side by side), it starts on a new pair; clients find it by the name server."""
        for attempt in range(3):
            try:
                return await self._start_broker_once()
            except RuntimeError:
                if attempt == 2 or self._port == 0:
                    raise
                self._port = 0
        raise AssertionError("unreachable")

    async def _start_broker_once(self) -> float:
        conf = self._write_conf()
        t0 = time.monotonic()
        self.starts += 1
        self.broker, out = self._spawn(
            f"broker-{self.starts}",
            "broker",
            "-c",
            str(conf),
            "--listen",
            f"127.0.0.1:{self._port}",
        )
        self.broker_addr = await self._listen_line(self.broker, out, "broker")
        self.listen_seconds.append(time.monotonic() - t0)
        self._port = int(self.broker_addr.rsplit(":", 1)[1])
        client = RemotingClient()
        try:
            while True:
                try:
                    request = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {})
                    response = await client.invoke(self.broker_addr, request, 2.0)
                    if response.code == ResponseCode.SUCCESS:
                        return time.monotonic() - t0
                except Exception:
                    pass
                if self.broker.poll() is not None:
                    raise RuntimeError(f"broker exited with {self.broker.returncode}; see {out}")
                await asyncio.sleep(0.01)
        finally:
            await client.close()

    def kill_broker(self) -> None:
        if self.broker is not None and self.broker.poll() is None:
            self.broker.send_signal(signal.SIGKILL)
            self.broker.wait(10)

    @staticmethod
    def _stop(proc: subprocess.Popen[bytes] | None) -> int | None:
        return None if proc is None else stop_process(proc)

    def stop_broker(self) -> int | None:
        return self._stop(self.broker)

    def stop_all(self) -> None:
        self._stop(self.broker)
        self._stop(self.namesrv)

    @property
    def broker_pid(self) -> int:
        assert self.broker is not None
        return self.broker.pid


@dataclass
class Ledger:
    """Every message by id: what it is, whether the broker acknowledged it, how often it
    was delivered and how often the listener asked to consume it later."""

    kind: dict[str, str] = field(default_factory=dict)
    acked: set[str] = field(default_factory=set)
    delivered: Counter[str] = field(default_factory=Counter)
    succeeded: set[str] = field(default_factory=set)
    failed_attempts: Counter[str] = field(default_factory=Counter)
    dlq: set[str] = field(default_factory=set)
    send_errors: Counter[str] = field(default_factory=Counter)
    seq: int = 0

    def new_id(self, kind: str) -> str:
        self.seq += 1
        mid = f"{kind}-{self.seq}"
        self.kind[mid] = kind
        return mid

    def owed(self) -> set[str]:
        """Acknowledged ids neither consumed successfully nor dead-lettered (rolled-back
        transactions are never owed)."""
        return {
            m
            for m in self.acked
            if self.kind[m] != "tx-rollback" and m not in self.succeeded and m not in self.dlq
        }

    def rollbacks_delivered(self) -> set[str]:
        return {m for m in self.delivered if self.kind[m] == "tx-rollback"}

    def by_kind(self) -> list[dict[str, Any]]:
        rows = []
        owed = self.owed()
        for k in KINDS:
            ids = [m for m in self.acked if self.kind[m] == k]
            delivered = [m for m in ids if self.delivered[m]]
            rows.append(
                {
                    "kind": k,
                    "acknowledged": len(ids),
                    "delivered": len(delivered),
                    "lost": sum(1 for m in ids if m in owed),
                    "duplicates": sum(self.delivered[m] - 1 for m in delivered),
                    "sendErrors": self.send_errors[k],
                }
            )
        return rows


def body_of(mid: str, size: int = 200) -> bytes:
    raw = mid.encode() + b"|"
    return raw + b"x" * max(0, size - len(raw))


def id_of(msg: MessageExt) -> str:
    return bytes(msg.body).split(b"|", 1)[0].decode()


class MixedLoad:
    """Single, batch, async, delayed (level 1-2) and transactional (commit, rollback, and
    unknown-then-checked) sends from one process, plus a push consumer group.

    ``fail_rate`` makes the listener ask for some messages again (RECONSUME_LATER), and
    ids ending in ``poison_suffix`` always: those go to the retry topic and, after
    ``max_reconsume`` tries, to the dead-letter queue."""

    def __init__(
        self,
        namesrv: str,
        topic: str,
        ledger: Ledger,
        *,
        group: str = "rel-cg",
        fail_rate: float = 0.0,
        poison_every: int = 0,
        max_reconsume: int = -1,
        rate_pause: float = 0.0,
    ) -> None:
        self.namesrv = namesrv
        self.topic = topic
        self.ledger = ledger
        self.group = group
        self.fail_rate = fail_rate
        self.poison_every = poison_every
        self.max_reconsume = max_reconsume
        self.rate_pause = rate_pause
        self.config = ClientConfig(
            poll_name_server_interval=1.0,
            heartbeat_broker_interval=1.0,
            rebalance_interval=2.0,
            persist_consumer_offset_interval=1.0,
        )
        self.intent: dict[str, LocalTransactionState] = {}
        self.producer = Producer("rel-pg", namesrv, client_config=self.config)
        self.tx = TransactionProducer(
            "rel-tx",
            namesrv,
            execute_local_transaction=self._execute,
            check_local_transaction=self._check,
            client_config=self.config,
        )
        self.consumer: PushConsumer | None = None
        self.consumer_starts = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._stop = asyncio.Event()
        self._rng = random.Random(12)
        self._tx_count = 0

    # -- transactions --------------------------------------------------------------------

    def _execute(self, msg: Any, arg: Any) -> LocalTransactionState:
        mid = str(arg)
        if int(mid.rsplit("-", 1)[1]) % 3 == 0:
            return LocalTransactionState.UNKNOWN  # the broker's check-back decides
        return self.intent[mid]

    def _check(self, msg: MessageExt) -> LocalTransactionState:
        return self.intent.get(id_of(msg), LocalTransactionState.ROLLBACK_MESSAGE)

    # -- consuming -----------------------------------------------------------------------

    def _poisoned(self, mid: str) -> bool:
        return bool(self.poison_every) and int(mid.rsplit("-", 1)[1]) % self.poison_every == 0

    def _listen(self, msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        ledger = self.ledger
        for msg in msgs:
            mid = id_of(msg)
            ledger.delivered[mid] += 1
            if self._poisoned(mid) or (self.fail_rate and self._rng.random() < self.fail_rate):
                ledger.failed_attempts[mid] += 1
                return ConsumeStatus.RECONSUME_LATER
            ledger.succeeded.add(mid)
        return ConsumeStatus.CONSUME_SUCCESS

    async def start_consumer(self) -> None:
        self.consumer_starts += 1
        consumer = PushConsumer(
            self.group,
            namesrv=self.namesrv,
            consume_from_where=ConsumeFromWhere.FIRST,
            max_reconsume_times=self.max_reconsume,
            client_config=self.config,
            instance_name=f"consumer-{self.consumer_starts}",
        )
        consumer.subscribe(self.topic, "*")
        consumer.register_listener(self._listen)
        await consumer.start()
        self.consumer = consumer

    async def stop_consumer(self) -> None:
        consumer, self.consumer = self.consumer, None
        if consumer is not None:
            await consumer.shutdown()

    # -- sending -------------------------------------------------------------------------

    def _ok(self, result: SendResult | None) -> bool:
        return result is not None and result.status is SendStatus.SEND_OK

    async def _loop(self, kind: str, once: Callable[[], Any]) -> None:
        while not self._stop.is_set():
            try:
                await once()
            except Exception:
                self.ledger.send_errors[kind] += 1
                await asyncio.sleep(0.05)  # the broker is down or restarting
            if self.rate_pause:
                await asyncio.sleep(self.rate_pause)

    async def _single(self) -> None:
        mid = self.ledger.new_id("single")
        result = await self.producer.send(make_message(self.topic, body_of(mid), keys=mid))
        if self._ok(result):
            self.ledger.acked.add(mid)

    async def _batch(self) -> None:
        ids = [self.ledger.new_id("batch") for _ in range(8)]
        results = await self.producer.send_batch(make_message(self.topic, body_of(m)) for m in ids)
        if results and all(self._ok(r) for r in results):
            self.ledger.acked.update(ids)

    async def _async(self) -> None:
        sem = asyncio.Semaphore(16)
        pending: set[asyncio.Task[SendResult]] = set()
        failing = asyncio.Event()
        while not self._stop.is_set():
            if failing.is_set():
                failing.clear()
                await asyncio.sleep(0.05)  # the broker is down or restarting
            await sem.acquire()
            mid = self.ledger.new_id("async")

            def done(result: SendResult | None, exc: BaseException | None, mid: str = mid) -> None:
                sem.release()
                if exc is None and self._ok(result):
                    self.ledger.acked.add(mid)
                else:
                    self.ledger.send_errors["async"] += 1
                    failing.set()

            task = self.producer.send_async(make_message(self.topic, body_of(mid)), done)
            pending.add(task)
            task.add_done_callback(pending.discard)
            if self.rate_pause:
                await asyncio.sleep(self.rate_pause)
            if len(pending) >= 16:
                await asyncio.sleep(0.001)
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    async def _delayed(self) -> None:
        mid = self.ledger.new_id("delayed")
        msg = make_message(self.topic, body_of(mid), delay_level=1 + self.ledger.seq % 2)
        if self._ok(await self.producer.send(msg)):
            self.ledger.acked.add(mid)

    async def _transaction(self) -> None:
        self._tx_count += 1
        commit = self._tx_count % 2 == 0
        kind = "tx-commit" if commit else "tx-rollback"
        mid = self.ledger.new_id(kind)
        self.intent[mid] = (
            LocalTransactionState.COMMIT_MESSAGE
            if commit
            else LocalTransactionState.ROLLBACK_MESSAGE
        )
        try:
            result = await self.tx.send_message_in_transaction(
                make_message(self.topic, body_of(mid)), arg=mid
            )
        except Exception:
            self.ledger.send_errors[kind] += 1
            await asyncio.sleep(0.05)
            return
        if self._ok(result):
            self.ledger.acked.add(mid)

    async def start(self) -> None:
        async with Admin(self.namesrv, client_config=self.config) as admin:
            await admin.create_topic(self.topic, queues=4)
        await self.producer.start()
        await self.tx.start()
        await self.start_consumer()

    def start_sending(self) -> None:
        self._stop.clear()
        self._tasks = [
            asyncio.create_task(self._loop("single", self._single)),
            asyncio.create_task(self._loop("single", self._single)),
            asyncio.create_task(self._loop("batch", self._batch)),
            asyncio.create_task(self._async()),
            asyncio.create_task(self._loop("delayed", self._delayed)),
            asyncio.create_task(self._loop("tx", self._transaction)),
        ]

    async def stop_sending(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def read_dlq(self) -> None:
        """Put the ids found in ``%DLQ%<group>`` into the ledger."""
        topic = f"%DLQ%{self.group}"
        async with Admin(self.namesrv, client_config=self.config) as admin:
            if topic not in await admin.topic_list():
                return
            for status in await admin.topic_status(topic):
                offset = status.min_offset
                while offset < status.max_offset:
                    await admin.refresh_route(topic)
                    result = await admin.read_queue(status.mq, offset, 32, timeout=5.0)
                    if not result.messages or result.next_begin_offset <= offset:
                        break
                    self.ledger.dlq.update(id_of(m) for m in result.messages)
                    offset = result.next_begin_offset

    async def close(self) -> None:
        await self.stop_sending()
        with contextlib.suppress(Exception):
            await self.stop_consumer()
        with contextlib.suppress(Exception):
            await self.tx.shutdown()
        with contextlib.suppress(Exception):
            await self.producer.shutdown()


async def drain(
    load: MixedLoad, timeout: float, on_progress: Callable[[int], None] | None = None
) -> None:
    """Wait until nothing acknowledged is owed (delays and transaction checks resolve on
    their own), or ``timeout`` seconds pass without the owed count going down."""
    last, since = -1, time.monotonic()
    while True:
        owed = len(load.ledger.owed())
        if on_progress is not None:
            on_progress(owed)
        if owed == 0:
            return
        if owed != last:
            last, since = owed, time.monotonic()
        elif time.monotonic() - since > timeout:
            return
        await asyncio.sleep(0.2)

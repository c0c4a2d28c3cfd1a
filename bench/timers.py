"""Timer messages at random times, a broker killed -9 once, a wheel holding many more
(figures, not a test; tests/integration/test_timer_crash.py is the small version).

Usage: ``.venv/bin/python bench/timers.py [--count 100000] [--window 300] [--pending 1000000]
[--precision 500] [--no-kill] [--json]``

One ``mq broker`` process on a temporary store (loopback). First ``--pending`` timer
messages due ``--pending-after`` seconds ahead (default two hours) are sent to their own
topic, so the wheel holds them while the rest runs. Then ``--count`` messages, each due
at a random time in a ``--window`` seconds long window that opens once they can all be
sent (``--lead``), go to the measured topic, four queues. Consumers long-poll every
queue from the start and record each copy. Half-way through the window the broker is
killed with SIGKILL and started again on the same store (``--no-kill``: not).

Reported: messages sent, delivered, lost (never delivered; must be 0), duplicates
(copies beyond the first: a crash may deliver what the checkpoint had not committed),
how late each first copy was stored after its time (p50, p99, max) and how many more
than a second late, leaving out the messages due while the broker was down (and those
whose time had passed when they were sent), the downtime, the wheel's
``timerCongestNum`` after the restart. With ``timerPrecisionMs=1000`` a slot is delivered
as its second ends, so a message may wait up to a second by design; the default here is
500 ms. Exits 1 on a loss.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from procs import start_broker, stop_processes
from rich.console import Console
from rich.table import Table

from mqcore.errors import MQError
from mqcore.message.properties import encode_properties
from mqcore.message.record import decode_records
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.route import KVTable
from mqcore.protocol.headers import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    PullSysFlag,
    SendMessageRequestHeader,
)
from mqcore.remoting import RemotingClient, run

TOPIC = "TimerBench"
PENDING_TOPIC = "TimerBenchPending"
QUEUES = 4
INFLIGHT = 128


def now_ms() -> int:
    return int(time.time() * 1000)


def _conf(precision: int) -> dict[str, object]:
    return {"mappedFileSizeCommitLog": 256 * 1024 * 1024, "timerPrecisionMs": precision}


def send_request(topic: str, queue_id: int, body: bytes, deliver_ms: int) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="timer-bench",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=QUEUES,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=now_ms(),
        flag=0,
        properties=encode_properties({"TIMER_DELIVER_MS": str(deliver_ms)}).decode(),
    )
    return RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), body
    )


@dataclass
class Ledger:
    due: dict[int, int] = field(default_factory=dict)
    """message number -> deliver time (ms)."""
    sent_late: set[int] = field(default_factory=set)
    """Messages whose time had passed when they were sent."""
    first_stored: dict[int, int] = field(default_factory=dict)
    copies: int = 0


async def send_all(
    addr: str, topic: str, count: int, when: list[int], ledger: Ledger | None
) -> float:
    """Send ``count`` timer messages (message i due at ``when[i]``); seconds it took."""
    client = RemotingClient()
    sem = asyncio.Semaphore(INFLIGHT)
    failures: list[str] = []
    started = time.monotonic()

    async def one(i: int) -> None:
        try:
            if ledger is not None and when[i] <= now_ms():
                ledger.sent_late.add(i)
            req = send_request(topic, i % QUEUES, str(i).encode(), when[i])
            r = await client.invoke(addr, req, 30)
            if r.code != ResponseCode.SUCCESS:
                failures.append(f"{r.code} {r.remark}")
        finally:
            sem.release()

    try:
        tasks = []
        for i in range(count):
            await sem.acquire()
            tasks.append(asyncio.ensure_future(one(i)))
        await asyncio.gather(*tasks)
    finally:
        await client.close()
    if failures:
        raise SystemExit(f"{len(failures)} sends failed, e.g. {failures[0]}")
    return time.monotonic() - started


async def consume(addr: dict[str, str], ledger: Ledger, stop: asyncio.Event) -> None:
    """Long-poll every queue of TOPIC, following the broker to its new address."""

    async def queue(q: int) -> None:
        offset = 0
        client = RemotingClient()
        try:
            while not stop.is_set():
                header = PullMessageRequestHeader(
                    consumer_group="timer-bench",
                    topic=TOPIC,
                    queue_id=q,
                    queue_offset=offset,
                    max_msg_nums=32,
                    sys_flag=PullSysFlag.SUBSCRIPTION | PullSysFlag.SUSPEND,
                    commit_offset=0,
                    suspend_timeout_millis=500,
                    sub_version=0,
                    subscription="*",
                )
                req = RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())
                try:
                    r = await client.invoke(addr["now"], req, 5)
                except (MQError, OSError, TimeoutError):
                    await asyncio.sleep(0.05)
                    continue
                if "nextBeginOffset" not in r.ext_fields:
                    await asyncio.sleep(0.05)
                    continue
                nxt = PullMessageResponseHeader.from_command(r).next_begin_offset
                if r.code == ResponseCode.SUCCESS:
                    for m in decode_records(bytes(r.body), read_body=True):
                        i = int(m.body)
                        ledger.copies += 1
                        if i not in ledger.first_stored:
                            ledger.first_stored[i] = m.store_timestamp
                offset = max(offset, nxt)
        finally:
            await client.close()

    await asyncio.gather(*(queue(q) for q in range(QUEUES)))


async def congest_num(addr: str) -> int | None:
    client = RemotingClient()
    try:
        r = await client.invoke(
            addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 10
        )
        table = KVTable.decode(r.body).table
        return int(table["timerCongestNum"])
    except (MQError, OSError, TimeoutError, KeyError, ValueError):
        return None
    finally:
        await client.close()


def percentile(values: list[int], p: float) -> int:
    if not values:
        return 0
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


async def bench(args: argparse.Namespace, workdir: Path) -> dict[str, object]:
    rng = random.Random(args.seed)
    procs: list[subprocess.Popen[str]] = []
    proc, first_addr = start_broker(workdir, **_conf(args.precision))
    procs.append(proc)
    addr = {"now": first_addr}
    ledger = Ledger()
    stop = asyncio.Event()
    consumer = asyncio.create_task(consume(addr, ledger, stop))
    report: dict[str, object] = {"count": args.count, "pending": args.pending}
    killed = back = 0
    try:
        if args.pending:
            far = now_ms() + args.pending_after * 1000
            when = [far + rng.randrange(0, 600_000) for _ in range(args.pending)]
            took = await send_all(addr["now"], PENDING_TOPIC, args.pending, when, None)
            report["pendingSendSeconds"] = round(took, 1)
        lead = args.lead if args.lead is not None else 3 + args.count / 2000
        opens = now_ms() + int(lead * 1000)
        when = [opens + rng.randrange(0, args.window * 1000) for _ in range(args.count)]
        ledger.due = dict(enumerate(when))
        took = await send_all(addr["now"], TOPIC, args.count, when, ledger)
        report["sendSeconds"] = round(took, 1)
        if not args.no_kill:
            await asyncio.sleep(max(0.0, (opens + args.window * 500 - now_ms()) / 1000))
            killed = now_ms()
            proc.kill()
            proc.wait(10)
            proc, addr["now"] = start_broker(workdir, **_conf(args.precision))
            procs.append(proc)
            back = now_ms()
            report["congestNumAfterRestart"] = await congest_num(addr["now"])
        deadline = opens + args.window * 1000 + args.grace * 1000
        while len(ledger.first_stored) < args.count and now_ms() < deadline:
            await asyncio.sleep(0.5)
        report["congestNumAtEnd"] = await congest_num(addr["now"])
    finally:
        stop.set()
        await asyncio.wait_for(consumer, 15)
        stop_processes(procs)
    lost = [i for i in ledger.due if i not in ledger.first_stored]
    away = (killed - args.precision, back + args.precision) if killed else (0, -1)
    lateness = [
        ledger.first_stored[i] - due
        for i, due in ledger.due.items()
        if i in ledger.first_stored and i not in ledger.sent_late and not away[0] <= due <= away[1]
    ]
    report.update(
        delivered=len(ledger.first_stored),
        lost=len(lost),
        duplicates=ledger.copies - len(ledger.first_stored),
        sentLate=len(ledger.sent_late),
        downtimeMs=back - killed if killed else 0,
        measured=len(lateness),
        lateP50Ms=percentile(lateness, 0.5),
        lateP99Ms=percentile(lateness, 0.99),
        lateMaxMs=max(lateness, default=0),
        early=sum(1 for x in lateness if x < 0),
        overOneSecond=sum(1 for x in lateness if x >= 1000),
        precisionMs=args.precision,
    )
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--window", type=int, default=300, help="seconds the times spread over")
    parser.add_argument("--pending", type=int, default=0, help="messages left in the wheel")
    parser.add_argument("--pending-after", type=int, default=7200, help="seconds ahead")
    parser.add_argument("--lead", type=float, default=None, help="seconds before the window")
    parser.add_argument("--grace", type=int, default=30, help="seconds to wait after it")
    parser.add_argument("--precision", type=int, default=500, help="timerPrecisionMs")
    parser.add_argument("--no-kill", action="store_true")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="mq-timer-bench-"))
    try:
        report = run(bench(args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(report))
    else:
        table = Table(title="timer messages (kill -9 once)" if not args.no_kill else "timers")
        table.add_column("figure")
        table.add_column("value", justify="right")
        for key, value in report.items():
            table.add_row(key, str(value))
        Console().print(table)
    if report["lost"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

"""Broker restart after a clean shutdown and after kill -9, by store size (not a test).

Usage: ``.venv/bin/python bench/restart.py [--sizes 100000,200000,400000] [--tail 2000]``

For each size N, on a temporary store:

1. N messages of 1 KiB (each with a UNIQ_KEY and a KEYS key, so the index holds two
   entries per message) are written through the MessageStore API, 32 per batch, over 4
   queues, and the store is shut down cleanly (then ``sync``, so no writeback of the
   fill runs during the measurements);
2. **clean restart**: ``mq broker`` starts on that store; the clock runs from the process
   start until a new message is acknowledged (SEND_MESSAGE_V2) and pulled back
   (PULL_MESSAGE at the offset the send reported);
3. ``--tail`` more messages are sent to it over loopback, and it is killed with SIGKILL
   right after the last acknowledgement, so the abort file stays and the newest writes
   lie after the last checkpoint;
4. **restart after kill -9**: the broker starts again on the same store, timed as in 2.

It then looks up (QUERY_MESSAGE) the key of the first message of the fill and of the
last message acknowledged before the kill, and reads the broker's one-line recovery
summary from its log after each start. Printed per size and kind of restart: restart
seconds, the broker's CPU seconds until then, the store's load as the broker logged it
(recovery), how much of the commit log it checked and how many records it
re-dispatched, and (after the kill) whether both keys were found. Restart cost that does
not grow with N is the point: doubling the store must not double the restart.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from procs import start_broker, stop_processes
from rich.console import Console
from rich.table import Table

from mqcore.message.model import MessageExt
from mqcore.message.properties import encode_properties
from mqcore.message.record import decode_records
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import (
    PullMessageRequestHeader,
    PullSysFlag,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
)
from mqcore.protocol.headers.admin import QueryMessageRequestHeader
from mqcore.remoting import RemotingClient, run
from mqcore.store import MessageStore, MessageStoreConfig

BODY = b"x" * 1024
TOPIC = "RestartBench"
QUEUES = 4
BATCH = 32
_TICK = os.sysconf("SC_CLK_TCK")
_RECOVERY = re.compile(
    r"(?P<kind>(?:ab)?normal) recovery(?P<how>.*?): scanned the commit log from offset "
    r"(?P<start>[\d,]+) to (?P<end>[\d,]+), (?P<records>[\d,]+) records re-dispatched, "
    r"index (?P<index>.*), (?P<seconds>[\d.]+) s$"
)


@dataclass
class Start:
    """One timed broker start."""

    restart_s: float
    broker_cpu_s: float
    recovery: re.Match[str] | None


@dataclass
class Row:
    size: int
    store_mib: float
    clean: Start
    killed: Start
    keys_found: str


def broker_cpu(pid: int) -> float:
    """utime + stime of ``pid`` in seconds (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def key_of(n: int) -> str:
    return f"key-{n}"


def keyed_batch(start: int, count: int) -> list[MessageExt]:
    """Messages ``start`` .. up to ``BATCH`` of them (below ``count``), keyed 1 KiB, all
    of one queue (a store put takes one queue at a time)."""
    return [
        MessageExt(
            topic=TOPIC,
            body=BODY,
            queue_id=(start // BATCH) % QUEUES,
            properties={"KEYS": key_of(n), "UNIQ_KEY": f"U{n:020d}", "TAGS": "bench"},
            born_timestamp=int(time.time() * 1000),
            born_host=("127.0.0.1", 50000),
            store_host=("127.0.0.1", 10911),
        )
        for n in range(start, min(start + BATCH, count))
    ]


def fill(root: Path, count: int) -> None:
    """``count`` keyed 1 KiB messages through the store API, then a clean shutdown."""
    store = MessageStore(MessageStoreConfig(store_path_root_dir=str(root)))
    store.start()
    try:
        for start in range(0, count, BATCH):
            result = store.put_messages(keyed_batch(start, count))
            if not result.ok:
                raise SystemExit(f"fill failed at {start}: {result.status}")
    finally:
        store.shutdown()


def send_request(n: int) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="bench",
        topic=TOPIC,
        default_topic="TBW102",
        default_topic_queue_nums=QUEUES,
        queue_id=n % QUEUES,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=encode_properties(
            {"KEYS": key_of(n), "UNIQ_KEY": f"U{n:020d}", "TAGS": "bench"}
        ).decode(),
    )
    return RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), BODY
    )


async def send_tail(addr: str, first: int, count: int) -> None:
    """``count`` sends, 32 in flight; every one must be acknowledged."""
    client = RemotingClient()
    sem = asyncio.Semaphore(32)

    async def one(n: int) -> None:
        try:
            r = await client.invoke(addr, send_request(n), 30)
            if r.code != ResponseCode.SUCCESS:
                raise SystemExit(f"send {n} failed: {r.code} {r.remark}")
        finally:
            sem.release()

    try:
        tasks = []
        for n in range(first, first + count):
            await sem.acquire()
            tasks.append(asyncio.ensure_future(one(n)))
        await asyncio.gather(*tasks)
    finally:
        await client.close()


async def send_and_pull_back(addr: str, n: int, deadline: float) -> None:
    """Send until the broker acknowledges, then pull that message back."""
    client = RemotingClient()
    try:
        while True:
            try:
                r = await client.invoke(addr, send_request(n), 5)
                if r.code == ResponseCode.SUCCESS:
                    break
            except Exception:  # not answering yet
                if time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise SystemExit(f"no send accepted: {r.code} {r.remark}")
            await asyncio.sleep(0.005)
        sent = SendMessageResponseHeader.from_command(r)
        pull = PullMessageRequestHeader(
            consumer_group="bench-consumer",
            topic=TOPIC,
            queue_id=sent.queue_id,
            queue_offset=sent.queue_offset,
            max_msg_nums=1,
            sys_flag=PullSysFlag.SUBSCRIPTION,
            commit_offset=0,
            suspend_timeout_millis=0,
            sub_version=0,
            subscription="*",
        )
        while True:
            p = await client.invoke(
                addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, pull.to_ext_fields()), 5
            )
            got = decode_records(bytes(p.body)) if p.code == ResponseCode.SUCCESS else []
            if got and got[0].keys == [key_of(n)]:
                return
            if time.monotonic() > deadline:
                raise SystemExit(f"message {n} not pulled back: {p.code} {p.remark}")
            await asyncio.sleep(0.005)
    finally:
        await client.close()


async def key_found(addr: str, n: int) -> bool:
    header = QueryMessageRequestHeader(
        topic=TOPIC,
        key=key_of(n),
        max_num=32,
        begin_timestamp=0,
        end_timestamp=2**62,
    )
    client = RemotingClient()
    try:
        r = await client.invoke(
            addr, RemotingCommand.request(RequestCode.QUERY_MESSAGE, header.to_ext_fields()), 30
        )
    finally:
        await client.close()
    if r.code != ResponseCode.SUCCESS:
        return False
    return any(m.keys == [key_of(n)] for m in decode_records(bytes(r.body)))


def recovery_line(logs: Path) -> re.Match[str] | None:
    """The broker's recovery summary (the last one in its log)."""
    found = None
    for path in sorted(logs.glob("*.log")):
        for line in path.read_text(errors="replace").splitlines():
            found = _RECOVERY.search(line) or found
    return found


def timed_start(workdir: Path, probe: int, procs: list[subprocess.Popen[str]]) -> tuple[Start, str]:
    """Start the broker on the store, send message ``probe`` and pull it back; the time
    from the process start until then, the broker's CPU and its recovery summary."""
    logs = workdir / "logs"
    for log in logs.glob("*.log"):
        log.unlink()
    t0 = time.monotonic()
    proc, addr = start_broker(workdir)
    procs.append(proc)
    run(send_and_pull_back(addr, probe, t0 + 600))
    restart = time.monotonic() - t0
    return Start(restart, broker_cpu(proc.pid), recovery_line(logs)), addr


def measure(size: int, tail: int, console: Console, keep: bool) -> Row:
    """Messages 0..size-1 are the fill, ``size`` the clean restart's probe, the next
    ``tail`` the ones sent before the kill, and the one after them the last probe."""
    workdir = Path(tempfile.mkdtemp(prefix="mq-restart-bench-"))
    if keep:
        console.print(f"  keeping {workdir}")
    procs: list[subprocess.Popen[str]] = []
    try:
        t = time.monotonic()
        fill(workdir / "store", size)
        os.sync()
        console.print(f"  filled {size:,} messages in {time.monotonic() - t:.1f} s")
        clean, addr = timed_start(workdir, size, procs)
        console.print(f"  clean restart {clean.restart_s:.2f} s")
        run(send_tail(addr, size + 1, tail))
        procs[-1].kill()  # SIGKILL: the abort file stays
        procs[-1].wait(10)
        store_mib = (
            sum(p.stat().st_blocks * 512 for p in (workdir / "store" / "commitlog").iterdir())
            / 2**20
        )
        last_acked = size + tail
        killed, addr = timed_start(workdir, last_acked + 1, procs)
        console.print(f"  restart after kill -9 {killed.restart_s:.2f} s")
        found = sum(run(key_found(addr, n)) for n in (0, last_acked))
        return Row(size, store_mib, clean, killed, f"{found}/2")
    finally:
        stop_processes(procs)
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _checked(m: re.Match[str] | None) -> str:
    if m is None:
        return "?"
    span = int(m["end"].replace(",", "")) - int(m["start"].replace(",", ""))
    return f"{span / 2**20:,.1f} MiB" + (" (full)" if "full" in m["how"] else "")


def _how(m: re.Match[str] | None) -> str:
    """What the summary says the check started from, in a few words."""
    if m is None:
        return "?"
    how = m["how"].strip(" ,").split(" (")[0]
    return f"{m['kind']}, {how}" if how else m["kind"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,200000,400000", help="messages, comma-separated")
    parser.add_argument("--tail", type=int, default=2000, help="messages sent before the kill")
    parser.add_argument("--keep", action="store_true", help="keep the stores and broker logs")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    console = Console(width=max(Console().width, 130))
    rows = []
    for size in sizes:
        console.print(f"size {size:,}")
        rows.append(measure(size, args.tail, console, args.keep))
    for title, kind in (
        ("restart after a clean shutdown (1 KiB messages)", "clean"),
        (f"restart after kill -9 (1 KiB messages, {args.tail:,} sent before it)", "killed"),
    ):
        table = Table(title=title)
        for col in (
            "messages",
            "commit log",
            "restart",
            "broker CPU",
            "recovery",
            "how",
            "checked",
            "re-dispatched",
            *(("keys found",) if kind == "killed" else ()),
        ):
            table.add_column(col, justify="right")
        for r in rows:
            start: Start = getattr(r, kind)
            m = start.recovery
            table.add_row(
                f"{r.size:,}",
                f"{r.store_mib:,.0f} MiB",
                f"{start.restart_s:.2f} s",
                f"{start.broker_cpu_s:.2f} s",
                f"{m['seconds']} s" if m is not None else "?",
                _how(m),
                _checked(m),
                m["records"] if m is not None else "?",
                *((r.keys_found,) if kind == "killed" else ()),
            )
        console.print(table)


if __name__ == "__main__":
    main()

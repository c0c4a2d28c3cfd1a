"""Broker throughput over loopback with the broker's CPU use (not a test).

Usage: ``.venv/bin/python bench/broker_bench.py [--messages N] [--inflight K] [--sync]``

Starts ``mq broker`` as a child process on a temporary store, then from this process
(one connection each, raw remoting requests, uvloop when installed):

* send: single SEND_MESSAGE_V2 of 1 KiB bodies, ``--inflight`` requests outstanding;
* batch: SEND_BATCH_MESSAGE of 32 x 1 KiB, ``--inflight`` batches outstanding;
* pull: one client pulls everything back, 32 per PULL_MESSAGE, one pull in flight per
  queue (4 queues).

For each phase: messages/s, MiB/s of bodies, and the CPU seconds the broker process
and this client process used per wall second (from /proc/<pid>/stat and os.times).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

from procs import start_broker
from rich.console import Console
from rich.table import Table

from mqcore.message.properties import encode_properties
from mqcore.message.record import encode_batch_body
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    PullSysFlag,
    SendMessageRequestHeader,
)
from mqcore.remoting import RemotingClient, run

BODY = b"x" * 1024
TOPIC = "BrokerBench"
QUEUES = 4
BATCH = 32
_TICK = os.sysconf("SC_CLK_TCK")


def broker_cpu(pid: int) -> float:
    """utime + stime of ``pid`` in seconds (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def self_cpu() -> float:
    t = os.times()
    return t.user + t.system


def send_header(queue_id: int, batch: bool) -> dict[str, str]:
    return (
        SendMessageRequestHeader(
            producer_group="bench",
            topic=TOPIC,
            default_topic="TBW102",
            default_topic_queue_nums=QUEUES,
            queue_id=queue_id,
            sys_flag=0,
            born_timestamp=int(time.time() * 1000),
            flag=0,
            properties=encode_properties({"WAIT": "true", "TAGS": "bench"}).decode(),
            batch=batch,
        )
        .to_v2()
        .to_ext_fields()
    )


async def pipelined(
    client: RemotingClient, addr: str, requests: int, inflight: int, make: object
) -> None:
    """Send ``requests`` requests keeping ``inflight`` outstanding; every answer must be 0."""
    assert callable(make)
    sem = asyncio.Semaphore(inflight)
    failures: list[str] = []

    async def one(i: int) -> None:
        try:
            r = await client.invoke(addr, make(i), 30)
            if r.code != ResponseCode.SUCCESS:
                failures.append(f"{r.code} {r.remark}")
        finally:
            sem.release()

    tasks = []
    for i in range(requests):
        await sem.acquire()
        tasks.append(asyncio.ensure_future(one(i)))
    await asyncio.gather(*tasks)
    if failures:
        raise SystemExit(f"{len(failures)} sends failed, e.g. {failures[0]}")


async def pull_all(client: RemotingClient, addr: str, expected: int) -> int:
    got = 0

    async def queue(q: int) -> int:
        offset, count = 0, 0
        while True:
            header = PullMessageRequestHeader(
                consumer_group="bench-consumer",
                topic=TOPIC,
                queue_id=q,
                queue_offset=offset,
                max_msg_nums=32,
                sys_flag=PullSysFlag.SUBSCRIPTION,
                commit_offset=0,
                suspend_timeout_millis=0,
                sub_version=0,
                subscription="*",
            )
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields()), 30
            )
            if r.code != ResponseCode.SUCCESS:
                return count
            h = PullMessageResponseHeader.from_command(r)
            count += h.next_begin_offset - offset
            offset = h.next_begin_offset

    for n in await asyncio.gather(*(queue(q) for q in range(QUEUES))):
        got += n
    if got != expected:
        raise SystemExit(f"pulled {got} messages, expected {expected}")
    return got


async def bench(
    addr: str, pid: int, messages: int, inflight: int
) -> list[tuple[str, int, float, float, float]]:
    rows: list[tuple[str, int, float, float, float]] = []
    client = RemotingClient()
    try:
        # warm-up: create the topic, open the connection
        await pipelined(
            client,
            addr,
            100,
            8,
            lambda i: RemotingCommand.request(
                RequestCode.SEND_MESSAGE_V2, send_header(i % QUEUES, False), BODY
            ),
        )

        async def phase(name: str, count: int, coro: object) -> None:
            b0, c0, t0 = broker_cpu(pid), self_cpu(), time.perf_counter()
            await coro  # type: ignore[misc]
            dt = time.perf_counter() - t0
            rows.append((name, count, dt, (broker_cpu(pid) - b0) / dt, (self_cpu() - c0) / dt))

        singles = [send_header(q, False) for q in range(QUEUES)]
        await phase(
            f"send 1 KiB, {inflight} in flight",
            messages,
            pipelined(
                client,
                addr,
                messages,
                inflight,
                lambda i: RemotingCommand.request(
                    RequestCode.SEND_MESSAGE_V2, singles[i % QUEUES], BODY
                ),
            ),
        )
        batch_body = encode_batch_body([(0, BODY, {"TAGS": "bench"})] * BATCH)
        batches = [send_header(q, True) for q in range(QUEUES)]
        n_batches = messages // BATCH
        await phase(
            f"batch of {BATCH} x 1 KiB, {min(inflight, 16)} in flight",
            n_batches * BATCH,
            pipelined(
                client,
                addr,
                n_batches,
                min(inflight, 16),
                lambda i: RemotingCommand.request(
                    RequestCode.SEND_BATCH_MESSAGE, batches[i % QUEUES], batch_body
                ),
            ),
        )
        total = 100 + messages + n_batches * BATCH
        puller = RemotingClient()
        try:
            await phase(f"pull 32/request, {QUEUES} queues", total, pull_all(puller, addr, total))
        finally:
            await puller.close()
    finally:
        await client.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--inflight", type=int, default=64)
    parser.add_argument("--sync", action="store_true", help="SYNC_FLUSH broker")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="mq-broker-bench-"))
    proc, addr = start_broker(
        workdir,
        flushDiskType="SYNC_FLUSH" if args.sync else "ASYNC_FLUSH",
        mappedFileSizeCommitLog=256 * 1024 * 1024,
    )
    try:
        rows = run(bench(addr, proc.pid, args.messages, args.inflight))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        shutil.rmtree(workdir, ignore_errors=True)
    table = Table(title=f"broker over loopback ({'SYNC' if args.sync else 'ASYNC'}_FLUSH)")
    for col in ("phase", "messages", "msgs/s", "MiB/s", "broker CPU", "client CPU"):
        table.add_column(col, justify="left" if col == "phase" else "right")
    for name, count, dt, bcpu, ccpu in rows:
        table.add_row(
            name,
            f"{count:,}",
            f"{count / dt:,.0f}",
            f"{count * len(BODY) / dt / 2**20:,.1f}",
            f"{bcpu:.0%}",
            f"{ccpu:.0%}",
        )
    Console().print(table)


if __name__ == "__main__":
    main()

"""Store append/read throughput next to this machine's mmap ceiling (not a test).

Usage: ``.venv/bin/python bench/store_bench.py [--messages N] [--dir DIR]``

Rows: appends/s and MiB/s for 1 KiB-body messages, single puts and batches of 32, with
ASYNC_FLUSH and SYNC_FLUSH (SYNC waits for the group commit of every put/batch, with 16
producer threads for single puts), and reads/s through the consume queue (pulls of 32
records as memoryviews). The ceiling is a bare Python loop copying the same encoded
record bytes into a fresh file-backed mmap, measured in the same run; "ratio" is a row's
appends/s over the ceiling's.
"""

from __future__ import annotations

import argparse
import mmap
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from mqcore.message.model import MessageExt
from mqcore.message.record import encode_record
from mqcore.store import FlushDiskType, GetStatus, MessageStore, MessageStoreConfig

BODY = b"x" * 1024
TOPIC = "BenchTopic"
BATCH = 32
THREADS = 16


def _msg(queue_id: int = 0) -> MessageExt:
    return MessageExt(
        topic=TOPIC,
        body=BODY,
        queue_id=queue_id,
        properties={"TAGS": "TagA"},
        born_timestamp=int(time.time() * 1000),
        born_host=("127.0.0.1", 50000),
        store_host=("127.0.0.1", 10911),
    )


def _store(root: Path, flush: FlushDiskType) -> MessageStore:
    cfg = MessageStoreConfig(store_path_root_dir=str(root), flush_disk_type=flush)
    store = MessageStore(cfg)
    store.start()
    return store


def ceiling(n: int, record: bytes, root: Path) -> float:
    """Seconds for a bare loop copying ``record`` n times into a sparse file's mmap."""
    size = n * len(record) + 4096
    path = root / "ceiling.bin"
    with open(path, "wb") as f:
        f.truncate(size)
    fd = os.open(path, os.O_RDWR)
    mm = mmap.mmap(fd, size)
    os.close(fd)
    rec_len = len(record)
    pos = 0
    t0 = time.perf_counter()
    for _ in range(n):
        mm[pos : pos + rec_len] = record
        pos += rec_len
    elapsed = time.perf_counter() - t0
    mm.close()
    path.unlink()
    return elapsed


def run_single(store: MessageStore, n: int, wait: bool, threads: int = 1) -> float:
    msg = _msg()

    def work(count: int) -> None:
        for _ in range(count):
            res = store.put_message(msg)
            if wait:
                res.wait(10)

    t0 = time.perf_counter()
    if threads == 1:
        work(n)
    else:
        ts = [threading.Thread(target=work, args=(n // threads,)) for _ in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    return time.perf_counter() - t0


def run_batch(store: MessageStore, n: int, wait: bool) -> float:
    batch = [_msg() for _ in range(BATCH)]
    t0 = time.perf_counter()
    for _ in range(n // BATCH):
        res = store.put_messages(batch)
        if wait:
            res.wait(10)
    return time.perf_counter() - t0


def run_reads(store: MessageStore) -> tuple[int, float]:
    offset, count = 0, 0
    t0 = time.perf_counter()
    while True:
        got = store.get_messages(TOPIC, 0, offset, 32)
        if got.status is not GetStatus.FOUND:
            break
        count += got.message_count
        offset = got.next_begin_offset
    return count, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000, help="messages per ASYNC row")
    ap.add_argument("--dir", type=Path, default=None, help="scratch directory (default: tmp)")
    args = ap.parse_args()
    n = args.messages - args.messages % BATCH
    n_sync = max(BATCH * 4, n // 10)
    base = Path(tempfile.mkdtemp(prefix="mq-bench-", dir=args.dir))
    record = bytes(encode_record(topic=TOPIC, body=BODY, properties={"TAGS": "TagA"}, queue_id=0))
    rows: list[tuple[str, int, float]] = []
    console = Console(width=120)
    scenarios: list[tuple[str, int, Callable[[Path], float]]] = [
        ("ceiling: bare mmap copy loop", n, lambda d: ceiling(n, record, d)),
        (
            "single put, ASYNC_FLUSH",
            n,
            lambda d: _timed(d, FlushDiskType.ASYNC_FLUSH, lambda s: run_single(s, n, False)),
        ),
        (
            f"batch of {BATCH}, ASYNC_FLUSH",
            n,
            lambda d: _timed(d, FlushDiskType.ASYNC_FLUSH, lambda s: run_batch(s, n, False)),
        ),
        (
            "single put, SYNC_FLUSH (16 threads, wait)",
            n_sync,
            lambda d: _timed(
                d, FlushDiskType.SYNC_FLUSH, lambda s: run_single(s, n_sync, True, THREADS)
            ),
        ),
        (
            f"batch of {BATCH}, SYNC_FLUSH (wait)",
            n_sync,
            lambda d: _timed(d, FlushDiskType.SYNC_FLUSH, lambda s: run_batch(s, n_sync, True)),
        ),
    ]
    reads: tuple[int, float] = (0, 0.0)
    try:
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("benchmarking", total=len(scenarios) + 1)
            for name, count, fn in scenarios:
                d = base / f"s{len(rows)}"
                d.mkdir()
                rows.append((name, count, fn(d)))
                if name.startswith(f"batch of {BATCH}, ASYNC"):
                    store = MessageStore(MessageStoreConfig(store_path_root_dir=str(d)))
                    store.start()
                    try:
                        reads = run_reads(store)
                    finally:
                        store.shutdown()
                shutil.rmtree(d, ignore_errors=True)
                progress.advance(task)
            progress.advance(task)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    ceil_rate = rows[0][1] / rows[0][2]
    table = Table(title=f"mq store bench: 1 KiB bodies, record {len(record)} B")
    for col in ("scenario", "messages", "appends/s", "MiB/s", "ratio to ceiling"):
        table.add_column(col, justify="left" if col == "scenario" else "right")
    for name, count, secs in rows:
        rate = count / secs
        table.add_row(
            name,
            f"{count:,}",
            f"{rate:,.0f}",
            f"{rate * len(record) / 2**20:,.1f}",
            f"{rate / ceil_rate:.2f}",
        )
    count, secs = reads
    if secs:
        rate = count / secs
        table.add_row(
            "reads via consume queue (32/pull)",
            f"{count:,}",
            f"{rate:,.0f} reads/s",
            f"{rate * len(record) / 2**20:,.1f}",
            "-",
        )
    console.print(table)


def _timed(root: Path, flush: FlushDiskType, body: Callable[[MessageStore], float]) -> float:
    store = _store(root, flush)
    try:
        return body(store)
    finally:
        store.shutdown()


if __name__ == "__main__":
    main()

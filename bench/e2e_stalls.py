"""Where W4's late messages come from (not a test).

Usage: ``.venv/bin/python bench/e2e_stalls.py [--count 10000] [--interval-ms 1]
[--late-ms 3] [--skip 100] [--json]``

The peers harness's W4 shape, with the same adapter (``peers_adapter.MqAdapter``:
``mq namesrv`` + ``mq broker`` on loopback, a fresh topic of 8 queues): message i is
sent at t0 + i * interval, acks pipelined (64 in flight); a ``LitePullConsumer`` in a
forked process receives them. For every message it keeps three clocks (one
``CLOCK_MONOTONIC``): when it was built, when its send was acknowledged, when the
consumer got it. Then:

- p50 / p99 / p99.9 of end to end and of the acknowledgement, over all messages and
  after the first ``--skip`` (the consumer's and the connections' warm-up);
- the runs of consecutive messages later than ``--late-ms``, with when they began
  (ms after the first send): a late acknowledgement too points at the broker or the
  sending process, a late receive alone at the consumer; runs at a fixed period point
  at a periodic job (the broker's flush services run every 500 ms and 1 s);
- the garbage collections of the sending process longer than 1 ms, with when.

The figures move with whatever else the machine runs: compare runs of one session.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing
import struct
import time
from multiprocessing.connection import Connection
from typing import Any

from peers_adapter import MqAdapter

_HDR = struct.Struct(">QQ")
_clock = time.perf_counter_ns


def _consumer(count: int, ready: Any, conn: Connection) -> None:
    adapter = MqAdapter("", {})
    adapter.connect()
    received: list[tuple[int, int]] = []

    def on_message(body: bytes) -> None:
        received.append((_HDR.unpack_from(body)[0], _clock()))

    ready.set()
    adapter.consume(count, on_message, 120)
    adapter.close()
    conn.send(received)
    conn.close()


def _pct(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--interval-ms", type=float, default=1.0)
    parser.add_argument("--late-ms", type=float, default=3.0, help="a message later is late")
    parser.add_argument("--skip", type=int, default=100, help="warm-up messages left out")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    pauses: list[tuple[int, int, int]] = []
    began = [0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began[0] = _clock()
        else:
            pauses.append((began[0], _clock() - began[0], info["generation"]))

    adapter = MqAdapter("", {})
    adapter.connect()
    try:
        adapter.reset()
        ctx = multiprocessing.get_context("fork")
        ready = ctx.Event()
        parent_conn, child_conn = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_consumer, args=(args.count, ready, child_conn))
        proc.start()
        child_conn.close()
        if not ready.wait(60):
            raise SystemExit("the consumer did not start in 60 s")
        time.sleep(0.5)  # as the harness: let the subscription settle
        acks: dict[int, int] = {}
        sent: dict[int, int] = {}
        filler = b"x" * (1024 - _HDR.size)

        async def paced() -> None:
            from mqcore.client.producer import make_message

            sem = asyncio.Semaphore(64)
            pending: set[asyncio.Future[None]] = set()

            async def one(i: int, body: bytes) -> None:
                try:
                    result = await adapter.producer.send(make_message(adapter.topic, body))
                    if result.ok:
                        acks[i] = _clock()
                finally:
                    sem.release()

            t0 = time.perf_counter()
            for i in range(args.count):
                wait = t0 + i * args.interval_ms / 1000 - time.perf_counter()
                if wait > 0:
                    await asyncio.sleep(wait)
                await sem.acquire()
                sent[i] = now = _clock()
                task = asyncio.ensure_future(one(i, _HDR.pack(i, now) + filler))
                pending.add(task)
                task.add_done_callback(pending.discard)
            await asyncio.gather(*pending)

        gc.callbacks.append(on_gc)
        try:
            adapter.lt.run(paced(), args.count * args.interval_ms / 1000 * 3 + 30)
        finally:
            gc.callbacks.remove(on_gc)
        if not parent_conn.poll(120):
            raise SystemExit("the consumer sent no result")
        received = dict(parent_conn.recv())
        proc.join(10)
    finally:
        adapter.close()

    first = sent.get(0, 0)
    rows = sorted(
        (i, sent[i], acks.get(i, 0), received[i]) for i in received if i in sent and i in acks
    )
    report: dict[str, Any] = {
        "count": args.count,
        "received": len(received),
        "acked": len(acks),
    }
    for label, subset in (("all", rows), ("after_skip", rows[args.skip :])):
        e2e = sorted((r - s) / 1000 for _, s, _, r in subset)
        ack = sorted((a - s) / 1000 for _, s, a, _ in subset)
        report[label] = {
            "e2eUs": {
                q: round(_pct(e2e, f), 1)
                for q, f in (("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999))
            },
            "ackUs": {
                q: round(_pct(ack, f), 1)
                for q, f in (("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999))
            },
        }
    runs: list[dict[str, float]] = []
    late_ns = args.late_ms * 1e6
    for i, s, a, r in rows:
        if r - s <= late_ns:
            continue
        if runs and runs[-1]["last"] == i - 1:
            run = runs[-1]
            run["last"] = i
            run["worstE2eMs"] = max(run["worstE2eMs"], round((r - s) / 1e6, 2))
            run["worstAckMs"] = max(run["worstAckMs"], round((a - s) / 1e6, 2))
        else:
            runs.append(
                {
                    "first": i,
                    "last": i,
                    "atMs": round((s - first) / 1e6, 1),
                    "worstE2eMs": round((r - s) / 1e6, 2),
                    "worstAckMs": round((a - s) / 1e6, 2),
                }
            )
    report["lateRuns"] = runs
    report["gcPausesOver1Ms"] = [
        {"atMs": round((t - first) / 1e6, 1), "ms": round(d / 1e6, 1), "generation": g}
        for t, d, g in pauses
        if d > 1_000_000 and t >= first
    ]
    if args.json:
        print(json.dumps(report, indent=1))
        return
    for label in ("all", "after_skip"):
        part = report[label]
        print(
            f"{label:>10}: e2e p50/p99/p99.9 "
            + " / ".join(f"{v:,.0f}" for v in part["e2eUs"].values())
            + " µs; ack "
            + " / ".join(f"{v:,.0f}" for v in part["ackUs"].values())
            + " µs"
        )
    print(f"runs of messages later than {args.late_ms} ms: {len(runs)}")
    for run in runs:
        if run["last"] - run["first"] >= 2:
            print(
                f"  {run['first']:>6}-{run['last']:<6} at {run['atMs']:>8,.1f} ms: "
                f"worst e2e {run['worstE2eMs']:.1f} ms, worst ack {run['worstAckMs']:.1f} ms"
            )
    for pause in report["gcPausesOver1Ms"]:
        print(f"  sender GC gen{pause['generation']} at {pause['atMs']:,.1f} ms: {pause['ms']} ms")


if __name__ == "__main__":
    main()

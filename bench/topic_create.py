"""Topic creation cost: UPDATE_AND_CREATE_TOPIC (code 17) latency against the table size.

A name server and a broker run as `mq` processes on ephemeral loopback ports, in a
temporary directory. The script creates topics one by one (each waits for its answer,
as ``mqadmin updateTopic`` in a loop does) and prints, at each count of ``--counts``,
the creates per second and p50/p99 latency of the last ``--window`` creates. At the end
it asks the name server for its topic list: every topic created must be routed.

``--prefill`` writes ``topics.json`` with each count's topics before the broker starts
and measures ``--window`` creates on top, one broker per count: the figures for 10,000
topics without creating 10,000 first (quick, and the only way to measure a slow build).
``--batch N`` creates with UPDATE_AND_CREATE_TOPIC_LIST (code 18), N topics a request.

    .venv/bin/python bench/topic_create.py [--counts 1000,2000,5000,10000] [--window 200]
        [--prefill] [--batch N] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from procs import stop_processes

from mqcore.common.metadata import TopicConfig
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import TopicList
from mqcore.protocol.bodies.topic_admin import CreateTopicListRequestBody
from mqcore.protocol.headers import CreateTopicRequestHeader
from mqcore.remoting import RemotingClient
from mqcore.store.metadata import TopicConfigManager

_LISTENING = re.compile(r"listening on (\S+):(\d+)")
_MQ = [sys.executable, "-m", "mqcli.main"]


@contextmanager
def _server(args: list[str], workdir: Path, pattern: str) -> Iterator[str]:
    """``mq ARGS`` until its "<pattern> listening on HOST:PORT" line; stopped after."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(workdir)}
    env.pop("NAMESRV_ADDR", None)
    with open(workdir / "stderr.txt", "ab") as err:
        proc = subprocess.Popen([*_MQ, *args], stdout=subprocess.PIPE, stderr=err, env=env)
    assert proc.stdout is not None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
            line = proc.stdout.readline().decode(errors="replace") if ready else ""
            if not line:
                raise SystemExit(f"{args[0]} did not start; see {workdir / 'stderr.txt'}")
            if pattern in line and (m := _LISTENING.search(line)):
                yield f"{m.group(1)}:{m.group(2)}"
                break
        else:
            raise SystemExit(f"{args[0]} did not start within 120 s")
    finally:
        stop_processes([proc], grace=30)
        proc.stdout.close()


def _props(path: Path, settings: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    return path


@contextmanager
def _cluster(workdir: Path, extra: dict[str, str]) -> Iterator[tuple[str, str]]:
    """A name server and broker-a; yields (name server, broker) addresses."""
    ns_conf = _props(
        workdir / "namesrv.properties",
        {"kvConfigPath": str(workdir / "ns" / "kv.json"), "logDir": str(workdir / "ns" / "logs")},
    )
    with _server(
        ["namesrv", "-c", str(ns_conf), "--listen", "127.0.0.1:0"], workdir / "ns", "namesrv"
    ) as namesrv:
        conf = _props(
            workdir / "broker.conf",
            {
                "brokerName": "broker-a",
                "brokerIP1": "127.0.0.1",
                "namesrvAddr": namesrv,
                "storePathRootDir": str(workdir / "store"),
                "logDir": str(workdir / "broker" / "logs"),
                "mappedFileSizeCommitLog": str(4 * 1024 * 1024),
                **extra,
            },
        )
        args = ["broker", "-c", str(conf), "--listen", "127.0.0.1:0"]
        with _server(args, workdir / "broker", "mq broker") as broker:
            yield namesrv, broker


def _create_request(topic: str) -> RemotingCommand:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=4,
        write_queue_nums=4,
        perm=6,
        topic_filter_type="SINGLE_TAG",
    )
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())


def _batch_request(topics: list[str]) -> RemotingCommand:
    body = CreateTopicListRequestBody([TopicConfig(t, 4, 4) for t in topics]).encode()
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=body)


async def _create(client: RemotingClient, broker: str, request: RemotingCommand) -> float:
    """Seconds until the broker answered SUCCESS."""
    began = time.perf_counter()
    response = await client.invoke(broker, request, 30.0)
    if response.code != ResponseCode.SUCCESS:
        raise SystemExit(f"create refused: {response.code} {response.remark}")
    return time.perf_counter() - began


def _row(count: int, latencies: list[float], seconds: float, per_request: int) -> str:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    rate = len(latencies) * per_request / seconds
    return (
        f"{count:>7,} {rate:>10,.0f} {statistics.median(ordered) * 1000:>9.2f} {p99 * 1000:>9.2f}"
    )


async def _routed(client: RemotingClient, namesrv: str) -> set[str]:
    request = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    response = await client.invoke(namesrv, request, 30.0)
    return TopicList.decode(response.body).topic_list


async def _routed_within(
    client: RemotingClient, namesrv: str, wanted: set[str], seconds: float
) -> int:
    deadline = time.monotonic() + seconds
    while True:
        missing = wanted - await _routed(client, namesrv)
        if not missing or time.monotonic() > deadline:
            return len(missing)
        await asyncio.sleep(0.2)


async def one_by_one(namesrv: str, broker: str, counts: list[int], window: int, batch: int) -> None:
    """Create up to ``max(counts)`` topics, timing each request; a row per count."""
    async with RemotingClient() as client:
        made: list[str] = []
        latencies: list[float] = []
        window_began = time.perf_counter()
        target = max(counts)
        while len(made) < target:
            names = [f"BenchTopic{len(made) + i}" for i in range(min(batch, target - len(made)))]
            request = _create_request(names[0]) if batch == 1 else _batch_request(names)
            latencies.append(await _create(client, broker, request))
            made += names
            if len(made) in counts:
                taken = latencies[-max(1, window // batch) :]
                print(_row(len(made), taken, sum(taken), batch), flush=True)
            if len(latencies) > 10 * window:
                latencies = latencies[-window:]
        print(f"run: {len(made):,} topics in {time.perf_counter() - window_began:.1f} s")
        missing = await _routed_within(client, namesrv, set(made), 40)
        print(f"name server routes {len(made) - missing:,} of {len(made):,} created topics")


def _prefill(store: Path, count: int) -> None:
    manager = TopicConfigManager(store)
    for i in range(count):
        manager.update(TopicConfig(f"Prefilled{i}", 4, 4))
    manager.persist()


async def on_top(namesrv: str, broker: str, count: int, window: int) -> None:
    async with RemotingClient() as client:
        latencies = [
            await _create(client, broker, _create_request(f"BenchTopic{i}")) for i in range(window)
        ]
        print(_row(count, latencies, sum(latencies), 1), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="1000,2000,5000,10000")
    parser.add_argument("--window", type=int, default=200, help="creates per figure")
    parser.add_argument("--prefill", action="store_true", help="topics.json written first")
    parser.add_argument("--batch", type=int, default=1, help="topics per request (code 18)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--set", action="append", default=[], help="broker.conf key=value")
    args = parser.parse_args()
    counts = sorted(int(c) for c in args.counts.split(","))
    extra = dict(kv.split("=", 1) for kv in args.set)
    workdir = Path(tempfile.mkdtemp(prefix="topic-create-"))
    print(f"{'topics':>7} {'creates/s':>10} {'p50 ms':>9} {'p99 ms':>9}")
    try:
        if args.prefill:
            for count in counts:
                run = workdir / f"n{count}"
                _prefill(run / "store", count)
                with _cluster(run, extra) as (namesrv, broker):
                    asyncio.run(on_top(namesrv, broker, count, args.window))
        else:
            with _cluster(workdir, extra) as (namesrv, broker):
                asyncio.run(one_by_one(namesrv, broker, counts, args.window, args.batch))
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

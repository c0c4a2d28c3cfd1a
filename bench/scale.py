"""Scale, side by side with the real RocketMQ 4.9.8: restart, topic creation, sends during creates.

Usage (RocketMQ 4.9.8 from ``../shared/tools/rmq-real/build.sh``, in ``$HOME/rmq-real``)::

    .venv/bin/python bench/scale.py [--systems mq,rocketmq] [--sizes 1000000,2000000,4000000]
        [--topics 10000] [--tail 2000] [--burst 1000] [--burst-rate 0] [--rounds 3]
        [--rest 10] [--send-rate 1000] [--phases restart,topics] [--dir DIR] [--keep] [--json]

For each system of ``--systems`` (``mq``: ``mq namesrv`` + ``mq broker``; ``rocketmq``:
the Java NameServer and Broker of 4.9.8, ``-Xms512m -Xmx512m`` for the broker), with the
same broker.conf keys (ASYNC_MASTER, ASYNC_FLUSH, 1 GiB commit log files):

1. **Restart after kill -9 by store size.** For each size N of ``--sizes``, N keyed
   1 KiB messages (a KEYS key and a UNIQ_KEY each, 4 queues) are written once through
   mq's MessageStore API, as ``bench/restart.py`` does, and the store is copied for each
   system (``cp -a --reflink=auto``; a 4.9.8 broker boots on a store mq wrote). The
   system's broker starts on its copy (not timed), ``--tail`` more messages are sent over
   the network, and the broker is killed with SIGKILL right after the last
   acknowledgement. It is started again; the clock runs from the process start until a
   new message is acknowledged (SEND_OK) and pulled back. Also shown: when the broker
   printed its ready line, its CPU seconds until then, what its store log says recovery
   checked, whether the first message of the fill and the last one acknowledged before
   the kill are still found by key (QUERY_MESSAGE), and its RSS. "Clean start" is when
   the first (untimed) start, on the freshly written and cleanly shut down store,
   printed its ready line. Stores are deleted after each size (unless ``--keep``); the
   free disk space is checked first.
2. **Topic creation up to ``--topics``** on a fresh store with a name server:
   UPDATE_AND_CREATE_TOPIC (17), 4 queues, one at a time, each waiting for its answer
   (``mqadmin updateTopic`` in a loop). Creates/s and p50/p99 of the last 200 creates
   before 1/10, 1/2 and all of ``--topics`` existing topics; at the end, how many of
   them the name server routes.
3. **Sends during a burst of creates**, on that broker: one process sends 128-byte
   messages (SEND_MESSAGE_V2, sync, one in flight, paced at ``--send-rate`` a second, 0
   for as fast as the answers come), latency p50/p99 over ``--rest`` seconds at rest,
   then while ``--burst`` more topics are created one by one; the ratio of the two p99.
   ``--rounds`` such rest + burst pairs on the same broker (the table grows by
   ``--burst`` each), each shown, with the median ratio: one p99 of a few thousand sends
   moves by tens of percent between runs on a machine that is not idle.
   ``--burst-rate`` paces the burst's creates (each system compared at the same pace
   of creates: unpaced, a system that creates faster packs more work into each second).
4. **Broker RSS** (VmRSS, and RssAnon: the part that is not mapped store files) at the
   end of each phase.

Every process runs in a private network namespace holding only loopback (when the script
may create one, e.g. as root; else on free loopback ports), and every process the
script starts is stopped on exit, also on failure or Ctrl-C. Progress goes to stderr;
tables to stdout (with ``--json``: one JSON object to stdout, the tables to stderr).

Small sizes for a trial: ``--sizes 20000,40000,80000 --topics 500``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import fcntl
import json
import math
import multiprocessing
import os
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from procs import stop_processes
from restart import (
    BATCH,
    QUEUES,
    TOPIC,
    broker_cpu,
    key_found,
    keyed_batch,
    send_and_pull_back,
    send_tail,
)
from restart import recovery_line as mq_recovery_line
from rich.console import Console
from rich.table import Table

from mqcore.common.metadata import TopicConfig
from mqcore.message.properties import encode_properties
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import TopicList
from mqcore.protocol.headers import CreateTopicRequestHeader, SendMessageRequestHeader
from mqcore.remoting import RemotingClient, run
from mqcore.store import MessageStore, MessageStoreConfig
from mqcore.store.metadata import TopicConfigManager

RMQ = Path(os.environ.get("RMQ_HOME", Path.home() / "rmq-real"))
SYSTEM_NAMES = {"mq": "mq", "rocketmq": "RocketMQ 4.9.8"}
BYTES_PER_MESSAGE = 1300  # commit log record + consume queue + two index entries, rounded up
SEND_TOPIC = "ScaleSend"
SEND_BODY = b"s" * 128
_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_RMQ_RECOVER_FROM = re.compile(r"recover from this mapped file .*?(\d{20})")
_RMQ_MAX_PHY = re.compile(r"load over, and the max phy offset = (\d+)")
_RMQ_INDEX_DELETED = re.compile(r"delete file\[.*?/index/\d+ OK")
_T0 = time.monotonic()
_err = Console(stderr=True, highlight=False)


def say(text: str) -> None:
    """A progress line on stderr, with the seconds since the script started."""
    _err.print(f"[{time.monotonic() - _T0:7.1f}s] {text}", markup=False)


# -- processes and network ------------------------------------------------------------------


def private_network() -> bool:
    """Move this process (and so every child it starts) into a new network namespace
    with loopback up; False where that is not permitted. Call before any thread."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNET) != 0:
        return False
    with socket.socket() as s:
        ifr = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, _SIOCGIFFLAGS, ifr))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))
    return True


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pick_ports(private: bool) -> tuple[int, int]:
    """(name server, broker) ports: RocketMQ's defaults in a private namespace, else free
    ones (a 4.9.8 broker also listens on its port - 2 and + 1)."""
    if private:
        return 9876, 10911
    for base in range(21000, 60000, 17):
        if all(_port_free(p) for p in (base, base + 3, base + 4, base + 5, base + 6)):
            return base, base + 5
    raise SystemExit("no free loopback ports found")


class Server:
    """One server process. Its output goes to ``log``; a thread notes the moment the
    ready line first appears (``ready_at``, on the clock of ``started``)."""

    def __init__(
        self, name: str, cmd: list[str], log: Path, ready: str, env: dict[str, str], cwd: Path
    ) -> None:
        self.name = name
        self.log = log
        self.ready_at: float | None = None
        self._pattern = re.compile(ready)
        self._seen = threading.Event()
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd
        )
        self._pump_thread = threading.Thread(target=self._pump, daemon=True)
        self._pump_thread.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        with open(self.log, "ab") as out:
            for line in self.proc.stdout:
                if self.ready_at is None and self._pattern.search(line.decode(errors="replace")):
                    self.ready_at = time.monotonic()
                    self._seen.set()
                out.write(line)
                out.flush()
        self._seen.set()

    def wait_ready(self, timeout: float) -> None:
        if not self._seen.wait(timeout) or self.ready_at is None:
            raise RuntimeError(f"{self.name} did not start within {timeout:.0f} s; see {self.log}")

    def ready_seconds(self, wait: float = 5.0) -> float | None:
        self._seen.wait(wait)
        return None if self.ready_at is None else self.ready_at - self.started

    def kill(self) -> None:
        """SIGKILL, as a crash: the abort file stays."""
        self.proc.kill()
        self.proc.wait(30)


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, RssAnon) of ``pid`` in KiB."""
    found = {"VmRSS:": 0, "RssAnon:": 0}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":", 1)[0] + ":"
        if key in found:
            found[key] = int(line.split()[1])
    return found["VmRSS:"], found["RssAnon:"]


def _java_env() -> tuple[str, list[str]]:
    """RMQ_CP and RMQ_JOPTS from rmq-real/env.sh."""
    if not (RMQ / "env.sh").exists():
        raise SystemExit(
            f"no RocketMQ 4.9.8 build at {RMQ}: run ../shared/tools/rmq-real/build.sh "
            "(or set RMQ_HOME), or pass --systems mq"
        )
    out = subprocess.run(
        ["bash", "-c", f'. "{RMQ}/env.sh" >/dev/null; printf "%s\\n%s" "$RMQ_CP" "$RMQ_JOPTS"'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    return out[0], out[1].split()


class Lab:
    """Starts the systems' servers on the chosen ports and stops every one of them."""

    def __init__(self, systems: Sequence[str], ports: tuple[int, int], file_size: int) -> None:
        self.file_size = file_size
        self.namesrv_port, self.broker_port = ports
        self.servers: list[Server] = []
        self.cp, self.jopts = _java_env() if "rocketmq" in systems else ("", [])

    @property
    def broker_addr(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    def _java(self, cls: str, home: Path, heap: str, *args: str) -> list[str]:
        # user.home after RMQ_JOPTS: the logs of this run go under ``home``
        return [
            "java",
            f"-Xms{heap}",
            f"-Xmx{heap}",
            *self.jopts,
            f"-Duser.home={home}",
            "-cp",
            self.cp,
            cls,
            *args,
        ]

    def _spawn(self, name: str, cmd: list[str], run_dir: Path, ready: str) -> Server:
        run_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "HOME": str(run_dir)}
        env.pop("NAMESRV_ADDR", None)
        server = Server(name, cmd, run_dir / "out.txt", ready, env, run_dir)
        self.servers.append(server)
        return server

    def start_namesrv(self, system: str, run_dir: Path) -> Server:
        run_dir.mkdir(parents=True, exist_ok=True)
        props = run_dir / "namesrv.properties"
        if system == "mq":
            props.write_text(f"kvConfigPath={run_dir / 'kv.json'}\n")
            cmd = [
                *(sys.executable, "-m", "mqcli.main", "namesrv", "-c", str(props)),
                *("--listen", self.namesrv_addr, "--log-dir", str(run_dir / "logs")),
            ]
        else:
            props.write_text(f"listenPort={self.namesrv_port}\n")
            cmd = self._java(
                "org.apache.rocketmq.namesrv.NamesrvStartup", run_dir, "256m", "-c", str(props)
            )
        server = self._spawn(f"{system} namesrv", cmd, run_dir, r"listening on|boot success")
        server.wait_ready(120)
        return server

    def broker_conf(self, path: Path, store: Path, namesrv: bool) -> Path:
        settings = {
            "brokerClusterName": "DefaultCluster",
            "brokerName": "broker-a",
            "brokerId": "0",
            "brokerIP1": "127.0.0.1",
            "listenPort": str(self.broker_port),
            "storePathRootDir": str(store),
            "storePathCommitLog": str(store / "commitlog"),
            "brokerRole": "ASYNC_MASTER",
            "flushDiskType": "ASYNC_FLUSH",
            "autoCreateTopicEnable": "true",
            "mappedFileSizeCommitLog": str(self.file_size),
        }
        if namesrv:
            settings["namesrvAddr"] = self.namesrv_addr
        path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        return path

    def start_broker(self, system: str, conf: Path, run_dir: Path) -> Server:
        """Started, not waited for: the caller times it."""
        if system == "mq":
            cmd = [
                *(sys.executable, "-m", "mqcli.main", "broker", "-c", str(conf)),
                *("--listen", self.broker_addr, "--log-dir", str(run_dir / "logs")),
            ]
        else:
            cmd = self._java(
                "org.apache.rocketmq.broker.BrokerStartup", run_dir, "512m", "-c", str(conf)
            )
        return self._spawn(f"{system} broker", cmd, run_dir, r"listening on|boot success")

    def stop(self, *servers: Server) -> None:
        stop_processes([s.proc for s in servers])
        for s in servers:
            if s in self.servers:
                self.servers.remove(s)

    def stop_all(self) -> None:
        stop_processes([s.proc for s in reversed(self.servers)])
        self.servers.clear()


# -- phase 1: restart after kill -9 ---------------------------------------------------------


@dataclass
class RestartRow:
    system: str
    messages: int
    commitlog_mib: float
    restart_s: float
    ready_s: float | None
    clean_start_s: float | None
    broker_cpu_s: float
    checked_mib: float | None
    recovery: str
    keys_found: str
    rss_mib: float
    rss_anon_mib: float


def fill(root: Path, count: int, file_size: int) -> None:
    """``count`` keyed 1 KiB messages through the store API (the records of
    bench/restart.py), the topic in topics.json, then a clean shutdown."""
    manager = TopicConfigManager(root)
    manager.update(TopicConfig(TOPIC, QUEUES, QUEUES))
    manager.persist()
    config = MessageStoreConfig(
        store_path_root_dir=str(root), mapped_file_size_commit_log=file_size
    )
    store = MessageStore(config)
    store.start()
    began = last = time.monotonic()
    try:
        for start in range(0, count, BATCH):
            batch = keyed_batch(start, count)
            result = store.put_messages(batch)
            if not result.ok:
                raise SystemExit(f"fill failed at {start}: {result.status}")
            if time.monotonic() - last > 15:
                last = time.monotonic()
                done = start + len(batch)
                say(f"  filled {done:,} of {count:,} ({done / (last - began):,.0f} msgs/s)")
    finally:
        store.shutdown()


def _allocated(path: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


def check_disk(work: Path, size: int, copies: int) -> None:
    """The store of ``size`` messages and ``copies`` of it must fit, with 2 GiB to spare."""
    need = size * BYTES_PER_MESSAGE * (copies + 1) + 2 * 2**30
    free = shutil.disk_usage(work).free
    if free < need:
        raise SystemExit(
            f"{size:,} messages need about {need / 2**30:.1f} GiB in {work}, "
            f"{free / 2**30:.1f} GiB free: use smaller --sizes or another --dir"
        )


def rocketmq_recovery(run_dir: Path) -> tuple[float | None, str]:
    """What 4.9.8's store.log says its recovery checked: from the start of the commit
    log file it recovered from (the first one when it names none) to the end; and how
    many index files it deleted (after a crash, those newer than its checkpoint)."""
    text = "".join(p.read_text(errors="replace") for p in run_dir.rglob("store.log"))
    end = _RMQ_MAX_PHY.findall(text)
    if not end:
        return None, "?"
    start = _RMQ_RECOVER_FROM.findall(text)
    begin = int(start[0]) if start else 0
    how = "abnormal" if "last shutdown abnormally" in text else "normal"
    deleted = len(_RMQ_INDEX_DELETED.findall(text))
    return (int(end[-1]) - begin) / 2**20, (
        f"{how}: from {begin / 2**30:.2f} GiB, {deleted} index file(s) deleted"
    )


def measure_restart(
    lab: Lab, system: str, sysdir: Path, size: int, tail: int, commitlog_mib: float
) -> RestartRow:
    store = sysdir / "store"
    conf = lab.broker_conf(sysdir / "broker.conf", store, namesrv=False)
    first = lab.start_broker(system, conf, sysdir / "run1")
    first.wait_ready(1800)
    say(f"  {system}: broker up on the store in {first.ready_seconds():.1f} s, sending {tail:,}")
    run(send_tail(lab.broker_addr, size, tail))
    first.kill()
    lab.stop(first)
    say(f"  {system}: killed -9 after the last ack; restarting")
    second = lab.start_broker(system, conf, sysdir / "run2")
    run(send_and_pull_back(lab.broker_addr, size + tail, second.started + 1800))
    restart = time.monotonic() - second.started
    cpu = broker_cpu(second.pid)
    found = sum(run(key_found(lab.broker_addr, n)) for n in (0, size + tail - 1))
    rss, anon = rss_kib(second.pid)
    if system == "mq":
        m = mq_recovery_line(sysdir / "run2" / "logs")
        checked = None
        recovery = "?"
        if m is not None:
            span = int(m["end"].replace(",", "")) - int(m["start"].replace(",", ""))
            checked = span / 2**20
            full = " (full)" if "full" in m["how"] else ""
            recovery = f"{m['kind']}{full}: {m['records']} re-dispatched, {m['seconds']} s"
    else:
        checked, recovery = rocketmq_recovery(sysdir / "run2")
    lab.stop(second)
    row = RestartRow(
        system,
        size,
        round(commitlog_mib, 1),
        round(restart, 3),
        None if (r := second.ready_seconds(0)) is None else round(r, 3),
        None if (c := first.ready_seconds(0)) is None else round(c, 3),
        round(cpu, 2),
        None if checked is None else round(checked, 1),
        recovery,
        f"{found}/2",
        round(rss / 1024, 1),
        round(anon / 1024, 1),
    )
    say(f"  {system}: restart {restart:.2f} s, keys {row.keys_found}, RSS {row.rss_mib:,.0f} MiB")
    return row


def restart_phase(
    lab: Lab, work: Path, systems: Sequence[str], sizes: Sequence[int], tail: int, keep: bool
) -> list[RestartRow]:
    rows = []
    for size in sizes:
        check_disk(work, size, 1 if not keep else len(systems))
        base = work / f"restart-{size}"
        master = base / "master" / "store"
        say(f"restart: writing {size:,} messages of 1 KiB through the store API")
        began = time.monotonic()
        fill(master, size, lab.file_size)
        os.sync()  # no writeback of the fill during the measurements
        commitlog = _allocated(master / "commitlog") / 2**20
        say(f"  filled in {time.monotonic() - began:.1f} s, {_allocated(master) / 2**30:.2f} GiB")
        for system in systems:
            sysdir = base / system
            began = time.monotonic()
            sysdir.mkdir(parents=True)
            subprocess.run(["cp", "-a", "--reflink=auto", str(master), str(sysdir)], check=True)
            os.sync()
            say(f"  copied the store for {system} in {time.monotonic() - began:.1f} s")
            rows.append(measure_restart(lab, system, sysdir, size, tail, commitlog))
            if not keep:
                shutil.rmtree(sysdir)
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
    return rows


# -- phase 2: topic creation ----------------------------------------------------------------


@dataclass
class CreateRow:
    system: str
    topics: int
    creates_per_s: float
    p50_ms: float
    p99_ms: float


@dataclass
class TopicsResult:
    system: str
    rows: list[CreateRow]
    created: int
    seconds: float
    routed: int
    rss_mib: float
    rss_anon_mib: float


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of sorted values."""
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def create_request(topic: str) -> RemotingCommand:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=4,
        write_queue_nums=4,
        perm=6,
        topic_filter_type="SINGLE_TAG",
    )
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())


async def create_one(client: RemotingClient, broker: str, topic: str) -> float:
    """Seconds until the broker answered SUCCESS."""
    began = time.perf_counter()
    response = await client.invoke(broker, create_request(topic), 30.0)
    if response.code != ResponseCode.SUCCESS:
        raise SystemExit(f"create {topic} refused: {response.code} {response.remark}")
    return time.perf_counter() - began


async def create_topics(
    system: str,
    broker: str,
    names: Sequence[str],
    marks: Sequence[int],
    window: int,
    rate: float = 0.0,
) -> tuple[list[CreateRow], float]:
    """Create ``names`` one by one, at most ``rate`` a second (0: each as soon as the one
    before is answered); a row at each of ``marks`` (topics created so far)."""
    rows = []
    latencies: list[float] = []
    every = max(1, len(names) // 10)
    async with RemotingClient() as client:
        began = time.perf_counter()
        for i, name in enumerate(names, 1):
            if rate > 0:
                wait = began + (i - 1) / rate - time.perf_counter()
                if wait > 0:
                    await asyncio.sleep(wait)
            latencies.append(await create_one(client, broker, name))
            if i in marks:
                last = sorted(latencies[-window:])
                rows.append(
                    CreateRow(
                        system,
                        i,
                        round(len(last) / sum(last), 1),
                        round(percentile(last, 0.5) * 1000, 2),
                        round(percentile(last, 0.99) * 1000, 2),
                    )
                )
            if i % every == 0:
                last = latencies[-every:]
                say(
                    f"  {system}: {i:,} topics, {len(last) / sum(last):,.0f} creates/s "
                    f"over the last {len(last):,}"
                )
        return rows, time.perf_counter() - began


async def routed(namesrv: str, wanted: set[str], seconds: float) -> int:
    """How many of ``wanted`` the name server lists, waiting up to ``seconds`` for all."""
    request = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    deadline = time.monotonic() + seconds
    async with RemotingClient() as client:
        while True:
            response = await client.invoke(namesrv, request, 30.0)
            have = len(wanted & TopicList.decode(response.body).topic_list)
            if have == len(wanted) or time.monotonic() > deadline:
                return have
            await asyncio.sleep(0.5)


# -- phase 3: sends during a burst of creates -----------------------------------------------


@dataclass
class BurstRow:
    system: str
    topics_before: int
    rest_sends: int
    rest_p50_ms: float
    rest_p99_ms: float
    rest_max_ms: float
    burst_sends: int
    burst_p50_ms: float
    burst_p99_ms: float
    burst_max_ms: float
    p99_ratio: float
    burst_creates: int
    burst_s: float
    failed_sends: int
    rss_mib: float
    rss_anon_mib: float


def _send_request(n: int) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="scale-bench",
        topic=SEND_TOPIC,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=n % 4,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=encode_properties({"UNIQ_KEY": f"S{n:020d}", "TAGS": "scale"}).decode(),
    )
    return RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), SEND_BODY
    )


async def _send_loop(addr: str, rate: float, conn: Connection) -> None:
    starts, latencies = array("d"), array("d")
    failed = 0
    interval = 1 / rate if rate > 0 else 0.0
    async with RemotingClient() as client:
        due = time.monotonic()
        n = 0
        while not conn.poll():
            if interval:
                now = time.monotonic()
                if due > now:
                    await asyncio.sleep(due - now)
                due = max(due + interval, time.monotonic() - interval)
            began = time.monotonic()
            try:
                response = await client.invoke(addr, _send_request(n), 10)
                ok = response.code == ResponseCode.SUCCESS
            except Exception:  # a timeout counts as a failed send
                ok = False
            if ok:
                starts.append(began)
                latencies.append(time.monotonic() - began)
            else:
                failed += 1
            if n == 0:
                conn.send("ready")
            n += 1
    conn.recv()
    conn.send_bytes(starts.tobytes())
    conn.send_bytes(latencies.tobytes())
    conn.send(failed)


def sender_main(addr: str, rate: float, conn: Connection) -> None:
    """The sending process: sync sends until told to stop, then its samples."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it
    run(_send_loop(addr, rate, conn))


@contextlib.contextmanager
def sender(addr: str, rate: float) -> Iterator[Connection]:
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=sender_main, args=(addr, rate, theirs), daemon=True)
    proc.start()
    done = False
    try:
        if not ours.poll(60) or ours.recv() != "ready":
            raise RuntimeError("the sender did not get its first send through")
        yield ours
        done = True
    finally:
        proc.join(30 if done else 0)
        if proc.is_alive():
            proc.kill()
            proc.join(5)


def _stats(samples: list[float]) -> tuple[int, float, float, float]:
    ordered = sorted(samples)
    if not ordered:
        return 0, math.nan, math.nan, math.nan
    return (
        len(ordered),
        round(percentile(ordered, 0.5) * 1000, 3),
        round(percentile(ordered, 0.99) * 1000, 3),
        round(ordered[-1] * 1000, 3),
    )


def burst_phase(
    lab: Lab,
    system: str,
    broker: Server,
    first: int,
    count: int,
    rest: float,
    rate: float,
    create_rate: float = 0.0,
) -> BurstRow:
    async def setup() -> None:
        async with RemotingClient() as client:
            await create_one(client, lab.broker_addr, SEND_TOPIC)

    run(setup())
    names = [f"ScaleTopic{i}" for i in range(first, first + count)]
    with sender(lab.broker_addr, rate) as conn:
        time.sleep(2)  # warm-up
        say(f"  {system}: sending, {rest:.0f} s at rest")
        rest_began = time.monotonic()
        time.sleep(rest)
        burst_began = time.monotonic()
        say(f"  {system}: sending, {count:,} creates one by one")
        run(create_topics(system, lab.broker_addr, names, [], 1, create_rate))
        burst_ended = time.monotonic()
        conn.send("stop")
        starts = array("d", conn.recv_bytes())
        latencies = array("d", conn.recv_bytes())
        failed = int(conn.recv())
    at_rest = [
        lat for s, lat in zip(starts, latencies, strict=True) if rest_began <= s < burst_began
    ]
    during = [
        lat for s, lat in zip(starts, latencies, strict=True) if burst_began <= s < burst_ended
    ]
    rn, r50, r99, rmax = _stats(at_rest)
    bn, b50, b99, bmax = _stats(during)
    rss, anon = rss_kib(broker.pid)
    row = BurstRow(
        system,
        first,
        rn,
        r50,
        r99,
        rmax,
        bn,
        b50,
        b99,
        bmax,
        round(b99 / r99, 2) if r99 else math.nan,
        count,
        round(burst_ended - burst_began, 2),
        failed,
        round(rss / 1024, 1),
        round(anon / 1024, 1),
    )
    say(f"  {system}: send p99 {r99:.2f} ms at rest, {b99:.2f} ms during the burst")
    return row


def topics_phase(
    lab: Lab, work: Path, system: str, args: argparse.Namespace
) -> tuple[TopicsResult, list[BurstRow]]:
    base = work / f"topics-{system}"
    namesrv = lab.start_namesrv(system, base / "namesrv")
    conf = lab.broker_conf(base / "broker.conf", base / "store", namesrv=True)
    broker = lab.start_broker(system, conf, base / "broker")
    broker.wait_ready(300)
    time.sleep(2)  # its first registration
    total = args.topics
    marks = sorted({max(1, total // 10), max(1, total // 2), total})
    window = max(1, min(200, total // 10))
    names = [f"ScaleTopic{i}" for i in range(total)]
    say(f"topics: {system}: creating {total:,} topics one by one")
    rows, seconds = run(create_topics(system, lab.broker_addr, names, marks, window))
    have = run(routed(lab.namesrv_addr, set(names), 60))
    rss, anon = rss_kib(broker.pid)
    result = TopicsResult(
        system, rows, total, round(seconds, 1), have, round(rss / 1024, 1), round(anon / 1024, 1)
    )
    say(f"  {system}: {total:,} topics in {seconds:.1f} s, {have:,} routed")
    bursts: list[BurstRow] = []
    if args.burst > 0:
        # p99 of a few thousand sends moves by tens of percent between runs on a shared
        # machine: several rounds on the same broker show that spread, and the median
        first = total
        for round_no in range(1, args.rounds + 1):
            say(
                f"burst: {system}: round {round_no}/{args.rounds}, sends at rest, then during "
                f"{args.burst:,} creates"
            )
            bursts.append(
                burst_phase(
                    lab,
                    system,
                    broker,
                    first,
                    args.burst,
                    args.rest,
                    args.send_rate,
                    args.burst_rate,
                )
            )
            first += args.burst
    lab.stop(broker)  # first: it unregisters at the name server
    lab.stop(namesrv)
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return result, bursts


# -- output ---------------------------------------------------------------------------------


def _ratio(value: float | None, ref: float | None) -> str:
    if value is None or ref is None or not ref or math.isnan(value) or math.isnan(ref):
        return "-"
    return f"{value / ref:.2f}x"


def _ms(v: float) -> str:
    return "-" if math.isnan(v) else f"{v:,.2f}"


def print_tables(
    out: Console,
    restart_rows: list[RestartRow],
    topics: list[TopicsResult],
    bursts: list[BurstRow],
    tail: int,
) -> None:
    if restart_rows:
        t = Table(
            title="Restart after kill -9 (stores of 1 KiB messages, "
            f"{tail:,} sent before the kill): from process start to a new message "
            "acknowledged and pulled back"
        )
        for col in (
            "messages",
            "system",
            "commit log",
            "restart",
            "restart ÷ 4.9.8",
            "ready line",
            "clean start",
            "broker CPU",
            "recovery checked",
            "recovery",
            "keys found",
            "RSS (anon) MiB",
        ):
            t.add_column(col, justify="left" if col in ("system", "recovery") else "right")
        ref = {r.messages: r.restart_s for r in restart_rows if r.system == "rocketmq"}
        for r in restart_rows:
            t.add_row(
                f"{r.messages:,}",
                SYSTEM_NAMES[r.system],
                f"{r.commitlog_mib:,.0f} MiB",
                f"{r.restart_s:.2f} s",
                _ratio(r.restart_s, ref.get(r.messages)),
                "?" if r.ready_s is None else f"{r.ready_s:.2f} s",
                "?" if r.clean_start_s is None else f"{r.clean_start_s:.2f} s",
                f"{r.broker_cpu_s:.2f} s",
                "?" if r.checked_mib is None else f"{r.checked_mib:,.1f} MiB",
                r.recovery,
                r.keys_found,
                f"{r.rss_mib:,.0f} ({r.rss_anon_mib:,.0f})",
            )
        out.print(t)
    if topics:
        t = Table(title="Topic creation one by one (UPDATE_AND_CREATE_TOPIC, 4 queues)")
        for col in ("topics", "system", "creates/s", "creates/s ÷ 4.9.8", "p50 ms", "p99 ms"):
            t.add_column(col, justify="left" if col == "system" else "right")
        ref2 = {c.topics: c.creates_per_s for x in topics for c in x.rows if x.system == "rocketmq"}
        for mark in sorted({r.topics for x in topics for r in x.rows}):
            for x in topics:
                for c in x.rows:
                    if c.topics == mark:
                        t.add_row(
                            f"{mark:,}",
                            SYSTEM_NAMES[x.system],
                            f"{c.creates_per_s:,.0f}",
                            _ratio(c.creates_per_s, ref2.get(mark)),
                            _ms(c.p50_ms),
                            _ms(c.p99_ms),
                        )
        out.print(t)
        for x in topics:
            out.print(
                f"  {SYSTEM_NAMES[x.system]}: {x.created:,} creates in {x.seconds:,.1f} s, "
                f"{x.routed:,} of them routed by the name server"
            )
    if bursts:
        t = Table(title="Send latency (sync, one in flight) at rest and during a burst of creates")
        for col in (
            "system",
            "topics",
            "rest sends",
            "rest p50",
            "rest p99",
            "burst sends",
            "burst p50",
            "burst p99",
            "burst p99 ÷ rest p99",
            "burst p99 ÷ 4.9.8",
            "creates",
            "failed",
        ):
            t.add_column(col, justify="left" if col == "system" else "right")
        ref_rows = [b.burst_p99_ms for b in bursts if b.system == "rocketmq"]
        ref3 = statistics.median(ref_rows) if ref_rows else None
        for b in bursts:
            t.add_row(
                SYSTEM_NAMES[b.system],
                f"{b.topics_before:,}",
                f"{b.rest_sends:,}",
                f"{_ms(b.rest_p50_ms)} ms",
                f"{_ms(b.rest_p99_ms)} ms",
                f"{b.burst_sends:,}",
                f"{_ms(b.burst_p50_ms)} ms",
                f"{_ms(b.burst_p99_ms)} ms",
                f"{b.p99_ratio:.2f}x",
                _ratio(b.burst_p99_ms, ref3),
                f"{b.burst_creates:,} in {b.burst_s:.1f} s",
                f"{b.failed_sends:,}",
            )
        out.print(t)
        for system in dict.fromkeys(b.system for b in bursts):
            ratios = [b.p99_ratio for b in bursts if b.system == system]
            out.print(
                f"  {SYSTEM_NAMES[system]}: burst p99 ÷ rest p99 over {len(ratios)} rounds: "
                f"median {statistics.median(ratios):.2f}x ("
                + ", ".join(f"{r:.2f}" for r in ratios)
                + ")"
            )
    rss = rss_rows(restart_rows, topics, bursts)
    if rss:
        t = Table(title="Broker RSS at the end of each phase, MiB (RssAnon in brackets)")
        t.add_column("system")
        for col in rss[0]["phases"]:
            t.add_column(col, justify="right")
        for row in rss:
            t.add_row(
                SYSTEM_NAMES[row["system"]],
                *(f"{v[0]:,.0f} ({v[1]:,.0f})" for v in row["phases"].values()),
            )
        out.print(t)


def rss_rows(
    restart_rows: list[RestartRow], topics: list[TopicsResult], bursts: list[BurstRow]
) -> list[dict[str, Any]]:
    systems = list(dict.fromkeys([r.system for r in restart_rows] + [x.system for x in topics]))
    out = []
    for system in systems:
        phases: dict[str, tuple[float, float]] = {}
        for r in restart_rows:
            if r.system == system:
                phases[f"restart, {r.messages:,} msgs"] = (r.rss_mib, r.rss_anon_mib)
        for x in topics:
            if x.system == system:
                phases[f"{x.created:,} topics created"] = (x.rss_mib, x.rss_anon_mib)
        for b in [b for b in bursts if b.system == system][-1:]:
            if b.system == system:
                phases[f"after the bursts ({b.topics_before + b.burst_creates:,})"] = (
                    b.rss_mib,
                    b.rss_anon_mib,
                )
        out.append({"system": system, "phases": phases})
    return out


# -- main -----------------------------------------------------------------------------------


def _on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--systems", default="mq,rocketmq", help="mq, rocketmq, comma-separated")
    parser.add_argument("--sizes", default="1000000,2000000,4000000", help="messages per store")
    parser.add_argument("--topics", type=int, default=10000, help="topics created one by one")
    parser.add_argument("--tail", type=int, default=2000, help="messages sent before the kill")
    parser.add_argument("--burst", type=int, default=1000, help="creates during the sends")
    parser.add_argument(
        "--burst-rate", type=float, default=0.0, help="creates/s in a burst, 0: unpaced"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rest + burst rounds per system")
    parser.add_argument("--rest", type=float, default=10.0, help="seconds of sends at rest")
    parser.add_argument("--send-rate", type=float, default=1000.0, help="sends/s, 0: unpaced")
    parser.add_argument("--phases", default="restart,topics", help="restart, topics (+burst)")
    parser.add_argument(
        "--commitlog-mib", type=int, default=1024, help="commit log file size (both systems)"
    )
    parser.add_argument("--dir", type=Path, default=None, help="work directory (default: /tmp)")
    parser.add_argument("--keep", action="store_true", help="keep the stores and logs")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    systems = [s for s in args.systems.split(",") if s]
    if unknown := set(systems) - SYSTEM_NAMES.keys():
        raise SystemExit(f"unknown system(s): {', '.join(sorted(unknown))}")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    phases = set(args.phases.split(","))
    private = private_network()  # before any thread is started
    signal.signal(signal.SIGTERM, _on_sigterm)
    work = Path(tempfile.mkdtemp(prefix="mq-scale-", dir=args.dir))
    if "restart" in phases and sizes:
        check_disk(work, max(sizes), 1 if not args.keep else len(systems))
    lab = Lab(systems, pick_ports(private), args.commitlog_mib * 2**20)
    where = "a private loopback-only network namespace" if private else "free loopback ports"
    load = os.getloadavg()
    say(f"work directory {work}; servers on {where}; load average {load[0]:.2f}")
    started = datetime.now(UTC)
    restart_rows: list[RestartRow] = []
    topics: list[TopicsResult] = []
    bursts: list[BurstRow] = []
    try:
        if "restart" in phases:
            restart_rows = restart_phase(lab, work, systems, sizes, args.tail, args.keep)
        if "topics" in phases:
            os.sync()  # no writeback of the restart phase's stores meanwhile
            for system in systems:
                result, rounds = topics_phase(lab, work, system, args)
                topics.append(result)
                bursts.extend(rounds)
    except KeyboardInterrupt:
        say("interrupted")
        raise SystemExit(130) from None
    finally:
        lab.stop_all()
        if args.keep:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    say(f"done in {time.monotonic() - _T0:.0f} s; load average {os.getloadavg()[0]:.2f}")
    if args.json:
        print(
            json.dumps(
                {
                    "command": " ".join(sys.argv),
                    "started": started.isoformat(timespec="seconds"),
                    "cpus": os.cpu_count(),
                    "load_average_before": round(load[0], 2),
                    "systems": systems,
                    "restart": [asdict(r) for r in restart_rows],
                    "topics": [asdict(x) for x in topics],
                    "burst": [asdict(b) for b in bursts],
                    "rss": rss_rows(restart_rows, topics, bursts),
                },
                indent=1,
            )
        )
    # with --json the tables go to stderr, after the progress lines
    out = Console(width=max(Console().width, 240), stderr=args.json)
    print_tables(out, restart_rows, topics, bursts, args.tail)


if __name__ == "__main__":
    main()

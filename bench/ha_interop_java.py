"""Master/slave replication between ``mq`` and the real RocketMQ 4.9.8, both directions.

Issue 11 asks for HA that is wire-exact with 4.9.8. Java cannot run in CI, so this script
(not a test) proves it against the build in ``$HOME/rmq-real``
(``MIRROR_DIR=... bash ../shared/tools/rmq-real/build.sh``)::

    .venv/bin/python bench/ha_interop_java.py [--cases a-async,a-sync,b-async,b-sync]
        [--messages 3000] [--preload 1500] [--namesrv auto|mq|java] [--keep]

Cases: ``a-*`` run an ``mq`` master with a 4.9.8 slave, ``b-*`` a 4.9.8 master with an
``mq`` slave; ``*-async``/``*-sync`` the master's brokerRole. Each case, on fresh stores
with 4 MiB commit log files on both sides (so files roll and the empty-slave rule, "start
at the master's last file", is exercised by ``--preload`` messages sent before the slave
starts):

1. name server, master; the topic (4 queues); ``--preload`` messages of mixed sizes;
2. the slave (brokerId 1, same brokerName): wait until its commit log ends where the
   master's does (``commitLogMaxOffset`` of GET_BROKER_RUNTIME_INFO on both);
3. ``--messages`` more, 16 in flight; under SYNC_MASTER every one must answer SEND_OK;
4. (unless ``--no-restart``) stop the slave, send a third as many (SYNC_MASTER answers
   SLAVE_NOT_AVAILABLE), restart it (it now reports a non-zero offset), send a third
   more (SEND_OK again);
5. wait until caught up; pull every message of 3-4 from the slave (the route's brokerId 1);
6. stop everything; compare the commit log files the slave holds with the master's,
   byte for byte (files wholly past the slave's end must be zero: preallocated).

``mq`` servers run as ``python -m mqcli.main`` with this interpreter, so
``PYTHONPATH=<another checkout>`` tests that tree.

Everything runs in a private loopback-only network namespace (``rmq-real/ns.sh`` with its
own pid file), so fixed ports collide with nothing; the script re-runs itself inside it.
On exit, also on failure, it stops every process left in that namespace and removes it;
stores and logs are under one temporary directory (kept with ``--keep`` or on failure).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from procs import stop_processes

from mqcore.client import Producer, make_message
from mqcore.client.admin import Admin
from mqcore.client.api import PullStatus
from mqcore.errors import MQBrokerError, MQError
from mqcore.protocol.headers.consume import PullMessageRequestHeader, PullSysFlag

REPO = Path(__file__).resolve().parent.parent
RMQ = Path(os.environ.get("RMQ_HOME", Path.home() / "rmq-real"))
FILE_SIZE = 4 * 1024 * 1024
NAMESRV = "127.0.0.1:9876"
MASTER_PORT, SLAVE_PORT = 10911, 10921
TOPIC = "HaInterop"
QUEUES = 4
GROUP = "ha_interop_cg"
SIZES = (16, 200, 1000, 3000, 8000, 20000, 100000)
SIZE_WEIGHTS = (10, 20, 25, 20, 12, 8, 5)
BROKER_CONF = """brokerClusterName=HaInteropCluster
brokerName=broker-a
brokerId={broker_id}
brokerIP1=127.0.0.1
brokerIP2=127.0.0.1
listenPort={port}
namesrvAddr={namesrv}
storePathRootDir={store}
storePathCommitLog={store}/commitlog
mappedFileSizeCommitLog={file_size}
brokerRole={role}
flushDiskType=ASYNC_FLUSH
autoCreateTopicEnable=true
"""


@dataclass
class Row:
    case: str
    master: str
    slave: str
    namesrv: str
    preload: dict[str, int] = field(default_factory=dict)
    sent: dict[str, int] = field(default_factory=dict)
    send_p50_ms: float = 0.0
    catch_up_s: float = 0.0
    read: int = 0
    to_read: int = 0
    files: str = "-"
    equal: bool = False
    restart: str = "-"
    note: str = ""

    @property
    def ok(self) -> bool:
        sent_ok = set(self.sent) == {"SEND_OK"}
        read_ok = self.to_read > 0 and self.read == self.to_read
        return sent_ok and read_ok and self.equal and not self.note


# -- processes ------------------------------------------------------------------------------


class Procs:
    """Every process a case starts, stopped in reverse order (SIGTERM, then SIGKILL)."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.procs: list[tuple[str, subprocess.Popen[bytes], IO[bytes]]] = []
        env = subprocess.run(
            ["bash", "-c", f'. "{RMQ}/env.sh" >/dev/null; printf "%s\\n%s" "$RMQ_CP" "$RMQ_JOPTS"'],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
        self.cp, self.jopts = env[0], env[1].split()

    def spawn(self, name: str, cmd: list[str]) -> subprocess.Popen[bytes]:
        out = open(self.logs / f"{name}.out", "wb")  # noqa: SIM115 - closed in stop()
        # HOME too: mq's name server and broker log (and keep kvConfig) under it
        env = {**os.environ, "ROCKETMQ_HOME": str(RMQ), "HOME": str(self.logs)}
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        self.procs.append((name, proc, out))
        return proc

    def java(self, name: str, cls: str, *args: str, heap: str = "512m") -> None:
        # user.home last: the broker's logback writes under it, so logs stay in our tmp dir
        opts = [f"-Xms{heap}", f"-Xmx{heap}", "-XX:MaxDirectMemorySize=512m", *self.jopts]
        opts.append(f"-Duser.home={self.logs}")
        self.spawn(name, ["java", *opts, "-cp", self.cp, cls, *args])

    def mq(self, name: str, *args: str) -> None:
        # this interpreter (the venv's): `python -m mqcli.main` as an operator runs it
        self.spawn(name, [sys.executable, "-m", "mqcli.main", *args])

    def stop(self, name: str | None = None) -> None:
        chosen = [p for p in reversed(self.procs) if name is None or p[0] == name]
        stop_processes((proc for _, proc, _ in chosen), grace=40)
        for _, _, out in chosen:
            out.close()
        self.procs = [p for p in self.procs if p not in chosen]

    def dead(self) -> str | None:
        for name, proc, _ in self.procs:
            if proc.poll() is not None:
                return f"{name} exited with {proc.returncode} (see {self.logs / name}.out)"
        return None


async def wait_port(port: int, procs: Procs, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (dead := procs.dead()) is not None:
            raise RuntimeError(dead)
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"nothing listens on {port} after {timeout:.0f} s")


def conf(path: Path, broker_id: int, port: int, role: str) -> Path:
    store = path.parent / "store"
    path.write_text(
        BROKER_CONF.format(
            broker_id=broker_id,
            port=port,
            namesrv=NAMESRV,
            store=store,
            file_size=FILE_SIZE,
            role=role,
        )
    )
    return path


# -- one case ------------------------------------------------------------------------------


async def until(
    what: str, check: Callable[[], Awaitable[bool]], timeout: float, procs: Procs
) -> None:
    """Poll ``check`` until it is true; a dead process or the timeout raise."""
    deadline = time.monotonic() + timeout
    while True:
        if (dead := procs.dead()) is not None:
            raise RuntimeError(dead)
        with contextlib.suppress(MQError, OSError, TimeoutError):
            if await check():
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out ({timeout:.0f} s) waiting for {what}")
        await asyncio.sleep(0.5)


async def commit_log_end(admin: Admin, addr: str) -> int:
    return int((await admin.broker_runtime_info(addr))["commitLogMaxOffset"])


def bodies(rng: random.Random, count: int) -> list[bytes]:
    sizes = rng.choices(SIZES, SIZE_WEIGHTS, k=count)
    return [rng.randbytes(max(1, s + rng.randint(-s // 4, s // 4))) for s in sizes]


@dataclass
class Sent:
    key: str
    digest: str
    queue: int
    queue_offset: int


async def send_all(
    producer: Producer, payloads: list[bytes], prefix: str
) -> tuple[dict[str, int], list[Sent], list[float]]:
    """Sends with 16 in flight; status counts, what was stored, latencies (ms)."""
    statuses: dict[str, int] = {}
    stored: list[Sent] = []
    latencies: list[float] = []
    gate = asyncio.Semaphore(16)

    async def one(i: int, body: bytes) -> None:
        key = f"{prefix}-{i}"
        async with gate:
            t0 = time.perf_counter()
            try:
                result = await producer.send(make_message(TOPIC, body, tags="T", keys=key))
            except MQError as exc:  # e.g. a cold 4.9.8's "[TIMEOUT_CLEAN_QUEUE] broker busy"
                code = exc.code if isinstance(exc, MQBrokerError) else None
                name = f"code {code}" if code is not None else type(exc).__name__
                statuses[name] = statuses.get(name, 0) + 1
                return
            latencies.append((time.perf_counter() - t0) * 1000)
        statuses[result.status.name] = statuses.get(result.status.name, 0) + 1
        digest = hashlib.sha1(body).hexdigest()
        stored.append(Sent(key, digest, result.message_queue.queue_id, result.queue_offset))

    await asyncio.gather(*(one(i, b) for i, b in enumerate(payloads)))
    return statuses, stored, latencies


async def read_slave(admin: Admin, slave_addr: str, sent: list[Sent], procs: Procs) -> int:
    """Pull what ``sent`` stored from the slave, queue by queue; how many match."""
    api = admin.instance.api  # a pull from one named broker (the slave), not the route's pick
    want = {s.key: s for s in sent}
    got = 0
    for qid in range(QUEUES):
        mine = sorted((s for s in sent if s.queue == qid), key=lambda s: s.queue_offset)
        if not mine:
            continue
        offset, end = mine[0].queue_offset, mine[-1].queue_offset + 1
        deadline = time.monotonic() + 45  # a 4.9.8 slave copies topic configs every 10 s
        while offset < end:
            header = PullMessageRequestHeader(
                consumer_group=GROUP,
                topic=TOPIC,
                queue_id=qid,
                queue_offset=offset,
                max_msg_nums=32,
                sys_flag=PullSysFlag.SUBSCRIPTION,
                commit_offset=0,
                suspend_timeout_millis=0,
                sub_version=0,
                subscription="*",
                expression_type="TAG",
            )
            try:
                result = await api.pull_message(slave_addr, header, 10)
            except MQError:
                if time.monotonic() > deadline or procs.dead():
                    raise
                await asyncio.sleep(1)
                continue
            if result.status is not PullStatus.FOUND:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"queue {qid}: {result.status.name} at {offset}")
                await asyncio.sleep(0.5)
                continue
            for msg in result.messages:
                s = want.get(msg.keys[0] if msg.keys else "")
                if s and hashlib.sha1(msg.body).hexdigest() == s.digest and s.queue == qid:
                    got += 1
            offset = result.next_begin_offset
    return got


def compare_files(master: Path, slave: Path, slave_end: int) -> tuple[str, bool, str]:
    """(summary, equal, why not): the slave's files against the master's."""
    m_files = {int(f.name): f for f in master.iterdir() if f.name.isdigit()}
    s_files = {int(f.name): f for f in slave.iterdir() if f.name.isdigit()}
    held = sorted(o for o in s_files if o < slave_end)
    if not held:
        return "no slave files", False, "the slave holds no commit log file"
    expected = sorted(o for o in m_files if held[0] <= o < slave_end)
    if held != expected:
        return f"{len(held)} files", False, f"slave files {held} vs master {expected}"
    compared = 0
    for start in held:
        a, b = m_files[start].read_bytes(), s_files[start].read_bytes()
        if a != b:
            at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
            at = min(len(a), len(b)) if at is None else at
            return f"{len(held)} files", False, f"file {start:020d} differs at byte {at}"
        compared += len(a)
    extra = [o for o in s_files if o >= slave_end and s_files[o].read_bytes().strip(b"\0")]
    if extra:
        return f"{len(held)} files", False, f"slave files past its end not empty: {extra}"
    first = held[0] // FILE_SIZE
    summary = f"{len(held)} x 4 MiB from #{first} ({compared / 2**20:.0f} MiB)"
    return summary, True, ""


class Case:
    """One master/slave pair of mixed implementations, driven through its phases."""

    def __init__(self, name: str, args: argparse.Namespace, root: Path) -> None:
        direction, role_name = name.split("-")
        role = {"async": "ASYNC_MASTER", "sync": "SYNC_MASTER"}[role_name]
        self.mq_master = direction == "a"
        self.ns_kind = (
            args.namesrv if args.namesrv != "auto" else "mq" if self.mq_master else "java"
        )
        self.args = args
        self.row = Row(
            name,
            f"{'mq' if self.mq_master else '4.9.8'} {role}",
            "4.9.8" if self.mq_master else "mq",
            "mq" if self.ns_kind == "mq" else "4.9.8",
        )
        self.base = root / name
        (self.base / "master").mkdir(parents=True)
        (self.base / "slave").mkdir()
        self.procs = Procs(self.base)
        self.rng = random.Random(name)
        self.m_conf = conf(self.base / "master" / "broker.conf", 0, MASTER_PORT, role)
        self.s_conf = conf(self.base / "slave" / "broker.conf", 1, SLAVE_PORT, "SLAVE")
        self.master_addr = f"127.0.0.1:{MASTER_PORT}"
        self.slave_addr = f"127.0.0.1:{SLAVE_PORT}"

    def broker(self, name: str, conf_path: Path, mq: bool) -> None:
        if mq:
            self.procs.mq(name, "broker", "-c", str(conf_path))
        else:
            cls = "org.apache.rocketmq.broker.BrokerStartup"
            self.procs.java(name, cls, "-c", str(conf_path))

    async def run(self) -> Row:
        row, procs = self.row, self.procs
        try:
            if self.ns_kind == "mq":
                procs.mq("namesrv", "namesrv", "--listen", NAMESRV)
            else:
                procs.java("namesrv", "org.apache.rocketmq.namesrv.NamesrvStartup", heap="256m")
            await wait_port(9876, procs)
            self.broker("master", self.m_conf, self.mq_master)
            await wait_port(MASTER_PORT, procs)
            async with Admin(NAMESRV, instance_name=f"ha-admin-{row.case}") as admin:
                slave_end = await self.phases(admin)
            procs.stop("slave")
            procs.stop("master")
            row.files, row.equal, why = compare_files(
                self.base / "master" / "store" / "commitlog",
                self.base / "slave" / "store" / "commitlog",
                slave_end,
            )
            if why:
                row.note = (row.note + "; " if row.note else "") + why
        except Exception as exc:  # a failed case is a row: the next case still runs
            row.note = f"{type(exc).__name__}: {exc}"
        finally:
            procs.stop()
        return row

    async def phases(self, admin: Admin) -> int:
        """Everything while the brokers run; the slave's commit log end at the last."""
        row, procs, rng = self.row, self.procs, self.rng

        async def registered(broker_id: int) -> bool:
            data = (await admin.cluster_info()).broker_addr_table.get("broker-a")
            return data is not None and broker_id in data.broker_addrs

        await until("the master's registration", lambda: registered(0), 60, procs)
        await admin.create_topic(TOPIC, queues=QUEUES)
        async with Producer("ha_interop_pg", NAMESRV, instance_name=f"ha-p-{row.case}") as p:
            await until("the topic's route", lambda: _has_route(admin), 60, procs)
            row.preload, _, _ = await send_all(p, bodies(rng, self.args.preload), "pre")
            t0 = time.monotonic()
            self.broker("slave", self.s_conf, not self.mq_master)
            await wait_port(SLAVE_PORT, procs)
            await until("the slave's registration", lambda: registered(1), 60, procs)
            await until("the slave to catch up with the preload", self.caught_up(admin), 120, procs)
            row.catch_up_s = round(time.monotonic() - t0, 1)
            row.sent, sent, lat = await send_all(p, bodies(rng, self.args.messages), "msg")
            row.send_p50_ms = round(statistics.median(lat), 2) if lat else 0.0
            await until("the slave to catch up", self.caught_up(admin), 120, procs)
            if self.args.restart:
                # The slave comes back with a non-zero report: the master streams from it.
                procs.stop("slave")
                count = self.args.messages // 3
                down, more, _ = await send_all(p, bodies(rng, count), "down")
                self.broker("slave", self.s_conf, not self.mq_master)
                await wait_port(SLAVE_PORT, procs)
                await until("the restarted slave", self.caught_up(admin), 120, procs)
                after, more2, _ = await send_all(p, bodies(rng, count), "after")
                await until("the restarted slave", self.caught_up(admin), 120, procs)
                row.restart = f"down: {_counts(down)}; after: {_counts(after)}"
                sent += more + more2
                for k, v in after.items():
                    row.sent[k] = row.sent.get(k, 0) + v
            slave_end = await commit_log_end(admin, self.slave_addr)
            route = await admin.topic_route(TOPIC)
            addrs = {k: v for b in route.broker_datas for k, v in b.broker_addrs.items()}
            if addrs.get(1) != self.slave_addr:
                row.note = f"the route lists brokerId 1 at {addrs.get(1)}"
            got = await read_slave(admin, addrs.get(1, self.slave_addr), sent, procs)
            row.read, row.to_read = got, len(sent)
        return slave_end

    def caught_up(self, admin: Admin) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:
            m = await commit_log_end(admin, self.master_addr)
            s = await commit_log_end(admin, self.slave_addr)
            if m != s or s == 0:
                return False
            if not self.mq_master:  # 4.9.8 shows no HA state: its SYNC answers are the proof
                return True
            info = await admin.broker_runtime_info(self.master_addr)
            # the master counts the acknowledgement: SYNC_MASTER sends will wait on it
            return int(info.get("haPush2SlaveMaxOffset", "0")) >= m

        return check


def _counts(statuses: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())) or "-"


async def _has_route(admin: Admin) -> bool:
    route = await admin.topic_route(TOPIC)
    return any(q.write_queue_nums for q in route.queue_datas)


# -- the namespace and the table ------------------------------------------------------------


def table(rows: list[Row]) -> str:
    head = (
        "| case | master | slave | namesrv | preload, no slave | sends, slave connected "
        "| send p50 ms | catch-up s | slave restart | read from slave | commit log files "
        "| byte-equal | result |"
    )
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        verdict = "PASS" if r.ok else f"FAIL: {r.note}" if r.note else "FAIL"
        lines.append(
            f"| {r.case} | {r.master} | {r.slave} | {r.namesrv} | {_counts(r.preload)} "
            f"| {_counts(r.sent)} | {r.send_p50_ms} | {r.catch_up_s} | {r.restart} "
            f"| {r.read}/{r.to_read} | {r.files} | {'yes' if r.equal else 'no'} | {verdict} |"
        )
    return "\n".join(lines)


def inside(args: argparse.Namespace) -> int:
    root = Path(args.inside)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rows = []
    for case in args.cases.split(","):
        print(f"== {case}", flush=True)
        row = asyncio.run(Case(case, args, root).run())
        print(f"   {row}", flush=True)
        rows.append(row)
    print()
    print(table(rows))
    return 0 if all(r.ok for r in rows) else 1


@contextlib.contextmanager
def namespace(root: Path) -> Iterator[str]:
    """A loopback-only network namespace of our own; the holder's pid."""
    pidf = root / "ns.pid"
    env = {**os.environ, "NSPIDF": str(pidf)}
    subprocess.run(["bash", "-c", f'. "{RMQ}/ns.sh"; ns_up'], env=env, check=True)
    holder = pidf.read_text().strip()
    try:
        yield holder
    finally:
        netns = os.readlink(f"/proc/{holder}/ns/net")
        _kill_namespace_members(netns, int(holder))
        subprocess.run(["bash", "-c", f'. "{RMQ}/ns.sh"; ns_down'], env=env, check=False)


def _kill_namespace_members(netns: str, holder: int) -> None:
    """Whatever still runs in our namespace was started by this script: stop it."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) in (holder, os.getpid()):
                continue
            with contextlib.suppress(OSError):
                if os.readlink(entry / "ns" / "net") == netns:
                    os.kill(int(entry.name), sig)
                    left.append(int(entry.name))
        if not left:
            return
        print(f"stopping leftover processes {left}", file=sys.stderr)
        time.sleep(5)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--cases", default="a-async,a-sync,b-async,b-sync")
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--preload", type=int, default=1500)
    parser.add_argument("--namesrv", choices=("auto", "mq", "java"), default="auto")
    parser.add_argument(
        "--no-restart", dest="restart", action="store_false", help="skip the slave restart"
    )
    parser.add_argument("--keep", action="store_true", help="keep stores and logs")
    parser.add_argument("--inside", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        return inside(args)
    if not (RMQ / "classes").is_dir():
        sys.exit(f"no RocketMQ 4.9.8 build at {RMQ}: run ../shared/tools/rmq-real/build.sh")
    root = Path(tempfile.mkdtemp(prefix="ha-interop-"))
    code = 1
    try:
        with namespace(root) as holder:
            cmd = [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]]
            cmd += ["--inside", str(root)]
            child = subprocess.Popen(["nsenter", "-t", holder, "-n", "--", *cmd], cwd=REPO)
            try:
                code = child.wait()
            except KeyboardInterrupt:
                child.send_signal(signal.SIGTERM)
                code = child.wait()
    finally:
        if args.keep or code != 0:
            print(f"stores and logs: {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())

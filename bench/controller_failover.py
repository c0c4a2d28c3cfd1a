"""Controller mode under kill -9: N rounds of killing the master of a broker name while a
producer sends continuously with SYNC_MASTER. (Figures, not a test;
tests/integration/test_controller_process.py runs 3 rounds of it.)

Usage: ``.venv/bin/python bench/controller_failover.py [--rounds 20] [--json] [--keep]``

On loopback, as ``mq`` processes in a temporary directory: one ``mq controller`` (a Raft
group of one, journal on disk), one name server, three brokers of ``broker-a`` in
controller mode (``brokerRole=SYNC_MASTER``, ``allAckInSyncStateSet=true``,
``controllerHeartBeatTimeoutMills`` 2000 unless ``--timeout-ms``). One producer sends
numbered messages one after another; a LitePullConsumer consumes them.

Each round: wait until the master's in-sync set holds all three replicas and it has
acknowledged sends, SIGKILL it, time how long until the first SEND_OK that the new
master stored (its address is in the answer's offsetMsgId), see the consumer get a
message sent after the kill, then start the killed broker again on its store (it
returns as a slave). At the end the consumer drains. Accounting: acknowledged (SEND_OK),
lost (acknowledged and never consumed: must be 0), duplicates (consumed more than once),
kill -> first acknowledged send at the new master (median, max), consumer resumed.
Exits 1 on a loss or a round that did not fail over.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from procs import stop_processes

from mqcore.client import (
    Admin,
    ClientConfig,
    ConsumeFromWhere,
    LitePullConsumer,
    Producer,
    SendStatus,
    make_message,
)
from mqcore.errors import MQError

ROOT = Path(__file__).resolve().parents[1]
MQ = [sys.executable, "-m", "mqcli.main"]
TOPIC = "CtlFailover"
GROUP = "ctl-failover-cg"
REPLICAS = 3
LISTENING = re.compile(r"listening on (\S+):(\d+)")
FAST_CLIENT = ClientConfig(poll_name_server_interval=1.0, request_timeout=2.0, connect_timeout=1.0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def fixed_port(taken: set[int]) -> int:
    """A port a server gets back when it restarts: below the ephemeral range (no outgoing
    connection takes it meanwhile), with port-2 (a broker's fast port) and port+1 (its
    HA port) free too."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    import random

    rng = random.Random()
    for _ in range(1000):
        port = rng.randrange(20000, max(20010, low - 2))
        triple = {port - 2, port, port + 1}
        if not triple & taken and all(_port_free(p) for p in triple):
            taken |= {p + d for p in triple for d in (-2, -1, 0, 1, 2)}
            return port
    raise RuntimeError("no free port triple below the ephemeral range")


def write_properties(path: Path, settings: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    return path


@dataclass
class Server:
    """An ``mq`` server process: stdout to ``out.txt``, stderr to ``stderr.txt``."""

    what: str
    args: list[str]
    workdir: Path
    proc: subprocess.Popen[bytes] | None = None
    addr: str = ""

    prefix: list[str] = field(default_factory=list)
    """Run under this command (``ip netns exec NS``)."""
    _out_from: int = 0

    def launch(self) -> None:
        """Start the process; :meth:`listening` waits for its listen line."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        with (
            open(self.workdir / "out.txt", "ab") as out,
            open(self.workdir / "stderr.txt", "ab") as err,
        ):
            self._out_from = out.tell()
            self.proc = subprocess.Popen(
                [*self.prefix, *MQ, *self.args],
                stdout=out,
                stderr=err,
                cwd=ROOT,
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(self.workdir)},
            )

    def listening(self, timeout: float = 30.0) -> str:
        """The address of the listen line once the process printed it."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.workdir / "out.txt", "rb") as f:
                f.seek(self._out_from)
                text = f.read().decode(errors="replace")
            if m := LISTENING.search(text):
                self.addr = f"{m.group(1)}:{m.group(2)}"
                return self.addr
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)  # waiting for a file to say something: polled, with a deadline
        self.kill()
        err = (self.workdir / "stderr.txt").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{self.what} did not start: {err}")

    def start(self, timeout: float = 30.0) -> str:
        self.launch()
        return self.listening(timeout)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL (kill -9) and reap."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def start_at_once(servers: list[Server]) -> None:
    """Launch every one, then wait for each listen line."""
    for server in servers:
        server.launch()
    for server in servers:
        server.listening()


class ControllerCluster:
    """The controller(s), a name server and ``REPLICAS`` brokers of broker-a, on ports
    they get back when restarted. ``controllers`` > 1 is a Raft group."""

    def __init__(
        self,
        root: Path,
        *,
        timeout_ms: int = 2000,
        controllers: int = 1,
        replicas: int = REPLICAS,
        broker_props: dict[str, str] | None = None,
        host: str = "127.0.0.1",
        bind: str = "127.0.0.1",
    ) -> None:
        """``host``: the address the controllers, the name server and the brokers are
        reached at (``broker_hosts`` and ``broker_prefix`` put a broker elsewhere, as in
        a network namespace); ``bind``: where the controllers and name server listen."""
        self.root = root
        self.host, self.bind = host, bind
        self.broker_hosts: dict[int, str] = {}
        self.broker_prefix: dict[int, list[str]] = {}
        self.timeout_ms = timeout_ms
        taken: set[int] = set()
        self.controller_ports = [fixed_port(taken) for _ in range(controllers)]
        raft_ports = [fixed_port(taken) for _ in range(controllers)]
        self.peers = ";".join(f"n{i}-127.0.0.1:{p}" for i, p in enumerate(raft_ports))
        self.controller_addr = ";".join(f"{host}:{p}" for p in self.controller_ports)
        self.broker_ports = [fixed_port(taken) for _ in range(replicas)]
        self.namesrv_port = fixed_port(taken)
        self.broker_props = broker_props or {}
        self.controllers: list[Server] = []
        self.namesrv: Server | None = None
        self.brokers: list[Server] = []

    @property
    def namesrv_addr(self) -> str:
        return f"{self.host}:{self.namesrv_port}"

    def all_servers(self) -> list[Server]:
        return [*self.brokers, *([self.namesrv] if self.namesrv else []), *self.controllers]

    def controller(self, i: int) -> Server:
        workdir = self.root / f"controller{i}"
        conf = write_properties(
            workdir / "controller.conf",
            {"scanNotActiveBrokerInterval": "200", "controllerDLegerGroup": "bench"},
        )
        args = [
            "controller",
            "-c",
            str(conf),
            "--listen",
            f"{self.bind}:{self.controller_ports[i]}",
        ]
        args += ["--peers", self.peers, "--self-id", f"n{i}", "--store", str(workdir / "raft")]
        args += ["--log-dir", str(workdir / "logs")]
        return Server(f"controller n{i}", args, workdir)

    def broker(self, i: int) -> Server:
        workdir = self.root / f"broker{i}"
        settings = {
            "brokerClusterName": "DefaultCluster",
            "brokerName": "broker-a",
            "brokerIP1": self.broker_hosts.get(i, self.host),
            "listenPort": str(self.broker_ports[i]),
            "namesrvAddr": self.namesrv_addr,
            "storePathRootDir": str(workdir / "store"),
            "logDir": str(workdir / "logs"),
            "mappedFileSizeCommitLog": str(16 * 1024 * 1024),
            "mappedFileSizeConsumeQueue": str(20 * 10_000),
            "maxHashSlotNum": "1000",
            "maxIndexNum": "4000",
            "enableControllerMode": "true",
            "controllerAddr": self.controller_addr,
            "controllerHeartBeatTimeoutMills": str(self.timeout_ms),
            "brokerHeartbeatInterval": "200",
            "syncBrokerMetadataPeriod": "300",
            "checkSyncStateSetPeriod": "300",
            "syncControllerMetadataPeriod": "500",
            "registerNameServerPeriod": "1000",
            "brokerRole": "SYNC_MASTER",
            "allAckInSyncStateSet": "true",
            "haMaxTimeSlaveNotCatchup": "3000",
            **self.broker_props,
        }
        conf = write_properties(workdir / "broker.conf", settings)
        args = ["broker", "-c", str(conf)]
        return Server(f"broker {i}", args, workdir, prefix=self.broker_prefix.get(i, []))

    def start(self) -> None:
        """Controllers, the name server, then the brokers (each waits for its listen line)."""
        self.start_control()
        self.brokers = [self.broker(i) for i in range(len(self.broker_ports))]
        start_at_once(self.brokers)

    def start_control(self) -> None:
        """The controllers and the name server."""
        self.controllers = [self.controller(i) for i in range(len(self.controller_ports))]
        for c in self.controllers:
            c.start()
        ns_dir = self.root / "namesrv"
        conf = write_properties(
            ns_dir / "namesrv.properties",
            {"kvConfigPath": str(ns_dir / "kv.json"), "logDir": str(ns_dir / "logs")},
        )
        listen = f"{self.bind}:{self.namesrv_port}"
        self.namesrv = Server("namesrv", ["namesrv", "-c", str(conf), "--listen", listen], ns_dir)
        self.namesrv.start()

    def restart_all(self) -> None:
        """Every process launched at once (the controllers and the brokers on their
        journals and stores, the name server afresh on its port)."""
        everyone = [*self.controllers, *([self.namesrv] if self.namesrv else []), *self.brokers]
        start_at_once(everyone)

    def stop(self) -> None:
        """Every process still running: SIGTERM, SIGKILL after a grace."""
        stop_processes([s.proc for s in self.all_servers() if s.proc is not None], grace=15)


# -- what the brokers say -------------------------------------------------------------------


@dataclass
class Replica:
    index: int
    addr: str
    broker_id: int
    master_id: int
    epoch: int
    sync_state_set: set[int]
    role: str

    @property
    def is_master(self) -> bool:
        return self.broker_id >= 0 and self.broker_id == self.master_id and self.role != "SLAVE"


async def replicas(
    admin: Admin, cluster: ControllerCluster, only: set[int] | None = None
) -> list[Replica]:
    """The running brokers (of ``only``'s indices) that answer, as their runtime info says."""
    out: list[Replica] = []
    for i, b in enumerate(cluster.brokers):
        if not b.running or (only is not None and i not in only):
            continue
        try:
            info = await asyncio.wait_for(admin.broker_runtime_info(b.addr), 3)
        except (MQError, OSError, TimeoutError):
            continue
        out.append(
            Replica(
                i,
                b.addr,
                int(info.get("controllerBrokerId", "-1")),
                int(info.get("masterBrokerId", "-1")),
                int(info.get("masterEpoch", "0")),
                {int(x) for x in info.get("syncStateSet", "").split(",") if x},
                info.get("brokerRole", ""),
            )
        )
    return out


async def wait_for(predicate: Any, timeout: float, what: str, interval: float = 0.05) -> Any:
    """Poll an async ``predicate`` until it returns something truthy; TimeoutError after
    ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"not within {timeout} s: {what}")
        await asyncio.sleep(interval)


async def steady_master(admin: Admin, cluster: ControllerCluster, timeout: float = 60.0) -> Replica:
    """The master, once its in-sync set holds every replica and they all follow it."""

    last: list[Replica] = []

    async def check() -> Replica | None:
        nonlocal last
        seen = last = await replicas(admin, cluster)
        masters = [r for r in seen if r.is_master]
        if len(seen) < len(cluster.brokers) or len(masters) != 1:
            return None
        m = masters[0]
        ids = {r.broker_id for r in seen}
        following = all(r.master_id == m.broker_id and r.epoch == m.epoch for r in seen)
        return m if following and m.sync_state_set == ids else None

    try:
        found: Replica = await wait_for(check, timeout, "one master with every replica in sync")
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; last seen: {last}") from None
    return found


async def kill_in_sync(admin: Admin, cluster: ControllerCluster, master: Replica) -> float:
    """SIGKILL ``master`` once its in-sync set holds every replica again (when it was
    checked, sends since may have left a slave behind for ``haMaxTimeSlaveNotCatchup``:
    killed then, no replica is a clean candidate and, as in RocketMQ, none is elected);
    the monotonic time of the kill."""
    now = await steady_master(admin, cluster)
    if now.index != master.index:
        raise AssertionError(f"the master moved before the kill: {master} -> {now}")
    killed_at = time.monotonic()
    cluster.brokers[master.index].kill()
    return killed_at


# -- the load -------------------------------------------------------------------------------


def store_addr(offset_msg_id: str) -> str:
    """The broker that stored a message, from its offsetMsgId (IPv4 + port + offset)."""
    raw = bytes.fromhex(offset_msg_id[:16])
    return f"{'.'.join(str(b) for b in raw[:4])}:{int.from_bytes(raw[4:8], 'big')}"


@dataclass
class Ack:
    body: str
    at: float
    addr: str


@dataclass
class Load:
    """One producer sending numbered messages back to back, one consumer."""

    namesrv: str
    acks: list[Ack] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    failures: int = 0
    next_seq: int = 0
    consumed: Counter[str] = field(default_factory=Counter)
    consumed_max_seq: int = -1
    stopping: bool = False
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _producer: Producer | None = None
    _consumer: LitePullConsumer | None = None

    async def start(self) -> None:
        self._producer = Producer(
            "ctl-failover-pg",
            namesrv=self.namesrv,
            send_timeout=3.0,
            retry_times_when_send_failed=2,
            client_config=FAST_CLIENT,
        )
        await self._producer.start()
        self._consumer = LitePullConsumer(
            GROUP,
            namesrv=self.namesrv,
            client_config=FAST_CLIENT,
            consume_from_where=ConsumeFromWhere.FIRST,
        )
        self._consumer.subscribe(TOPIC, "*")
        await self._consumer.start()
        self._tasks = [
            asyncio.create_task(self._send_loop(), name="send"),
            asyncio.create_task(self._consume_loop(), name="consume"),
        ]

    async def stop_sending(self) -> None:
        self.stopping = True
        if self._tasks:
            await self._tasks[0]

    async def close(self) -> None:
        self.stopping = True
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        if self._producer is not None:
            with contextlib.suppress(Exception):
                await self._producer.shutdown()
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                await self._consumer.shutdown()

    async def _send_loop(self) -> None:
        assert self._producer is not None
        while not self.stopping:
            seq = self.next_seq
            self.next_seq += 1
            body = f"m{seq}"
            try:
                result = await self._producer.send(make_message(TOPIC, body))
            except MQError:
                self.failures += 1
                await asyncio.sleep(0.02)  # pacing while no master takes sends
                continue
            self.statuses[result.status.name] += 1
            if result.status is SendStatus.SEND_OK:
                self.acks.append(Ack(body, time.monotonic(), store_addr(result.offset_msg_id)))

    async def _consume_loop(self) -> None:
        assert self._consumer is not None
        while True:
            try:
                got = await self._consumer.poll(0.5)
            except MQError:
                await asyncio.sleep(0.1)
                continue
            for m in got:
                body = m.body.decode()
                self.consumed[body] += 1
                self.consumed_max_seq = max(self.consumed_max_seq, int(body[1:]))

    def acked_bodies(self) -> set[str]:
        return {a.body for a in self.acks}


async def create_topic(admin: Admin, cluster: ControllerCluster) -> None:
    async def created() -> bool:
        try:
            await admin.create_topic(TOPIC, queues=4)
        except (MQError, OSError):
            return False
        return True

    await wait_for(created, 30, "the topic created on the master", interval=0.2)


# -- the rounds -------------------------------------------------------------------------------


@dataclass
class Round:
    number: int
    killed_id: int
    new_master_id: int
    epoch_before: int
    epoch_after: int
    acknowledged: int
    failover_seconds: float | None
    consumer_resumed: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "killedId": self.killed_id,
            "newMasterId": self.new_master_id,
            "epochBefore": self.epoch_before,
            "epochAfter": self.epoch_after,
            "acknowledged": self.acknowledged,
            "failoverSeconds": self.failover_seconds,
            "consumerResumed": self.consumer_resumed,
        }


async def kill_round(
    number: int, admin: Admin, cluster: ControllerCluster, load: Load, settle_acks: int = 20
) -> Round:
    master = await steady_master(admin, cluster)
    before = len(load.acks)

    async def acked_here() -> bool:
        return sum(1 for a in load.acks[before:] if a.addr == master.addr) >= settle_acks

    await wait_for(acked_here, 30, f"sends acknowledged by the master {master.addr}")
    killed_at = await kill_in_sync(admin, cluster, master)
    round_start = len(load.acks)
    seq_at_kill = load.next_seq

    async def first_ack_elsewhere() -> Ack | None:
        return next(
            (a for a in load.acks[round_start:] if a.at > killed_at and a.addr != master.addr),
            None,
        )

    failover: float | None = None
    try:
        ack = await wait_for(first_ack_elsewhere, cluster.timeout_ms / 1000 + 30, "failover")
        failover = ack.at - killed_at
    except TimeoutError:
        pass

    async def resumed() -> bool:
        return load.consumed_max_seq >= seq_at_kill

    consumer_resumed = True
    try:
        await wait_for(resumed, 30, "the consumer gets a message sent after the kill")
    except TimeoutError:
        consumer_resumed = False
    new_master = next((r for r in await replicas(admin, cluster) if r.is_master), None)
    # the killed broker returns on its store, as a slave of the new master
    cluster.brokers[master.index].start()
    acknowledged = len(load.acks) - before
    return Round(
        number,
        master.broker_id,
        new_master.broker_id if new_master else -1,
        master.epoch,
        new_master.epoch if new_master else -1,
        acknowledged,
        failover,
        consumer_resumed,
    )


async def drain(load: Load, timeout: float) -> None:
    """Until every acknowledged message was consumed, or ``timeout`` s without progress."""
    wanted = load.acked_bodies()
    last, last_change = -1, time.monotonic()
    while True:
        have = sum(1 for b in wanted if b in load.consumed)
        if have == len(wanted):
            return
        if have != last:
            last, last_change = have, time.monotonic()
        if time.monotonic() - last_change > timeout:
            return
        await asyncio.sleep(0.1)


def summary(rounds: list[Round], load: Load, seconds: float) -> dict[str, Any]:
    acked = load.acked_bodies()
    lost = sorted(acked - set(load.consumed), key=lambda b: int(b[1:]))
    failovers = [r.failover_seconds for r in rounds if r.failover_seconds is not None]
    return {
        "rounds": len(rounds),
        "acknowledged": len(acked),
        "lost": len(lost),
        "lostSample": lost[:20],
        "duplicates": sum(n - 1 for n in load.consumed.values() if n > 1),
        "consumed": len(load.consumed),
        "notAcknowledged": {k: v for k, v in load.statuses.items() if k != "SEND_OK"},
        "sendErrors": load.failures,
        "failoverSeconds": {
            "median": round(statistics.median(failovers), 3) if failovers else None,
            "max": round(max(failovers), 3) if failovers else None,
            "failedOver": len(failovers),
        },
        "consumerResumed": sum(1 for r in rounds if r.consumer_resumed),
        "wallSeconds": round(seconds, 1),
        "perRound": [r.to_json() for r in rounds],
    }


async def run(
    rounds: int, timeout_ms: int, drain_timeout: float, root: Path, report: Any
) -> dict[str, Any]:
    cluster = ControllerCluster(root, timeout_ms=timeout_ms)
    load: Load | None = None
    done: list[Round] = []
    began = time.monotonic()
    try:
        cluster.start()
        async with Admin(namesrv=cluster.namesrv_addr, client_config=FAST_CLIENT) as admin:
            await steady_master(admin, cluster)
            await create_topic(admin, cluster)
            load = Load(cluster.namesrv_addr)
            await load.start()
            for n in range(1, rounds + 1):
                r = await kill_round(n, admin, cluster, load)
                done.append(r)
                report(r)
            await steady_master(admin, cluster)
            await load.stop_sending()
            await drain(load, drain_timeout)
        return summary(done, load, time.monotonic() - began)
    finally:
        if load is not None:
            await load.close()
        cluster.stop()


def print_round(r: Round) -> None:
    fo = f"{r.failover_seconds:.2f} s" if r.failover_seconds is not None else "none"
    print(
        f"round {r.number:2}: killed broker {r.killed_id} (epoch {r.epoch_before}) -> master "
        f"{r.new_master_id} epoch {r.epoch_after}; acknowledged {r.acknowledged}; "
        f"kill->first ack {fo}; consumer resumed {'yes' if r.consumer_resumed else 'no'}",
        file=sys.stderr,
        flush=True,
    )


def print_summary(s: dict[str, Any]) -> None:
    fo = s["failoverSeconds"]
    rows = [
        ("rounds", s["rounds"]),
        ("acknowledged (SEND_OK)", s["acknowledged"]),
        ("lost", s["lost"]),
        ("duplicates", s["duplicates"]),
        ("answered but not SEND_OK", s["notAcknowledged"] or 0),
        ("sends that raised", s["sendErrors"]),
        ("kill -> first ack at the new master, median", f"{fo['median']} s"),
        ("kill -> first ack at the new master, max", f"{fo['max']} s"),
        ("rounds that failed over", f"{fo['failedOver']} of {s['rounds']}"),
        ("consumer resumed", f"{s['consumerResumed']} of {s['rounds']}"),
        ("wall time", f"{s['wallSeconds']} s"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument(
        "--timeout-ms", type=int, default=2000, help="controllerHeartBeatTimeoutMills"
    )
    parser.add_argument("--drain-timeout", type=float, default=30.0)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    logging.getLogger("mq").setLevel(logging.CRITICAL)  # refused connections are expected
    root = Path(tempfile.mkdtemp(prefix="mq-ctl-failover-"))
    keep = args.keep
    try:
        result = asyncio.run(
            run(args.rounds, args.timeout_ms, args.drain_timeout, root, print_round)
        )
        keep = keep or result["lost"] > 0
    except BaseException:
        keep = True  # what the processes logged is the diagnosis
        raise
    finally:
        if keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(result))
    else:
        print_summary(result)
    ok = result["lost"] == 0 and result["failoverSeconds"]["failedOver"] == result["rounds"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

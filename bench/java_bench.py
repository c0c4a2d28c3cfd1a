"""RocketMQ's own Java benchmark tools against mq and against the real 4.9.8 broker.

Usage (after ``MIRROR_DIR=... bash ../shared/tools/rmq-real/build.sh``, which installs
``$HOME/rmq-real``)::

    .venv/bin/python bench/java_bench.py [--systems rocketmq,mq,mq2] [--threads 4,16]
        [--warmup 40] [--seconds 30] [--drain 20] [--json FILE]

Each system runs on a fresh store inside the loopback-only network namespace of
``rmq-real/ns.sh`` (name server 127.0.0.1:9876, broker 10911), one after the other:

* ``rocketmq``: the Java NameServer and Broker (``-Xms512m -Xmx512m``);
* ``mq``: ``mq namesrv`` and one ``mq broker``, same broker.conf keys;
* ``mq2``: ``mq up --brokers 2`` (two broker processes of one cluster).

For each thread count: the benchmark ``Producer -w N -s 1024`` (sync sends, binary
ROCKETMQ headers) runs ``warmup + seconds``; its "Send TPS" windows after the warm-up
(the Java client's JIT needs ~40 s) are averaged. Broker CPU is read from /proc over the
same window, so CPU per message is broker work only; beside it the cores the brokers and
the Producer used and how idle the machine was (what a second broker process could have
had). RSS is the brokers' VmRSS at the end. Then the benchmark ``Consumer`` drains the
backlog for ``drain`` seconds; its best 10 s window is reported (the first may include
its start-up).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from procs import stop_processes

REPO = Path(__file__).resolve().parent.parent
RMQ = Path(os.environ.get("RMQ_HOME", Path.home() / "rmq-real"))
CLK_TCK = os.sysconf("SC_CLK_TCK")
BROKER_CONF = """brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
brokerIP1=127.0.0.1
listenPort=10911
namesrvAddr=127.0.0.1:9876
storePathRootDir={store}
storePathCommitLog={store}/commitlog
autoCreateTopicEnable=true
brokerRole=ASYNC_MASTER
flushDiskType=ASYNC_FLUSH
"""


@dataclass
class Row:
    system: str
    threads: int
    send_tps: float
    windows: list[int]
    broker_cpu_us_per_msg: float
    broker_rss_mib: float
    consume_tps: int
    send_failed: int
    machine_idle_pct: float = 0.0
    """Idle share of all cores over the send window (/proc/stat): what a second broker
    process could have used."""
    broker_cores: float = 0.0
    client_cores: float = 0.0
    """CPU the brokers and the benchmark Producer used per wall second, in cores."""


def _env() -> tuple[str, str]:
    """RMQ_CP and RMQ_JOPTS from rmq-real/env.sh."""
    out = subprocess.run(
        ["bash", "-c", f'. "{RMQ}/env.sh" >/dev/null; printf "%s\\n%s" "$RMQ_CP" "$RMQ_JOPTS"'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    return out[0], out[1]


def _ns_holder() -> str:
    subprocess.run(["bash", "-c", f'. "{RMQ}/ns.sh"; ns_up'], check=True)
    return (RMQ / "ns.pid").read_text().strip()


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.cp, jopts = _env()
        self.jopts = jopts.split()
        self.ns = ["nsenter", "-t", _ns_holder(), "-n", "--"]
        self.procs: list[subprocess.Popen[str]] = []
        self.logs = Path(tempfile.mkdtemp(prefix="java-bench-"))

    def spawn(self, name: str, cmd: list[str]) -> subprocess.Popen[str]:
        out = open(self.logs / f"{name}.out", "w")  # noqa: SIM115 - lives with the process
        proc = subprocess.Popen([*self.ns, *cmd], stdout=out, stderr=subprocess.STDOUT, text=True)
        self.procs.append(proc)
        return proc

    def wait_log(self, name: str, pattern: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, (self.logs / f"{name}.out").read_text()):
                return
            time.sleep(0.2)
        raise RuntimeError(f"{name}: no {pattern!r} in {timeout}s (see {self.logs})")

    def java(self, cls: str, *args: str, heap: str = "512m") -> list[str]:
        return ["java", f"-Xms{heap}", f"-Xmx{heap}", *self.jopts, "-cp", self.cp, cls, *args]

    def stop_all(self) -> None:
        stop_processes(reversed(self.procs))
        self.procs.clear()

    # -- servers ------------------------------------------------------------------------
    def start(self, system: str, store: Path) -> list[int]:
        """Start a system's servers; the broker pids (whose CPU and RSS count)."""
        conf = store.parent / "broker.conf"
        conf.write_text(BROKER_CONF.format(store=store))
        mq = [str(REPO / ".venv" / "bin" / "mq")]
        if system == "rocketmq":
            self.spawn(
                "namesrv", self.java("org.apache.rocketmq.namesrv.NamesrvStartup", heap="256m")
            )
            self.wait_log("namesrv", "boot success")
            broker = self.spawn(
                "broker", self.java("org.apache.rocketmq.broker.BrokerStartup", "-c", str(conf))
            )
            self.wait_log("broker", "boot success")
            return [broker.pid]
        if system == "mq":
            self.spawn("namesrv", [*mq, "namesrv", "--listen", "127.0.0.1:9876"])
            self.wait_log("namesrv", "listening")
            broker = self.spawn("broker", [*mq, "broker", "-c", str(conf)])
            self.wait_log("broker", "listening")
            return [broker.pid]
        if system == "mq2":
            up = self.spawn(
                "up",
                [*mq, "up", "--brokers", "2", "--store", str(store), "--host", "127.0.0.1"],
            )
            self.wait_log("up", "export NAMESRV_ADDR")
            kids = subprocess.run(
                ["pgrep", "-P", str(up.pid)], capture_output=True, text=True
            ).stdout.split()
            return [up.pid, *(int(k) for k in kids)]
        raise SystemExit(f"unknown system {system!r}")

    # -- one run ------------------------------------------------------------------------
    def run(self, system: str, threads: int) -> Row:
        base = Path(tempfile.mkdtemp(prefix=f"jb-{system}-"))
        store = base / "store"
        try:
            pids = self.start(system, store)
            time.sleep(3)  # registration with the name server
            topic = f"Bench{system}{threads}"
            producer = self.spawn(
                "producer",
                self.java(
                    "org.apache.rocketmq.example.benchmark.Producer",
                    *("-n", "127.0.0.1:9876", "-t", topic, "-w", str(threads), "-s", "1024"),
                ),
            )
            time.sleep(self.args.warmup)
            cpu0 = sum(_cpu_ticks(p) for p in pids)
            client0, machine0 = _cpu_ticks(producer.pid), _machine_ticks()
            time.sleep(self.args.seconds)
            cpu1 = sum(_cpu_ticks(p) for p in pids)
            client1, machine1 = _cpu_ticks(producer.pid), _machine_ticks()
            idle = machine1[0] - machine0[0]
            busy = machine1[1] - machine0[1]
            window_ticks = self.args.seconds * CLK_TCK
            rss = sum(_rss_kib(p) for p in pids) / 1024
            producer.send_signal(signal.SIGTERM)
            producer.wait(30)
            text = (self.logs / "producer.out").read_text()
            windows = [int(m) for m in re.findall(r"Current Time: .*? Send TPS: (\d+)", text)]
            failed = sum(int(m) for m in re.findall(r"Send Failed: (\d+)", text))
            keep = windows[int(self.args.warmup // 10) :] or windows[-1:]
            tps = sum(keep) / len(keep) if keep else 0.0
            sent = tps * self.args.seconds
            cpu_us = (cpu1 - cpu0) / CLK_TCK * 1e6 / sent if sent else 0.0
            consumer = self.spawn(
                "consumer",
                self.java(
                    "org.apache.rocketmq.example.benchmark.Consumer",
                    *("-n", "127.0.0.1:9876", "-t", topic, "-g", f"cg_{topic}"),
                ),
            )
            time.sleep(self.args.drain)
            consumer.send_signal(signal.SIGTERM)
            consumer.wait(30)
            ctext = (self.logs / "consumer.out").read_text()
            ctps = max(
                (int(m) for m in re.findall(r"Current Time: .*? TPS: (\d+)", ctext)), default=0
            )
            return Row(
                system,
                threads,
                round(tps, 1),
                keep,
                round(cpu_us, 1),
                round(rss, 1),
                ctps,
                failed,
                machine_idle_pct=round(100 * idle / (idle + busy), 1) if idle + busy else 0.0,
                broker_cores=round((cpu1 - cpu0) / window_ticks, 2),
                client_cores=round((client1 - client0) / window_ticks, 2),
            )
        finally:
            self.stop_all()
            shutil.rmtree(base, ignore_errors=True)


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _machine_ticks() -> tuple[int, int]:
    """(idle, busy) ticks of all cores since boot, from the first line of /proc/stat."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return idle, sum(fields[:8]) - idle  # user..steal


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--systems", default="rocketmq,mq,mq2")
    parser.add_argument("--threads", default="4,16")
    parser.add_argument("--warmup", type=float, default=40)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--drain", type=float, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    bench = Bench(args)
    rows: list[Row] = []
    try:
        for threads in (int(t) for t in args.threads.split(",")):
            for system in args.systems.split(","):
                row = bench.run(system, threads)
                rows.append(row)
                print(json.dumps(asdict(row)), flush=True)
    finally:
        bench.stop_all()
    if args.json:
        args.json.write_text("\n".join(json.dumps(asdict(r)) for r in rows) + "\n")
    ref = {r.threads: r for r in rows if r.system == "rocketmq"}
    print(
        "\n| system | threads | send TPS | vs 4.9.8 | broker CPU us/msg | RSS MiB | consume TPS "
        "| broker / client cores | machine idle |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        base = ref.get(r.threads)
        ratio = f"{r.send_tps / base.send_tps:.2f}" if base and base.send_tps else "-"
        print(
            f"| {r.system} | {r.threads} | {r.send_tps:,.0f} | {ratio} | "
            f"{r.broker_cpu_us_per_msg:.0f} | {r.broker_rss_mib:.0f} | {r.consume_tps:,} | "
            f"{r.broker_cores:.2f} / {r.client_cores:.2f} | {r.machine_idle_pct:.0f} % |"
        )
    print(f"\nlogs: {bench.logs}", file=sys.stderr)


if __name__ == "__main__":
    main()

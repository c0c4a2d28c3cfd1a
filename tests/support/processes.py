"""The subprocess variant: real `mq namesrv` / `mq broker` processes, as users run them.

Every server listens on 127.0.0.1 port 0 (or a port the test chose) and says so on its
first "listening on HOST:PORT" line; :func:`launch` waits for that line. Stderr goes to
``<workdir>/stderr.txt``: a pipe nobody drains could fill up and block the server.
"""

from __future__ import annotations

import os
import random
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

LISTENING = re.compile(r"listening on (\S+):(\d+)")
BROKER_LISTENING = re.compile(r"mq broker listening on (\S+):(\d+)")
MQ = [sys.executable, "-m", "mqcli.main"]
CLEAN_ENV = {"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home"}
"""An environment for `mq` with no config of the user's: no home, no name server."""


def stop_process(
    proc: subprocess.Popen[str], *, sig: int = signal.SIGTERM, timeout: float = 15.0
) -> int:
    """Send ``sig`` (SIGTERM; SIGINT is Ctrl-C), SIGKILL if the process does not exit in
    ``timeout`` s; close its pipes. Returns the exit code."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    return proc.returncode


@dataclass
class ServerProcess:
    """A running `mq` server and the address of its listen line."""

    proc: subprocess.Popen[str]
    addr: str
    workdir: Path
    stdout_lines: list[str] = field(default_factory=list)

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM, then SIGKILL if it does not exit in time. Returns the exit code."""
        return stop_process(self.proc, timeout=timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@dataclass
class BrokerProcess(ServerProcess):
    store: Path = field(kw_only=True)


def server_env(workdir: Path) -> dict[str, str]:
    """This environment with HOME in ``workdir`` and no name server address of the user."""
    env = {**os.environ, "HOME": str(workdir)}
    env.pop("NAMESRV_ADDR", None)
    env.pop("MQ_NAMESRV_ADDR", None)
    return env


def launch(
    args: list[str],
    workdir: Path,
    what: str = "",
    *,
    listen: re.Pattern[str] = LISTENING,
    netns: str | None = None,
    cwd: Path | None = None,
    timeout: float = 30.0,
) -> ServerProcess:
    """Run ``mq ARGS`` (inside network namespace ``netns``) until a ``listen`` line."""
    workdir.mkdir(parents=True, exist_ok=True)
    prefix = ["ip", "netns", "exec", netns] if netns else []
    err_path = workdir / "stderr.txt"
    with open(err_path, "ab") as err:
        proc = subprocess.Popen(
            [*prefix, *MQ, *args],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=server_env(workdir),
            cwd=cwd,
        )
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    lines: list[str] = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if m := listen.search(line):
            return ServerProcess(proc, f"{m.group(1)}:{m.group(2)}", workdir, lines)
    proc.kill()
    stop_process(proc)
    raise AssertionError(
        f"{what or 'mq ' + args[0]} did not start: stdout={lines!r} stderr={err_path.read_text()!r}"
    )


def write_properties(path: Path, settings: Mapping[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    return path


def start_namesrv(workdir: Path, **props: str) -> ServerProcess:
    """Run `mq namesrv -c <file> --listen 127.0.0.1:0`; its files under ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    settings = {
        "kvConfigPath": str(workdir / "kv" / "kvConfig.json"),
        "logDir": str(workdir / "logs"),
        **props,
    }
    conf = write_properties(workdir / "namesrv.properties", settings)
    return launch(["namesrv", "-c", str(conf), "--listen", "127.0.0.1:0"], workdir, "namesrv")


def start_broker(
    workdir: Path,
    namesrv: str | None = None,
    *,
    name: str = "broker-a",
    store: Path | None = None,
    own_log_dir: bool = False,
    **props: str,
) -> BrokerProcess:
    """Run `mq broker -c <file> --listen 127.0.0.1:0` with a small store (in
    ``workdir/store`` unless ``store``). Logs go to ``workdir/logs``, or with
    ``own_log_dir`` where the broker puts them; ``props`` are broker.conf keys."""
    workdir.mkdir(parents=True, exist_ok=True)
    store = store or workdir / "store"
    settings = {
        "brokerName": name,
        "brokerIP1": "127.0.0.1",
        "logDir": str(workdir / "logs"),
        "storePathRootDir": str(store),
        "mappedFileSizeCommitLog": str(4 * 1024 * 1024),
        "mappedFileSizeConsumeQueue": str(20 * 10_000),
        "maxHashSlotNum": "1000",
        "maxIndexNum": "4000",
        **props,
    }
    if namesrv is not None:
        settings["namesrvAddr"] = namesrv
    if own_log_dir:
        del settings["logDir"]
    conf = write_properties(workdir / "broker.conf", settings)
    args = ["broker", "-c", str(conf), "--listen", "127.0.0.1:0"]
    started = launch(args, workdir, name, listen=BROKER_LISTENING)
    return BrokerProcess(started.proc, started.addr, workdir, started.stdout_lines, store=store)


def start_pair_member(workdir: Path, namesrv: str, role: str, **props: str) -> BrokerProcess:
    """broker-a of a master/slave pair as a process: ``role`` is its brokerRole
    (SYNC_MASTER, ASYNC_MASTER or SLAVE, which is brokerId 1)."""
    broker_id = "1" if role == "SLAVE" else "0"
    return start_broker(
        workdir, namesrv, name="broker-a", brokerId=broker_id, brokerRole=role, **props
    )


@contextmanager
def serving(
    args: list[str], workdir: Path, *, netns: str | None = None
) -> Iterator[tuple[str, int]]:
    """Run ``mq ARGS`` in ``workdir`` (inside network namespace ``netns``) until its first
    "listening on HOST:PORT" line; yields (host, port); stops the process after."""
    server = launch(args, workdir, netns=netns, cwd=workdir)
    try:
        host, port = server.addr.rsplit(":", 1)
        yield host, int(port)
    finally:
        server.stop()


def run_mq(
    args: tuple[str, ...] | list[str],
    env: Mapping[str, str],
    *,
    input: str | None = None,
    timeout: float = 60,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run `mq ARGS` to completion with exactly ``env``; ``check``: it must exit 0."""
    done = subprocess.run(
        [*MQ, *args],
        capture_output=True,
        text=True,
        input=input,
        timeout=timeout,
        env=dict(env),
        stdin=None if input is not None else subprocess.DEVNULL,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"mq {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
    return done


def mq(
    *args: str, env: dict[str, str] | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """Run `mq ARGS` with this environment plus ``env``."""
    return run_mq(args, {**os.environ, **(env or {})}, timeout=timeout)


def restartable_broker_port() -> int:
    """A listen port for a broker a test stops and starts again on the same address: below
    the ephemeral range (so no process's outgoing connection takes it, or its fast port
    -2 or HA port +1, while the broker is down), with those three free now."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()
    for _ in range(500):
        port = rng.randrange(20000, max(20010, low - 2))
        if all(_port_free(p) for p in (port - 2, port, port + 1)):
            return port
    raise AssertionError("no free port triple below the ephemeral range")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True

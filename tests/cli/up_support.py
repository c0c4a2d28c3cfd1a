"""`mq up` as a process, as a user starts it: on 127.0.0.1 and ephemeral ports, in a
temporary home; stopped with Ctrl-C (SIGINT) at the end, which stops its brokers."""

from __future__ import annotations

import contextlib
import queue
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.cluster import Cluster
from tests.support.processes import MQ, server_env, stop_process

__all__ = ["mq_up"]

_LINE = re.compile(r"mq (namesrv|broker) listening on (\S+:\d+)")


def _read_until_export(proc: subprocess.Popen[str], timeout: float = 90) -> list[str]:
    """`mq up`'s lines up to its export line (every process is listening then). A thread
    reads them: select() cannot see lines a previous readline already buffered."""
    assert proc.stdout is not None
    stdout = proc.stdout
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        with contextlib.suppress(ValueError, OSError):  # closed by stop_process at the end
            for line in stdout:
                lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        seen.append(line)
        if line.startswith("export NAMESRV_ADDR"):
            return seen
    raise AssertionError(f"mq up did not start: {seen!r}")


@contextlib.contextmanager
def mq_up(base: Path, *args: str) -> Iterator[tuple[Cluster, subprocess.Popen[str]]]:
    home = base / "home"
    home.mkdir(parents=True)
    with open(base / "up-stderr.txt", "wb") as err:
        proc = subprocess.Popen(
            [*MQ, "up", "--store", str(base / "store"),
             "--namesrv-port", "0", "--broker-port", "0", "--host", "127.0.0.1", *args],
            stdout=subprocess.PIPE, stderr=err, text=True, env=server_env(home),
        )  # fmt: skip
    try:
        found = [_LINE.search(line) for line in _read_until_export(proc)]
        addrs = [(m.group(1), m.group(2)) for m in found if m]
        namesrv = next(a for kind, a in addrs if kind == "namesrv")
        brokers = {f"b{i}": a for i, (kind, a) in enumerate(addrs) if kind == "broker"}
        yield Cluster(namesrv, brokers, base), proc
    finally:
        stop_process(proc, sig=signal.SIGINT, timeout=60)  # Ctrl-C: `mq up` stops its brokers

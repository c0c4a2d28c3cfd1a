"""`mq up` as a process, as a user starts it: on 127.0.0.1 and ephemeral ports, in a
temporary home; stopped with Ctrl-C (SIGINT) at the end, which stops its brokers."""

from __future__ import annotations

import contextlib
import os
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
def mq_up(
    base: Path,
    *args: str,
    store: Path | None = None,
    ctrl_c_group: bool = False,
    lines: list[str] | None = None,
) -> Iterator[tuple[Cluster, subprocess.Popen[str]]]:
    """`mq up ARGS` on ``store`` (default ``base/store``) until the ``with`` ends, then
    SIGINT: to `mq up` alone, or (``ctrl_c_group``) to its whole process group, as
    Ctrl-C on a terminal does, so its broker processes get it too. ``lines`` receives
    what it printed up to its export line."""
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    with open(base / "up-stderr.txt", "ab") as err:
        proc = subprocess.Popen(
            [*MQ, "up", "--store", str(store or base / "store"),
             "--namesrv-port", "0", "--broker-port", "0", "--host", "127.0.0.1", *args],
            stdout=subprocess.PIPE, stderr=err, text=True, env=server_env(home),
            start_new_session=ctrl_c_group,
        )  # fmt: skip
    try:
        started = _read_until_export(proc)
        if lines is not None:
            lines.extend(started)
        found = [_LINE.search(line) for line in started]
        addrs = [(m.group(1), m.group(2)) for m in found if m]
        namesrv = next(a for kind, a in addrs if kind == "namesrv")
        brokers = {f"b{i}": a for i, (kind, a) in enumerate(addrs) if kind == "broker"}
        yield Cluster(namesrv, brokers, base), proc
    finally:
        if ctrl_c_group and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(60)  # one Ctrl-C: a second one would cut the shutdown short
        stop_process(proc, sig=signal.SIGINT, timeout=60)  # Ctrl-C: `mq up` stops its brokers

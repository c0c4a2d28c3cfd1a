"""CPU time of the `mq` command itself: `mq --help`, one `mq produce`, one completion.

Each case runs N times as a child process; its user+sys CPU time comes from
``os.wait4`` (the child's own rusage, not wall time, which a loaded machine stretches).
A bare interpreter start (``python -c pass``) runs alongside as the yardstick: each case
is also shown as a multiple of it, and `mq --help` must stay within
:data:`HELP_TIMES_BARE` of it.
The produce case sends to a name server and broker (`mq up`) this script starts on
ephemeral ports and stops at the end. ``--explain`` adds the ``-X importtime`` modules
that cost most in each case, which is where to look when a figure grows.

    .venv/bin/python bench/startup.py [--runs 15] [--explain] [--json] [--source DIR]

``--source DIR`` measures the `mq` of another checkout (e.g. ``git archive`` of an older
commit unpacked in DIR) with this environment's packages, for before/after figures.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
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
from dataclasses import dataclass
from pathlib import Path

import orjson
from procs import stop_processes

TARGET = 0.3
"""Seconds of CPU a case may take (user + sys of the process)."""

HELP_TIMES_BARE = 5.0
"""`mq --help` may take this many bare interpreter starts."""

BARE = "python -c pass (bare start)"
HELP = "mq --help"

_LISTEN = re.compile(r"mq broker listening on (\S+):(\d+)")
_NAMESRV = re.compile(r"mq namesrv listening on (\S+):(\d+)")


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    argv: list[str]
    env: dict[str, str]


_ENTRY = "import sys; sys.argv[0] = 'mq'; from mqcli.main import main; main()"
"""What the installed `mq` script runs (its name decides the completion variable)."""


def _mq(*args: str) -> list[str]:
    return [sys.executable, "-c", _ENTRY, *args]


def cases(namesrv: str, home: Path, source: Path | None = None) -> list[Case]:
    base = {
        **({"PYTHONPATH": str(source), "PYTHONSAFEPATH": "1"} if source else {}),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "MQ_CONFIG_DIR": str(home / "config"),
        "COLUMNS": "100",
    }
    complete = {**base, "_MQ_COMPLETE": "complete_bash", "COMP_WORDS": "mq pro", "COMP_CWORD": "1"}
    return [
        Case(BARE, [sys.executable, "-c", "pass"], base),
        Case(HELP, _mq("--help"), base),
        Case(
            "mq produce -t T --body x",
            _mq("produce", "-n", namesrv, "-t", "T", "--body", "x"),
            base,
        ),
        Case("completion (mq pro<TAB>)", _mq(), complete),
    ]


def cpu_seconds(case: Case) -> float:
    """User + sys seconds of one run of ``case``; fails loudly when the command fails."""
    pid = os.fork()
    if pid == 0:  # child: quiet, then the command
        try:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.execve(case.argv[0], case.argv, case.env)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{case.name!r} exited {os.waitstatus_to_exitcode(status)}")
    return usage.ru_utime + usage.ru_stime


def importtime_top(case: Case, count: int = 8) -> list[tuple[str, float]]:
    """The top-level imports of one run with the most cumulative time (seconds)."""
    argv = [case.argv[0], "-X", "importtime", *case.argv[1:]]
    done = subprocess.run(argv, env=case.env, capture_output=True, text=True, timeout=60)
    rows: list[tuple[str, float]] = []
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2]
        depth = (len(name) - len(name.lstrip())) // 2
        if depth <= 1:
            rows.append((name.strip(), int(parts[1]) / 1e6))
    rows.sort(key=lambda row: -row[1])
    return rows[:count]


@contextlib.contextmanager
def running_cluster(workdir: Path) -> Iterator[str]:
    """`mq up` on ephemeral ports; yields the name server address once the broker is ready."""
    env = {**os.environ, "HOME": str(workdir)}
    env.pop("NAMESRV_ADDR", None)
    env.pop("MQ_NAMESRV_ADDR", None)
    argv = _mq("up", "--store", str(workdir / "store"), "--namesrv-port", "0", "--broker-port", "0")
    with open(workdir / "up.log", "ab") as err:
        # unbuffered: select() then sees every line (a buffered reader may hold the next one)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, bufsize=0, env=env)
    assert proc.stdout is not None
    try:
        namesrv = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select(
                [proc.stdout], [], [], max(0.0, deadline - time.monotonic())
            )
            line = proc.stdout.readline().decode(errors="replace") if ready else ""
            if not line:
                log = (workdir / "up.log").read_text(errors="replace")
                raise SystemExit(f"mq up did not start:\n{log[-2000:]}")
            if m := _NAMESRV.search(line):
                namesrv = f"{m.group(1)}:{m.group(2)}"
            if _LISTEN.search(line) and namesrv:
                break
        else:
            raise SystemExit("mq up did not start within 60 s")
        assert namesrv is not None
        yield namesrv
    finally:
        stop_processes([proc], grace=20)
        proc.stdout.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass(slots=True)
class Figures:
    """One case's CPU seconds over the runs."""

    median: float
    p90: float
    low: float
    importtime: list[tuple[str, float]]
    bare: float = 0.0
    """The bare start's median, for :attr:`times_bare`."""
    help: bool = False

    @property
    def times_bare(self) -> float:
        return self.median / self.bare if self.bare else 0.0

    @property
    def met(self) -> bool:
        if self.help:
            return self.median <= TARGET and self.times_bare <= HELP_TIMES_BARE
        return self.median <= TARGET


def measure(case: Case, runs: int, explain: bool) -> Figures:
    times = [cpu_seconds(case) for _ in range(runs)]
    top = importtime_top(case) if explain else []
    return Figures(statistics.median(times), percentile(times, 0.9), min(times), top)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per case (default 15)")
    parser.add_argument("--explain", action="store_true", help="show -X importtime top offenders")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    parser.add_argument("--source", type=Path, help="measure the mq of this source tree")
    args = parser.parse_args()
    source = args.source or Path(__file__).resolve().parents[1]
    # byte code as an installed package has it (this environment may not write it itself)
    for package in ("mqcli", "mqcore"):
        compileall.compile_dir(source / package, quiet=1)
    workdir = Path(tempfile.mkdtemp(prefix="mq-startup-"))
    results: dict[str, Figures] = {}
    try:
        with running_cluster(workdir) as namesrv:
            all_cases = cases(namesrv, workdir / "home", args.source)
            cpu_seconds(all_cases[2])  # the topic exists from here on (auto-created once)
            for case in all_cases:
                results[case.name] = measure(case, args.runs, args.explain and case.name != BARE)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for name, figures in results.items():
        figures.bare = results[BARE].median
        figures.help = name == HELP
    if args.json:
        doc = {
            "targetSeconds": TARGET,
            "helpTargetTimesBare": HELP_TIMES_BARE,
            "runs": args.runs,
            "cases": {
                name: {
                    "median": f.median,
                    "p90": f.p90,
                    "min": f.low,
                    "timesBare": f.times_bare,
                    "met": f.met,
                    "importtime": f.importtime,
                }
                for name, f in results.items()
            },
        }
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        return
    print(
        f"CPU seconds (user+sys) per run, {args.runs} runs, target {TARGET:.2f} s "
        f"(`mq --help`: also at most {HELP_TIMES_BARE:g} x the bare start)"
    )
    print(f"{'case':<28} {'median':>7} {'p90':>7} {'min':>7} {'x bare':>7}  target")
    for name, f in results.items():
        verdict = "-" if name == BARE else "met" if f.met else "MISSED"
        print(
            f"{name:<28} {f.median:7.3f} {f.p90:7.3f} {f.low:7.3f} {f.times_bare:7.1f}  {verdict}"
        )
        for module, seconds in f.importtime:
            print(f"    {seconds:6.3f} s  import {module}")


if __name__ == "__main__":
    main()

"""Run an ``mq`` server under tracemalloc and write where its heap grew, for soak runs.

Usage: ``python bench/heap_probe.py OUT SECONDS -- broker -c broker.conf ...``

The first snapshot is taken ``SECONDS`` after start (warm-up); every ``SECONDS`` after
that, OUT is rewritten with the Python heap's growth next to the process's RssAnon (growth
in RssAnon that the Python heap does not show is the allocator's or a C library's) and the
25 allocation sites that grew most since then (by line, with the innermost frames).
Tracemalloc costs the server about half its speed, so figures from a probed run are for
finding growth, not for throughput.
"""

from __future__ import annotations

import sys
import threading
import time
import tracemalloc
from pathlib import Path

FRAMES = 6
TOP = 25


def _rss_anon() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    return 0


def _report(out: Path, every: float) -> None:
    time.sleep(every)
    base = tracemalloc.take_snapshot()
    base_traced, _ = tracemalloc.get_traced_memory()
    started = time.monotonic()
    while True:
        time.sleep(every)
        snap = tracemalloc.take_snapshot()
        stats = snap.compare_to(base, "traceback")[:TOP]
        traced, _ = tracemalloc.get_traced_memory()
        grown = (traced - base_traced) / 1024
        lines = [
            f"after {time.monotonic() - started:.0f} s past warm-up: Python heap "
            f"{traced / 1024:,.0f} KiB ({grown:+,.0f} KiB), process RssAnon {_rss_anon()} KiB"
        ]
        for stat in stats:
            lines.append(f"{stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} blocks")
            lines.extend(f"        {line}" for line in stat.traceback.format()[-2 * FRAMES :])
        tmp = out.with_suffix(".tmp")
        tmp.write_text("\n".join(lines) + "\n")
        tmp.replace(out)


def main() -> None:
    out, every, sep, *args = sys.argv[1:]
    if sep != "--":
        raise SystemExit(__doc__)
    tracemalloc.start(FRAMES)
    threading.Thread(target=_report, args=(Path(out), float(every)), daemon=True).start()
    from mqcli.main import main as mq_main

    sys.argv = ["mq", *args]
    mq_main()


if __name__ == "__main__":
    main()

"""Filter evaluation throughput (not a test).

Usage: ``.venv/bin/python bench/filter_bench.py [--seconds S]``

Rows: a compiled 3-clause SQL92 selector on a message's property map (matching and
rejecting), the seed ``score > 98``, the compile itself (cache bypassed), and the
broker-side tag-code check.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from mqcore.filter import compile_tags
from mqcore.filter.sql92 import SqlFilter, compile_sql, parse

THREE = "score > 98 AND region IN ('eu', 'us') AND TAGS <> 'debug'"
PROPS = {"score": "99", "region": "eu", "TAGS": "TagA", "KEYS": "k1", "UNIQ_KEY": "x" * 32}
REJECT = {**PROPS, "score": "50"}


def rate(fn: Callable[[], object], seconds: float) -> float:
    n, batch = 0, 1000
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(batch):
            fn()
        n += batch
    return n / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=1.0)
    s = ap.parse_args().seconds
    three, seed = compile_sql(THREE), compile_sql("score > 98")
    tags = compile_tags("TagA || TagB || TagC")
    rows = [
        ("sql 3-clause, match", lambda: three.evaluate(PROPS)),
        ("sql 3-clause, reject at 1st", lambda: three.evaluate(REJECT)),
        ("sql score > 98", lambda: seed.evaluate(PROPS)),
        ("sql compile 3-clause", lambda: SqlFilter(THREE, parse(THREE))),
        ("tag match_code", lambda: tags.match_code(2598919)),
    ]
    for name, fn in rows:
        print(f"{name:30s} {rate(fn, s):>12,.0f} /s")


if __name__ == "__main__":
    main()

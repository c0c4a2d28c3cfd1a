"""Shared strategies of the fuzz tests: seeds mutated at the byte level, JSON with wrong
types, and one settings profile that keeps the whole directory within its time budget.

Random bytes alone rarely get past a decoder's first length check; mutating valid input
(flipped bits, overwritten length fields, truncation) reaches the code behind it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

__all__ = ["JSON_VALUES", "fuzz", "mutated", "perturbed_json"]

F = TypeVar("F", bound=Callable[..., Any])

INTERESTING_INTS = [
    0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, -0x80000000,
    0xFFFFFFFF, 16 * 1024 * 1024, 4 * 1024 * 1024 + 1,
]  # fmt: skip


def fuzz(max_examples: int) -> Callable[[F], F]:
    """Bounded hypothesis settings: no deadline (a slow CI core is not a bug) and a modest
    number of examples, so ``tests/fuzz`` stays under a minute on two cores."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )


@st.composite
def mutated(draw: st.DrawFn, seeds: st.SearchStrategy[bytes], max_ops: int = 4) -> bytes:
    """A seed with up to ``max_ops`` byte-level mutations (the libFuzzer repertoire)."""
    data = bytearray(draw(seeds))
    for _ in range(draw(st.integers(0, max_ops))):
        op = draw(st.sampled_from(["flip", "byte", "i32", "i16", "insert", "delete", "cut"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "byte" and data:
            data[pos] = draw(st.integers(0, 255))
        elif op in ("i32", "i16") and data:
            fmt, size = (">I", 4) if op == "i32" else (">H", 2)
            value = draw(st.sampled_from(INTERESTING_INTS)) & ((1 << (8 * size)) - 1)
            data[pos : pos + size] = struct.pack(fmt, value)
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete" and data:
            del data[pos : pos + draw(st.integers(1, 16))]
        elif op == "cut":
            del data[pos:]
    return bytes(data)


JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([2**63, -(2**63) - 1, 2**100, 10**30]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["", "true", "1", "-1", "9" * 25, "1e999", "NaN", "{", "[]", "x"]),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
"""Any JSON value, ints beyond 64 bits included (write it with ``json.dumps``)."""


@st.composite
def perturbed_json(draw: st.DrawFn, obj: Any) -> Any:
    """``obj`` (a valid document) with some values swapped for values of other types."""
    if draw(st.integers(0, 5)) == 0:
        return draw(JSON_VALUES)
    if isinstance(obj, dict):
        return {k: draw(perturbed_json(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [draw(perturbed_json(v)) for v in obj]
    return obj

"""The compiled ``IndexFile.put_key`` (``_index_file.pyx``) equals the pure reference: the
same calls on two files give the same answers, the same bytes on disk and the same
in-memory header, through slot collisions, a full file and the odd cases."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.common.javahash import index_key_hash
from mqcore.store import index_file as pure_module
from mqcore.store.index_file import IndexFile
from tests.support.compiled import compiled_twin, outcome

pure_put_key = pure_module.PURE["put_key"]
STATE = (
    "index_count",
    "hash_slot_count",
    "begin_phy_offset",
    "begin_timestamp",
    "end_phy_offset",
    "end_timestamp",
)


@pytest.fixture(scope="module")
def twin() -> Callable[..., Any]:
    module: ModuleType = compiled_twin("mqcore.store._index_file")
    put_key: Callable[..., Any] = module.put_key_method(pure_put_key, index_key_hash)
    return put_key


def never(*args: object, **kwargs: object) -> object:
    raise AssertionError("an everyday key was handed to the pure method")


def state(f: IndexFile) -> tuple[Any, ...]:
    return (*(getattr(f, name) for name in STATE), f.path.read_bytes())


def same_path(result: tuple[Any, Any], f: IndexFile) -> tuple[Any, Any]:
    """An error names its file: the same text for either file of a pair."""
    kind, value = result
    return (kind, value.replace(str(f.path), "<file>")) if kind != "ok" else result


class Pair:
    """The same index file twice: one written by the pure method, one by the twin."""

    def __init__(self, where: Path, slots: int, entries: int, **created: int) -> None:
        self.pure = IndexFile.create(where / "pure", slots, entries, **created)
        self.twin = IndexFile.create(where / "twin", slots, entries, **created)

    def put(self, twin: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        got = same_path(outcome(lambda: twin(self.twin, *args, **kwargs)), self.twin)
        expected = same_path(outcome(lambda: pure_put_key(self.pure, *args, **kwargs)), self.pure)
        assert got == expected, args
        self.pure.flush()
        self.twin.flush()
        assert state(self.twin)[:-1] == state(self.pure)[:-1]
        assert self.twin.path.read_bytes() == self.pure.path.read_bytes()

    def close(self) -> None:
        self.pure.close()
        self.twin.close()


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Callable[..., Pair]]:
    made: list[Pair] = []

    def make(slots: int = 8, entries: int = 12, **created: int) -> Pair:
        where = tmp_path / str(len(made))
        where.mkdir()
        made.append(Pair(where, slots, entries, **created))
        return made[-1]

    yield make
    for p in made:
        p.close()


keys = st.text(max_size=12) | st.sampled_from(["a", "b", "polygenelubricants"])
calls = st.tuples(
    keys,
    st.integers(-(2**63), 2**63 - 1) | st.integers(0, 10**6),
    st.integers(-(2**63), 2**63 - 1) | st.integers(1_700_000_000_000, 1_700_000_100_000),
    st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(calls, max_size=14), st.integers(0, 2**40), st.integers(-5, 2**41))
def test_compiled_put_key_equals_the_pure_one(
    twin: Callable[..., Any],
    tmp_path_factory: pytest.TempPathFactory,
    sequence: list[tuple[str, int, int, bool]],
    end_phy: int,
    end_ts: int,
) -> None:
    """A tiny file (8 slots, 11 keys): collisions, chains and a full file in a few calls;
    numbers from everyday ones to the extremes an i64 holds (the pure struct.error)."""
    where = tmp_path_factory.mktemp("index")
    p = Pair(where, 8, 12, end_phy_offset=end_phy, end_timestamp=end_ts)
    try:
        for key, phy, ts, header in sequence:
            p.put(twin, key, phy, ts, write_header=header)
    finally:
        p.close()


def test_everyday_keys_are_written_by_the_twin_itself(pair: Callable[..., Pair]) -> None:
    module: ModuleType = compiled_twin("mqcore.store._index_file")
    alone = module.put_key_method(never, index_key_hash)
    p = pair(slots=4, entries=64)
    for twin in (pure_put_key, alone):  # the first keys reserve the blocks (pure), then ...
        p.put(twin, "TopicTest#k0", 100, 1_700_000_000_000)
    for i in range(1, 30):
        p.put(alone, f"TopicTest#k{i}", 100 + i, 1_700_000_000_000 + i * 1500)


def test_odd_calls_give_what_the_pure_method_gives(
    twin: Callable[..., Any], pair: Callable[..., Pair]
) -> None:
    p = pair()
    p.put(twin, "k", 1, 2)
    for args in (("k", 1.5, 2), ("k", 1, "2"), (b"k", 1, 2), ("k", True, 2), (None, 1, 2)):
        p.put(twin, *args)
    p.twin.readonly = p.pure.readonly = True  # a file opened read-only refuses keys
    p.put(twin, "k", 3, 4)
    p.twin.readonly = p.pure.readonly = False
    p.pure.close()
    p.twin.close()
    got = same_path(outcome(twin, p.twin, "k", 1, 2), p.twin)
    assert got == same_path(outcome(pure_put_key, p.pure, "k", 1, 2), p.pure)
    assert got[0] is not str and "closed" in got[1]

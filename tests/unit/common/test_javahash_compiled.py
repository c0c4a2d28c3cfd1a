"""The compiled Java string hash (``_javahash.pyx``) equals the pure reference on any text."""

from __future__ import annotations

from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.common import javahash
from tests.support.compiled import compiled_twin


@pytest.fixture(scope="module")
def twin() -> ModuleType:
    return compiled_twin("mqcore.common._javahash")


# Every storage kind of a str: Latin-1, BMP (lone surrogates too), and past U+FFFF.
texts = st.text(st.characters(codec=None, exclude_categories=()), max_size=40) | st.sampled_from(
    ["", "TagA", "é", "\ud800", "\udfff\ud800", "\U0001f600", "a\U0010ffffb", "\x00"]
)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_compiled_hashes_equal_the_pure_ones(twin: ModuleType, text: str) -> None:
    for name, pure in javahash.PURE.items():
        assert getattr(twin, name)(text) == pure(text), (name, text)


def test_known_java_values_and_edge_cases(twin: ModuleType) -> None:
    assert twin.java_string_hash("TagA") == 2598919  # "TagA".hashCode() in Java
    assert twin.java_string_hash("\U0001f600") == javahash.PURE["java_string_hash"]("\U0001f600")
    assert twin.tags_hash_code(None) == 0 and twin.tags_hash_code("") == 0
    # String.hashCode() == Integer.MIN_VALUE: Java's abs() keeps it negative; the index uses 0
    minimum = "polygenelubricants"
    assert javahash.PURE["java_string_hash"](minimum) == -(2**31)
    assert twin.index_key_hash(minimum) == 0 == javahash.PURE["index_key_hash"](minimum)

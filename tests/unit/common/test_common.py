"""Java string hashing and the fastjson dialect."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.common import fastjson
from mqcore.common.javahash import index_key_hash, java_string_hash, tags_hash_code


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TagA", 2598919),
        ("", 0),
        ("标签", 857175),
        ("tag-中文", -880646131),
        ("😀", 1772899),
        ("Aa", 2112),
        ("BB", 2112),
        ("SmokeTopic#key-0", 79711007),
    ],
)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_tag_and_index_hash() -> None:
    assert tags_hash_code(None) == 0 == tags_hash_code("")
    assert index_key_hash("TopicTest#KEY1") == 1656969516
    # "polygenelubricants" is a classic string whose hashCode is Integer.MIN_VALUE.
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert index_key_hash("polygenelubricants") == 0


@given(st.text(max_size=50))
@settings(max_examples=300)
def test_hash_is_signed_32_bit(text: str) -> None:
    h = java_string_hash(text)
    assert -(2**31) <= h < 2**31


def test_fixture_config_files_round_trip_byte_identical(fixture_store: Path) -> None:
    for path in sorted((fixture_store / "config").glob("*.json")):
        text = path.read_text()
        assert fastjson.dumps_pretty(fastjson.loads(text)) == text, path.name


def test_bare_and_object_keys() -> None:
    doc = fastjson.loads('{"a":{0:5,-1:2},{"brokerName":"b","queueId":0,"topic":"t"}:{"x":1.5}}')
    assert doc["a"] == {0: 5, -1: 2}
    assert doc[(("brokerName", "b"), ("queueId", 0), ("topic", "t"))] == {"x": 1.5}
    hooked = fastjson.loads('{{"q":1}:2}', object_key=lambda d: ("Q", d["q"]))
    assert hooked == {("Q", 1): 2}


def test_pretty_int_maps_as_fastjson_writes_them() -> None:
    """Queue offsets (ints only) take a quicker path that must write what the general
    one writes; a map with another value (a bool is not a number in JSON) takes that."""
    doc = {"offsetTable": {"t@g": {0: 5, 1: -6, 12: 2**40}, "u@g": {}}}
    assert fastjson.dumps_pretty(doc) == (
        '{\n\t"offsetTable":{\n\t\t"t@g":{0:5,1:-6,12:1099511627776\n\t\t},\n\t\t"u@g":{}\n\t}\n}'
    )
    assert fastjson.dumps_pretty({0: True, 1: 5}) == "{0:true,1:5\n}"
    assert fastjson.dumps_pretty({0: 1.5, 1: None}) == "{0:1.5,1:null\n}"


def test_strict_dumps_quotes_keys() -> None:
    assert fastjson.dumps({0: "a", "b": [1, True]}) == b'{"0":"a","b":[1,true]}'


@pytest.mark.parametrize("bad", ["{", "{1 2}", "[1,]x", '{"a":}', "nul", "{[1]:2}", '"\\x"'])
def test_errors(bad: str) -> None:
    with pytest.raises(fastjson.FastjsonError):
        fastjson.loads(bad)


@given(st.text(max_size=60))
@settings(max_examples=400)
def test_arbitrary_text_raises_only_fastjson_error(text: str) -> None:
    try:
        fastjson.loads(text)
    except fastjson.FastjsonError:
        pass


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.text(max_size=10),
        lambda kids: (
            st.lists(kids, max_size=4)
            | st.dictionaries(st.text(max_size=8), kids, max_size=4)
            | st.dictionaries(st.integers(0, 1000), kids, min_size=1, max_size=4)
        ),
        max_leaves=20,
    )
)
@settings(max_examples=300)
def test_pretty_round_trip(value: object) -> None:
    assert fastjson.loads(fastjson.dumps_pretty(value)) == value

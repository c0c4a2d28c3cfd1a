"""Tag expressions: RocketMQ's FilterAPI.buildSubscriptionData and both matching sides."""

from __future__ import annotations

import time

import pytest

from mqcore.common.javahash import java_string_hash
from mqcore.errors import FilterSyntaxError
from mqcore.filter import (
    TagFilter,
    build_subscription_data,
    compile_tags,
    is_tag_type,
    validate_expression_type,
)
from mqcore.protocol.bodies.client import SubscriptionData

TAG_A = 2598919  # Java "TagA".hashCode(), spec store-format §5


@pytest.mark.parametrize("expression", [None, "", "*"])
def test_subscribe_all(expression: str | None) -> None:
    f = compile_tags(expression)
    assert f.is_all and f.expression == "*"
    assert f.tags == frozenset() and f.codes == frozenset()
    assert f.match_code(TAG_A) and f.match_code(0) and f.match_code(None)
    assert f.match_tag("anything") and f.match_tag(None)


@pytest.mark.parametrize(
    ("expression", "tags"),
    [
        ("TagA", {"TagA"}),
        ("TagA || TagB || TagC", {"TagA", "TagB", "TagC"}),
        ("TagA||TagB", {"TagA", "TagB"}),
        ("  TagA  ||\tTagB ", {"TagA", "TagB"}),
        ("TagA || || TagB", {"TagA", "TagB"}),  # empty pieces ignored
        ("|| TagA ||", {"TagA"}),
        ("TagA ||", {"TagA"}),
        ("TagA | TagB", {"TagA | TagB"}),  # a single bar is part of the tag
        ("TagA |||TagB", {"TagA", "|TagB"}),  # split left to right, like Java's regex
        (" * ", {"*"}),  # only the exact string "*" means all
        ("标签 || tag-中文", {"标签", "tag-中文"}),
        ("\u00a0TagA", {"\u00a0TagA"}),  # Java trim keeps non-ASCII spaces
    ],
)
def test_tag_sets_and_codes(expression: str, tags: set[str]) -> None:
    f = compile_tags(expression)
    assert not f.is_all
    assert f.tags == tags
    assert f.codes == {java_string_hash(t) for t in tags}


def test_known_hash_codes() -> None:
    f = compile_tags("TagA || 标签 || tag-中文")
    assert f.codes == {TAG_A, 857175, -880646131}


def test_broker_matches_low_32_bits_of_the_tag_slot() -> None:
    f = compile_tags("TagA || tag-中文")
    assert f.match_code(TAG_A)
    assert f.match_code(-880646131)  # stored sign-extended: 0xFFFFFFFFCB82680D
    assert f.match_code(0xFFFFFFFFCB82680D)  # same slot read as unsigned
    assert f.match_code(TAG_A + (5 << 32))  # only intValue() counts, as in Java
    assert not f.match_code(0)  # untagged message
    assert not f.match_code(java_string_hash("TagB"))
    assert f.match_code(None)  # Java: null tagsCode passes


def test_hash_collision_passes_broker_but_not_client() -> None:
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    f = compile_tags("Aa")
    assert f.match_code(java_string_hash("BB"))
    assert f.match_tag("Aa")
    assert not f.match_tag("BB")


def test_client_side_string_match() -> None:
    f = compile_tags("TagA || TagB")
    assert f.match_tag("TagA") and f.match_tag("TagB")
    assert not f.match_tag("taga")
    assert not f.match_tag(" TagA")  # message tags are not trimmed
    assert not f.match_tag(None)
    assert not f.match_tag("")


def test_blank_expression_matches_nothing_on_broker_everything_on_client() -> None:
    # RocketMQ keeps subString "  " with empty sets: codeSet.contains() is always false,
    # and the client skips its re-check when tagsSet is empty.
    f = compile_tags("  ")
    assert not f.is_all and f.tags == frozenset()
    assert not f.match_code(TAG_A) and not f.match_code(0)
    assert f.match_tag("TagA")


@pytest.mark.parametrize("expression", ["||", "||||", "||||||"])
def test_only_separators_is_an_error(expression: str) -> None:
    with pytest.raises(FilterSyntaxError) as info:
        compile_tags(expression)
    assert info.value.expression == expression


def test_build_subscription_data_tag() -> None:
    before = int(time.time() * 1000)
    sub = build_subscription_data("TopicTest", "TagA || TagB")
    assert sub.topic == "TopicTest"
    assert sub.sub_string == "TagA || TagB"
    assert sub.tags_set == {"TagA", "TagB"}
    assert sub.code_set == {2598919, 2598920}  # spec remoting-protocol heartbeat example
    assert sub.expression_type == "TAG"
    assert before <= sub.sub_version <= int(time.time() * 1000)
    assert build_subscription_data("T", None).sub_string == "*"
    assert build_subscription_data("T", "").sub_string == "*"


def test_build_subscription_data_sql92() -> None:
    sub = build_subscription_data("T", "a > 5", "SQL92")
    assert (sub.sub_string, sub.expression_type) == ("a > 5", "SQL92")
    assert sub.tags_set == set() and sub.code_set == set()
    assert build_subscription_data("T", "a > 5", "sql92").expression_type == "SQL92"
    with pytest.raises(FilterSyntaxError):
        build_subscription_data("T", "", "SQL92")
    with pytest.raises(FilterSyntaxError):
        build_subscription_data("T", None, "SQL92")


def test_expression_types() -> None:
    assert validate_expression_type(None) == "TAG"
    assert validate_expression_type("") == "TAG"
    assert validate_expression_type("TAG") == "TAG"
    assert validate_expression_type("SQL92") == "SQL92"
    for bad in ("SQL", "CLASS", "TAGS", " TAG"):
        with pytest.raises(FilterSyntaxError, match="TAG or SQL92"):
            validate_expression_type(bad)
    with pytest.raises(FilterSyntaxError):
        build_subscription_data("T", "TagA", "XPATH")
    assert is_tag_type(None) and is_tag_type("") and is_tag_type("TAG")
    assert not is_tag_type("SQL92")


def test_from_subscription_uses_its_own_sets() -> None:
    sub = SubscriptionData(
        topic="T", sub_string="TagA", tags_set={"TagA"}, code_set={TAG_A}, sub_version=1
    )
    f = TagFilter.from_subscription(sub)
    assert f.match_code(TAG_A) and not f.match_code(1) and f.match_tag("TagA")
    every = TagFilter.from_subscription(SubscriptionData(topic="T"))
    assert every.is_all and every.match_code(12345)

"""SQL92 selector conformance with RocketMQ 4.9.8's evaluator, and its syntax errors."""

from __future__ import annotations

import pytest

from mqcore.errors import FilterSyntaxError
from mqcore.filter import compile_sql, compile_sql92
from mqcore.filter.sql92 import MAX_DEPTH, SqlFilter, parse

# One property map for most rows; property values are always strings on the wire.
P = {
    "a": "7",
    "b": "abc",
    "c": "7.5",
    "neg": "-3",
    "big": "10000000000",
    "t": "true",
    "q": "it's",
    "z": "0",
    "plus": "+7",
    "zeros": "007",
    "nan": "NaN",
    "u": "标签",
    "TAGS": "TagA",
    "KEYS": "k1",
}

# (expression, expected evaluate() on P). Comments give the 4.9.8 reason when not obvious.
CASES: list[tuple[str, bool]] = [
    # numeric comparisons: the property goes through Integer.valueOf for an int literal
    ("a > 5", True),
    ("a > 7", False),
    ("a >= 7", True),
    ("a < 7", False),
    ("a <= 7", True),
    ("a = 7", True),
    ("a <> 7", False),
    ("a <> 8", True),
    ("plus = 7", True),  # Integer.valueOf accepts a '+' sign
    ("zeros = 7", True),  # ... and leading zeros
    ("neg < 0", True),
    ("neg = -3", True),
    ("a > -5", True),
    ("a > +5", True),
    ("z = 0", True),
    ("5 < a", True),  # literal on the left converts the property too
    ("7 = a", True),
    # decimals: Double.valueOf
    ("c > 5", False),  # Integer.valueOf("7.5") throws: the message is rejected
    ("c > 5.0", True),
    ("c = 7.5", True),
    ("a = 7.0", True),
    ("a > 5.5e0", True),
    ("a > .5", True),
    ("1 = 1.0", True),
    # strings: = and <> only, exact and case-sensitive
    ("a = '7'", True),
    ("zeros = '7'", False),
    ("'7' = a", True),
    ("b = 'abc'", True),
    ("b = 'ABC'", False),
    ("b <> 'abc'", False),
    ("a <> 'abc'", True),
    ("q = 'it''s'", True),
    ("b = 'AND'", False),
    ("q <> 'x AND y'", True),
    ("u = '标签'", True),
    # non-numeric or out-of-range strings against numbers: evaluation error, rejected
    ("b > 5", False),
    ("NOT (b > 5)", False),
    ("b = 5", False),
    ("NOT (b = 5)", False),
    ("b > 5 OR a = 7", False),  # the error in the left operand wins
    ("a = 7 OR b > 5", True),  # ... unless OR has already decided
    ("NOT (FALSE AND b > 5)", True),  # AND stops at FALSE before the error
    ("big > 5", False),  # Integer.valueOf overflows
    ("big > 5000000000", True),  # a long literal: Long.valueOf
    ("big = 10000000000L", True),
    ("big > 5.0", True),
    # two properties: both parsed as doubles
    ("a > c", False),
    ("c > a", True),
    ("b > a", False),
    ("nan > a", True),  # Double.compare puts NaN above everything
    # missing properties and NULL: three-valued logic
    ("missing > 5", False),
    ("NOT (missing > 5)", False),
    ("missing IS NULL", True),
    ("a IS NULL", False),
    ("missing IS NOT NULL", False),
    ("a IS NOT NULL", True),
    ("missing <> 'x'", False),  # null = 'x' is UNKNOWN, so is its negation
    ("'x' <> missing", True),  # 'x' = null is FALSE in Java's doCreateEqual
    ("missing = other_missing", True),  # both null: equal
    ("missing = 'x' OR a = 7", True),
    ("missing > 1 OR TRUE", True),
    ("NOT (missing > 1 AND FALSE)", True),  # UNKNOWN AND FALSE = FALSE
    ("NOT (missing > 1 OR FALSE)", False),  # UNKNOWN OR FALSE = UNKNOWN
    ("NOT (missing > 1 AND TRUE)", False),
    ("(missing > 100) IS NULL", True),
    ("(a > 100) IS NULL", False),
    ("TRUE", True),
    ("FALSE", False),
    ("NULL", False),
    ("NOT NULL", False),
    ("TRUE OR missing > 1", True),
    # a bare property is a condition: UNKNOWN when missing, FALSE when present
    ("a", False),
    ("NOT a", True),
    ("NOT missing", False),
    ("NOT (-a > 1)", False),  # negating a String yields null
    # BETWEEN: inclusive bounds, = (x >= low AND x <= high)
    ("a BETWEEN 7 AND 10", True),
    ("a BETWEEN 1 AND 7", True),
    ("a BETWEEN 8 AND 10", False),
    ("a BETWEEN -1 AND 7", True),
    ("a NOT BETWEEN 8 AND 10", True),
    ("a NOT BETWEEN 7 AND 10", False),
    ("a NOT BETWEEN 1 AND 7", False),
    ("missing BETWEEN 1 AND 2", False),
    ("missing NOT BETWEEN 1 AND 2", False),
    ("c BETWEEN 7.0 AND 8.0", True),
    ("c BETWEEN 7.0 AND 8", False),  # the upper bound is an int: Integer.valueOf("7.5")
    ("a BETWEEN 7 AND 7 AND b = 'abc'", True),
    # IN / NOT IN: string membership
    ("TAGS IN ('TagA', 'TagB')", True),
    ("TAGS IN ('TagB')", False),
    ("TAGS NOT IN ('TagA')", False),
    ("TAGS NOT IN ('TagB', 'TagC')", True),
    ("a IN ('7')", True),
    ("b IN ('ABC')", False),
    ("b IN ('x', 'y', 'z', 'w', 'v', 'abc')", True),
    ("missing IN ('x')", False),
    ("missing NOT IN ('x')", False),  # UNKNOWN, not TRUE
    ("NOT (missing IN ('x'))", False),
    # TAGS is an ordinary, case-sensitive property name
    ("TAGS = 'TagA'", True),
    ("tags = 'TagA'", False),
    ("TAGS = 'TagA' AND KEYS = 'k1'", True),
    # booleans: Boolean.valueOf on the property
    ("t = TRUE", True),
    ("t = FALSE", False),
    ("NOT (t = FALSE)", True),
    ("b = TRUE", False),
    ("NOT (b = TRUE)", True),
    ("NOT (TRUE = t)", False),  # Boolean vs String: ClassCastException in Java
    ("a = 7 = TRUE", True),  # equality chains compare the Boolean result
    # precedence: NOT > comparisons > AND > OR; parentheses
    ("a = 7 OR b = 'x' AND c = 'y'", True),
    ("(a = 7 OR b = 'x') AND c = 'y'", False),
    ("NOT (a = 7) OR b = 'abc'", True),
    ("NOT (a = 7 OR b = 'abc')", False),
    ("b = 'x' OR NOT (a = 8) AND c = 7.5", True),
    ("(((a = 7)))", True),
    ("a > 5 AND (b = 'x' OR (c > 7.0 AND NOT (TAGS = 'TagB')))", True),
    # case-insensitive keywords, spacing, comments
    ("a > 5 and b = 'abc'", True),
    ("a > 5 AnD NoT (b = 'x')", True),
    ("a bEtWeEn 1 aNd 9 oR FaLsE", True),
    ("b is not null", True),
    ("a=7", True),
    ("a>5AND(b='abc')", True),
    ("a > 5 -- a comment\n", True),
    ("/* first */ a > 5 /* last */", True),
    ("\ta\r\n>\f5", True),
]


def test_conformance_table_is_large_enough() -> None:
    assert len(CASES) >= 60
    assert len({expr for expr, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("expression", "expected"), CASES)
def test_conformance(expression: str, expected: bool) -> None:
    assert compile_sql(expression).evaluate(P) is expected


def test_seed_example_score_above_98() -> None:
    messages = [
        ("m95", {"score": "95"}),
        ("m98", {"score": "98"}),
        ("m99", {"score": "99"}),
        ("m100", {"score": "100"}),
        ("m150", {"score": "150"}),
        ("neg", {"score": "-99"}),
        ("decimal", {"score": "98.5"}),  # Integer.valueOf fails: not selected, as in Java
        ("text", {"score": "high"}),
        ("none", {}),
        ("tagged", {"TAGS": "TagA"}),
    ]
    f = compile_sql("score > 98")
    assert [key for key, props in messages if f.evaluate(props)] == ["m99", "m100", "m150"]
    assert f.property_names == {"score"}


def test_evaluate_with_no_properties() -> None:
    assert compile_sql("a IS NULL").evaluate(None)
    assert not compile_sql("a = 1").evaluate(None)


def test_compile_is_cached_and_aliased() -> None:
    assert compile_sql("a > 1") is compile_sql("a > 1")
    assert compile_sql92 is compile_sql


def test_property_names() -> None:
    f = compile_sql("a > 1 AND (NOT b IS NULL OR TAGS IN ('x')) AND -c < 1")
    assert f.property_names == {"a", "b", "TAGS", "c"}


def test_long_or_chain_is_flat() -> None:
    expr = " OR ".join(f"k = '{i}'" for i in range(1000))  # under MAX_EXPRESSION_LENGTH
    f = compile_sql(expr)
    assert f.evaluate({"k": "999"})
    assert not f.evaluate({"k": "1000"})


# (expression, 0-based offset the error points at, words the message must contain)
ERRORS: list[tuple[str, int, str]] = [
    ("a >> 5", 3, "expected a value"),
    ("a = ", 4, "end of expression"),
    ("", 0, "end of expression"),
    ("   ", 3, "end of expression"),
    ("a = 'abc", 4, "unterminated string"),
    ("a ! 5", 2, "unexpected character"),
    ("a != 5", 2, "<>"),
    ("a == 5", 3, "expected a value"),
    ("a > 5 b", 6, "after a complete expression"),
    ("a > 5 -- no line break", 6, "after a complete expression"),
    ("(a > 5", 6, "expected ')'"),
    ("a > 5)", 5, "after a complete expression"),
    ("NOT a > 5", 0, "NOT ("),
    ("a > 'x'", 4, "string literal cannot be compared with '>'"),
    ("a < TRUE", 4, "TRUE cannot be compared"),
    ("a > NULL", 4, "NULL cannot be compared"),
    ("(a > 1) > 2", 3, "condition cannot be compared"),
    ("a = NULL", 4, "IS [NOT] NULL"),
    ("NULL <> a", 0, "IS [NOT] NULL"),
    ("TRUE = 'x'", 7, "TRUE cannot be compared with string literal"),
    ("a BETWEEN 5 AND 1", 10, "lower bound 5"),
    ("a BETWEEN 'a' AND 'b'", 10, "string literal cannot be compared with '>='"),
    ("a BETWEEN 'b' AND 'a'", 10, "lower bound"),
    ("a BETWEEN NULL AND 1", 2, "cannot be NULL"),
    ("a BETWEEN 1 OR 2", 12, "expected AND"),
    ("a IN ('x', 5)", 11, "string literal in the IN list"),
    ("a IN ()", 6, "string literal in the IN list"),
    ("a IN 'x'", 5, "'(' after IN"),
    ("a IN ('x'", 9, "',' or ')'"),
    ("5 IN ('x')", 2, "must be a property"),
    ("NOT a IN ('x')", 6, "must be a property"),
    ("a IS 5", 5, "NULL"),
    ("a IS NOT 5", 9, "NULL"),
    ("a NOT LIKE 'x'", 6, "expected BETWEEN or IN after NOT"),
    ("a > 0.0", 4, "Double.MIN_VALUE"),
    ("a > 1e-400", 4, "Double.MIN_VALUE"),
    ("a > 1e400", 4, "Double.MAX_VALUE"),
    ("a > 9223372036854775808", 4, "out of range"),
    ("a > 1" + "0" * 5000, 4, "out of range"),
    ("5", 0, "5 is not a condition"),
    ("'abc'", 0, "string literal is not a condition"),
    ("-a", 0, "not a condition"),
    ("a > 5 AND 3", 10, "not a condition"),
    ("NOT 'x'", 4, "not a condition"),
    ("a.b = 1", 1, "'.' must be followed by a digit"),
    ("a = 1 /* open", 6, "unterminated comment"),
    ("a = 007", 5, "after a complete expression"),  # 0, 0, 7: RocketMQ's tokens
    ("a > 1.5L", 7, "after a complete expression"),
    ("a # 1", 2, "unexpected character"),
    ("a\u00a0= 1", 1, "unexpected character"),  # only ASCII blanks separate tokens
    ("é = 1", 0, "unexpected character"),
    ("a CONTAINS 'x'", 2, "not in RocketMQ 4.9.8's SQL92 grammar"),  # 5.x syntax, not 4.9.8
    ("a > 5 AND", 9, "end of expression"),
    ("AND a > 5", 0, "expected a value"),
    ("a > 5 OR OR b > 1", 9, "expected a value"),
    ("(", 1, "end of expression"),
    (")", 0, "expected a value"),
]


@pytest.mark.parametrize(("expression", "position", "words"), ERRORS)
def test_syntax_errors(expression: str, position: int, words: str) -> None:
    with pytest.raises(FilterSyntaxError) as info:
        compile_sql(expression)
    err = info.value
    assert err.position == position, str(err)
    assert err.expression == expression
    assert words in str(err)


def test_error_message_has_a_caret_under_the_column() -> None:
    with pytest.raises(FilterSyntaxError) as info:
        compile_sql("a >> 5")
    assert str(info.value).endswith("at column 4\na >> 5\n   ^")


def test_error_caret_on_the_right_line() -> None:
    with pytest.raises(FilterSyntaxError) as info:
        compile_sql("a > 5\nAND b >> 1")
    message = str(info.value)
    assert "line 2, column 8" in message
    assert message.endswith("\nAND b >> 1\n       ^")


def test_error_caret_keeps_tabs() -> None:
    with pytest.raises(FilterSyntaxError) as info:
        compile_sql("\ta >> 5")
    assert str(info.value).endswith("\n\ta >> 5\n\t   ^")


@pytest.mark.parametrize(
    "expression",
    [
        "(" * (MAX_DEPTH + 1) + "a = 1" + ")" * (MAX_DEPTH + 1),
        "NOT " * (MAX_DEPTH + 1) + "a",
        "- " * (MAX_DEPTH + 1) + "a > 1",
        "a" + " = 1" * (MAX_DEPTH + 1),
        "a" + " IS NULL" * (MAX_DEPTH + 1),
        "(" * 100_000,
        "NOT " * 100_000 + "a",
    ],
)
def test_pathological_nesting_is_a_syntax_error(expression: str) -> None:
    with pytest.raises(FilterSyntaxError, match="nested too deeply"):
        SqlFilter(expression, parse(expression))  # the parser itself, past the length cap


def test_nesting_below_the_limit_is_fine() -> None:
    depth = MAX_DEPTH // 2
    f = compile_sql("(" * depth + "a = 1" + ")" * depth)
    assert f.evaluate({"a": "1"})
    assert compile_sql("NOT " * depth + "TRUE").evaluate({}) is (depth % 2 == 0)


def test_non_string_expression() -> None:
    with pytest.raises(FilterSyntaxError):
        compile_sql(None)  # type: ignore[arg-type]

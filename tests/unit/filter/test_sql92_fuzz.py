"""Property tests: any input either compiles or raises FilterSyntaxError, and compiled
filters answer a bool for any property map."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqcore.errors import FilterSyntaxError
from mqcore.filter import SqlFilter, compile_sql
from mqcore.filter.sql92 import parse

VOCABULARY = [
    "a", "b", "TAGS", "x_1", "$v",
    "NOT", "AND", "OR", "BETWEEN", "IN", "IS", "NULL", "TRUE", "FALSE",
    "not", "and", "or", "between", "in", "is", "null", "true", "false",
    "(", ")", ",", "=", "<>", ">", ">=", "<", "<=", "+", "-",
    "0", "5", "7L", "2147483648", "9223372036854775807", "9223372036854775808",
    "1.5", ".5", "5.", "1e3", "0.0", "1e400",
    "'x'", "'7'", "''''", "'a b'", "'", "--c\n", "/*c*/", "/*", "--", ".", "!", "\n",
]  # fmt: skip

PROPERTY_NAMES = ["a", "b", "TAGS", "x_1", "$v"]
SAMPLE_VALUES = [
    "7", "-3", "+7", "007", "7.5", " 7 ", "abc", "", "true", "NaN", "-Infinity",
    "1e3", "0x1p3", "99999999999", "9223372036854775808", "-0.0", "x", "٣",
]  # fmt: skip
VALUES = st.one_of(
    st.sampled_from(SAMPLE_VALUES),
    st.text(max_size=12),
    st.integers().map(str),
    st.floats(allow_nan=True).map(repr),
)
PROPERTIES = st.dictionaries(st.sampled_from(PROPERTY_NAMES), VALUES, max_size=5)


def _compile(expression: str) -> SqlFilter | None:
    try:
        return compile_sql(expression)
    except FilterSyntaxError as err:
        assert err.position is None or 0 <= err.position <= len(expression)
        assert "^" in str(err)
        return None


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=60))
def test_random_text_only_raises_filter_syntax_error(expression: str) -> None:
    _compile(expression)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="aNOTANDIS()'=<>!-+.,0159eEL$_ \n*/", max_size=40))
def test_random_text_from_the_grammars_characters(expression: str) -> None:
    _compile(expression)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(VOCABULARY), max_size=25), st.lists(PROPERTIES, max_size=4))
def test_random_token_sequences(tokens: list[str], maps: list[dict[str, str]]) -> None:
    compiled = _compile(" ".join(tokens))
    if compiled is not None:
        for props in maps:
            assert compiled.evaluate(props) in (True, False)


# Valid expressions built from the grammar, to exercise the evaluator broadly.
_OPERAND = st.sampled_from(["a", "b", "TAGS", "5", "-5", "7L", "1.5", "2147483648", "-a"])
_ATOM = st.one_of(
    st.builds("{} {} {}".format, _OPERAND, st.sampled_from([">", ">=", "<", "<="]), _OPERAND),
    st.builds(
        "{} {} {}".format,
        st.sampled_from(["a", "b", "'x'", "5", "(a = 'x')", "1.5", "(a > 1)"]),
        st.sampled_from(["=", "<>"]),
        st.sampled_from(["a", "b", "'7'", "7", "FALSE", "2.5", "-a"]),
    ),
    st.builds("{} IS {}NULL".format, _OPERAND, st.sampled_from(["", "NOT "])),
    st.builds(
        "{} {}IN ('7', 'x')".format, st.sampled_from(["a", "TAGS"]), st.sampled_from(["", "NOT "])
    ),
    st.builds("{} {}BETWEEN -1 AND 9".format, _OPERAND, st.sampled_from(["", "NOT "])),
    st.sampled_from(["TRUE", "FALSE", "NULL", "a", "NOT b"]),
)
_EXPRESSION = st.recursive(
    _ATOM,
    lambda inner: st.one_of(
        st.builds("({}) AND ({})".format, inner, inner),
        st.builds("({}) OR ({})".format, inner, inner),
        st.builds("NOT ({})".format, inner),
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_EXPRESSION, st.lists(PROPERTIES, min_size=1, max_size=4))
def test_generated_expressions_compile_and_never_raise(
    expression: str, maps: list[dict[str, str]]
) -> None:
    compiled = compile_sql(expression)
    negated = compile_sql(f"NOT ({expression})")
    for props in maps:
        result = compiled.evaluate(props)
        assert result in (True, False)
        # Only one of e and NOT e can be TRUE (both may reject: UNKNOWN or an error).
        assert not (result and negated.evaluate(props))


@settings(max_examples=200, deadline=None)
@given(_EXPRESSION)
def test_parse_is_deterministic(expression: str) -> None:
    assert parse(expression) == parse(expression)

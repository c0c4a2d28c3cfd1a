"""A subscription expression past the length cap is refused before it is parsed."""

from __future__ import annotations

import pytest

from mqcore.filter import sql92
from mqcore.filter.sql92 import MAX_EXPRESSION_LENGTH, FilterSyntaxError, compile_sql


def test_an_overlong_selector_is_refused_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    chain = " OR ".join(f"a{i} = {i}" for i in range(50_000))  # ~700 KB of valid SQL92

    def parse(expression: str) -> object:
        raise AssertionError("an overlong selector reached the parser")

    monkeypatch.setattr(sql92, "parse", parse)
    assert len(chain) > MAX_EXPRESSION_LENGTH
    with pytest.raises(FilterSyntaxError, match="at most"):
        compile_sql(chain)


def test_a_long_selector_under_the_cap_still_compiles() -> None:
    terms, n = [], 0
    while len(" OR ".join(terms)) < MAX_EXPRESSION_LENGTH - 40:
        terms.append(f"k{n} = {n}")
        n += 1
    expression = " OR ".join(terms)
    assert compile_sql(expression).evaluate({"k3": "3"}) is True

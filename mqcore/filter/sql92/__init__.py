"""RocketMQ 4.9.8's SQL92 message selector: parse once, evaluate on property maps.

Grammar (4.9.8 has no CONTAINS / STARTSWITH / ENDSWITH: those came in 5.x): comparisons
``= <> > >= < <=``, ``[NOT] BETWEEN a AND b`` (bounds inclusive), ``prop [NOT] IN ('a',
...)``, ``IS [NOT] NULL``, ``AND``, ``OR``, ``NOT``, parentheses, literals (integers,
``123L``, decimals, ``'it''s'``, TRUE, FALSE, NULL), case-insensitive keywords, property
names as identifiers (``TAGS`` is the message tag, like any other property).

Semantics, as RocketMQ evaluates them (property values are Java Strings):

* A missing property is null; comparisons with null are UNKNOWN, and UNKNOWN propagates
  through NOT, AND, OR with SQL's three-valued rules. Only TRUE selects a message.
* ``prop > 5`` converts the property with ``Integer.valueOf`` (``Long.valueOf`` when the
  literal is beyond the int range, ``Double.valueOf`` for a decimal literal such as
  ``5.0``): ``"7"`` → TRUE, ``"+7"``/``"007"`` → TRUE; ``"7.5"``, ``"abc"`` or ``" 7"``
  against an integer literal cannot be converted, which is an evaluation error in Java,
  and the message is then **not selected whatever the rest of the expression says**
  (the broker catches the exception and answers "no match"). ``prop > 5.0`` accepts
  ``"7.5"``, ``" 7 "``, ``"1e3"``, ``"NaN"`` (above everything, Java's Double.compare).
* ``prop = 5`` converts the same way; ``prop = '5'`` compares strings exactly.
  ``prop = TRUE`` is ``"true"`` (any case) → TRUE, anything else → FALSE.
* ``a > b`` with two properties parses both as doubles.
* Null asymmetry of ``=`` (Java's doCreateEqual): left null and right present → UNKNOWN,
  left present and right null → FALSE, both null → TRUE. So ``a <> 'x'`` with ``a``
  missing is UNKNOWN (rejects), but ``'x' <> a`` is TRUE. ``IS [NOT] NULL`` is two-valued.
* ``[NOT] IN`` on a missing property is UNKNOWN (rejects, even with NOT IN).
* A bare property as a condition is UNKNOWN when missing and FALSE when present (its
  value is a String, never a Boolean), so ``NOT a`` selects messages that have ``a``.
* Parse-time refusals that RocketMQ makes too: ``NOT a > 5`` (write ``NOT (a > 5)``),
  ``a > 'x'``, ``a = NULL``, ``a BETWEEN 5 AND 1``, decimal literals that are 0
  (``0.0``: RocketMQ refuses values below Double.MIN_VALUE; write ``0``).
* Difference: input after a complete expression is a syntax error here; RocketMQ's
  generated parser silently ignores it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from mqcore.errors import FilterSyntaxError
from mqcore.filter.sql92.ast import Node, Prop
from mqcore.filter.sql92.compile import compile_node
from mqcore.filter.sql92.parser import MAX_DEPTH, parse
from mqcore.filter.sql92.values import EvalError

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPRESSION_LENGTH",
    "FilterSyntaxError",
    "SqlFilter",
    "compile_sql",
    "parse",
]


class SqlFilter:
    """A compiled selector; immutable, thread-safe, cheap to call per message."""

    __slots__ = ("_fn", "expression", "property_names", "tree")

    def __init__(self, expression: str, tree: Node) -> None:
        self.expression = expression
        self.tree = tree
        #: Names the expression reads (a caller may skip decoding others).
        self.property_names: frozenset[str] = frozenset(_names(tree))
        self._fn = compile_node(tree)

    def evaluate(self, properties: Mapping[str, str] | None) -> bool:
        """True only when the expression is TRUE; FALSE, UNKNOWN and errors reject."""
        try:
            return self._fn(properties if properties is not None else {}) is True
        except EvalError:
            return False

    __call__ = evaluate

    def __repr__(self) -> str:
        return f"SqlFilter({self.expression!r})"


def _names(node: object) -> list[str]:
    if isinstance(node, Prop):
        return [node.name]
    out: list[str] = []
    for attr in ("operand", "left", "right"):
        child = getattr(node, attr, None)
        if child is not None:
            out.extend(_names(child))
    for child in getattr(node, "operands", ()):
        out.extend(_names(child))
    return out


MAX_EXPRESSION_LENGTH = 16 * 1024
"""Longer subscriptions are refused before parsing: compiling runs on the broker's event
loop, and one 16 MiB frame could otherwise carry a selector that takes tens of seconds
(RocketMQ has no cap; real selectors are a few hundred characters)."""


def compile_sql(expression: str) -> SqlFilter:
    """Parse and compile ``expression`` (cached, as RocketMQ caches parses).

    Raises :class:`FilterSyntaxError` (message with a caret line, ``.position`` the
    0-based offset) for any invalid input.
    """
    if not isinstance(expression, str):
        raise FilterSyntaxError(f"SQL92 expression must be a string, not {type(expression)}")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise FilterSyntaxError(
            f"SQL92 expression of {len(expression)} characters: at most "
            f"{MAX_EXPRESSION_LENGTH} are accepted",
            expression=expression[:200],
        )
    return _compile_cached(expression)


@lru_cache(maxsize=256)
def _compile_cached(expression: str) -> SqlFilter:
    tree = parse(expression)
    try:
        return SqlFilter(expression, tree)
    except RecursionError:  # only when called from an already deep stack
        raise FilterSyntaxError(
            "SQL92 expression nested too deeply", expression=expression
        ) from None

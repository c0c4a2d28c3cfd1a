"""Recursive-descent parser for RocketMQ 4.9.8's selector grammar (SelectorParser.jj).

Precedence, loosest first: ``OR``; ``AND``; ``=``, ``<>``, ``IS [NOT] NULL``;
``> >= < <= [NOT] BETWEEN x AND y``, ``[NOT] IN ('a', ...)``; prefix ``+``, ``-``,
``NOT``; literals, properties, parentheses. Note that ``NOT`` binds tighter than
comparisons, as in RocketMQ: ``NOT a > 5`` means ``(NOT a) > 5``, which RocketMQ refuses
("cannot be compared"), so write ``NOT (a > 5)``.

RocketMQ's construction checks are syntax errors here too: ``> >= < <=`` and ``BETWEEN``
take numbers or properties (not string/boolean/NULL literals, not conditions); ``=``/``<>``
refuse a NULL literal and ``TRUE = 'x'``; ``BETWEEN`` constant bounds must be ordered;
``IN`` needs a property on its left and string literals in its list; the whole expression,
and each operand of AND/OR/NOT, must be a condition (a bare property counts).

Deliberate difference: RocketMQ's generated parser stops at the end of the first complete
expression and ignores what follows (``a > 5 garbage`` is accepted as ``a > 5``); here
trailing input is an error, so typos such as ``a = 1 AMD b = 2`` do not silently filter
on ``a = 1`` only.
"""

from __future__ import annotations

from collections.abc import Callable

from mqcore.errors import FilterSyntaxError
from mqcore.filter.sql92.ast import (
    BoolCast,
    Const,
    Equal,
    In,
    Logic,
    Negate,
    Node,
    Not,
    Order,
    Prop,
    is_boolean,
)
from mqcore.filter.sql92.lexer import EOF, FLOAT, ID, INT, STRING, Token, syntax_error, tokenize
from mqcore.filter.sql92.values import INT_MAX, LONG_MAX, EvalError, JType, java_compare

__all__ = ["MAX_DEPTH", "parse"]

#: Deepest nesting accepted (parentheses, prefix operators and chained comparisons all
#: count). Real selectors stay far below; the limit keeps Python's stack safe.
MAX_DEPTH = 64

_ORDER_OPS = (">", ">=", "<", "<=")
_MIN_DOUBLE = 5e-324  # Double.MIN_VALUE
_UNSUPPORTED = frozenset({"CONTAINS", "STARTSWITH", "ENDSWITH", "LIKE", "ESCAPE"})  # 5.x / JMS


def parse(expression: str) -> Node:
    """The syntax tree of ``expression``; :class:`FilterSyntaxError` if it is invalid."""
    if not isinstance(expression, str):
        raise FilterSyntaxError(f"SQL92 expression must be a string, not {type(expression)}")
    try:
        return _Parser(expression).parse()
    except RecursionError:  # the depth limits should make this unreachable
        raise syntax_error(expression, 0, "expression nested too deeply") from None


def _flatten(kind: str, side: Node, parts: list[Node], depth: int) -> int:
    """Add ``side`` to a ``kind`` chain's operands (its own operands when it is a ``kind``
    chain itself); returns the chain's depth with it."""
    if isinstance(side, Logic) and side.op == kind:
        parts.extend(side.operands)
        return max(depth, side.depth)
    parts.append(side)
    return max(depth, 1 + side.depth)


def _describe(tok: Token) -> str:
    if tok.kind == EOF:
        return "end of expression"
    if tok.kind == STRING:
        return "string literal"
    return repr(tok.text)


def _literal_name(node: Const) -> str:
    if node.jtype is JType.STR:
        return "string literal"
    if node.jtype is JType.NULL:
        return "NULL"
    if node.jtype is JType.BOOL:
        return "TRUE" if node.value else "FALSE"
    return repr(node.value)


class _Parser:
    def __init__(self, expression: str) -> None:
        self.src = expression
        self.tokens = tokenize(expression)
        self.i = 0
        self.nesting = 0

    # -- token helpers -------------------------------------------------------------------

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != EOF:
            self.i += 1
        return tok

    def expect(self, kind: str, what: str) -> Token:
        tok = self.peek()
        if tok.kind != kind:
            raise self.error(tok.pos, f"expected {what} but found {_describe(tok)}")
        return self.advance()

    def error(self, pos: int, message: str) -> FilterSyntaxError:
        return syntax_error(self.src, pos, message)

    def depth(self, pos: int, *children: Node) -> int:
        depth = 1 + max(child.depth for child in children)
        if depth > MAX_DEPTH:
            raise self.error(pos, f"expression nested too deeply (limit {MAX_DEPTH})")
        return depth

    def enter(self, tok: Token) -> None:
        self.nesting += 1
        if self.nesting > MAX_DEPTH:
            raise self.error(tok.pos, f"expression nested too deeply (limit {MAX_DEPTH})")

    # -- RocketMQ's construction checks --------------------------------------------------

    def condition(self, node: Node) -> Node:
        """Java's asBooleanExpression: conditions pass, a bare property is cast."""
        if is_boolean(node):
            return node
        if isinstance(node, Prop):
            return BoolCast(node, node.pos)
        what = _literal_name(node) if isinstance(node, Const) else "this value"
        raise self.error(node.pos, f"{what} is not a condition (compare it with something)")

    def check_orderable(self, node: Node, op: Token) -> None:
        if isinstance(node, Const) and not node.jtype.is_number:
            raise self.error(
                node.pos,
                f"{_literal_name(node)} cannot be compared with '{op.text}'"
                " (only numbers and properties can)",
            )
        if is_boolean(node):
            hint = (
                f" (NOT binds tightly: write NOT (... {op.text} ...))"
                if isinstance(node, Not)
                else ""
            )
            raise self.error(node.pos, f"a condition cannot be compared with '{op.text}'{hint}")

    def order(self, op: Token, left: Node, right: Node) -> Order:
        self.check_orderable(left, op)
        self.check_orderable(right, op)
        return Order(op.text, left, right, op.pos, self.depth(op.pos, left, right))

    def equal(self, op: Token, left: Node, right: Node) -> Equal:
        for side in (left, right):
            if isinstance(side, Const) and side.jtype is JType.NULL:
                raise self.error(
                    side.pos, "NULL cannot be compared with '=' or '<>'; use IS [NOT] NULL"
                )
        if (
            isinstance(left, Const)
            and isinstance(right, Const)
            and left.jtype is JType.BOOL
            and right.jtype is not JType.BOOL
        ):
            raise self.error(
                right.pos, f"{_literal_name(left)} cannot be compared with {_literal_name(right)}"
            )
        return Equal(left, right, op.pos, self.depth(op.pos, left, right))

    def logic(self, op: Token, left: Node, right: Node) -> Logic:
        parts: list[Node] = []
        for side in (self.condition(left), self.condition(right)):
            if isinstance(side, Logic) and side.op == op.kind:
                parts.extend(side.operands)
            else:
                parts.append(side)
        return Logic(op.kind, tuple(parts), op.pos, self.depth(op.pos, *parts))

    def negation(self, tok: Token, node: Node) -> Not:
        return Not(node, tok.pos, self.depth(tok.pos, node))

    def between(self, op: Token, value: Node, low: Node, high: Node, negated: bool) -> Logic:
        if not negated and isinstance(low, Const) and isinstance(high, Const):
            if low.jtype is JType.NULL or high.jtype is JType.NULL:
                raise self.error(op.pos, "BETWEEN bounds cannot be NULL")
            try:
                ordered = java_compare(high.value, high.jtype, low.value, low.jtype) >= 0
            except EvalError:
                ordered = False
            if not ordered:
                raise self.error(
                    low.pos,
                    f"BETWEEN lower bound {_literal_name(low)} must be less than or equal"
                    f" to the upper bound {_literal_name(high)}",
                )
        pair = (
            (Token("<", "<", op.pos), Token(">", ">", op.pos), "OR")
            if negated
            else (Token(">=", ">=", op.pos), Token("<=", "<=", op.pos), "AND")
        )
        first = self.order(pair[0], value, low)
        second = self.order(pair[1], value, high)
        return self.logic(Token(pair[2], pair[2], op.pos), first, second)

    # -- grammar -------------------------------------------------------------------------

    def parse(self) -> Node:
        node = self.or_expression()
        tok = self.peek()
        if tok.kind != EOF:
            hint = ""
            if tok.kind == ID and tok.text.upper() in _UNSUPPORTED:
                hint = f" ({tok.text.upper()} is not in RocketMQ 4.9.8's SQL92 grammar)"
            raise self.error(
                tok.pos, f"unexpected {_describe(tok)} after a complete expression{hint}"
            )
        return self.condition(node)

    def or_expression(self) -> Node:
        return self.chain("OR", self.and_expression)

    def and_expression(self) -> Node:
        return self.chain("AND", self.equality_expression)

    def chain(self, kind: str, operand: Callable[[], Node]) -> Node:
        """``x OR y OR z ...`` as one flattened Logic, built in one pass: folding it pair by
        pair (:meth:`logic`) copied and measured every operand again at each step, which
        made a selector of 4,000 terms take seconds to parse."""
        left = operand()
        if self.peek().kind != kind:
            return left
        parts: list[Node] = []
        depth = 0
        op = self.peek()
        while self.peek().kind == kind:
            op = self.advance()
            right = operand()
            if not parts:  # checked in the order the pairwise fold checked them
                depth = _flatten(kind, self.condition(left), parts, depth)
            depth = _flatten(kind, self.condition(right), parts, depth)
            if depth > MAX_DEPTH:
                raise self.error(op.pos, f"expression nested too deeply (limit {MAX_DEPTH})")
        return Logic(kind, tuple(parts), op.pos, depth)

    def equality_expression(self) -> Node:
        left = self.comparison_expression()
        while True:
            tok = self.peek()
            if tok.kind == "=":
                self.advance()
                left = self.equal(tok, left, self.comparison_expression())
            elif tok.kind == "<>":
                self.advance()
                eq = self.equal(tok, left, self.comparison_expression())
                left = self.negation(tok, eq)
            elif tok.kind == "IS":
                self.advance()
                negated = self.peek().kind == "NOT"
                if negated:
                    self.advance()
                self.expect("NULL", "NOT NULL or NULL after IS" if not negated else "NULL")
                null = Const(None, JType.NULL, tok.pos)
                eq = Equal(left, null, tok.pos, self.depth(tok.pos, left))
                left = self.negation(tok, eq) if negated else eq
            else:
                return left

    def comparison_expression(self) -> Node:
        left = self.unary_expression()
        while True:
            tok = self.peek()
            if tok.kind in _ORDER_OPS:
                self.advance()
                left = self.order(tok, left, self.unary_expression())
            elif tok.kind == "BETWEEN" or (tok.kind == "NOT" and self.peek(1).kind == "BETWEEN"):
                negated = tok.kind == "NOT"
                self.advance()
                op = self.advance() if negated else tok
                low = self.unary_expression()
                self.expect("AND", "AND between the BETWEEN bounds")
                high = self.unary_expression()
                left = self.between(op, left, low, high, negated)
            elif tok.kind == "IN" or (tok.kind == "NOT" and self.peek(1).kind == "IN"):
                negated = tok.kind == "NOT"
                self.advance()
                op = self.advance() if negated else tok
                left = self.in_list(op, left, negated)
            elif tok.kind == "NOT":
                raise self.error(
                    self.peek(1).pos,
                    f"expected BETWEEN or IN after NOT but found {_describe(self.peek(1))}",
                )
            else:
                return left

    def in_list(self, op: Token, left: Node, negated: bool) -> In:
        if not isinstance(left, Prop):
            raise self.error(op.pos, "the left side of IN must be a property name")
        self.expect("(", "'(' after IN")
        values = [self.expect(STRING, "a string literal in the IN list").text]
        while self.peek().kind == ",":
            self.advance()
            values.append(self.expect(STRING, "a string literal in the IN list").text)
        self.expect(")", "',' or ')' in the IN list")
        return In(left, frozenset(values), negated, op.pos)

    def unary_expression(self) -> Node:
        tok = self.peek()
        if tok.kind in ("+", "-", "NOT"):
            self.advance()
            self.enter(tok)
            operand = self.unary_expression()
            self.nesting -= 1
            if tok.kind == "+":
                return operand
            if tok.kind == "-":
                return Negate(operand, tok.pos, self.depth(tok.pos, operand))
            return self.negation(tok, self.condition(operand))
        return self.primary_expression()

    def primary_expression(self) -> Node:
        tok = self.advance()
        kind = tok.kind
        if kind == ID:
            return Prop(tok.text, tok.pos)
        if kind == STRING:
            return Const(tok.text, JType.STR, tok.pos)
        if kind == INT:
            return self.integer(tok)
        if kind == FLOAT:
            return self.decimal(tok)
        if kind in ("TRUE", "FALSE"):
            return Const(kind == "TRUE", JType.BOOL, tok.pos)
        if kind == "NULL":
            return Const(None, JType.NULL, tok.pos)
        if kind == "(":
            self.enter(tok)
            node = self.or_expression()
            self.expect(")", "')'")
            self.nesting -= 1
            return node
        raise self.error(tok.pos, f"expected a value, property or '(' but found {_describe(tok)}")

    def integer(self, tok: Token) -> Const:
        digits = tok.text.rstrip("lL")
        if len(digits) > 19 or int(digits) > LONG_MAX:
            raise self.error(tok.pos, f"integer {digits} is out of range (max {LONG_MAX})")
        value = int(digits)
        return Const(value, JType.INT if value <= INT_MAX else JType.LONG, tok.pos)

    def decimal(self, tok: Token) -> Const:
        value = float(tok.text)
        if value == float("inf"):
            raise self.error(tok.pos, f"{tok.text} is greater than Double.MAX_VALUE")
        if value < _MIN_DOUBLE:
            # RocketMQ's ConstantExpression.createFloat refuses these, 0.0 included.
            raise self.error(
                tok.pos,
                f"{tok.text} is below Double.MIN_VALUE, which RocketMQ refuses (write 0 for zero)",
            )
        return Const(value, JType.DOUBLE, tok.pos)

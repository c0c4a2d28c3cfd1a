"""Compile a selector tree once into nested closures (no tree walking per message).

Each closure takes the property map and returns ``True``, ``False``, ``None`` (SQL's
UNKNOWN / Java's null) or, for value nodes, a ``str``/``int``/``float``/``bool``. The
static Java class of every node is known at compile time (see ``values.JType``), so
the common shapes (property against a literal) get dedicated closures and the generic
comparison is only used for the rare mixed cases. Java's evaluation order is kept
because it decides which errors happen: ``=`` evaluates both sides, ``> >= < <=`` stop
at a null left side, AND/OR stop at the first deciding operand.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping

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
    static_type,
)
from mqcore.filter.sql92.values import (
    JType,
    double_compare,
    java_compare,
    java_double,
    java_int,
    java_long,
)

__all__ = ["Evaluator", "compile_node"]

Props = Mapping[str, str]
Evaluator = Callable[[Props], object]

_SIGN_TESTS: dict[str, Callable[[int], bool]] = {
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}
_INT_OPS: dict[str, Callable[[int, int], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
_STR_TO_INT: dict[JType, Callable[[str], int]] = {JType.INT: java_int, JType.LONG: java_long}


def compile_node(node: Node) -> Evaluator:
    """A closure evaluating ``node`` against a property map (may raise EvalError)."""
    if isinstance(node, Const):
        value = node.value
        return lambda props: value
    if isinstance(node, Prop):
        name = node.name
        return lambda props: props.get(name)
    if isinstance(node, BoolCast):
        name = node.operand.name
        return lambda props: None if props.get(name) is None else False
    if isinstance(node, Negate):
        return _negate(node)
    if isinstance(node, Not):
        inner = compile_node(node.operand)

        def not_(props: Props) -> object:
            value = inner(props)
            return None if value is None else not value

        return not_
    if isinstance(node, Logic):
        return _logic(node)
    if isinstance(node, Equal):
        return _equal(node)
    if isinstance(node, Order):
        return _order(node)
    return _in(node)


def _negate(node: Negate) -> Evaluator:
    inner = compile_node(node.operand)
    if isinstance(node.operand, Const):
        value = node.operand.value
        folded = -value if static_type(node.operand).is_number else None  # type: ignore[operator]
        return lambda props: folded
    if not static_type(node.operand).is_number:

        def negate_null(props: Props) -> object:
            inner(props)  # still evaluated: it may fail, as in Java
            return None

        return negate_null

    def negate(props: Props) -> object:
        value = inner(props)
        return None if value is None else -value  # type: ignore[operator]

    return negate


def _logic(node: Logic) -> Evaluator:
    parts = tuple(compile_node(op) for op in node.operands)
    decisive = node.op == "OR"  # OR stops at TRUE, AND at FALSE

    def logic(props: Props) -> object:
        unknown = False
        for part in parts:
            value = part(props)
            if value is None:
                unknown = True
            elif value is decisive:
                return decisive
        return None if unknown else not decisive

    return logic


def _equal(node: Equal) -> Evaluator:
    left, right = node.left, node.right
    lt, rt = static_type(left), static_type(right)
    if isinstance(right, Const) and rt is JType.NULL:  # IS NULL
        lf = compile_node(left)
        return lambda props: lf(props) is None
    if isinstance(left, Prop) and isinstance(right, Const):
        return _equal_prop_const(left.name, right.value, rt)
    lf, rf = compile_node(left), compile_node(right)

    def equal(props: Props) -> object:
        lv, rv = lf(props), rf(props)
        if lv is None:
            return True if rv is None else None
        if rv is None:
            return False
        if lt is rt and lt is not JType.DOUBLE:
            return lv == rv
        return java_compare(lv, lt, rv, rt) == 0

    return equal


def _equal_prop_const(name: str, const: object, ct: JType) -> Evaluator:
    if ct is JType.STR:

        def equal_str(props: Props) -> object:
            value = props.get(name)
            return None if value is None else value == const

        return equal_str
    if ct in _STR_TO_INT:
        convert = _STR_TO_INT[ct]

        def equal_int(props: Props) -> object:
            value = props.get(name)
            return None if value is None else convert(value) == const

        return equal_int

    def equal_other(props: Props) -> object:
        value = props.get(name)
        return None if value is None else java_compare(value, JType.STR, const, ct) == 0

    return equal_other


def _order(node: Order) -> Evaluator:
    left, right, op = node.left, node.right, node.op
    lt, rt = static_type(left), static_type(right)
    if isinstance(left, Prop) and isinstance(right, Const) and rt in _STR_TO_INT:
        return _order_prop_int(left.name, op, right.value, _STR_TO_INT[rt])  # type: ignore[arg-type]
    test = _SIGN_TESTS[op]
    if isinstance(left, Prop) and isinstance(right, Const) and rt is JType.DOUBLE:
        name, const = left.name, right.value

        def order_double(props: Props) -> object:
            value = props.get(name)
            if value is None:
                return None
            return test(double_compare(java_double(value), const))  # type: ignore[arg-type]

        return order_double
    lf, rf = compile_node(left), compile_node(right)
    both_strings = lt is JType.STR and rt is JType.STR

    def order(props: Props) -> object:
        lv = lf(props)
        if lv is None:
            return None
        rv = rf(props)
        if rv is None:
            return None
        if both_strings:  # Java parses both as Double before comparing
            return test(double_compare(java_double(lv), java_double(rv)))  # type: ignore[arg-type]
        return test(java_compare(lv, lt, rv, rt))

    return order


def _order_prop_int(name: str, op: str, const: int, convert: Callable[[str], int]) -> Evaluator:
    compare = _INT_OPS[op]

    def order_int(props: Props) -> object:
        value = props.get(name)
        return None if value is None else compare(convert(value), const)

    return order_int


def _in(node: In) -> Evaluator:
    name, values, negated = node.operand.name, node.values, node.negated

    def in_(props: Props) -> object:
        value = props.get(name)
        return None if value is None else (value in values) != negated

    return in_

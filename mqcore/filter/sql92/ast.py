"""Syntax tree of a SQL92 selector, shaped like RocketMQ's expression classes.

The parser applies RocketMQ's construction-time checks on these nodes (which operand may
be compared with what), so they keep the distinctions Java makes: a literal is a
:class:`Const` but ``-5`` is a :class:`Negate` of one; a bare property used as a
condition becomes a :class:`BoolCast`. ``BETWEEN`` and ``<>`` are rewritten as Java does
(``>= AND <=``, ``NOT (=)``). ``pos`` is the offset of the node's token in the source.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.filter.sql92.values import JType

__all__ = [
    "BoolCast",
    "Const",
    "Equal",
    "In",
    "Logic",
    "Negate",
    "Node",
    "Not",
    "Order",
    "Prop",
    "is_boolean",
    "static_type",
]


@dataclass(frozen=True, slots=True)
class Const:
    """A literal: string, Integer/Long (by range), Double, TRUE, FALSE or NULL."""

    value: object
    jtype: JType
    pos: int
    depth: int = 1


@dataclass(frozen=True, slots=True)
class Prop:
    """A message property by name (case-sensitive); its value is a String or null."""

    name: str
    pos: int
    depth: int = 1


@dataclass(frozen=True, slots=True)
class Negate:
    """Unary minus: numbers keep their class, anything else yields null."""

    operand: Node
    pos: int
    depth: int


@dataclass(frozen=True, slots=True)
class Not:
    operand: Node
    pos: int
    depth: int


@dataclass(frozen=True, slots=True)
class BoolCast:
    """A property used as a condition: null stays null, a String is FALSE."""

    operand: Prop
    pos: int
    depth: int = 2


@dataclass(frozen=True, slots=True)
class Logic:
    """AND / OR over two or more operands (left-nested chains are flattened)."""

    op: str  # "AND" | "OR"
    operands: tuple[Node, ...]
    pos: int
    depth: int


@dataclass(frozen=True, slots=True)
class Equal:
    """``=`` and ``IS NULL`` (Java's doCreateEqual): both sides are always evaluated."""

    left: Node
    right: Node
    pos: int
    depth: int


@dataclass(frozen=True, slots=True)
class Order:
    """``>``, ``>=``, ``<``, ``<=``: null on either side gives null."""

    op: str
    left: Node
    right: Node
    pos: int
    depth: int


@dataclass(frozen=True, slots=True)
class In:
    """``prop [NOT] IN ('a', ...)``: string membership, null when the property is absent."""

    operand: Prop
    values: frozenset[str]
    negated: bool
    pos: int
    depth: int = 2


Node = Const | Prop | Negate | Not | BoolCast | Logic | Equal | Order | In


def is_boolean(node: Node) -> bool:
    """Java ``instanceof BooleanExpression`` (TRUE/FALSE/NULL literals included)."""
    if isinstance(node, Const):
        return node.jtype in (JType.BOOL, JType.NULL)
    return isinstance(node, Not | BoolCast | Logic | Equal | Order | In)


def static_type(node: Node) -> JType:
    """The class of the node's non-null values (``JType.NULL``: always null)."""
    if isinstance(node, Const):
        return node.jtype
    if isinstance(node, Prop):
        return JType.STR
    if isinstance(node, Negate):
        inner = static_type(node.operand)
        return inner if inner.is_number else JType.NULL
    return JType.BOOL

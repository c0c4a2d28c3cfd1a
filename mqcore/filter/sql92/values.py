"""Java value semantics the SQL92 evaluator needs: types, string-to-number parsing, ordering.

RocketMQ 4.9.8 evaluates selectors on boxed Java objects, and the outcome of a comparison
depends on their classes (``Integer`` vs ``Long`` vs ``Double`` vs ``String`` vs
``Boolean``). Python has one ``int``, so every expression node carries a static
:class:`JType`; the runtime value of a node is ``None`` or a Python value of that type.

Conversions mirror the JDK: ``Integer.valueOf``/``Long.valueOf`` (optional sign, decimal
digits, range-checked), ``Double.valueOf`` (Java's float grammar, incl. ``NaN``,
``Infinity``, hex floats and an ``fFdD`` suffix) and ``Boolean.valueOf`` (``"true"``
ignoring case). A failed conversion is :class:`EvalError`: Java throws there, and the
broker then rejects the message, whatever the rest of the expression says.
"""

from __future__ import annotations

import enum
import math
import re
import unicodedata

from mqcore.common.javatext import java_trim
from mqcore.errors import MQError

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "LONG_MAX",
    "LONG_MIN",
    "EvalError",
    "JType",
    "java_bool",
    "java_compare",
    "java_double",
    "java_int",
    "java_long",
]

INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1


class JType(enum.Enum):
    """Static Java class of an expression's (non-null) value."""

    NULL = "null"  # always evaluates to null (NULL literal, negation of a non-number)
    BOOL = "Boolean"
    INT = "Integer"
    LONG = "Long"
    DOUBLE = "Double"
    STR = "String"

    @property
    def is_number(self) -> bool:
        return self in _NUMBERS


_NUMBERS = frozenset({JType.INT, JType.LONG, JType.DOUBLE})


class EvalError(MQError):
    """Java would throw while evaluating (bad number format, ClassCastException)."""


def _java_integer(text: str, lo: int, hi: int) -> int:
    # Integer.parseInt / Long.parseLong: [+-]? then Unicode decimal digits, no spaces.
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body.isdecimal():  # also False for ""
        raise EvalError(f"not a number: {text!r}")
    if len(body) > 20:  # leading zeros are legal in Java; keep int() within its digit cap
        stripped = body.lstrip("0")
        while stripped and unicodedata.decimal(stripped[0]) == 0:
            stripped = stripped[1:]
        body = stripped or "0"
        if len(body) > 20:
            raise EvalError(f"number out of range: {text[:40]!r}")
    value = int(body)
    if text[0] == "-":
        value = -value
    if not lo <= value <= hi:
        raise EvalError(f"number out of range: {text!r}")
    return value


def java_int(text: str) -> int:
    """``Integer.valueOf(text)``."""
    return _java_integer(text, INT_MIN, INT_MAX)


def java_long(text: str) -> int:
    """``Long.valueOf(text)``."""
    return _java_integer(text, LONG_MIN, LONG_MAX)


_DEC_FLOAT = re.compile(
    r"([+-]?)(?:(NaN)|(Infinity)|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?)"
)
_HEX_FLOAT = re.compile(
    r"([+-]?)(0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?"
)


def java_double(text: str) -> float:
    """``Double.valueOf(text)``."""
    text = java_trim(text)
    m = _DEC_FLOAT.fullmatch(text)
    if m is not None:
        sign = -1.0 if m.group(1) == "-" else 1.0
        if m.group(2):
            return math.nan
        if m.group(3):
            return sign * math.inf
        return sign * float(m.group(4))
    m = _HEX_FLOAT.fullmatch(text)
    if m is not None:
        sign = -1.0 if m.group(1) == "-" else 1.0
        try:
            return sign * float.fromhex(m.group(2))
        except OverflowError:
            return sign * math.inf
    raise EvalError(f"not a number: {text[:40]!r}")


def java_bool(text: str) -> bool:
    """``Boolean.valueOf(text)``: never fails."""
    return len(text) == 4 and text.lower() == "true"


def double_compare(a: float, b: float) -> int:
    """``Double.compare``: NaN is above everything and equal to itself, -0.0 < 0.0."""
    if a < b:
        return -1
    if a > b:
        return 1
    if a == b:
        if a == 0.0:
            sa, sb = math.copysign(1.0, a), math.copysign(1.0, b)
            return 0 if sa == sb else (-1 if sa < sb else 1)
        return 0
    a_nan, b_nan = a != a, b != b
    return int(a_nan) - int(b_nan)


def _sign(a: int | bool, b: int | bool) -> int:
    return (a > b) - (a < b)


def java_compare(lv: object, lt: JType, rv: object, rt: JType) -> int:
    """``ComparisonExpression.__compare`` with string conversion on (as the parser sets it).

    Both values are non-null. Mixed classes are converted towards the right-hand class
    for strings, or widened for numbers; pairs Java cannot convert answer -1 (e.g.
    ``Integer`` vs ``Boolean``). ``Boolean`` vs ``String`` is a ClassCastException in
    Java (it casts the wrong side) and so an :class:`EvalError` here.
    """
    if lt is rt:
        if lt is JType.DOUBLE:
            return double_compare(lv, rv)  # type: ignore[arg-type]
        if lt is JType.STR:
            return 0 if lv == rv else (-1 if lv < rv else 1)  # type: ignore[operator]
        return _sign(lv, rv)  # type: ignore[arg-type]
    if lt is JType.STR:
        if rt is JType.BOOL:
            return _sign(java_bool(lv), rv)  # type: ignore[arg-type]
        if rt is JType.INT:
            return _sign(java_int(lv), rv)  # type: ignore[arg-type]
        if rt is JType.LONG:
            return _sign(java_long(lv), rv)  # type: ignore[arg-type]
        if rt is JType.DOUBLE:
            return double_compare(java_double(lv), rv)  # type: ignore[arg-type]
        return -1
    if lt is JType.BOOL:
        if rt is JType.STR:
            raise EvalError("Boolean cannot be compared with a String (ClassCastException)")
        return -1
    # lt is a number
    if rt is JType.STR:
        if lt is JType.INT:
            return _sign(lv, java_int(rv))  # type: ignore[arg-type]
        if lt is JType.LONG:
            return _sign(lv, java_long(rv))  # type: ignore[arg-type]
        return double_compare(lv, java_double(rv))  # type: ignore[arg-type]
    if rt is JType.BOOL:
        return -1
    if lt is JType.DOUBLE or rt is JType.DOUBLE:
        return double_compare(float(lv), float(rv))  # type: ignore[arg-type]
    return _sign(lv, rv)  # type: ignore[arg-type]

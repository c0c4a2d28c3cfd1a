"""Tag subscriptions (``*``, ``TagA``, ``TagA || TagB``) as RocketMQ 4.9.8 builds them.

``FilterAPI.buildSubscriptionData``: ``None``, ``""`` or exactly ``"*"`` subscribe to
everything; otherwise the string is split on ``||``, each piece trimmed (Java's
``String.trim``: code units up to U+0020), empty pieces skipped, and every tag kept with
its Java ``hashCode``. A string made only of ``||`` separators is an error in Java
("subString split error"); one made only of blanks yields no tags at all, which the
broker matches against nothing while the client lets everything through — kept as is.

Matching happens twice, as in RocketMQ: the broker compares the low 32 bits of the
consume-queue tag slot with the hash set (collisions such as ``Aa``/``BB`` pass), and the
client compares the message's tag string with the tag set.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from mqcore.common.javahash import java_string_hash
from mqcore.common.javatext import java_trim
from mqcore.errors import FilterSyntaxError
from mqcore.protocol.bodies.client import SubscriptionData

__all__ = [
    "EXPRESSION_SQL92",
    "EXPRESSION_TAG",
    "SUB_ALL",
    "TagFilter",
    "build_subscription_data",
    "compile_tags",
    "is_tag_type",
    "validate_expression_type",
]

SUB_ALL = "*"
EXPRESSION_TAG = "TAG"
EXPRESSION_SQL92 = "SQL92"

_SEPARATOR = re.compile(r"\|\|")


def _signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


@dataclass(frozen=True, slots=True)
class TagFilter:
    """A compiled tag subscription."""

    expression: str
    tags: frozenset[str]
    codes: frozenset[int]
    is_all: bool

    @classmethod
    def from_subscription(cls, sub: SubscriptionData) -> TagFilter:
        """Use a subscription's own sets (e.g. a heartbeat's), as the broker does."""
        return cls(
            sub.sub_string,
            frozenset(sub.tags_set),
            frozenset(_signed32(code) for code in sub.code_set),
            sub.sub_string == SUB_ALL,
        )

    def match_code(self, tag_slot: int | None) -> bool:
        """Broker side: does a consume-queue tag slot (i64, or None) pass?"""
        if self.is_all or tag_slot is None:
            return True
        return _signed32(tag_slot) in self.codes

    def match_tag(self, tag: str | None) -> bool:
        """Client side: does a message with this tag pass? (No tags: everything passes.)"""
        if not self.tags:
            return True
        return tag is not None and tag in self.tags


def compile_tags(expression: str | None) -> TagFilter:
    """Parse a tag expression; :class:`FilterSyntaxError` when it has only separators."""
    if expression is None or expression == "" or expression == SUB_ALL:
        return TagFilter(SUB_ALL, frozenset(), frozenset(), True)
    pieces = _SEPARATOR.split(expression)
    while pieces and pieces[-1] == "":  # Java's split drops trailing empty strings
        pieces.pop()
    if not pieces:
        raise FilterSyntaxError(
            f"invalid tag expression {expression!r}: no tag between the '||' separators",
            expression=expression,
            position=0,
        )
    tags = {trimmed for piece in pieces if (trimmed := java_trim(piece))}
    return TagFilter(
        expression,
        frozenset(tags),
        frozenset(java_string_hash(tag) for tag in tags),
        False,
    )


def is_tag_type(expression_type: str | None) -> bool:
    """``ExpressionType.isTagType``: missing or empty means TAG."""
    return not expression_type or expression_type == EXPRESSION_TAG


def validate_expression_type(expression_type: str | None) -> str:
    """``TAG`` or ``SQL92`` (any case; missing means TAG); anything else is an error."""
    if not expression_type:
        return EXPRESSION_TAG
    upper = expression_type.upper()
    if upper in (EXPRESSION_TAG, EXPRESSION_SQL92):
        return upper
    raise FilterSyntaxError(
        f"unknown expression type {expression_type!r}: expected TAG or SQL92",
        expression=expression_type,
    )


def build_subscription_data(
    topic: str, expression: str | None, expression_type: str | None = EXPRESSION_TAG
) -> SubscriptionData:
    """``FilterAPI.build``: tags and hash codes for TAG, the bare expression for SQL92.

    SQL92 expressions are not compiled here (RocketMQ compiles them separately, see
    :func:`mqcore.filter.compile_sql`); only an empty one is refused.
    """
    kind = validate_expression_type(expression_type)
    now = int(time.time() * 1000)
    if kind == EXPRESSION_SQL92:
        if not expression:
            raise FilterSyntaxError("SQL92 expression can't be empty", expression="")
        return SubscriptionData(
            topic=topic, sub_string=expression, sub_version=now, expression_type=kind
        )
    compiled = compile_tags(expression)
    return SubscriptionData(
        topic=topic,
        sub_string=compiled.expression,
        tags_set=set(compiled.tags),
        code_set=set(compiled.codes),
        sub_version=now,
        expression_type=kind,
    )

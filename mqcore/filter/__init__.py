"""Message filters, sans-IO: tag expressions and RocketMQ's SQL92 property selector.

The broker uses :meth:`TagFilter.match_code` on consume-queue tag slots and
:class:`SqlFilter` on decoded properties; the client re-checks tags by string with
:meth:`TagFilter.match_tag`.
"""

from __future__ import annotations

from mqcore.errors import FilterSyntaxError
from mqcore.filter.sql92 import SqlFilter, compile_sql
from mqcore.filter.tags import (
    EXPRESSION_SQL92,
    EXPRESSION_TAG,
    TagFilter,
    build_subscription_data,
    compile_tags,
    is_tag_type,
    validate_expression_type,
)

#: Alias: the name the broker's CHECK_CLIENT_CONFIG handler looks for.
compile_sql92 = compile_sql

__all__ = [
    "EXPRESSION_SQL92",
    "EXPRESSION_TAG",
    "FilterSyntaxError",
    "SqlFilter",
    "TagFilter",
    "build_subscription_data",
    "compile_sql",
    "compile_sql92",
    "compile_tags",
    "is_tag_type",
    "validate_expression_type",
]

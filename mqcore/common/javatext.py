"""Java's ``String.trim()``, which tag expressions and SQL92 literals are cut with: it
strips code units up to U+0020, not what Python's ``str.strip`` calls whitespace (a
no-break space stays, a control character goes)."""

from __future__ import annotations

__all__ = ["java_trim"]


def java_trim(text: str) -> str:
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]

"""How `mq --help` names arguments and option values, in one place.

typer renders a flag as ``--json <bool>``, an option's value as ``<str>`` and a required
argument as ``{msg_id}``. mq's help follows the man-page convention instead (as click,
rpk and natscli do): flags take no value, so they show none; a value is an upper-case
word (``TEXT``, ``INTEGER``, or the option's metavar); an argument is its upper-case
name (``MSG_ID``, ``[GROUP]`` when optional); an indented example stays indented.
:func:`install` applies this to typer's classes; the entry point calls it once before the
app is built.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["EXIT_STATUS", "EXIT_STATUS_EPILOG", "install", "keep_indents"]

EXIT_STATUS = (
    ("0", "success"),
    ("1", "an error: the command ran and failed (one line on stderr, with a hint)"),
    ("2", "a usage error: an unknown option, a missing or bad argument"),
    ("130", "interrupted with Ctrl-C (after printing what was done so far)"),
)
"""The exit codes every `mq` command keeps to (the man page's EXIT STATUS section)."""

EXIT_STATUS_EPILOG = "Exit status: 0 success, 1 error, 2 usage error, 130 interrupted (Ctrl-C)."
"""The same, as one line for the end of `mq --help`."""

_TYPE_WORDS = {
    "str": "TEXT",
    "int": "INTEGER",
    "float": "FLOAT",
    "int range": "INTEGER",
    "float range": "FLOAT",
    "bool": "BOOLEAN",
    "Path": "PATH",
    "path": "PATH",
    "file": "FILE",
    "directory": "DIR",
    "datetime": "DATETIME",
}

_installed = False


def type_word(label: str) -> str:
    """``<str>`` -> ``TEXT``, ``<int range>`` -> ``INTEGER``, choices ``a|b`` stay as they are."""
    bare = label.strip("<>")
    if bare.startswith("list[") and bare.endswith("]"):
        return type_word(bare[5:-1]) + "..."
    if "|" in bare:
        return bare
    return _TYPE_WORDS.get(bare, bare.upper())


def keep_indents(help_text: str | None) -> str | None:
    """Make a help text's later paragraphs start with a blank line.

    typer dedents everything after the first paragraph as one docstring, whose first line
    does not count towards the common margin: when that line is a heading (``Examples:``)
    the indented lines under it lose their indentation. A blank first line counts for
    nothing and is dropped when rendered, so the margin is the paragraphs' own (none).
    """
    if not help_text:
        return help_text
    first, sep, rest = inspect.cleandoc(help_text).partition("\n\n")
    return f"{first}\n\n\n{rest}" if sep and not rest.startswith("\n") else help_text


def install() -> None:
    """Teach typer's TyperOption and TyperArgument mq's way of naming things (idempotent)."""
    global _installed
    if _installed:
        return
    _installed = True
    from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

    option_type = TyperOption.display_type_rich

    def option_display_type(self: Any, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None  # a flag takes no value: nothing to show
        if self.metavar is not None:
            return str(self.metavar)
        shown = option_type(self, ctx)
        return None if shown is None else type_word(str(shown))

    def argument_name(self: Any) -> str:
        return str(self.metavar) if self.metavar is not None else str(self.name or "ARG").upper()

    def argument_usage(self: Any) -> str:
        name = argument_name(self)
        if self.nargs != 1:
            name += "..."
        return name if self.required else f"[{name}]"

    def argument_display_type(self: Any, ctx: Any) -> str | None:
        return None  # the name column already says it (``MSG_ID``)

    TyperOption.display_type_rich = option_display_type  # type: ignore[method-assign]
    TyperArgument.display_name_raw = property(argument_name)  # type: ignore[assignment,method-assign]
    TyperArgument._usage_display_name = argument_usage  # type: ignore[method-assign]
    TyperArgument.display_type_rich = argument_display_type  # type: ignore[method-assign]

    for cls in (TyperCommand, TyperGroup):
        cls.format_help = _indent_keeping(cls.format_help)  # type: ignore[method-assign]


def _indent_keeping(format_help: Any) -> Any:
    def wrapped(self: Any, ctx: Any, formatter: Any) -> None:
        shown = self.help
        self.help = keep_indents(shown)
        try:
            format_help(self, ctx, formatter)
        finally:
            self.help = shown

    return wrapped

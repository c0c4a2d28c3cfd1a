"""Shared rendering helpers: one console each for stdout and stderr, JSON lines, errors."""

from __future__ import annotations

import logging
import sys
from typing import Any, NoReturn

import orjson
from rich.console import Console

console = Console(highlight=False)
# In a pipe a long line stays one line (a script splits on newlines, not on 80 columns).
console.soft_wrap = not console.is_terminal
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

_debug = False


def set_debug(flag: bool) -> None:
    global _debug
    _debug = flag


def debug_enabled() -> bool:
    return _debug


def quiet_library_logs(debug: bool = False) -> None:
    """The client library's log records below ERROR (WARNING with ``--debug``) stay off
    stderr, where a command prints its own one-line errors. The server commands replace
    this with their own setup (:func:`mqcli.serving.setup_logging`)."""
    level = logging.WARNING if debug else logging.ERROR
    for name in ("mq", "mqcore"):
        logging.getLogger(name).setLevel(level)


def print_json_line(obj: Any) -> None:
    """One compact JSON object per line on stdout (for `--json`)."""
    sys.stdout.buffer.write(orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS) + b"\n")
    sys.stdout.flush()


def print_json(obj: Any) -> None:
    """One indented JSON document on stdout."""
    sys.stdout.buffer.write(
        orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_INDENT_2) + b"\n"
    )
    sys.stdout.flush()


def fail(message: str, code: int = 1, hint: str | None = None) -> NoReturn:
    """Print one clear error line (and an optional hint) on stderr and exit."""
    err_console.print(f"[bold red]error:[/] {message}", markup=True, soft_wrap=True)
    if hint:
        err_console.print(f"[dim]hint: {hint}[/]", soft_wrap=True)
    raise SystemExit(code)

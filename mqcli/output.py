"""Shared rendering helpers: one console each for stdout and stderr, JSON lines, errors."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any, NoReturn, cast

import orjson

if TYPE_CHECKING:
    from rich.console import Console


class _Deferred:
    """A rich :class:`~rich.console.Console` built on first use.

    Importing rich's console costs a one-shot command a tenth of its start-up, and
    ``mq produce -t T --body x`` prints its rows without it; the commands that do print
    through rich build it at their first call, transparently.
    """

    __slots__ = ("_console", "_stderr")

    def __init__(self, *, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def _real(self) -> Console:
        if self._console is None:
            from rich.console import Console

            if self._stderr:
                self._console = Console(stderr=True, highlight=False, soft_wrap=True)
            else:
                self._console = Console(highlight=False)
                # In a pipe a long line stays one line (scripts split on newlines).
                self._console.soft_wrap = not self._console.is_terminal
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)

    # rich enters a console as a context manager (Live, Progress): dunders skip __getattr__
    def __enter__(self) -> Console:
        return self._real().__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._real().__exit__(*exc)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _Deferred.__slots__:
            object.__setattr__(self, name, value)
        else:
            setattr(self._real(), name, value)


console = cast("Console", _Deferred(stderr=False))
err_console = cast("Console", _Deferred(stderr=True))

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

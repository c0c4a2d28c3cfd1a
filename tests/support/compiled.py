"""The compiled twins for the parity tests: imported directly, whatever the switch says.

A parity test compares a compiled twin with its pure module, so it needs the twin even
when ``MQ_NO_EXTENSIONS=1`` runs the rest of the process on the pure core; it is skipped,
saying why, only when there is nothing current to test (not built, or stale).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import pytest

from mqcore.common.core import check_stamp


def compiled_twin(name: str) -> ModuleType:
    """The extension module ``name``, or a skip: not built (no C compiler or Cython when
    mq was installed: `make dev` builds it) or stale (its .pyx changed: run `make`)."""
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        pytest.skip(f"{name} is not built ({exc}); `make dev` builds it with a C compiler")
    stale = check_stamp(module)
    if stale:
        pytest.skip(f"{name} is stale ({stale}): run `make`")
    return module


def outcome(fn: Any, *args: Any) -> tuple[Any, Any]:
    """``("ok", result)`` or ``(exception type, message)``: what parity compares."""
    try:
        return "ok", fn(*args)
    except Exception as exc:
        return type(exc), str(exc)

"""How the broker package is put together, checked on its source: request processors are
pure handlers (no controller, no service started, no timer), and one module appends to
the store. Read with ``ast``, so a late import inside a function or under
``TYPE_CHECKING`` counts as much as one at the top."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mqcore.broker

BROKER = Path(mqcore.broker.__file__).parent
PROCESSORS = sorted((BROKER / "processor").glob("*.py"))


def imported(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return out


def called_attributes(tree: ast.AST) -> set[str]:
    return {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }


@pytest.mark.parametrize("path", PROCESSORS, ids=lambda p: p.name)
def test_a_processor_module_is_a_pure_request_handler(path: Path) -> None:
    tree = ast.parse(path.read_text())
    assert not {m for m in imported(tree) if m.startswith("mqcore.broker.controller")}
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert "register" not in names
    if path.name != "__init__.py":
        assert "handlers" in names, "each processor module exposes handlers(ctx)"
    # no timer, task or start hook: what runs is the controller's to start
    assert not called_attributes(tree) & {
        "every",
        "schedule",
        "create_task",
        "add_start_hook",
        "add_stop_hook",
        "add_close_listener",
    }


def test_only_the_appender_puts_messages_into_the_store() -> None:
    putters = sorted(
        str(path.relative_to(BROKER))
        for path in BROKER.rglob("*.py")
        if called_attributes(ast.parse(path.read_text())) & {"put_message", "put_messages"}
    )
    assert putters == ["append.py"]

"""The layering of docs/architecture.md, checked on the source: imports point down, and
no two modules need each other at run time.

The graph is read with :mod:`ast` from every module of ``mqcore`` and ``mqcli``. An import
under ``if TYPE_CHECKING:`` is not a run-time import; one inside a function is (a cycle
dodged by importing late is still a cycle).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"mqcli"}),
    frozenset({"mqcore.proxy"}),
    frozenset({"mqcore.client", "mqcore.broker", "mqcore.namesrv"}),
    frozenset({"mqcore.controller"}),
    frozenset({"mqcore.acl"}),
    frozenset({"mqcore.metrics"}),
    frozenset({"mqcore.remoting"}),
    frozenset({"mqcore.filter"}),
    frozenset({"mqcore.protocol"}),
    frozenset({"mqcore.store"}),
    frozenset({"mqcore.message"}),
    frozenset({"mqcore.common"}),
    frozenset({"mqcore.errors", "mqcore"}),
)
"""Top to bottom; a package may import its own layer's modules only within itself."""


@cache
def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in ("mqcore", "mqcli"):
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _resolve(name: str) -> str | None:
    known = modules()
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _imports(tree: ast.AST) -> Iterator[str]:
    """Run-time imports of a module: everything but the ``TYPE_CHECKING`` branches."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for other in node.orelse:
                yield from _imports(ast.Module(body=[other], type_ignores=[]))
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                yield full if full in modules() else node.module
        else:
            yield from _imports(node)


@cache
def graph() -> dict[str, frozenset[str]]:
    edges: dict[str, frozenset[str]] = {}
    for name, path in modules().items():
        targets = {_resolve(imported) for imported in _imports(ast.parse(path.read_text()))}
        edges[name] = frozenset(t for t in targets if t and t != name)
    return edges


def layer_of(module: str) -> tuple[int, str]:
    for depth, layer in enumerate(LAYERS):
        for package in sorted(layer, key=len, reverse=True):
            if module == package or module.startswith(package + "."):
                return depth, package
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def test_every_import_points_down() -> None:
    wrong = []
    for source, targets in graph().items():
        depth, package = layer_of(source)
        for target in targets:
            target_depth, target_package = layer_of(target)
            if target_depth < depth or (target_depth == depth and target_package != package):
                wrong.append(f"{source} -> {target}")
    assert not wrong, "imports against the layers:\n" + "\n".join(sorted(wrong))


def _cycles(edges: dict[str, frozenset[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_cycle_at_run_time() -> None:
    cycles = _cycles(dict(graph()))
    assert not cycles, "modules that import each other at run time:\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": frozenset({"b"}), "b": frozenset({"a"})}, [["a", "b"]]),
        ({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset()}, []),
        (
            {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset()},
            [["a", "b", "c"]],
        ),
    ],
)
def test_the_cycle_finder_finds_cycles(
    edges: dict[str, frozenset[str]], expected: list[list[str]]
) -> None:
    assert _cycles(edges) == expected


def test_a_late_import_counts_and_a_type_checking_one_does_not() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import mqcli.main\n"
        "def f():\n    import mqcore.client.producer\n"
    )
    imported = set(_imports(tree))
    assert "mqcore.client.producer" in imported
    assert "mqcli.main" not in imported

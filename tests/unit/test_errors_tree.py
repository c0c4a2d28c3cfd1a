"""The exception tree drawn in mqcore/errors.py is the one the code has.

Every module of ``mqcore`` is imported and every exception class it defines is found. Each
must be an :class:`~mqcore.errors.MQError` drawn under its real parent, with its module
and any other base. A class that is missing, misplaced or outside the tree fails here, and
so does a drawn class the code no longer has.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass

import mqcore
from mqcore import errors
from mqcore.errors import MQError

_ENTRY = re.compile(
    r"^(?P<prefix>(?:[│ ] {3})*(?:[├└]── )?)"  # the tree's lines: 4 characters a level
    r"(?P<name>\w+)(?:\s+\((?P<notes>[^)]*)\))?"  # the class, then (module, Base)
)


@dataclass(frozen=True)
class Drawn:
    parent: str | None
    module: str
    bases: frozenset[str]
    """Bases other than the parent in the tree (``ValueError``, ...)."""


def _blocks(doc: str) -> list[list[str]]:
    """The indented literal blocks of the docstring, each a list of dedented lines."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in doc.splitlines():
        if line.endswith("::"):
            current = []
            blocks.append(current)
        elif current is not None:
            if line.startswith("    "):
                current.append(line[4:])
            elif line.strip() or current:
                current = None
    return blocks


def _entry(line: str) -> tuple[int, str, str, frozenset[str]]:
    """(depth, name, module, other bases) of one drawn line."""
    m = _ENTRY.match(line)
    assert m is not None, f"cannot read the drawn line {line!r}"
    depth = len(m["prefix"]) // 4
    module, bases = errors.__name__, set()
    for note in (m["notes"] or "").split(","):
        note = note.strip()
        if not note:
            continue
        if note[0].islower():
            module = f"mqcore.{note}"
        else:
            bases.add(note)
    return depth, m["name"], module, frozenset(bases)


def drawing() -> dict[str, Drawn]:
    """The tree: name -> where it is drawn."""
    assert errors.__doc__ is not None
    blocks = _blocks(errors.__doc__)
    assert len(blocks) == 1, "errors.py draws one tree"
    tree: dict[str, Drawn] = {}
    path: list[str] = []
    for line in blocks[0]:
        depth, name, module, bases = _entry(line)
        assert depth <= len(path), f"{name} is drawn below nothing"
        del path[depth:]
        assert name not in tree, f"{name} is drawn twice"
        tree[name] = Drawn(path[-1] if path else None, module, bases)
        path.append(name)
    return tree


def exception_classes() -> list[type[BaseException]]:
    """Every exception class defined in a module of mqcore."""
    found: dict[type[BaseException], None] = {}
    for info in pkgutil.walk_packages(mqcore.__path__, "mqcore."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == module.__name__
            ):
                found[obj] = None
    return list(found)


def real(cls: type[BaseException]) -> Drawn:
    in_tree = [b for b in cls.__bases__ if issubclass(b, MQError)]
    assert len(in_tree) <= 1, f"{cls.__name__} has two parents in the tree: {in_tree}"
    others = frozenset(b.__name__ for b in cls.__bases__ if not issubclass(b, MQError))
    if cls is MQError:
        return Drawn(None, cls.__module__, frozenset())
    return Drawn(in_tree[0].__name__ if in_tree else None, cls.__module__, others)


def test_the_drawing_matches_the_classes() -> None:
    tree = drawing()
    classes = exception_classes()
    names = [c.__name__ for c in classes]
    assert len(names) == len(set(names)), "two exception classes share a name"
    problems: list[str] = []
    for cls in classes:
        name = cls.__name__
        if not issubclass(cls, MQError):
            problems.append(f"{name} ({cls.__module__}) is outside MQError")
            continue
        if name not in tree:
            problems.append(f"{name} ({cls.__module__}) is missing from the drawing")
        elif tree[name] != real(cls):
            problems.append(f"{name} is drawn as {tree[name]}, but is {real(cls)}")
    for name in sorted(set(tree) - set(names)):
        problems.append(f"{name} is drawn but no mqcore module defines it")
    assert not problems, "\n".join(problems)


def test_the_drawing_is_read_as_drawn() -> None:
    tree = drawing()
    assert tree["MQError"] == Drawn(None, "mqcore.errors", frozenset())
    assert tree["DiskFullError"] == Drawn("StoreError", "mqcore.errors", frozenset())
    assert tree["HAProtocolError"] == Drawn(
        "ProtocolError", "mqcore.protocol.ha", frozenset({"ValueError"})
    )
    assert tree["NameServerUnreachableError"].parent == "RemotingConnectError"
    assert tree["ReplyMessageError"].parent == "MQClientError"
    assert tree["StateError"] == Drawn(
        "MQError", "mqcore.client.process_queue", frozenset({"RuntimeError"})
    )
    assert tree["SendRefused"].parent == "RequestRefused"
